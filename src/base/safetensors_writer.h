// safetensors writer: the tensors of a file are declared up front, so the header (every offset)
// is written first and tensor bytes can then arrive in any order, at any offset inside their
// tensor (pwrite). A producer streams rows without ever holding a whole tensor. The file is
// written as "<path>.tmp" and renamed to <path> by finish(), so no reader sees a partial file.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "inkling/status.h"

namespace inkling {

struct TensorDecl {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;

  uint64_t nbytes() const;
};

// Byte size of the file the writer produces for these tensors (header included).
uint64_t safetensors_file_size(const std::vector<TensorDecl>& tensors,
                               const std::map<std::string, std::string>& metadata);

class SafetensorsWriter {
 public:
  // Creates "<path>.tmp" at its final size and writes the header. Tensor data follow in
  // declaration order, each at an offset that is a multiple of 8 bytes from the data start only
  // when the sizes before it are (safetensors does not align tensors; the header is padded to a
  // multiple of 8). Fails on a duplicate or empty name, or when the file cannot be written.
  static Result<std::unique_ptr<SafetensorsWriter>> create(
      const std::string& path, std::vector<TensorDecl> tensors,
      const std::map<std::string, std::string>& metadata = {});
  ~SafetensorsWriter();  // an unfinished file is removed
  SafetensorsWriter(const SafetensorsWriter&) = delete;
  SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;

  const std::vector<TensorDecl>& tensors() const { return tensors_; }
  // Writes bytes [offset, offset + n) of tensor `index` (its declaration position). Thread-safe
  // for disjoint ranges.
  Status write(size_t index, uint64_t offset, const void* data, size_t n);
  // Checks that every tensor received exactly its byte count, flushes to disk and renames the
  // file into place.
  Status finish();
  // Removes the temporary file (also done by the destructor when finish() was not reached).
  void abandon();

  const std::string& path() const { return path_; }
  uint64_t file_size() const { return file_size_; }

 private:
  SafetensorsWriter() = default;
  std::string path_, tmp_path_;
  int fd_ = -1;
  bool finished_ = false;
  std::vector<TensorDecl> tensors_;
  std::vector<uint64_t> begin_;  // absolute file offset of each tensor's first byte
  std::unique_ptr<std::atomic<uint64_t>[]> written_;  // bytes received per tensor
  uint64_t file_size_ = 0;
};

}  // namespace inkling
