// The decode tuning cache file (see tuning_cache.h).
#include "ops/tuning_cache.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "base/cpus.h"
#include "base/mapped_file.h"

namespace inkling {

std::string tuning_cache_name(const std::string& cpu_model, int threads) {
  std::string key;
  for (char c : cpu_model) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (ok)
      key += c;
    else if (!key.empty() && key.back() != '-')
      key += '-';
  }
  while (!key.empty() && key.back() == '-') key.pop_back();
  if (key.size() > 80) key.resize(80);
  if (key.empty()) key = "unknown";
  return "tune-" + key + "-t" + std::to_string(threads) + ".json";
}

std::string tuning_cache_path(int threads) {
  std::filesystem::path dir;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    dir = x;
  else if (const char* h = std::getenv("HOME"); h && *h)
    dir = std::filesystem::path(h) / ".cache";
  else
    return "";
  return (dir / "inkling" / tuning_cache_name(cpu_model_name(), threads)).string();
}

bool parse_tuning_text(const std::string& text, TuningFile* out, std::string* err) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    *err = "not valid JSON";
    return false;
  }
  if (!j.is_object()) {
    *err = "not a JSON object";
    return false;
  }
  const auto ver = j.find("inkling_tune");
  if (ver == j.end() || !ver->is_number_integer() || ver->get<int64_t>() != 1) {
    *err = "\"inkling_tune\" is not 1 (not a tuning file, or another version)";
    return false;
  }
  TuningFile f;
  if (const auto c = j.find("cpu"); c != j.end()) {
    if (!c->is_string()) {
      *err = "\"cpu\" is not a string";
      return false;
    }
    f.cpu = c->get<std::string>();
  }
  if (const auto t = j.find("threads"); t != j.end()) {
    if (!t->is_number_integer() || t->get<int64_t>() < 1 || t->get<int64_t>() > 1 << 16) {
      *err = "\"threads\" is not a thread count";
      return false;
    }
    f.threads = int(t->get<int64_t>());
  }
  const auto tj = j.find("tuning");
  if (tj == j.end()) {
    *err = "no \"tuning\" object";
    return false;
  }
  if (!tuning_from_json(*tj, &f.tuning, err)) return false;
  if (const auto m = j.find("measured"); m != j.end()) f.measured = *m;
  *out = std::move(f);
  return true;
}

bool read_tuning_file(const std::string& path, TuningFile* out, std::string* err, bool* missing) {
  std::error_code ec;
  const bool exists = std::filesystem::exists(path, ec);
  if (missing) *missing = !exists;
  if (!exists) {
    *err = path + ": no such file";
    return false;
  }
  std::error_code ec2;
  if (std::filesystem::file_size(path, ec2) > (uintmax_t(1) << 20) && !ec2) {
    *err = path + ": larger than 1 MiB, not a tuning file";
    return false;
  }
  const auto text = read_text_file(path);  // a FIFO or a directory: an error, never a wait
  if (!text.ok()) {
    *err = text.status().message();
    return false;
  }
  std::string why;
  if (!parse_tuning_text(text.value(), out, &why)) {
    *err = path + ": " + why;
    return false;
  }
  return true;
}

bool write_tuning_file(const std::string& path, const TuningFile& f, std::string* err) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(path);
  if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  if (ec) {
    *err = p.parent_path().string() + ": " + ec.message();
    return false;
  }
  nlohmann::json j = {{"inkling_tune", 1},
                      {"cpu", f.cpu},
                      {"threads", f.threads},
                      {"tuning", tuning_to_json(f.tuning)}};
  if (!f.measured.is_null()) j["measured"] = f.measured;
  const std::string tmp = path + ".tmp";
  {
    std::ofstream o(tmp, std::ios::binary | std::ios::trunc);
    o << j.dump(2) << "\n";
    if (!o) {
      *err = tmp + ": cannot be written";
      return false;
    }
  }
  fs::rename(tmp, p, ec);
  if (ec) {
    *err = path + ": " + ec.message();
    fs::remove(tmp, ec);
    return false;
  }
  return true;
}

std::string load_decode_tuning(int threads) {
  static std::mutex mu;
  static int loaded_for = -1;
  std::lock_guard<std::mutex> lock(mu);
  if (decode_tuning_source() == "tune") return "tune";  // a calibration in this process wins
  if (loaded_for == threads) return decode_tuning_source();
  loaded_for = threads;
  const char* env = std::getenv("INKLING_TUNE");
  const std::string mode = env ? env : "";
  if (mode == "off") {
    set_decode_tuning(DecodeTuning::defaults(), "off");
    return "off";
  }
  const bool explicit_file = !(mode.empty() || mode == "on");
  const std::string path = explicit_file ? mode : tuning_cache_path(threads);
  TuningFile f;
  std::string err;
  bool missing = false;
  if (path.empty() || !read_tuning_file(path, &f, &err, &missing)) {
    if (explicit_file || !missing)
      std::fprintf(stderr, "inkling: warning: decode tuning %s; using the defaults\n", err.c_str());
    set_decode_tuning(DecodeTuning::defaults(), "default");
    return "default";
  }
  if (!explicit_file && (f.cpu != cpu_model_name() || f.threads != threads)) {
    std::fprintf(stderr,
                 "inkling: warning: decode tuning %s was made for \"%s\" with %d threads, not "
                 "this CPU with %d; using the defaults (run `inkling tune`)\n",
                 path.c_str(), f.cpu.c_str(), f.threads, threads);
    set_decode_tuning(DecodeTuning::defaults(), "default");
    return "default";
  }
  const std::string src = (explicit_file ? "file " : "cache ") + path;
  set_decode_tuning(f.tuning, src);
  return src;
}

}  // namespace inkling
