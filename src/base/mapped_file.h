// A read-only memory-mapped file (RAII). Checkpoint tensors are views into these mappings;
// nothing is copied at load.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "inkling/status.h"

namespace inkling {

class MappedFile {
 public:
  static Result<std::shared_ptr<MappedFile>> open(const std::string& path);
  // An in-memory image under a display name (tests and fuzzers parse bytes without a file).
  static std::shared_ptr<MappedFile> from_bytes(std::string path, std::string bytes);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const {
    return data_ ? data_ : reinterpret_cast<const uint8_t*>(owned_.data());
  }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile() = default;
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string owned_;  // from_bytes(): the image itself (nothing is mapped)
};

// Reads a whole (small) regular file into a string: configs, indexes, templates, tokenizers.
// Errors name the path: "no such file", "is a directory, expected a file", "not a regular file"
// (a FIFO would block the read for ever), "cannot open: <reason>", "read error".
Result<std::string> read_text_file(const std::string& path);

}  // namespace inkling
