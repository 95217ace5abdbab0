// A read-only memory-mapped file (RAII). Checkpoint tensors are views into these mappings;
// nothing is copied at load.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "inkling/status.h"

namespace inkling {

// Where a byte of a live mapping made by MappedFile::open() lies: the file's identity (device and
// inode, so two mappings of one file agree whatever path opened them) and the offset in it.
// Lets two loads of one checkpoint in a process name the same weight (quantize calibration).
struct FileSpot {
  uint64_t device = 0, inode = 0, offset = 0;
  bool operator<(const FileSpot& o) const {
    return device != o.device ? device < o.device
           : inode != o.inode ? inode < o.inode
                              : offset < o.offset;
  }
  bool operator==(const FileSpot& o) const = default;
};

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
  uint64_t device_ = 0, inode_ = 0;
  friend std::optional<FileSpot> locate_mapped(const void* p);
};

// Empty when p is not inside a file mapping of this process.
std::optional<FileSpot> locate_mapped(const void* p);

// Reads a whole (small) regular file into a string: configs, indexes, templates, tokenizers.
// Errors name the path: "no such file", "is a directory, expected a file", "not a regular file"
// (a FIFO would block the read for ever), "cannot open: <reason>", "read error".
Result<std::string> read_text_file(const std::string& path);

}  // namespace inkling
