// The public engine API. An Engine holds immutable weights (shareable across threads and
// sessions); a Session is one sequence with its caches. Sessions are not thread-safe; use one
// per thread/request.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "inkling/numerics.h"
#include "inkling/observer.h"
#include "inkling/status.h"

namespace inkling {

class ExpertExecutor;  // src/model/expert_executor.h (expert parallelism, src/dist)

// Element type of the KV cache: f32 is exact (the reference's own precision); bf16 halves the
// cache and the bytes a long-context decode step reads, rounding each cached key and value once.
enum class KvCacheType : uint8_t { kF32, kBF16 };
// "f32" / "bf16" (the spelling of --kv-type and the server's option).
const char* kv_cache_type_name(KvCacheType t);
Result<KvCacheType> parse_kv_cache_type(std::string_view name);

struct EngineOptions {
  int n_threads = 0;            // 0 = one per CPU this process may use (affinity, cgroup quota)
  int64_t prefill_chunk = 256;  // tokens per forward call during prefill (at most 2^20)
  // Longest sequence a session may hold; 0 = the config's max_position_embeddings (or
  // model_max_length), unlimited when the config has neither.
  int64_t max_context = 0;
  KvCacheType kv_type = KvCacheType::kF32;
  // Expert parallelism (docs/scale-out.md): when set, every MoE layer's routed experts run
  // through this executor (not owned; it must outlive the engine). Null: all run here.
  ExpertExecutor* expert_executor = nullptr;
  // On the first start on a CPU and thread count without a decode tuning cache, with weights over
  // four times the last-level cache (at least 256 MiB): calibrate decode for about 3 s and write
  // the cache (docs/performance.md; INKLING_TUNE=off also skips it). Off: start with the defaults.
  bool tune_on_first_use = true;
  // Arithmetic of the products (include/inkling/numerics.h): fast (the default) rounds
  // activations as the peers do; exact keeps f32 activations (parity with transformers f32).
  Numerics numerics = Numerics::kFast;
};

// A summary of the loaded model for programs (inspect, servers).
struct ModelInfo {
  std::string model_dir;
  std::string model_type;      // top-level model_type
  std::string config_format;   // "og" or "hf" spelling
  std::string layout;          // detected weight layout
  int64_t vocab_size = 0;      // padded rows of the embedding
  int64_t unpadded_vocab = 0;  // width of the logits
  int64_t max_context = 0;     // sessions refuse input beyond this many tokens (0 = unlimited)
  std::string family;          // "inkling" (v1) or "inkling2" (Inkling 2 Mini and Small)
  int hidden = 0, n_layers = 0;
  int layer_visits = 0;  // per token: n_layers, or more where a looped core runs several times
  int moe_visits = 0;    // per token: MoE layers, each looped one once per pass
  int n_routed = 0, top_k = 0;           // routed experts per MoE layer and experts per token
  std::vector<std::string> layer_kinds;  // per layer: "sliding/dense", "global/moe", ...
  std::vector<int32_t> eos_ids;
  // Multi-token-prediction draft depths: per depth declared by the config "banded" or "global";
  // mtp_depths of them have bound tensors (the most drafts a SpeculativeDecoder can take).
  std::vector<std::string> mtp_kinds;
  int mtp_depths = 0;
  int64_t n_tensors = 0;  // tensors in the checkpoint files
  std::vector<std::pair<std::string, uint64_t>> bytes_by_dtype;
  std::vector<std::string> dropped;  // tower / MTP tensors ignored
  // Image and audio towers: "bound", "absent" or why they cannot be used; the placeholder ids
  // the chat template's image/audio parts render; the image upscale in force and its source.
  std::string vision_status = "absent", audio_status = "absent";
  int32_t image_token_id = -1, audio_token_id = -1;
  int32_t image_bos_id = -1, audio_bos_id = -1, audio_end_id = -1;  // span markers
  int vision_patch = 0;
  std::string upscale;
  std::vector<std::string> unused;  // tensors nothing reads
  std::string summary;              // multi-line human-readable config summary
  // Bound weight storage by module group and format: {group, format, matrices, bytes}.
  struct Storage {
    std::string group, format;
    int64_t matrices = 0;
    int64_t elements = 0;  // logical weights (rows x cols) of those matrices
    uint64_t bytes = 0;
    // Kernels bound to these matrices per shape class: 1 token, 2-7 tokens, 8+ tokens (of the
    // last matrix of the group and format; they share parameters in every published layout).
    std::string kernel_one, kernel_few, kernel_gemm;
  };
  std::vector<Storage> storage;
  uint64_t mapped_bytes = 0;        // checkpoint bytes the weights read (mmap'd, not copied)
  uint64_t copied_bytes = 0;        // small tensors converted to f32 at load (norms, convs)
  uint64_t tile_bytes = 0;          // fast numerics: 4-bit affine / NVFP4 weights regrouped at
                                    // load into the int8 gemm's tiles (a copy; 0 where none)
  uint64_t resident_bytes = 0;      // mapped bytes whose page tables were made at load (whole
                                    // pages; 0: skipped, e.g. INKLING_NO_POPULATE=1)
  uint64_t session_bytes = 0;       // scratch of one session at the default chunk size
  std::string kv_type;              // "f32" or "bf16"
  std::string numerics;             // "fast" or "exact" (EngineOptions::numerics)
  uint64_t kv_bytes_per_token = 0;  // KV cache growth per token (global layers)
  uint64_t kv_sliding_bytes = 0;    // sliding layers' rings once full (fixed, any context)
  int64_t kv_ring_rows = 0;         // rows of each sliding ring (window - 1 + prefill chunk)
  uint64_t conv_state_bytes = 0;    // four f32 short-conv states per layer, per session
};

// What one session of `tokens` tokens needs in memory, before loading it (inspect --ctx).
struct MemoryPlan {
  uint64_t weights_mapped = 0;  // checkpoint bytes the weights map (page cache, shared)
  uint64_t weights_copied = 0;  // small tensors converted to f32 at load
  uint64_t weights_tiles = 0;   // fast numerics' load-time tiles (ModelInfo::tile_bytes)
  uint64_t scratch = 0;         // activations of one session
  uint64_t kv = 0;              // KV rows of `tokens` positions (global) + the sliding rings
  uint64_t kv_doubling = 0;     // the KV allocation if the cache grows by doubling instead of
                                // being reserved up front (Session::reserve)
  uint64_t conv_states = 0;     // four f32 short-conv states per layer
  uint64_t total() const {
    return weights_mapped + weights_copied + weights_tiles + scratch + kv + conv_states;
  }
};
MemoryPlan memory_plan(const ModelInfo& info, int64_t tokens);

class SessionSnapshot;
class Session;
struct MediaEmbedding;  // include/inkling/media.h
struct MediaOptions;

// Bytes of memory a snapshot holds (its KV rows in use, conv states and bookkeeping): what a
// cache of snapshots must count against its budget.
size_t snapshot_bytes(const SessionSnapshot& snap);

class Engine : public std::enable_shared_from_this<Engine> {
 public:
  static Result<std::shared_ptr<Engine>> load(const std::string& model_dir,
                                              const EngineOptions& opts = {});
  ~Engine();

  const ModelInfo& info() const;
  std::unique_ptr<Session> new_session() const;

  // One forward pass over several sessions of this engine at once (continuous batching):
  // sessions[i] consumes inputs[i] (one token when decoding, more when prefilling). Matmuls and
  // MoE experts run once over the rows of all sessions; each session keeps its own caches.
  // Afterwards each session's last_logits() holds the logits of its last input token. All inputs
  // are validated first; on error no session changes. Thread-safe (calls are serialised).
  Status step(std::span<Session* const> sessions,
              std::span<const std::span<const int32_t>> inputs) const;
  // The same with image/audio tower rows: rows[i] is empty or has one entry per token of
  // inputs[i] (null = the token's own embedding), as Session::prefill_rows.
  Status step(std::span<Session* const> sessions, std::span<const std::span<const int32_t>> inputs,
              std::span<const std::span<const float* const>> rows) const;

  // Image / audio input; see include/inkling/media.h (which declares the types and the
  // convenience functions). Thread-safe.
  Result<MediaEmbedding> encode_image(std::span<const uint8_t> bytes, const std::string& name,
                                      const MediaOptions& options) const;
  Result<MediaEmbedding> encode_audio(std::span<const uint8_t> bytes, const std::string& name,
                                      const MediaOptions& options) const;

  struct Impl;

 private:
  Engine() = default;
  std::unique_ptr<Impl> impl_;
};

class Session {
 public:
  ~Session();

  // Consumes tokens; returns the logits of the last one ([unpadded_vocab], valid until the next
  // call). Fails (state unchanged) on a token id outside the vocabulary or an empty input.
  Result<std::span<const float>> prefill(std::span<const int32_t> tokens);
  Result<std::span<const float>> decode(int32_t token);
  // Consumes tokens and returns the logits of every position: [tokens.size() * unpadded_vocab].
  Result<std::vector<float>> prefill_all_logits(std::span<const int32_t> tokens);
  // prefill() where rows[i], when not null, is an image/audio tower row ([hidden] floats, kept
  // alive by the caller during the call) that replaces token i's embedding. rows.size() must
  // equal tokens.size(). include/inkling/media.h builds it from MediaEmbeddings. With
  // `all_logits`, it also receives every position's logits [tokens.size() * unpadded_vocab].
  Result<std::span<const float>> prefill_rows(std::span<const int32_t> tokens,
                                              std::span<const float* const> rows,
                                              std::vector<float>* all_logits = nullptr);

  // Logits of the last consumed token ([unpadded_vocab]); meaningless before any input.
  std::span<const float> last_logits() const;
  int64_t position() const;  // tokens consumed so far
  // Benchmarks only: appends n positions of seeded random keys/values (and conv states) to the
  // caches without running the model, so long-context decode can be timed without a long
  // prefill. The sequence is meaningless afterwards; respects the context limit.
  Status fast_forward(int64_t n, uint64_t seed);
  // Allocates the KV caches for `positions` tokens in total now (they otherwise grow by
  // doubling, which copies the cache once per doubling). Never shrinks; respects the limit.
  Status reserve(int64_t positions);
  // A copy of the sequence state (caches and position; not the logits). restore() returns to
  // it: the next input must be run to get logits again.
  std::shared_ptr<const SessionSnapshot> snapshot() const;
  void restore(const SessionSnapshot& snap);
  void reset();
  size_t state_bytes() const;
  // Calls `observer` (not owned; null = none) with every named activation of this session's
  // prefill and decode passes (include/inkling/observer.h). Engine::step() batches are not
  // observed.
  void set_observer(ActivationObserver* observer);

  struct Impl;

 private:
  friend class Engine;
  friend class SpeculativeDecoder;
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace inkling
