// mmap-backed MappedFile and the small-file reader.
#include "base/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <vector>

namespace inkling {

namespace {
// The live file mappings, for locate_mapped() (a few dozen at most: one per checkpoint shard).
std::mutex g_maps_mu;
std::vector<const MappedFile*> g_maps;
}  // namespace

std::optional<FileSpot> locate_mapped(const void* p) {
  const auto* b = static_cast<const uint8_t*>(p);
  std::lock_guard<std::mutex> lock(g_maps_mu);
  for (const MappedFile* f : g_maps)
    if (b >= f->data_ && b < f->data_ + f->size_)
      return FileSpot{f->device_, f->inode_, uint64_t(b - f->data_)};
  return std::nullopt;
}

Result<std::shared_ptr<MappedFile>> MappedFile::open(const std::string& path) {
  // O_NONBLOCK: opening a FIFO would otherwise wait for a writer (for ever); it is refused below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return Status::error(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::error(path + ": not a regular file");
  }
  std::shared_ptr<MappedFile> f(new MappedFile());
  f->path_ = path;
  f->size_ = size_t(st.st_size);
  if (f->size_ > 0) {
    void* p = ::mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      return Status::error(path + ": mmap failed: " + std::strerror(errno));
    }
    f->data_ = static_cast<const uint8_t*>(p);
    f->device_ = uint64_t(st.st_dev);
    f->inode_ = uint64_t(st.st_ino);
    std::lock_guard<std::mutex> lock(g_maps_mu);
    g_maps.push_back(f.get());
  }
  ::close(fd);
  return f;
}

std::shared_ptr<MappedFile> MappedFile::from_bytes(std::string path, std::string bytes) {
  std::shared_ptr<MappedFile> f(new MappedFile());
  f->path_ = std::move(path);
  f->owned_ = std::move(bytes);
  f->size_ = f->owned_.size();
  return f;
}

MappedFile::~MappedFile() {
  if (!data_) return;
  {
    std::lock_guard<std::mutex> lock(g_maps_mu);
    std::erase(g_maps, this);
  }
  ::munmap(const_cast<uint8_t*>(data_), size_);
}

Result<std::string> read_text_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return Status::error(path + (errno == ENOENT
                                     ? std::string(": no such file")
                                     : ": cannot open: " + std::string(std::strerror(errno))));
  if (S_ISDIR(st.st_mode)) return Status::error(path + ": is a directory, expected a file");
  // A FIFO would block the read until a writer comes (for ever); devices and sockets are no files.
  if (!S_ISREG(st.st_mode)) return Status::error(path + ": not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::error(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status::error(path + ": read error");
  return ss.str();
}

}  // namespace inkling
