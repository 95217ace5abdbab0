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
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile() = default;
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// Reads a whole (small) file into a string: configs, indexes, templates.
Result<std::string> read_text_file(const std::string& path);

}  // namespace inkling
