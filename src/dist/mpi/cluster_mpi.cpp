// Cluster over MPI: the handshake (fingerprints), rank 0's executor (nonblocking sends and
// receives with a deadline, combine in gate order) and the expert servers of ranks > 0.
// Messages (MPI_COMM_WORLD): kHello r -> 0 {fingerprint, host, numerics, error}; kGo 0 -> r {go};
// kRequest 0 -> r {layer, rows, k, H, ids [rows, k], rows [rows, H] f32} (layer -1 = stop);
// kReply r -> 0 {the owned slots' expert outputs, row-major in (row, j) order, [slots, H] f32}.
#include <mpi.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "base/thread_pool.h"
#include "dist/cluster.h"
#include "dist/expert_plan.h"
#include "model/model.h"
#include "model/weights.h"
#include "ops/machine_hwy.h"

namespace inkling::dist {

namespace {

constexpr int kHello = 11, kGo = 12, kRequest = 13, kReply = 14;
constexpr int32_t kStopLayer = -1, kEchoLayer = -2;  // request "layers": stop; reply at once

struct Hello {
  uint64_t fingerprint = 0;
  int32_t ok = 0;
  char host[64] = {};
  char dir[256] = {};     // the model folder as that rank was given it
  char simd[32] = {};     // the SIMD target its kernels run (another one may round differently)
  char numerics[8] = {};  // the numerics mode its kernels were bound for ("fast" / "exact")
  char error[512] = {};
};

struct RequestHeader {
  int32_t layer = kStopLayer, rows = 0, k = 0, hidden = 0;
};

using Clock = std::chrono::steady_clock;

std::string mpi_error(int rc) {
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, buf, &len);
  return std::string(buf, size_t(len));
}

// Ends the whole job (mpirun ends the other ranks and exits non-zero). Should the abort itself
// hang on a broken runtime, the alarm ends this process.
[[noreturn]] void abort_job() {
  alarm(10);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);
}

// A failure of the cluster mid-forward: the forward pass cannot return a Status, and waiting
// would hang, so rank 0 reports and aborts the job.
[[noreturn]] void die(const std::string& msg) {
  std::fprintf(stderr, "error: [expert-parallel] %s\n", msg.c_str());
  std::fflush(stderr);
  abort_job();
}

// How a rank waits between polls (MPI makes progress only inside its calls, so a message in
// flight, e.g. a large one in shared-memory fragments, needs frequent polls): spin at first,
// then yield the core for up to 1 ms, then poll every 20 us (a rank idle for long, e.g. an
// expert server while rank 0 runs attention, leaves the cores to the ranks that share them).
class Backoff {
 public:
  void pause() {
    if (++spins_ < 2000) return;
    if (Clock::now() - since_ < std::chrono::milliseconds(1))
      sched_yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(20));
  }

 private:
  int spins_ = 0;
  Clock::time_point since_ = Clock::now();
};

// Waits for one request: spins briefly (low latency), then backs off so that a waiting
// rank leaves the CPU to the ranks sharing its cores. false on deadline; dies on an MPI error.
bool wait_until(MPI_Request* req, Clock::time_point deadline, const char* what, int peer) {
  for (Backoff b;; b.pause()) {
    int done = 0;
    const int rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS)
      die(std::string(what) + " rank " + std::to_string(peer) + ": " + mpi_error(rc));
    if (done) return true;
    if (Clock::now() > deadline) return false;
  }
}

class MpiCluster;

class MpiExecutor final : public ExpertExecutor {
 public:
  MpiExecutor(int n_ranks, double timeout_s) : n_(n_ranks), timeout_s_(timeout_s) {}
  void run(const MoeWeights& w, const float* m, int64_t T, int64_t H, const int32_t* idx,
           const float* weight, int k, float* out, ThreadPool* pool) override;
  // --ep-stats: what the exchanges cost, decode calls (one row) and the others apart.
  void print_stats() const;
  // The same exchange of T rows with random routing over E experts, answered at once by the
  // other ranks (no expert runs anywhere): the transport's share. Median seconds of `iters`.
  double time_echo(int64_t T, int64_t H, int E, int k, int iters);

 private:
  void exchange(int layer, const std::vector<SwiGluWeights>* routed, int E, const float* m,
                int64_t T, int64_t H, const int32_t* idx, const float* weight, int k, float* out,
                ThreadPool* pool);
  struct Stats {
    int64_t calls = 0, rows = 0, messages = 0;
    double bytes_out = 0, bytes_back = 0;
    double total_s = 0, local_s = 0, wait_s = 0;  // in run(); this rank's experts; waiting after
  } st_[2];                                       // [0]: one-row (decode) calls, [1]: the others
  int n_;
  double timeout_s_;
  std::mutex mu_;  // one exchange at a time (the MPI tags do not tell two apart)
  std::vector<float> y_;
  std::vector<int32_t> place_;
  std::vector<std::vector<char>> send_;
  std::vector<std::vector<float>> recv_;
  std::vector<std::vector<int32_t>> rows_;  // per rank: the rows it gets, ascending
  ExpertBuffers buf_;
};

void MpiExecutor::run(const MoeWeights& w, const float* m, int64_t T, int64_t H, const int32_t* idx,
                      const float* weight, int k, float* out, ThreadPool* pool) {
  std::lock_guard<std::mutex> lk(mu_);
  exchange(w.layer, &w.routed, int(w.routed.size()), m, T, H, idx, weight, k, out, pool);
}

double MpiExecutor::time_echo(int64_t T, int64_t H, int E, int k, int iters) {
  std::lock_guard<std::mutex> lk(mu_);
  iters = std::max(iters, 1);
  std::vector<float> m(size_t(T * H), 1.f);
  std::vector<int32_t> idx(size_t((iters + 1) * T * k));  // a fresh routing per exchange
  uint64_t x = 88172645463325252ull;
  for (int64_t t = 0; t < (iters + 1) * T; ++t)  // k distinct experts per row, ascending
    for (int j = 0; j < k;) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      const int32_t e = int32_t(x % uint64_t(E));
      int32_t* row = idx.data() + t * k;
      if (std::find(row, row + j, e) != row + j) continue;
      row[j++] = e;
      std::sort(row, row + j);
    }
  auto one = [&](int i) {
    exchange(kEchoLayer, nullptr, E, m.data(), T, H, idx.data() + int64_t(i) * T * k, nullptr, k,
             nullptr, nullptr);
  };
  one(iters);  // warm-up
  std::vector<double> t(static_cast<size_t>(iters));
  for (int i = 0; i < iters; ++i) {
    const auto t0 = Clock::now();
    one(i);
    t[size_t(i)] = std::chrono::duration<double>(Clock::now() - t0).count();
  }
  std::nth_element(t.begin(), t.begin() + iters / 2, t.end());
  return t[size_t(iters / 2)];  // the median: robust to a rank losing its core for a while
}

// routed == nullptr: an echo (nothing runs here, nothing is combined, no statistics).
void MpiExecutor::exchange(int layer, const std::vector<SwiGluWeights>* routed, int E,
                           const float* m, int64_t T, int64_t H, const int32_t* idx,
                           const float* weight, int k, float* out, ThreadPool* pool) {
  const auto t_start = Clock::now();
  Stats& st = st_[T == 1 ? 0 : 1];
  send_.resize(size_t(n_)), recv_.resize(size_t(n_)), rows_.resize(size_t(n_));
  std::vector<MPI_Request> sreq(size_t(n_), MPI_REQUEST_NULL), rreq(size_t(n_), MPI_REQUEST_NULL);
  std::vector<int64_t> slots(size_t(n_), 0);
  for (int r = 1; r < n_; ++r) rows_[size_t(r)].clear();
  for (int64_t t = 0; t < T; ++t)
    for (int r = 1; r < n_; ++r) {
      int owned = 0;
      for (int j = 0; j < k; ++j) owned += expert_owner(idx[t * k + j], n_) == r;
      if (owned) rows_[size_t(r)].push_back(int32_t(t)), slots[size_t(r)] += owned;
    }
  // Post every exchange first, then run this rank's experts while the others run theirs.
  for (int r = 1; r < n_; ++r) {
    const std::vector<int32_t>& rows = rows_[size_t(r)];
    if (rows.empty()) continue;
    if (int64_t(rows.size()) * (k + H) * 4 + 16 > INT32_MAX || slots[size_t(r)] * H > INT32_MAX)
      die("a message for rank " + std::to_string(r) + " would exceed MPI's 2^31 element count (" +
          std::to_string(T) + " rows): use a smaller prefill chunk");
    const RequestHeader hd{layer, int32_t(rows.size()), k, int32_t(H)};
    std::vector<char>& b = send_[size_t(r)];
    b.resize(sizeof hd + rows.size() * size_t(k) * 4 + rows.size() * size_t(H) * 4);
    char* p = b.data();
    std::memcpy(p, &hd, sizeof hd), p += sizeof hd;
    for (int32_t t : rows) std::memcpy(p, idx + int64_t(t) * k, size_t(k) * 4), p += k * 4;
    for (int32_t t : rows) std::memcpy(p, m + int64_t(t) * H, size_t(H) * 4), p += H * 4;
    std::vector<float>& rb = recv_[size_t(r)];
    rb.resize(size_t(slots[size_t(r)] * H));
    int rc = MPI_Irecv(rb.data(), int(rb.size()), MPI_FLOAT, r, kReply, MPI_COMM_WORLD,
                       &rreq[size_t(r)]);
    if (rc == MPI_SUCCESS)
      rc = MPI_Isend(b.data(), int(b.size()), MPI_BYTE, r, kRequest, MPI_COMM_WORLD,
                     &sreq[size_t(r)]);
    if (rc != MPI_SUCCESS)
      die("sending layer " + std::to_string(layer) + " to rank " + std::to_string(r) + ": " +
          mpi_error(rc));
    st.messages += 2, st.bytes_out += double(b.size()), st.bytes_back += double(rb.size()) * 4;
  }
  const auto t_local = Clock::now();
  y_.resize(size_t(T * k * H));
  place_.resize(size_t(T * k));
  for (int64_t s = 0; s < T * k; ++s) place_[size_t(s)] = int32_t(s);
  for (int e = 0; routed && e < E; e += n_)  // rank 0 owns e mod n == 0
    run_routed_expert((*routed)[size_t(e)], e, m, T, H, idx, k, buf_, y_.data(), place_.data(),
                      pool);
  const auto t_wait = Clock::now();
  const auto deadline = t_wait + std::chrono::microseconds(int64_t(timeout_s_ * 1e6));
  for (int r = 1; r < n_; ++r) {
    if (rows_[size_t(r)].empty()) continue;
    if (!wait_until(&sreq[size_t(r)], deadline, "sending to", r) ||
        !wait_until(&rreq[size_t(r)], deadline, "receiving from", r))
      die("rank " + std::to_string(r) + " did not answer for MoE layer " + std::to_string(layer) +
          " within " + std::to_string(int(timeout_s_)) +
          " s (--ep-timeout): it died, hangs or its host is unreachable");
    const float* src = recv_[size_t(r)].data();
    for (int32_t t : rows_[size_t(r)])
      for (int j = 0; j < k; ++j)
        if (expert_owner(idx[int64_t(t) * k + j], n_) == r) {
          std::memcpy(y_.data() + (int64_t(t) * k + j) * H, src, size_t(H) * 4);
          src += H;
        }
  }
  if (!routed) return;
  add_in_gate_order(y_.data(), weight, T, H, k, out);
  const auto t_end = Clock::now();
  auto sec = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
  st.calls += 1, st.rows += T;
  st.total_s += sec(t_start, t_end), st.local_s += sec(t_local, t_wait);
  st.wait_s += sec(t_wait, t_end);
}

void MpiExecutor::print_stats() const {
  for (int i = 0; i < 2; ++i) {
    const Stats& st = st_[i];
    if (st.calls == 0) continue;
    const double n = double(st.calls);
    std::fprintf(stderr,
                 "[expert-parallel] %d ranks, %s: %lld MoE layer calls over %lld rows; per call "
                 "%.1f messages, %.1f KiB out, %.1f KiB back; %.1f us in the executor, of which "
                 "%.1f us this rank's experts and %.1f us waiting for the others after them\n",
                 n_, i == 0 ? "one-row (decode) calls" : "calls of several rows",
                 static_cast<long long>(st.calls), static_cast<long long>(st.rows),
                 double(st.messages) / n, st.bytes_out / n / 1024, st.bytes_back / n / 1024,
                 st.total_s / n * 1e6, st.local_s / n * 1e6, st.wait_s / n * 1e6);
  }
}

class MpiCluster final : public Cluster {
 public:
  MpiCluster(int rank, int size, const ClusterOptions& o)
      : rank_(rank), size_(size), timeout_s_(o.timeout_s), stats_(o.stats) {}
  ~MpiCluster() override;
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int serve_experts(const std::string& model_dir, int n_threads, Numerics numerics) override;
  Result<ExpertExecutor*> connect(const std::string& model_dir, Numerics numerics) override;
  Result<double> time_exchange(int64_t T, int64_t H, int E, int k, int iters) override {
    if (!exec_) return Status::error("[expert-parallel] time_exchange before connect");
    return exec_->time_echo(T, H, E, k, iters);
  }

 private:
  int rank_, size_;
  double timeout_s_;
  bool stats_;
  bool greeted_ = false;    // rank 0: the hellos were received and answered
  bool connected_ = false;  // rank 0: the expert servers are in their request loop
  bool lost_rank_ = false;  // rank 0: a rank missed the handshake's deadline (dead or hung)
  std::unique_ptr<MpiExecutor> exec_;
};

Hello hello_of(const std::string& dir, Numerics numerics, const Status& load) {
  Hello h;
  gethostname(h.host, sizeof h.host - 1);
  std::snprintf(h.dir, sizeof h.dir, "%s", dir.c_str());
  std::snprintf(h.simd, sizeof h.simd, "%s", simd_target_name().c_str());
  std::snprintf(h.numerics, sizeof h.numerics, "%s", numerics_name(numerics));
  if (load.ok()) {
    auto fp = model_fingerprint(dir);
    if (fp.ok()) {
      h.ok = 1;
      h.fingerprint = fp.value();
      return h;
    }
    std::snprintf(h.error, sizeof h.error, "%s", fp.status().message().c_str());
    return h;
  }
  std::snprintf(h.error, sizeof h.error, "%s", load.message().c_str());
  return h;
}

int MpiCluster::serve_experts(const std::string& dir, int n_threads, Numerics numerics) {
  // mpirun passes SIGINT / SIGTERM to every rank. An expert server must outlive rank 0's
  // graceful shutdown (serve finishes the requests in flight), so it ends only on rank 0's stop
  // message, or by mpirun's SIGKILL when rank 0 is gone.
  std::signal(SIGINT, SIG_IGN);
  std::signal(SIGTERM, SIG_IGN);
  auto model = Model::load(dir);
  // The kernels rank 0's engine binds (Engine::load): Model::load binds the exact ones.
  if (model.ok()) bind_numerics(model.value()->weights, numerics);
  const Hello hello = hello_of(dir, numerics, model.ok() ? Status::success() : model.status());
  MPI_Send(&hello, sizeof hello, MPI_BYTE, 0, kHello, MPI_COMM_WORLD);
  // Waits for rank 0 without spinning (rank 0 may be loading for a while).
  auto recv_polled = [](void* buf, int bytes, int tag) -> int {
    MPI_Request req;
    MPI_Irecv(buf, bytes, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &req);
    for (Backoff b;; b.pause()) {
      int done = 0;
      const int rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS) return rc;
      if (done) return MPI_SUCCESS;
    }
  };
  int32_t go = 0;
  if (recv_polled(&go, sizeof go, kGo) != MPI_SUCCESS || !go || !model.ok()) return go ? 1 : 0;
  ThreadPool pool(n_threads);
  const Model& md = *model.value();
  ExpertBuffers buf;
  std::vector<char> req;
  std::vector<float> y;
  std::vector<int32_t> place;
  for (;;) {
    // The next request: probe (polled) for its size, then receive it.
    MPI_Status st;
    for (Backoff b;; b.pause()) {
      int flag = 0;
      if (MPI_Iprobe(0, kRequest, MPI_COMM_WORLD, &flag, &st) != MPI_SUCCESS) return 1;
      if (flag) break;
    }
    int bytes = 0;
    MPI_Get_count(&st, MPI_BYTE, &bytes);
    req.resize(size_t(std::max(bytes, 1)));
    if (MPI_Recv(req.data(), bytes, MPI_BYTE, 0, kRequest, MPI_COMM_WORLD, MPI_STATUS_IGNORE) !=
        MPI_SUCCESS)
      return 1;
    RequestHeader hd;
    if (size_t(bytes) < sizeof hd) return 1;
    std::memcpy(&hd, req.data(), sizeof hd);
    if (hd.layer == kStopLayer) return 0;
    const bool echo = hd.layer == kEchoLayer;
    const int64_t rows = hd.rows, k = hd.k, H = hd.hidden;
    const MoeWeights* w = md.weights.moe_at(echo ? -1 : hd.layer);
    if ((!echo && !w) || k != md.config.top_k || H != md.config.hidden ||
        size_t(bytes) != sizeof hd + size_t(rows * k + rows * H) * 4) {
      std::fprintf(stderr, "error: [expert-parallel] rank %d: malformed request (layer %d)\n",
                   rank_, hd.layer);
      return 1;
    }
    const int32_t* ids = reinterpret_cast<const int32_t*>(req.data() + sizeof hd);
    const float* x = reinterpret_cast<const float*>(ids + rows * k);
    place.assign(size_t(rows * k), -1);
    int32_t n_slots = 0;
    for (int64_t s = 0; s < rows * k; ++s)
      if (ids[s] >= 0 && ids[s] < md.config.n_routed && expert_owner(ids[s], size_) == rank_)
        place[size_t(s)] = n_slots++;
    y.resize(size_t(std::max<int64_t>(n_slots * H, 1)));
    for (int e = rank_; !echo && e < md.config.n_routed; e += size_)
      run_routed_expert(w->routed[size_t(e)], e, x, rows, H, ids, int(k), buf, y.data(),
                        place.data(), &pool);
    if (MPI_Send(y.data(), int(n_slots * H), MPI_FLOAT, 0, kReply, MPI_COMM_WORLD) != MPI_SUCCESS)
      return 1;
  }
}

Result<ExpertExecutor*> MpiCluster::connect(const std::string& dir, Numerics numerics) {
  INK_ASSIGN_OR_RETURN(const uint64_t mine, model_fingerprint(dir));
  const auto deadline = Clock::now() + std::chrono::microseconds(int64_t(timeout_s_ * 1e6));
  std::string err;
  for (int r = 1; r < size_; ++r) {
    Hello h;
    MPI_Request req;
    MPI_Irecv(&h, sizeof h, MPI_BYTE, r, kHello, MPI_COMM_WORLD, &req);
    if (!wait_until(&req, deadline, "greeting", r)) {
      MPI_Cancel(&req);
      lost_rank_ = true;
      err = "rank " + std::to_string(r) + " did not report its model within " +
            std::to_string(int(timeout_s_)) + " s (--ep-timeout)";
      break;
    }
    h.host[sizeof h.host - 1] = h.dir[sizeof h.dir - 1] = h.error[sizeof h.error - 1] = 0;
    h.simd[sizeof h.simd - 1] = h.numerics[sizeof h.numerics - 1] = 0;
    if (h.ok && simd_target_name() != h.simd)
      std::fprintf(stderr,
                   "[expert-parallel] warning: rank %d (host %s) runs %s kernels, rank 0 %s: "
                   "results stay close to one process's but may not be bit-identical\n",
                   r, h.host, h.simd, simd_target_name().c_str());
    if (!err.empty()) continue;
    if (!h.ok) {
      err = "rank " + std::to_string(r) + " (host " + h.host + ") cannot load " + h.dir + ": " +
            h.error;
    } else if (h.fingerprint != mine) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%016llx vs %016llx",
                    static_cast<unsigned long long>(h.fingerprint),
                    static_cast<unsigned long long>(mine));
      err = "rank " + std::to_string(r) + " (host " + h.host + ") has a different model in " +
            h.dir + " than rank 0 in " + dir + " (config.json / tensor fingerprint " + buf +
            "): every rank needs the same model";
    } else if (std::strcmp(h.numerics, numerics_name(numerics)) != 0) {
      err = "rank " + std::to_string(r) + " (host " + h.host + ") runs --numerics " + h.numerics +
            ", rank 0 " + numerics_name(numerics) + ": every rank needs the same mode";
    }
  }
  greeted_ = true;
  const int32_t go = err.empty() ? 1 : 0;
  for (int r = 1; r < size_; ++r) MPI_Send(&go, sizeof go, MPI_BYTE, r, kGo, MPI_COMM_WORLD);
  if (!go) return Status::error("[expert-parallel] " + err);
  connected_ = true;
  exec_ = std::make_unique<MpiExecutor>(size_, timeout_s_);
  return static_cast<ExpertExecutor*>(exec_.get());
}

MpiCluster::~MpiCluster() {
  // MPI_Finalize waits for every rank, the lost one too (for ever): end the job instead, as a
  // deadline missed mid-forward does (the caller has printed the error).
  if (lost_rank_) abort_job();
  if (exec_ && stats_) exec_->print_stats();
  if (rank_ == 0) {
    for (int r = 1; r < size_; ++r) {
      if (!greeted_) {  // the servers still wait for their go
        const int32_t go = 0;
        MPI_Send(&go, sizeof go, MPI_BYTE, r, kGo, MPI_COMM_WORLD);
      } else if (connected_) {
        const RequestHeader stop{};
        MPI_Send(&stop, sizeof stop, MPI_BYTE, r, kRequest, MPI_COMM_WORLD);
      }
    }
  }
  MPI_Finalize();
}

// MPI_Init_thread waits for every rank of the job (its wire-up) with no deadline of its own: a
// rank that hangs or dies before it gets there would block the others for ever. This bounds the
// start-up by the same --ep-timeout; past it the process reports and exits (mpirun then ends
// the job).
class StartupWatchdog {
 public:
  explicit StartupWatchdog(double timeout_s)
      : thread_([this, timeout_s] {
          std::unique_lock<std::mutex> lock(mu_);
          if (cv_.wait_for(lock, std::chrono::microseconds(int64_t(timeout_s * 1e6)),
                           [this] { return done_; }))
            return;
          const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
          if (!rank) rank = std::getenv("PMIX_RANK");
          std::fprintf(stderr,
                       "error: [expert-parallel] rank %s: MPI start-up did not complete within %d "
                       "s (--ep-timeout): a rank died, hangs or its host is unreachable\n",
                       rank ? rank : "?", int(timeout_s));
          std::fflush(stderr);
          std::_Exit(1);
        }) {}
  ~StartupWatchdog() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  StartupWatchdog(const StartupWatchdog&) = delete;
  StartupWatchdog& operator=(const StartupWatchdog&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;  // last: started once the members it uses exist
};

}  // namespace

bool Cluster::available() {
  return true;
}

Result<std::unique_ptr<Cluster>> Cluster::init(const ClusterOptions& opts) {
  int inited = 0;
  MPI_Initialized(&inited);
  if (inited) return Status::error("[expert-parallel] MPI is already initialised");
  int provided = 0;
  {
    const StartupWatchdog watchdog(opts.timeout_s);
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
      return Status::error("[expert-parallel] MPI_Init_thread failed");
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (provided < MPI_THREAD_SERIALIZED) {
    MPI_Finalize();
    return Status::error("[expert-parallel] this MPI does not support MPI_THREAD_SERIALIZED");
  }
  return std::unique_ptr<Cluster>(new MpiCluster(rank, size, opts));
}

}  // namespace inkling::dist
