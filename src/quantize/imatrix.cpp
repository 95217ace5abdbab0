// Reading and writing importance matrices as safetensors.
#include "quantize/imatrix.h"

#include <cmath>
#include <cstring>

#include "base/safetensors.h"
#include "base/safetensors_writer.h"

namespace inkling {

namespace {
constexpr const char* kSq = ".in_sq";
constexpr const char* kTok = ".tokens";

bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}
}  // namespace

Status save_imatrix(const Imatrix& m, const std::string& path) {
  std::vector<TensorDecl> decls;
  for (const auto& [name, e] : m.entries) {
    decls.push_back({name + kSq, DType::F32, {e.n, e.cols}});
    decls.push_back({name + kTok, DType::I64, {e.n}});
  }
  if (decls.empty()) return Status::error(path + ": no statistics to write");
  std::map<std::string, std::string> meta = m.meta;
  meta["format"] = "inkling-imatrix";
  meta["version"] = "1";
  INK_ASSIGN_OR_RETURN(auto w, SafetensorsWriter::create(path, decls, meta));
  size_t i = 0;
  for (const auto& [name, e] : m.entries) {
    INK_RETURN_IF_ERROR(w->write(i++, 0, e.mean_sq.data(), e.mean_sq.size() * sizeof(float)));
    INK_RETURN_IF_ERROR(w->write(i++, 0, e.tokens.data(), e.tokens.size() * sizeof(int64_t)));
  }
  return w->finish();
}

Result<Imatrix> load_imatrix(const std::string& path) {
  auto f = SafetensorsFile::open(path);
  if (!f.ok()) return f.status().with_context("[imatrix] ");
  const SafetensorsFile& file = *f.value();
  auto fmt = file.metadata().find("format");
  if (fmt == file.metadata().end() || fmt->second != "inkling-imatrix")
    return Status::error("[imatrix] " + path +
                         ": not an importance matrix (metadata \"format\" is not "
                         "\"inkling-imatrix\"; make one with inkling quantize --calibrate)");
  Imatrix m;
  m.meta = file.metadata();
  std::map<std::string, const TensorInfo*> sq, tok;
  for (const TensorInfo& t : file.tensors()) {
    const std::string& n = t.name;
    if (ends_with(n, kSq))
      sq[n.substr(0, n.size() - std::strlen(kSq))] = &t;
    else if (ends_with(n, kTok))
      tok[n.substr(0, n.size() - std::strlen(kTok))] = &t;
    else
      return Status::error("[imatrix] " + path + ": " + n + ": not an imatrix tensor");
  }
  for (const auto& [name, t] : sq) {
    auto it = tok.find(name);
    if (it == tok.end())
      return Status::error("[imatrix] " + path + ": " + name + kTok + ": missing");
    const TensorInfo& c = *it->second;
    if (t->dtype != DType::F32 || t->shape.size() != 2 || t->shape[0] < 1 || t->shape[1] < 1)
      return Status::error("[imatrix] " + path + ": " + t->name + ": expected F32 [n, cols], got " +
                           dtype_name(t->dtype) + " " + t->shape_str());
    if (c.dtype != DType::I64 || c.shape.size() != 1 || c.shape[0] != t->shape[0])
      return Status::error("[imatrix] " + path + ": " + c.name + ": expected I64 [" +
                           std::to_string(t->shape[0]) + "], got " + dtype_name(c.dtype) + " " +
                           c.shape_str());
    ImatrixEntry e;
    e.n = t->shape[0];
    e.cols = t->shape[1];
    e.mean_sq.resize(size_t(e.n * e.cols));
    e.tokens.resize(size_t(e.n));
    std::memcpy(e.mean_sq.data(), t->data, e.mean_sq.size() * sizeof(float));
    std::memcpy(e.tokens.data(), c.data, e.tokens.size() * sizeof(int64_t));
    for (float v : e.mean_sq)
      if (!std::isfinite(v) || v < 0)
        return Status::error("[imatrix] " + path + ": " + t->name +
                             ": a value is negative or not finite");
    for (int64_t v : e.tokens)
      if (v < 0) return Status::error("[imatrix] " + path + ": " + c.name + ": a negative count");
    m.entries.emplace(name, std::move(e));
  }
  for (const auto& [name, t] : tok)
    if (!sq.count(name))
      return Status::error("[imatrix] " + path + ": " + name + kSq + ": missing");
  if (m.entries.empty()) return Status::error("[imatrix] " + path + ": holds no statistics");
  return m;
}

}  // namespace inkling
