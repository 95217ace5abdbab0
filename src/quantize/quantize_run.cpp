// run_quantize(): shard assignment, the DST.partial folder (lock, resume signature, leftovers),
// the shards, the index, the side files (tokenizer, chat template, ...), config.json last, and
// the final rename. The caller's cancel flag is checked by the producers between chunks.
#include "quantize/quantize_run.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/mapped_file.h"
#include "quantize/quantize_config.h"
#include "quantize/quantize_jobs.h"

namespace inkling::quant {

namespace fs = std::filesystem;

namespace {

// An exclusive lock on DST.partial/.lock, so two runs never write the same folder.
class FolderLock {
 public:
  ~FolderLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  Status lock(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) return Status::error("[quantize] " + path + ": " + std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0)
      return Status::error("[quantize] " + path +
                           ": another inkling quantize is writing this folder");
    return Status::success();
  }

 private:
  int fd_ = -1;
};

// FNV-1a 64 over everything that decides the output bytes: the tool version, the source files
// (path, size, modification time) and every output tensor with its shard and spec.
struct Hash {
  uint64_t h = 1469598103934665603ull;
  void add(const std::string& s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;
  }
  std::string hex() const {
    char b[17];
    std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(h));
    return b;
  }
};

std::string signature(const Source& src, const Plan& plan, const std::vector<Job>& jobs,
                      const std::vector<std::vector<size_t>>& shards, const RunOptions& o) {
  Hash h;
  h.add("inkling quantize v1");
  if (o.search) h.add("search " + o.imatrix_id);
  std::error_code ec;
  h.add(fs::absolute(src.dir, ec).string());
  for (const std::string& f : src.files) {
    struct stat st {};
    ::stat(f.c_str(), &st);
    h.add(f + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
          std::to_string(st.st_mtim.tv_nsec));
  }
  for (size_t s = 0; s < shards.size(); ++s)
    for (size_t j : shards[s]) {
      h.add("shard " + std::to_string(s));
      if (jobs[j].module)
        h.add(jobs[j].module->spec.str() +
              (jobs[j].rows.copyable(jobs[j].module->spec, jobs[j].module->float_dtype) ? " copy"
                                                                                        : ""));
      for (const TensorDecl& d : jobs[j].decls) {
        std::string t = d.name + " " + dtype_name(d.dtype);
        for (int64_t x : d.shape) t += " " + std::to_string(x);
        h.add(t);
      }
    }
  h.add(plan.recipe);
  return h.hex();
}

std::vector<std::vector<size_t>> assign_shards(const std::vector<Job>& jobs, uint64_t max_bytes) {
  std::vector<std::vector<size_t>> shards(1);
  uint64_t bytes = 0;
  for (size_t j = 0; j < jobs.size(); ++j) {
    if (!shards.back().empty() && bytes + jobs[j].bytes > max_bytes) {
      shards.emplace_back();
      bytes = 0;
    }
    shards.back().push_back(j);
    bytes += jobs[j].bytes;
  }
  return shards;
}

std::string shard_name(size_t i, size_t n) {
  if (n == 1) return "model.safetensors";
  char b[64];
  std::snprintf(b, sizeof b, "model-%05zu-of-%05zu.safetensors", i + 1, n);
  return b;
}

// Writes a small file atomically (temporary name, then rename).
Status write_text(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) return Status::error("[quantize] " + tmp + ": cannot write");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return Status::error("[quantize] " + path + ": cannot rename: " + std::strerror(errno));
  return Status::success();
}

// Files of the source folder that travel with the weights: tokenizer, chat template,
// generation config, licence, ... (everything but weights and the configs quantize rewrites).
bool side_file(const fs::path& p) {
  const std::string name = p.filename().string(), ext = p.extension().string();
  if (name.empty() || name[0] == '.') return false;
  for (const char* skip : {"config.json", "hf_quant_config.json", "model.safetensors.index.json"})
    if (name == skip) return false;
  for (const char* skip : {".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".gguf", ".h5",
                           ".msgpack", ".onnx", ".npz", ".tmp"})
    if (ext == skip) return false;
  return name.size() < 20 || name.compare(name.size() - 20, 20, ".safetensors.index.json") != 0;
}

Status copy_side_files(const std::string& src, const std::string& dst) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(src, ec)) {
    if (!e.is_regular_file() || !side_file(e.path())) continue;
    fs::copy_file(e.path(), dst + "/" + e.path().filename().string(),
                  fs::copy_options::overwrite_existing, ec);
    if (ec)
      return Status::error("[quantize] cannot copy " + e.path().string() + ": " + ec.message());
  }
  if (ec) return Status::error("[quantize] " + src + ": cannot list: " + ec.message());
  return Status::success();
}

void sync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

// Prepares DST.partial: locked, and either fresh or holding shards of this very run.
Status prepare_partial(const std::string& part, const std::string& sig, bool force,
                       FolderLock& lock, bool* resumed) {
  std::error_code ec;
  fs::create_directories(part, ec);
  if (ec) return Status::error("[quantize] " + part + ": cannot create: " + ec.message());
  INK_RETURN_IF_ERROR(lock.lock(part + "/.lock"));
  const std::string manifest = part + "/quantize.json";
  bool same = false, other = false;
  for (const auto& e : fs::directory_iterator(part, ec))
    if (e.path().filename() != ".lock") other = true;
  if (fs::exists(manifest, ec)) {
    auto text = read_text_file(manifest);
    const auto j = nlohmann::json::parse(text.ok() ? text.value() : "", nullptr, false);
    same = j.is_object() && j.value("signature", "") == sig;
  }
  if (other && !same) {
    if (!force)
      return Status::error("[quantize] " + part +
                           " holds an unfinished quantize of another source or other options: "
                           "delete it or pass --force");
    for (const auto& e : fs::directory_iterator(part, ec))
      if (e.path().filename() != ".lock") fs::remove_all(e.path(), ec);
  }
  for (const auto& e : fs::directory_iterator(part, ec))  // a shard cut short
    if (e.path().extension() == ".tmp") fs::remove(e.path(), ec);
  *resumed = same;
  return write_text(manifest, nlohmann::json{{"signature", sig}}.dump() + "\n");
}

}  // namespace

std::string partial_dir(const std::string& dst) {
  std::string d = dst;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  return d + ".partial";
}

Result<RunOutcome> run_quantize(const Source& src, Plan& plan, const RunOptions& o) {
  INK_ASSIGN_OR_RETURN(std::vector<Job> jobs, make_jobs(src, plan, o.dtype, o.keep_mtp));
  if (o.search) attach_importance(jobs, o.imatrix);
  const auto shards = assign_shards(jobs, o.max_shard_bytes);
  const std::string part = partial_dir(o.dst);
  std::string dst = part.substr(0, part.size() - 8);
  FolderLock lock;
  bool resumed = false;
  INK_RETURN_IF_ERROR(
      prepare_partial(part, signature(src, plan, jobs, shards, o), o.force, lock, &resumed));

  // Shards already finished by an interrupted run of this same command are kept.
  std::vector<bool> done(shards.size(), false);
  uint64_t todo_bytes = 0;
  int64_t todo_tensors = 0, n_done = 0;
  for (size_t s = 0; s < shards.size(); ++s) {
    std::vector<TensorDecl> decls;
    for (size_t j : shards[s])
      decls.insert(decls.end(), jobs[j].decls.begin(), jobs[j].decls.end());
    std::error_code ec;
    const std::string path = part + "/" + shard_name(s, shards.size());
    done[s] = resumed && fs::exists(path, ec) &&
              fs::file_size(path, ec) == safetensors_file_size(decls, {{"format", "mlx"}});
    if (done[s]) {
      ++n_done;
      continue;
    }
    for (size_t j : shards[s]) {
      todo_bytes += jobs[j].bytes;
      todo_tensors += int64_t(jobs[j].decls.size());
    }
  }
  if (n_done > 0 && o.notice)
    o.notice("resuming: " + std::to_string(n_done) + " of " + std::to_string(shards.size()) +
             " shards already written in " + part);

  static const std::atomic<bool> kNever{false};
  const std::atomic<bool>& stop = o.cancel ? *o.cancel : kNever;
  ThreadPool pool(o.threads);
  uint64_t done_bytes = 0;
  int64_t done_tensors = 0;
  if (o.progress) o.progress({0, todo_bytes, 0, todo_tensors});
  const ProgressFn report = [&](uint64_t b, int64_t t) {
    done_bytes += b;
    done_tensors += t;
    if (o.progress) o.progress({done_bytes, todo_bytes, done_tensors, todo_tensors});
  };
  const char* pause = std::getenv("INKLING_QUANTIZE_PAUSE_MS");  // test hook: slow down shards
  nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
  uint64_t total_size = 0;
  for (size_t s = 0; s < shards.size(); ++s) {
    std::vector<TensorDecl> decls;
    for (size_t j : shards[s])
      decls.insert(decls.end(), jobs[j].decls.begin(), jobs[j].decls.end());
    for (const TensorDecl& d : decls) {
      weight_map[d.name] = shard_name(s, shards.size());
      total_size += d.nbytes();
    }
    if (done[s]) continue;
    INK_ASSIGN_OR_RETURN(auto writer,
                         SafetensorsWriter::create(part + "/" + shard_name(s, shards.size()), decls,
                                                   {{"format", "mlx"}}));
    size_t first = 0;
    for (size_t j : shards[s]) {
      INK_RETURN_IF_ERROR(write_job(jobs[j], *writer, first, pool, stop, report));
      if (stop.load()) break;
      first += jobs[j].decls.size();
    }
    if (stop.load()) {
      writer->abandon();
      if (o.notice)
        o.notice("interrupted: " + std::to_string(n_done) + " of " + std::to_string(shards.size()) +
                 " shards are complete in " + part +
                 " (not loadable: it has no config.json); run the same command again to "
                 "resume, or delete it");
      return RunOutcome::kInterrupted;
    }
    INK_RETURN_IF_ERROR(writer->finish());
    ++n_done;
    if (pause) std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(pause)));
  }

  if (shards.size() > 1) {
    const nlohmann::ordered_json index = {{"metadata", {{"total_size", total_size}}},
                                          {"weight_map", weight_map}};
    INK_RETURN_IF_ERROR(write_text(part + "/model.safetensors.index.json", index.dump(2) + "\n"));
  }
  INK_RETURN_IF_ERROR(copy_side_files(src.dir, part));
  // config.json last: before it exists the folder does not load.
  INK_ASSIGN_OR_RETURN(std::string config,
                       output_config(src.config_text, src.config, quantization_json(plan)));
  std::error_code ec;
  fs::remove(part + "/quantize.json", ec);
  INK_RETURN_IF_ERROR(write_text(part + "/config.json", config));
  fs::remove(part + "/.lock", ec);
  sync_dir(part);
  if (fs::exists(dst, ec)) {  // --force: swap, then drop the old folder
    const std::string old = dst + ".old-" + std::to_string(::getpid());
    fs::rename(dst, old, ec);
    if (ec)
      return Status::error("[quantize] cannot move the old " + dst + " aside: " + ec.message());
    fs::rename(part, dst, ec);
    if (ec)
      return Status::error("[quantize] cannot rename " + part + " to " + dst + ": " + ec.message());
    fs::remove_all(old, ec);
  } else {
    fs::rename(part, dst, ec);
    if (ec)
      return Status::error("[quantize] cannot rename " + part + " to " + dst + ": " + ec.message());
  }
  return RunOutcome::kDone;
}

}  // namespace inkling::quant
