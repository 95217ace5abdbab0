// safetensors reader: validates a file's header completely before any tensor data is touched,
// then exposes zero-copy views into the memory mapping. TensorStore gathers the tensors of a
// model folder (one file, an index with shards, or every *.safetensors file in the folder).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/mapped_file.h"
#include "inkling/status.h"

namespace inkling {

// Limits on one file's header, far above any real checkpoint (the Rust safetensors crate also
// caps headers at 100 MB); each is a clear error instead of a huge allocation. Tests lower them.
struct SafetensorsLimits {
  uint64_t max_header_bytes = 100'000'000;
  size_t max_tensors = 1'000'000;
  size_t max_rank = 16;  // dimensions per tensor
};

struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;  // into the file mapping; valid while the file lives
  size_t nbytes = 0;
  const std::string* file = nullptr;  // path of the file holding it (for messages)

  int64_t numel() const;
  std::string shape_str() const;  // "[4, 8]"
};

class SafetensorsFile {
 public:
  // Fails with "<path>: <what is wrong>" on any malformed header.
  static Result<std::shared_ptr<SafetensorsFile>> open(const std::string& path);
  // Parses an in-memory image (used by open() and by tests); `file` keeps the bytes alive.
  static Result<std::shared_ptr<SafetensorsFile>> parse(std::shared_ptr<MappedFile> file,
                                                        const SafetensorsLimits& limits = {});

  const std::string& path() const { return file_->path(); }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  std::shared_ptr<MappedFile> file_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

class TensorStore {
 public:
  static Result<TensorStore> open_dir(const std::string& dir);
  static Result<TensorStore> from_files(const std::vector<std::string>& paths);

  const TensorInfo* find(const std::string& name) const;
  const std::map<std::string, const TensorInfo*>& all() const { return by_name_; }
  const std::vector<std::shared_ptr<SafetensorsFile>>& files() const { return files_; }

 private:
  Status add(std::shared_ptr<SafetensorsFile> f);
  std::vector<std::shared_ptr<SafetensorsFile>> files_;
  std::map<std::string, const TensorInfo*> by_name_;
};

}  // namespace inkling
