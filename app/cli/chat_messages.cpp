// Saving and loading chat messages (see chat_messages.h).
#include "chat_messages.h"

#include <fstream>
#include <sstream>

namespace inkling::cli {

Status save_messages(const std::string& path, const nlohmann::ordered_json& messages) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return Status::error("/save " + path + ": cannot write");
  nlohmann::ordered_json doc = {{"messages", messages}};
  f << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  if (!f.flush()) return Status::error("/save " + path + ": write failed");
  return Status::success();
}

Result<nlohmann::ordered_json> load_messages(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::error("/load " + path + ": cannot read");
  std::stringstream ss;
  ss << f.rdbuf();
  auto doc = nlohmann::ordered_json::parse(ss.str(), nullptr, false);
  if (doc.is_discarded()) return Status::error("/load " + path + ": not valid JSON");
  if (doc.is_object() && doc.contains("messages")) doc = doc["messages"];
  if (!doc.is_array())
    return Status::error("/load " + path + ": expected {\"messages\": [...]} or an array");
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (size_t i = 0; i < doc.size(); ++i) {
    const std::string where = "/load " + path + ": message " + std::to_string(i);
    nlohmann::ordered_json m = doc[i];
    if (!m.is_object()) return Status::error(where + " is not an object");
    if (!m.contains("role") || !m["role"].is_string())
      return Status::error(where + " has no \"role\" string");
    const std::string role = m["role"];
    if (role != "system" && role != "user" && role != "assistant" && role != "tool")
      return Status::error(where + ": unknown role '" + role + "'");
    if (m.contains("content") && m["content"].is_array()) {
      std::string text;
      for (const auto& part : m["content"]) {
        if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
            !part["text"].is_string())
          return Status::error(where + ": only text content parts are supported");
        text += part["text"].get<std::string>();
      }
      m["content"] = text;
    }
    const bool has_calls = role == "assistant" && m.contains("tool_calls");
    if (!(m.contains("content") && m["content"].is_string()) &&
        !(has_calls && (!m.contains("content") || m["content"].is_null())))
      return Status::error(where + " has no \"content\" string");
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace inkling::cli
