// The OpenAPI description cannot drift from the server: GET /openapi.json serves docs/openapi.json,
// it describes exactly the routes the server answers (api_routes(): the table the pre-routing
// check refuses everything else by), and every operation answers a status it documents, with the
// documented top-level fields where it succeeds; and every request field the server's parsers read
// is described.
#include <httplib.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "client_helpers.h"
#include "server/server.h"
#include "server_process.h"

namespace inkling {
namespace {

using nlohmann::json;

json docs_file() {
  std::ifstream f(std::string(INKLING_SOURCE_DIR) + "/docs/openapi.json");
  std::stringstream ss;
  ss << f.rdbuf();
  return json::parse(ss.str(), nullptr, false);
}

class ServerOpenApi : public testing::SharedServerTest<ServerOpenApi> {
 public:
  static std::vector<std::string> server_args() { return {"--ctx-size", "256"}; }
};

TEST_F(ServerOpenApi, ServesTheDocsDescription) {
  const json doc = docs_file();
  ASSERT_FALSE(doc.is_discarded()) << "docs/openapi.json is not JSON";
  EXPECT_EQ(doc["openapi"], "3.1.0");
  auto c = testing::local_client(server_->port());
  auto r = c.Get("/openapi.json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(json::parse(r->body, nullptr, false), doc);
}

TEST(OpenApiRoutes, DescribesExactlyTheRoutesTheServerAnswers) {
  const json doc = docs_file();
  ASSERT_TRUE(doc.contains("paths"));
  std::set<std::string> described, served;
  for (const auto& [path, ops] : doc["paths"].items())
    for (const auto& [method, op] : ops.items())
      if (method != "parameters") described.insert(method + " " + path);
  for (const auto& [path, method] : server::api_routes()) {
    std::string m = method;
    for (char& ch : m) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    served.insert(m + " " + path);
  }
  EXPECT_EQ(described, served);
}

// The status (and, for a 200 with a JSON schema, the required top-level fields) of a response.
void expect_documented(const json& op, const httplib::Result& r, const std::string& what) {
  ASSERT_TRUE(r) << what;
  const std::string status = std::to_string(r->status);
  ASSERT_TRUE(op["responses"].contains(status))
      << what << ": undocumented status " << status << ": " << r->body.substr(0, 300);
  const json& content = op["responses"][status]["content"];
  const std::string type = r->get_header_value("Content-Type");
  bool listed = false;
  for (const auto& [ct, spec] : content.items()) listed |= type.rfind(ct, 0) == 0;
  EXPECT_TRUE(listed) << what << ": content type " << type;
  if (type.rfind("application/json", 0) != 0) return;
  const json body = json::parse(r->body, nullptr, false);
  ASSERT_FALSE(body.is_discarded()) << what;
  json schema = content["application/json"]["schema"];
  if (schema.contains("$ref")) {
    const std::string name = schema["$ref"].get<std::string>().substr(21);  // #/components/schemas/
    schema = docs_file()["components"]["schemas"][name];
  }
  for (const json& field : schema.value("required", json::array()))
    EXPECT_TRUE(body.contains(field.get<std::string>()))
        << what << ": no " << field << " in " << r->body.substr(0, 300);
}

// Every property name anywhere in the description (request bodies, their items, nested objects).
void collect_properties(const json& j, std::set<std::string>* out) {
  if (j.is_object()) {
    if (j.contains("properties") && j["properties"].is_object())
      for (const auto& [k, v] : j["properties"].items()) out->insert(k);
    for (const auto& [k, v] : j.items()) collect_properties(v, out);
  } else if (j.is_array()) {
    for (const auto& v : j) collect_properties(v, out);
  }
}

// The request parsers read every field through field(obj, "name") or get_bool / get_int /
// get_number / get_string(obj, "name", ...) (app/server/*.cpp). A field read there and described
// nowhere in docs/openapi.json fails here: a field cannot be added without its description.
TEST(OpenApiFields, EveryFieldTheParsersReadIsDescribed) {
  const json doc = docs_file();
  std::set<std::string> described;
  collect_properties(doc, &described);
  const std::regex read(
      R"re(\b(field|get_bool|get_int|get_number|get_string)\(\s*[A-Za-z_*]+\s*,\s*"([A-Za-z_]+)")re");
  std::set<std::string> fields;
  for (const auto& e :
       std::filesystem::directory_iterator(std::string(INKLING_SOURCE_DIR) + "/app/server")) {
    if (e.path().extension() != ".cpp") continue;
    std::ifstream f(e.path());
    std::stringstream ss;
    ss << f.rdbuf();
    const std::string src = ss.str();
    for (std::sregex_iterator it(src.begin(), src.end(), read), end; it != end; ++it)
      fields.insert((*it)[2].str());
  }
  EXPECT_GT(fields.size(), 50u) << "the pattern no longer finds the parsers' reads";
  for (const std::string& f : fields)
    EXPECT_TRUE(described.count(f)) << "request field '" << f
                                    << "' is read by app/server but not described in "
                                       "docs/openapi.json";
}

TEST_F(ServerOpenApi, EveryOperationAnswersAsDescribed) {
  const json doc = docs_file();
  auto c = testing::local_client(server_->port());
  const json good = {
      {"/v1/chat/completions",
       {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 2}}},
      {"/v1/completions", {{"prompt", "hi"}, {"max_tokens", 2}}},
      {"/v1/responses", {{"input", "hi"}, {"max_output_tokens", 2}}},
      {"/v1/messages", {{"max_tokens", 2}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}}},
      {"/tokenize", {{"content", "hi"}}},
      {"/detokenize", {{"tokens", {1, 2}}}}};
  int checked = 0;
  for (const auto& [path, ops] : doc["paths"].items()) {
    if (ops.contains("get")) {
      const std::string p = path == "/v1/models/{id}" ? "/v1/models/no-such-model" : path;
      expect_documented(ops["get"], c.Get(p), "GET " + p);
      ++checked;
    }
    if (ops.contains("post")) {
      expect_documented(ops["post"], c.Post(path, "{}", "application/json"),
                        "POST " + path + " {}");
      expect_documented(ops["post"], c.Post(path, "{not json", "application/json"),
                        "POST " + path + " bad JSON");
      ASSERT_TRUE(good.contains(path)) << "no example request for " << path;
      expect_documented(ops["post"], c.Post(path, good[path].dump(), "application/json"),
                        "POST " + path);
      checked += 3;
    }
  }
  EXPECT_GE(checked, 20);
}

// Errors the server answers before (or around) a route's handler keep the route's API shape:
// Anthropic's for /v1/messages. Found by schemathesis: httplib's own 400 came back OpenAI-shaped.
TEST_F(ServerOpenApi, MessagesErrorsKeepTheirShapeOutsideTheHandler) {
  auto c = testing::local_client(server_->port());
  const std::string huge(9u << 20, 'x');  // over the body limit: refused while reading it
  for (bool post : {false, true}) {
    auto r = post ? c.Post("/v1/messages", huge, "application/json") : c.Get("/v1/messages");
    ASSERT_TRUE(r);
    EXPECT_GE(r->status, 400);
    const json b = json::parse(r->body, nullptr, false);
    EXPECT_EQ(b.value("type", ""), "error") << r->status << " " << r->body;
    EXPECT_TRUE(b.contains("error") && b["error"].contains("type") &&
                b["error"].contains("message"))
        << r->body;
  }
  // The other routes keep OpenAI's shape.
  auto r = c.Get("/v1/chat/completions");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
  EXPECT_FALSE(json::parse(r->body, nullptr, false).contains("type")) << r->body;
}

}  // namespace
}  // namespace inkling
