// Header validation (length, JSON, dtypes, shapes, offsets in bounds, no overlap, byte sizes)
// and shard discovery for model folders.
#include "base/safetensors.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <set>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/json_limits.h"

namespace inkling {

using nlohmann::json;

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string TensorInfo::shape_str() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

namespace {

Status parse_entry(const std::string& name, const json& e, size_t data_size, size_t max_rank,
                   TensorInfo* t) {
  auto err = [&](const std::string& what) {
    return Status::error("tensor '" + name + "': " + what);
  };
  if (!e.is_object()) return err("entry is not an object");
  if (!e.contains("dtype") || !e["dtype"].is_string()) return err("missing or non-string dtype");
  const auto dt = parse_dtype(e["dtype"].get<std::string>());
  if (!dt) return err("unknown dtype '" + e["dtype"].get<std::string>() + "'");
  t->dtype = *dt;
  if (!e.contains("shape") || !e["shape"].is_array()) return err("missing or non-array shape");
  if (e["shape"].size() > max_rank)
    return err("shape has " + std::to_string(e["shape"].size()) + " dimensions (limit " +
               std::to_string(max_rank) + ")");
  // Both the element count and the product of the non-zero dimensions must fit (with room for
  // the element size), so no later shape arithmetic on a zero-sized tensor can overflow either.
  uint64_t numel = 1, nonzero = 1;
  for (const auto& d : e["shape"]) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0)
      return err("shape entries must be non-negative integers");
    const uint64_t v = d.get<uint64_t>();
    if (v != 0 && nonzero > std::numeric_limits<uint64_t>::max() / 16 / v)
      return err("shape too large: the product of its dimensions overflows");
    if (v != 0) nonzero *= v;
    numel *= v;
    t->shape.push_back(int64_t(v));
  }
  const auto& off = e.contains("data_offsets") ? e["data_offsets"] : json();
  if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
      !off[1].is_number_unsigned())
    return err("data_offsets must be two non-negative integers");
  const uint64_t begin = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
  if (begin > end) return err("data_offsets begin > end");
  if (end > data_size)
    return err("data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
               ") past the end of the data (" + std::to_string(data_size) + " bytes)");
  const uint64_t want = numel * dtype_size(t->dtype);
  if (end - begin != want)
    return err("byte size " + std::to_string(end - begin) + " != " + std::to_string(want) + " (" +
               dtype_name(t->dtype) + " x " + t->shape_str() + ")");
  t->nbytes = size_t(want);
  t->data = reinterpret_cast<const uint8_t*>(begin);  // rebased by the caller
  return Status::success();
}

}  // namespace

Result<std::shared_ptr<SafetensorsFile>> SafetensorsFile::open(const std::string& path) {
  INK_ASSIGN_OR_RETURN(auto mf, MappedFile::open(path));
  return parse(std::move(mf));
}

Result<std::shared_ptr<SafetensorsFile>> SafetensorsFile::parse(std::shared_ptr<MappedFile> mf,
                                                                const SafetensorsLimits& limits) {
  const std::string& path = mf->path();
  auto err = [&](const std::string& what) { return Status::error(path + ": " + what); };
  const size_t size = mf->size();
  if (size < 8) return err("truncated: " + std::to_string(size) + " bytes, no header length");
  uint64_t hlen = 0;
  std::memcpy(&hlen, mf->data(), 8);
  if (hlen > limits.max_header_bytes)
    return err("header length " + std::to_string(hlen) + " exceeds the limit of " +
               std::to_string(limits.max_header_bytes) + " bytes");
  if (hlen > size - 8)
    return err("header length " + std::to_string(hlen) + " runs past the end of the file (" +
               std::to_string(size) + " bytes)");
  const std::string_view text(reinterpret_cast<const char*>(mf->data()) + 8, size_t(hlen));
  INK_RETURN_IF_ERROR(check_json_depth(text, path + ": header"));
  json header;
  try {
    header = json::parse(mf->data() + 8, mf->data() + 8 + hlen);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number like 1e400
    return err(std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) return err("header is not a JSON object");
  const size_t n_tensors = header.size() - header.count("__metadata__");
  if (n_tensors > limits.max_tensors)
    return err("header lists " + std::to_string(n_tensors) + " tensors (limit " +
               std::to_string(limits.max_tensors) + ")");

  auto f = std::shared_ptr<SafetensorsFile>(new SafetensorsFile());
  f->file_ = mf;
  const uint8_t* base = mf->data() + 8 + hlen;
  const size_t data_size = size - 8 - size_t(hlen);
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (it.value().is_null()) continue;  // mx.save_safetensors writes null without metadata
      if (!it.value().is_object()) return err("__metadata__ is not an object");
      for (auto m = it.value().begin(); m != it.value().end(); ++m)
        if (m.value().is_string()) f->metadata_[m.key()] = m.value().get<std::string>();
      continue;
    }
    TensorInfo t;
    t.name = it.key();
    if (Status s = parse_entry(t.name, it.value(), data_size, limits.max_rank, &t); !s)
      return s.with_context(path + ": ");
    t.data = base + reinterpret_cast<uintptr_t>(t.data);
    f->tensors_.push_back(std::move(t));
  }
  // Offsets must not overlap (zero-sized tensors may sit anywhere).
  std::vector<const TensorInfo*> order;
  for (const auto& t : f->tensors_)
    if (t.nbytes) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->data < b->data; });
  for (size_t i = 1; i < order.size(); ++i)
    if (order[i - 1]->data + order[i - 1]->nbytes > order[i]->data)
      return err("tensors '" + order[i - 1]->name + "' and '" + order[i]->name + "' overlap");
  for (auto& t : f->tensors_) t.file = &f->file_->path();
  return f;
}

Status TensorStore::add(std::shared_ptr<SafetensorsFile> f) {
  for (const auto& t : f->tensors()) {
    auto [it, fresh] = by_name_.emplace(t.name, &t);
    if (!fresh)
      return Status::error("tensor '" + t.name + "' appears in both " + *it->second->file +
                           " and " + f->path());
  }
  files_.push_back(std::move(f));
  return Status::success();
}

Result<TensorStore> TensorStore::from_files(const std::vector<std::string>& paths) {
  TensorStore store;
  for (const auto& p : paths) {
    INK_ASSIGN_OR_RETURN(auto f, SafetensorsFile::open(p));
    INK_RETURN_IF_ERROR(store.add(std::move(f)));
  }
  return store;
}

Result<TensorStore> TensorStore::open_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  const std::string index_path = dir + "/model.safetensors.index.json";
  std::error_code ec;
  if (fs::exists(index_path, ec)) {
    INK_ASSIGN_OR_RETURN(std::string text, read_text_file(index_path));
    INK_RETURN_IF_ERROR(check_json_depth(text, index_path));
    json idx = json::parse(text, nullptr, false);
    if (idx.is_discarded() || !idx.is_object() || !idx.contains("weight_map") ||
        !idx["weight_map"].is_object())
      return Status::error(index_path + ": not a JSON object with a 'weight_map' object");
    std::set<std::string> shards;
    for (auto it = idx["weight_map"].begin(); it != idx["weight_map"].end(); ++it) {
      if (!it.value().is_string())
        return Status::error(index_path + ": weight_map['" + it.key() + "'] is not a string");
      const std::string shard = it.value().get<std::string>();
      if (shard.find('/') != std::string::npos || shard.find("..") != std::string::npos)
        return Status::error(index_path + ": weight_map['" + it.key() +
                             "'] names a file outside the folder: " + shard);
      shards.insert(shard);
    }
    std::vector<std::string> paths;
    for (const auto& s : shards) paths.push_back(dir + "/" + s);
    INK_ASSIGN_OR_RETURN(TensorStore store, from_files(paths));
    for (auto it = idx["weight_map"].begin(); it != idx["weight_map"].end(); ++it) {
      const TensorInfo* t = store.find(it.key());
      if (!t)
        return Status::error(index_path + ": tensor '" + it.key() + "' is not in " +
                             it.value().get<std::string>());
    }
    return store;
  }
  std::vector<std::string> paths;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".safetensors") paths.push_back(e.path().string());
  if (ec) return Status::error(dir + ": cannot list folder: " + ec.message());
  if (paths.empty())
    return Status::error(dir + ": no model.safetensors, index or *.safetensors file");
  std::sort(paths.begin(), paths.end());
  return from_files(paths);
}

const TensorInfo* TensorStore::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

}  // namespace inkling
