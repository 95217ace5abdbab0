// SafetensorsWriter: header layout (declaration order, header padded with spaces to a multiple
// of 8 bytes), positional writes, byte accounting and the rename that publishes the file.
#include "base/safetensors_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

#include <nlohmann/json.hpp>

namespace inkling {

uint64_t TensorDecl::nbytes() const {
  uint64_t n = dtype_size(dtype);
  for (int64_t d : shape) n *= uint64_t(d);
  return n;
}

namespace {

// The header text, padded so the data start at a multiple of 8 bytes (as the safetensors crate
// writes it), and each tensor's offset relative to the data start.
std::string header_text(const std::vector<TensorDecl>& tensors,
                        const std::map<std::string, std::string>& metadata,
                        std::vector<uint64_t>* offsets) {
  nlohmann::ordered_json h = nlohmann::ordered_json::object();
  if (!metadata.empty()) h["__metadata__"] = metadata;
  uint64_t off = 0;
  for (const TensorDecl& t : tensors) {
    const uint64_t n = t.nbytes();
    h[t.name] = {
        {"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {off, off + n}}};
    if (offsets) offsets->push_back(off);
    off += n;
  }
  std::string text = h.dump();
  text.append((8 - (8 + text.size()) % 8) % 8, ' ');
  return text;
}

Status pwrite_all(int fd, const void* data, size_t n, uint64_t at, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::pwrite(fd, p, n, off_t(at));
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status::error(path + ": write failed: " + std::strerror(errno));
    }
    p += w;
    n -= size_t(w);
    at += uint64_t(w);
  }
  return Status::success();
}

}  // namespace

uint64_t safetensors_file_size(const std::vector<TensorDecl>& tensors,
                               const std::map<std::string, std::string>& metadata) {
  uint64_t data = 0;
  for (const TensorDecl& t : tensors) data += t.nbytes();
  return 8 + header_text(tensors, metadata, nullptr).size() + data;
}

Result<std::unique_ptr<SafetensorsWriter>> SafetensorsWriter::create(
    const std::string& path, std::vector<TensorDecl> tensors,
    const std::map<std::string, std::string>& metadata) {
  std::set<std::string> names;
  for (const TensorDecl& t : tensors) {
    if (t.name.empty() || t.name == "__metadata__")
      return Status::error(path + ": invalid tensor name '" + t.name + "'");
    if (!names.insert(t.name).second)
      return Status::error(path + ": tensor '" + t.name + "' declared twice");
    for (int64_t d : t.shape)
      if (d < 0) return Status::error(path + ": tensor '" + t.name + "' has a negative dimension");
  }
  std::unique_ptr<SafetensorsWriter> w(new SafetensorsWriter());
  w->path_ = path;
  w->tmp_path_ = path + ".tmp";
  std::vector<uint64_t> rel;
  const std::string header = header_text(tensors, metadata, &rel);
  const uint64_t data_start = 8 + header.size();
  uint64_t data = 0;
  for (const TensorDecl& t : tensors) data += t.nbytes();
  w->file_size_ = data_start + data;
  for (uint64_t r : rel) w->begin_.push_back(data_start + r);
  w->written_.reset(new std::atomic<uint64_t>[tensors.size()]);
  for (size_t i = 0; i < tensors.size(); ++i) w->written_[i] = 0;
  w->tensors_ = std::move(tensors);

  w->fd_ = ::open(w->tmp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (w->fd_ < 0) return Status::error(w->tmp_path_ + ": cannot create: " + std::strerror(errno));
  if (::ftruncate(w->fd_, off_t(w->file_size_)) != 0)
    return Status::error(w->tmp_path_ + ": cannot size to " + std::to_string(w->file_size_) +
                         " bytes: " + std::strerror(errno));
  std::string head(8, '\0');
  const uint64_t hlen = header.size();
  std::memcpy(head.data(), &hlen, 8);
  head += header;
  INK_RETURN_IF_ERROR(pwrite_all(w->fd_, head.data(), head.size(), 0, w->tmp_path_));
  return w;
}

SafetensorsWriter::~SafetensorsWriter() {
  if (!finished_) abandon();
}

Status SafetensorsWriter::write(size_t index, uint64_t offset, const void* data, size_t n) {
  INK_CHECK(index < tensors_.size());
  if (fd_ < 0) return Status::error(tmp_path_ + ": write after the file was closed");
  if (offset + n > tensors_[index].nbytes())
    return Status::error(tmp_path_ + ": write of " + std::to_string(n) + " bytes at " +
                         std::to_string(offset) + " runs past the end of tensor '" +
                         tensors_[index].name + "'");
  INK_RETURN_IF_ERROR(pwrite_all(fd_, data, n, begin_[index] + offset, tmp_path_));
  written_[index] += n;
  return Status::success();
}

Status SafetensorsWriter::finish() {
  if (fd_ < 0) return Status::error(tmp_path_ + ": finish after the file was closed");
  for (size_t i = 0; i < tensors_.size(); ++i)
    if (written_[i] != tensors_[i].nbytes())
      return Status::error(tmp_path_ + ": tensor '" + tensors_[i].name + "' received " +
                           std::to_string(written_[i].load()) + " of its " +
                           std::to_string(tensors_[i].nbytes()) + " bytes");
  if (::fsync(fd_) != 0)
    return Status::error(tmp_path_ + ": fsync failed: " + std::strerror(errno));
  if (::close(fd_) != 0) {
    fd_ = -1;
    return Status::error(tmp_path_ + ": close failed: " + std::strerror(errno));
  }
  fd_ = -1;
  if (std::rename(tmp_path_.c_str(), path_.c_str()) != 0)
    return Status::error(tmp_path_ + ": cannot rename to " + path_ + ": " + std::strerror(errno));
  finished_ = true;
  return Status::success();
}

void SafetensorsWriter::abandon() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!finished_) ::unlink(tmp_path_.c_str());
  finished_ = true;
}

}  // namespace inkling
