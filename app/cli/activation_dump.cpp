// ActivationDump (see activation_dump.h).
#include "activation_dump.h"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "base/npy.h"

namespace inkling::cli {

ActivationDump::Tensor& ActivationDump::slot(std::string_view name, std::span<const int64_t> shape,
                                             bool ids) {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) {
    it = tensors_.emplace(std::string(name), Tensor{}).first;
    it->second.shape.assign(shape.begin(), shape.end());
    it->second.shape[0] = 0;
    it->second.ids = ids;
    order_.emplace_back(name);
  }
  Tensor& t = it->second;
  // Later passes must agree on every dimension but the rows.
  INK_CHECK(t.ids == ids && t.shape.size() == shape.size() &&
            std::equal(shape.begin() + 1, shape.end(), t.shape.begin() + 1));
  t.shape[0] += shape[0];
  return t;
}

namespace {
size_t count(std::span<const int64_t> shape) {
  size_t n = 1;
  for (int64_t d : shape) n *= size_t(d);
  return n;
}
}  // namespace

void ActivationDump::on_tensor(std::string_view name, std::span<const int64_t> shape,
                               const float* data) {
  if (shape.empty()) return;
  Tensor& t = slot(name, shape, false);
  t.f.insert(t.f.end(), data, data + count(shape));
}

void ActivationDump::on_ids(std::string_view name, std::span<const int64_t> shape,
                            const int32_t* data) {
  if (shape.empty()) return;
  Tensor& t = slot(name, shape, true);
  t.i.insert(t.i.end(), data, data + count(shape));
}

Status ActivationDump::write(const std::string& dir, const std::vector<int32_t>& ids) const {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::error("--dump-activations " + dir + ": " + ec.message());
  nlohmann::ordered_json arrays = nlohmann::ordered_json::object();
  for (const std::string& name : order_) {
    const Tensor& t = tensors_.find(name)->second;
    const std::string path = dir + "/" + name + ".npy";
    INK_RETURN_IF_ERROR(t.ids ? write_npy_i32(path, t.i.data(), t.shape)
                              : write_npy_f32(path, t.f.data(), t.shape));
    arrays[name] = t.shape;
  }
  const nlohmann::ordered_json manifest = {{"ids", ids}, {"arrays", arrays}};
  std::ofstream out(dir + "/manifest.json");
  out << manifest.dump(1) << "\n";
  if (!out) return Status::error("--dump-activations " + dir + "/manifest.json: write failed");
  return Status::success();
}

}  // namespace inkling::cli
