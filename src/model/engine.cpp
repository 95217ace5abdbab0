// Engine / Session: the public API over Model, SequenceState and Scratch. Input validation for
// everything a user can pass (token ids, empty inputs) happens here.
#include "inkling/engine.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "inkling/media.h"
#include "model/inkling2/bind.h"
#include "model/inkling2/layouts.h"
#include "model/media_encode.h"
#include "model/model.h"
#include "model/session_impl.h"
#include "model/tuning_formats.h"
#include "ops/formats.h"
#include "ops/tune_first_use.h"
#include "ops/tuning_cache.h"

namespace inkling {

struct Engine::Impl {
  std::unique_ptr<Model> model;
  std::unique_ptr<ThreadPool> pool;
  EngineOptions opts;
  ModelInfo info;
  std::mutex batch_mu;  // guards batch_scratch (step() may be called from any one thread at a time)
  Scratch batch_scratch;
  std::vector<Segment> batch_segs;  // step(): the pieces of one pass
  std::vector<size_t> batch_done;   // step(): tokens of each input already run
};

class SessionSnapshot {
 public:
  SequenceState state;  // compact: only the cache rows in use (no logits: restore() needs none)
};

size_t snapshot_bytes(const SessionSnapshot& snap) {
  return snap.state.bytes() + snap.state.layers.size() * sizeof(LayerCache) +
         sizeof(SessionSnapshot);
}

namespace {

void storage_table(const Model& m, ModelInfo* info) {
  std::map<std::pair<std::string, std::string>, ModelInfo::Storage> t;
  const Weights& w = m.weights;
  for_each_matrix(w, [&](const char* group, const std::string&, const MatView& v) {
    const std::string format = format_label(v);
    auto& e = t[{group, format}];
    e.group = group;
    e.format = format;
    e.matrices += 1;
    e.elements += v.rows * v.cols;
    e.bytes += view_bytes(v);
    const KernelSet& k = kernels_of(v);
    e.kernel_one = k.for_tokens(1).name;
    e.kernel_few = k.for_tokens(2).name;
    e.kernel_gemm = k.for_tokens(kGemmMinTokens).name;
  });
  uint64_t copied = (w.embed_norm.size() + w.final_norm.size()) * 4;
  std::vector<const LayerWeights*> layers;
  for (const LayerWeights& l : w.layers) layers.push_back(&l);
  for (const MtpDepthWeights& d : w.mtp) {
    layers.push_back(&d.block);
    copied += (d.embed_norm.size() + d.hidden_norm.size()) * 4;
  }
  for (const LayerWeights* lp : layers) {
    const LayerWeights& l = *lp;
    for (const auto* v :
         {&l.attn_norm, &l.mlp_norm, &l.attn_conv, &l.mlp_conv, &l.attn.q_norm, &l.attn.k_norm,
          &l.attn.k_conv, &l.attn.v_conv, &l.attn.rel_proj, &l.moe.router_bias})
      copied += v->size() * 4;
  }
  for (const Inkling2Layer& l : w.v2.layers) {
    for (const auto* v : {&l.attn_query, &l.mlp_query, &l.in_norm, &l.q_norm, &l.k_norm, &l.v_norm,
                          &l.mlp_norm, &l.attn_conv, &l.mlp_conv, &l.q_scale, &l.r_scale,
                          &l.rel_proj, &l.k_conv, &l.v_conv, &l.moe.router_bias})
      copied += v->size() * 4;
  }
  copied += (w.v2.final_query.size() + w.v2.message_query.size()) * 4;
  for (auto& [key, e] : t) {
    info->storage.push_back(e);
    info->mapped_bytes += e.bytes;
  }
  info->copied_bytes = copied;
}

KvType kv_type(const EngineOptions& o) {
  return o.kv_type == KvCacheType::kBF16 ? KvType::kBF16 : KvType::kF32;
}

ModelInfo describe(const Model& m, const std::string& dir) {
  const ModelConfig& c = m.config;
  ModelInfo info;
  info.model_dir = dir;
  info.model_type = c.model_type.empty() ? "(none: bare text config)" : c.model_type;
  info.config_format = c.format;
  info.layout = m.layout.layout;
  info.vocab_size = c.vocab_size;
  info.unpadded_vocab = c.unpadded_vocab;
  info.hidden = c.hidden;
  info.n_layers = c.n_layers;
  info.family = family_name(c.family);
  info.layer_visits = int(c.schedule().size());
  info.moe_visits = c.moe_visits();
  info.n_routed = c.n_routed;
  info.top_k = c.top_k;
  info.eos_ids = c.eos_ids;
  info.n_tensors = m.n_tensors;
  info.dropped = m.layout.dropped;
  auto tower_status = [](bool ok, const std::string& err) {
    return ok ? std::string("bound") : err.empty() ? std::string("absent") : err;
  };
  info.vision_status = tower_status(m.towers.vision_ok(), m.towers.vision_error);
  info.audio_status = m.media.inkling2 ? "none (Inkling 2 has no audio tower)"
                                       : tower_status(m.towers.audio_ok(), m.towers.audio_error);
  info.image_token_id = m.media.image_token;
  info.audio_token_id = m.media.audio_token;
  info.image_bos_id = m.media.image_bos;
  info.audio_bos_id = m.media.audio_bos;
  info.audio_end_id = m.media.audio_end;
  info.vision_patch = m.media.patch;
  info.upscale =
      (m.media.upscale.frac ? "x" + std::to_string(*m.media.upscale.frac) +
                                  ", long edge <= " + std::to_string(m.media.upscale.max_long_edge)
                            : std::string("off")) +
      " (" + m.media.upscale_source + ")";
  info.unused = m.weights.unused;
  std::map<std::string, uint64_t> bytes;
  for (const auto& [name, t] : m.store.all()) bytes[dtype_name(t->dtype)] += t->nbytes;
  info.bytes_by_dtype.assign(bytes.begin(), bytes.end());
  int n_sliding = 0, n_dense = 0;
  for (const LayerSpec& l : c.layers) {
    info.layer_kinds.push_back(std::string(l.sliding ? "sliding" : "global") + "/" +
                               (l.dense ? "dense" : "moe"));
    n_sliding += l.sliding;
    n_dense += l.dense;
  }
  std::ostringstream s;
  s << "hidden " << c.hidden << ", layers " << c.n_layers << " (" << n_sliding << " sliding, "
    << c.n_layers - n_sliding << " global; " << n_dense << " dense, " << c.n_layers - n_dense
    << " MoE)\n"
    << "global attention: " << c.n_heads << " heads / " << c.n_kv_heads << " kv x " << c.head_dim
    << ", rel_extent " << c.rel_extent << "\n"
    << "sliding attention: " << c.swa_n_heads << " heads / " << c.swa_n_kv_heads << " kv x "
    << c.swa_head_dim << ", window " << c.window << "\n"
    << "d_rel " << c.d_rel << ", conv K " << c.conv_k << ", rms eps " << c.rms_eps
    << ", log-scaling "
    << (c.log_floor
            ? "n_floor " + std::to_string(*c.log_floor) + " alpha " + std::to_string(c.log_alpha)
            : "off")
    << "\n"
    << "dense width " << c.dense_width << "; MoE " << c.n_routed << " experts (top " << c.top_k
    << ") + " << c.n_shared << " shared, width " << c.moe_width << ", route_scale " << c.route_scale
    << "\n"
    << "vocab " << c.vocab_size << " (logits " << c.unpadded_vocab << "), muP divisor "
    << c.mup_divisor;
  if (c.family == Family::kInkling2) {
    const Inkling2Config& v = c.v2;
    s << "\nInkling 2: attention-residual blocks of " << v.block << " layers; q/k L2 clip "
      << v.qk_clip << ", relative clip " << v.rel_clip << "; SwiGLU softcaps " << v.gate_cap
      << " / " << v.up_cap << "; logit softcap " << v.logit_cap;
    if (v.looped())
      s << "\nlooped core: layers " << v.loop_start << "-" << v.loop_end - 1 << " run "
        << v.loop_passes << " times (message gates of rank " << v.loop_rank
        << "): " << c.schedule().size() << " layer visits and cache slots per token";
  }
  if (!c.mtp.depths.empty()) {
    s << "\nMTP: " << c.mtp.depths.size() << " depths (";
    for (size_t d = 0; d < c.mtp.depths.size(); ++d) {
      const LayerSpec& l = c.mtp.depths[d];
      s << (d ? ", " : "") << d << ": "
        << (l.sliding ? "banded, window " + std::to_string(l.rel_extent)
                      : "global, rel_extent " + std::to_string(l.rel_extent));
    }
    s << "), " << (c.mtp.hidden_first ? "hidden first" : "embedding first") << ", "
      << (m.weights.mtp.empty()
              ? "tensors absent (no speculative decoding)"
              : "tensors bound (--draft up to " + std::to_string(m.weights.mtp.size()) + ")");
    // Each bound depth's matrices by storage (bf16 as released, or quantized by
    // `inkling quantize --mtp quantize`).
    for (size_t d = 0; d < m.weights.mtp.size(); ++d) {
      const MtpDepthWeights& w = m.weights.mtp[d];
      std::vector<std::pair<std::string, int>> formats;
      for (const MatView* v :
           {&w.input_proj, &w.block.attn.q, &w.block.attn.k, &w.block.attn.v, &w.block.attn.r,
            &w.block.attn.o, &w.block.dense.gate, &w.block.dense.up, &w.block.dense.down}) {
        const std::string f = format_label(*v);
        auto it = std::find_if(formats.begin(), formats.end(),
                               [&](const auto& e) { return e.first == f; });
        if (it == formats.end())
          formats.push_back({f, 1});
        else
          ++it->second;
      }
      s << "\n  depth " << d << " matrices:";
      for (size_t i = 0; i < formats.size(); ++i)
        s << (i ? ", " : " ") << formats[i].first << " x" << formats[i].second;
    }
  }
  for (const LayerSpec& l : c.mtp.depths) info.mtp_kinds.push_back(l.sliding ? "banded" : "global");
  info.mtp_depths = int(m.weights.mtp.size());
  info.summary = s.str();
  storage_table(m, &info);
  return info;
}

// The towers' config and weights; the tensors they bind are no longer "dropped" by the layout.
Status load_towers(const std::string& dir, const TensorMap& refs, Model* m) {
  INK_ASSIGN_OR_RETURN(m->media, load_media_config(dir, m->config.family == Family::kInkling2));
  m->towers = bind_towers(m->media, refs, m->config.hidden);
  std::set<std::string> used(m->towers.bound.begin(), m->towers.bound.end());
  std::erase_if(m->layout.dropped, [&](const std::string& n) { return used.count(n) > 0; });
  return Status::success();
}

}  // namespace

Result<std::unique_ptr<Model>> Model::load(const std::string& dir) {
  auto m = std::make_unique<Model>();
  INK_ASSIGN_OR_RETURN(m->config, load_config(dir));
  auto store = TensorStore::open_dir(dir);
  if (!store.ok()) return store.status().with_context("[load] ");
  m->store = std::move(store).value();
  m->n_tensors = int64_t(m->store.all().size());
  TensorMap refs = refs_from_store(m->store);
  if (m->config.family == Family::kInkling2) {
    INK_ASSIGN_OR_RETURN(TensorMap canonical, sanitize_inkling2(refs, &m->layout));
    INK_ASSIGN_OR_RETURN(QuantConfig quant, load_quant_config(dir));
    INK_ASSIGN_OR_RETURN(m->weights, bind_inkling2(m->config, canonical, quant));
    INK_RETURN_IF_ERROR(load_towers(dir, refs, m.get()));
    return m;
  }
  INK_ASSIGN_OR_RETURN(TensorMap canonical, sanitize(refs, &m->layout));
  if (!m->config.mtp.depths.empty()) {
    // The original layout may keep the MTP depths in mtp.safetensors, which an index need not
    // list; they join the binding map only when depth 0 is there (weights.cpp: bind_mtp).
    const std::string mtp_file = dir + "/mtp.safetensors";
    std::error_code ec;
    bool listed = false;
    for (const auto& f : m->store.files()) listed |= f->path() == mtp_file;
    if (!listed && std::filesystem::exists(mtp_file, ec)) {
      auto extra = TensorStore::from_files({mtp_file});
      if (!extra.ok()) return extra.status().with_context("[load] ");
      m->mtp_store = std::move(extra).value();
      for (auto& [name, ref] : refs_from_store(*m->mtp_store)) refs.emplace(name, ref);
    }
    INK_ASSIGN_OR_RETURN(TensorMap mtp, sanitize_mtp(refs));
    if (mtp.count("mtp.0.input_proj.weight")) {
      // Bound, so no longer "dropped" (inspect counts what the engine ignores).
      std::set<std::string> used;
      for (const auto& [name, ref] : mtp) used.insert(ref.origin);
      std::erase_if(m->layout.dropped, [&](const std::string& n) { return used.count(n) > 0; });
      canonical.merge(mtp);
    }
  }
  INK_RETURN_IF_ERROR(load_towers(dir, refs, m.get()));
  INK_ASSIGN_OR_RETURN(QuantConfig quant, load_quant_config(dir));
  INK_ASSIGN_OR_RETURN(m->weights, bind_weights(m->config, canonical, quant));
  return m;
}

Engine::~Engine() = default;

MemoryPlan memory_plan(const ModelInfo& info, int64_t tokens) {
  MemoryPlan p;
  p.weights_mapped = info.mapped_bytes;
  p.weights_copied = info.copied_bytes;
  p.weights_tiles = info.tile_bytes;
  p.scratch = info.session_bytes;
  p.conv_states = info.conv_state_bytes;
  // LayerCache::reserve allocates at least 64 rows, then doubles (or takes what a reserve asks);
  // a sliding ring never exceeds its ring.
  const uint64_t n = uint64_t(std::max<int64_t>(tokens, 0));
  const uint64_t ring = uint64_t(std::max<int64_t>(info.kv_ring_rows, 1));
  const uint64_t rows = n ? std::max<uint64_t>(n, 64) : 0;
  const uint64_t sliding = info.kv_sliding_bytes * std::min(rows, ring) / ring;
  p.kv = info.kv_bytes_per_token * rows + sliding;
  uint64_t cap = rows ? 64 : 0;
  while (cap < n) cap *= 2;
  p.kv_doubling = info.kv_bytes_per_token * cap + sliding;
  return p;
}

const char* kv_cache_type_name(KvCacheType t) {
  return t == KvCacheType::kBF16 ? "bf16" : "f32";
}

Result<KvCacheType> parse_kv_cache_type(std::string_view name) {
  if (name == "f32") return KvCacheType::kF32;
  if (name == "bf16") return KvCacheType::kBF16;
  return Status::error("kv type '" + std::string(name) + "': expected f32 or bf16");
}

Result<std::shared_ptr<Engine>> Engine::load(const std::string& model_dir,
                                             const EngineOptions& opts) {
  // Scratch rows are chunk x (widest row), logits chunk x vocab: with the config's limits this
  // bound keeps every such size far inside int64.
  constexpr int64_t kMaxPrefillChunk = int64_t(1) << 20;
  if (opts.prefill_chunk > kMaxPrefillChunk)
    return Status::error("[load] prefill_chunk = " + std::to_string(opts.prefill_chunk) +
                         " exceeds the supported maximum " + std::to_string(kMaxPrefillChunk));
  INK_ASSIGN_OR_RETURN(auto model, Model::load(model_dir));
  bind_numerics(model->weights, opts.numerics);
  bind_tower_numerics(model->towers, opts.numerics);
  if (opts.expert_executor)
    for (int l = 0; l < model->weights.n_layers(); ++l)
      if (MoeWeights* moe = model->weights.moe_at(l)) {
        moe->executor = opts.expert_executor;
        moe->layer = l;
      }
  std::shared_ptr<Engine> e(new Engine());
  e->impl_ = std::make_unique<Impl>();
  e->impl_->opts = opts;
  if (e->impl_->opts.prefill_chunk < 1) e->impl_->opts.prefill_chunk = 1;
  e->impl_->info = describe(*model, model_dir);
  e->impl_->info.tile_bytes = model->weights.tile_bytes;
  e->impl_->info.resident_bytes = model->weights.resident_bytes;
  ModelInfo& info = e->impl_->info;
  const uint64_t elem = opts.kv_type == KvCacheType::kBF16 ? 2 : 4;
  info.kv_type = kv_cache_type_name(opts.kv_type);
  info.numerics = numerics_name(opts.numerics);
  const ModelConfig& mc = model->config;
  const std::vector<LayerSpec> slots = mc.cache_slots();  // Inkling 2 Mini: one per layer visit
  for (const LayerSpec& l : slots)
    info.conv_state_bytes +=
        4 * uint64_t(mc.conv_k - 1) *
        (2 * uint64_t(l.n_kv_heads) * uint64_t(l.head_dim) + 2 * uint64_t(mc.hidden));
  for (const LayerSpec& l : slots) {
    const uint64_t row = 2 * uint64_t(l.n_kv_heads) * uint64_t(l.head_dim) * elem;  // k + v
    info.kv_ring_rows = int64_t(model->config.window) - 1 + e->impl_->opts.prefill_chunk;
    if (l.sliding)
      info.kv_sliding_bytes += row * uint64_t(info.kv_ring_rows);
    else
      info.kv_bytes_per_token += row;
  }
  e->impl_->info.max_context =
      opts.max_context > 0 ? opts.max_context : model->config.max_positions;
  e->impl_->info.session_bytes = Scratch::footprint(model->config, e->impl_->opts.prefill_chunk) +
                                 uint64_t(model->config.unpadded_vocab) * 4;  // last logits
  e->impl_->model = std::move(model);
  e->impl_->pool = std::make_unique<ThreadPool>(opts.n_threads);
  load_decode_tuning(e->impl_->pool->size());  // INKLING_TUNE / the cache (ops/tuning_cache.h)
  // No cache yet for this CPU: calibrate once (ops/tune_first_use.h); not in expert-parallel
  // runs, where every rank would measure at once.
  if (opts.tune_on_first_use && !opts.expert_executor)
    tune_on_first_use(*e->impl_->pool, decode_tuning_formats(e->impl_->info),
                      e->impl_->info.mapped_bytes);
  return e;
}

const ModelInfo& Engine::info() const {
  return impl_->info;
}

std::unique_ptr<Session> Engine::new_session() const {
  auto s = std::make_unique<Session::Impl>();
  s->engine = shared_from_this();
  s->model = impl_->model.get();
  s->pool = impl_->pool.get();
  s->kv = kv_type(impl_->opts);
  s->state = SequenceState::fresh(s->model->config, impl_->opts.prefill_chunk, s->kv);
  s->scratch = Scratch::make(s->model->config, impl_->opts.prefill_chunk);
  s->logits.resize(size_t(s->model->config.unpadded_vocab));
  s->max_context = impl_->info.max_context;
  return std::unique_ptr<Session>(new Session(std::move(s)));
}

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

Status check_tokens(const ModelConfig& c, std::span<const int32_t> tokens, int64_t pos,
                    int64_t max_context) {
  if (tokens.empty()) return Status::error("[session] empty token sequence");
  if (max_context > 0 && pos + int64_t(tokens.size()) > max_context)
    return Status::error("[session] context length exceeded: " + std::to_string(pos) +
                         " cached + " + std::to_string(tokens.size()) + " new tokens > " +
                         std::to_string(max_context));
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] < 0 || tokens[i] >= c.vocab_size)
      return Status::error("[session] token id " + std::to_string(tokens[i]) + " at position " +
                           std::to_string(i) + " is outside the vocabulary [0, " +
                           std::to_string(c.vocab_size) + ")");
  return Status::success();
}

namespace {

// Runs tokens in chunks; `all` receives every position's logits when non-null; `rows` (optional,
// one entry per token) replaces embeddings with tower rows.
void run_chunks(Session::Impl& s, std::span<const int32_t> tokens, std::vector<float>* all,
                const float* const* rows = nullptr) {
  const int64_t V = s.model->config.unpadded_vocab, chunk = s.scratch.chunk;
  for (size_t b = 0; b < tokens.size(); b += size_t(chunk)) {
    const int64_t T = std::min<int64_t>(chunk, int64_t(tokens.size() - b));
    const bool last = b + size_t(T) == tokens.size();
    Segment seg{&s.state, tokens.data() + b, T, nullptr, all != nullptr};
    seg.embeds = rows ? rows + b : nullptr;
    seg.logits = all ? all->data() + b * size_t(V) : (last ? s.logits.data() : nullptr);
    forward_batch(*s.model, &seg, 1, s.scratch, s.pool, s.observer);
  }
  if (all) std::copy_n(all->data() + (tokens.size() - 1) * size_t(V), V, s.logits.data());
}

}  // namespace

Result<std::span<const float>> Session::prefill(std::span<const int32_t> tokens) {
  INK_RETURN_IF_ERROR(
      check_tokens(impl_->model->config, tokens, impl_->state.pos, impl_->max_context));
  run_chunks(*impl_, tokens, nullptr);
  return std::span<const float>(impl_->logits);
}

void Session::set_observer(ActivationObserver* observer) {
  impl_->observer = observer;
}

Result<std::span<const float>> Session::decode(int32_t token) {
  return prefill(std::span<const int32_t>(&token, 1));
}

Result<std::vector<float>> Session::prefill_all_logits(std::span<const int32_t> tokens) {
  INK_RETURN_IF_ERROR(
      check_tokens(impl_->model->config, tokens, impl_->state.pos, impl_->max_context));
  std::vector<float> all(tokens.size() * size_t(impl_->model->config.unpadded_vocab));
  run_chunks(*impl_, tokens, &all);
  return all;
}

Result<std::span<const float>> Session::prefill_rows(std::span<const int32_t> tokens,
                                                     std::span<const float* const> rows,
                                                     std::vector<float>* all_logits) {
  INK_RETURN_IF_ERROR(
      check_tokens(impl_->model->config, tokens, impl_->state.pos, impl_->max_context));
  if (rows.size() != tokens.size())
    return Status::error("[session] prefill_rows: " + std::to_string(rows.size()) +
                         " row pointers for " + std::to_string(tokens.size()) + " tokens");
  if (all_logits) all_logits->resize(tokens.size() * size_t(impl_->model->config.unpadded_vocab));
  run_chunks(*impl_, tokens, all_logits, rows.data());
  return std::span<const float>(impl_->logits);
}

Result<MediaEmbedding> Engine::encode_image(std::span<const uint8_t> bytes, const std::string& name,
                                            const MediaOptions& options) const {
  return encode_image_rows(*impl_->model, impl_->pool.get(), bytes, name, options);
}

Result<MediaEmbedding> Engine::encode_audio(std::span<const uint8_t> bytes, const std::string& name,
                                            const MediaOptions& options) const {
  return encode_audio_rows(*impl_->model, bytes, name, options);
}

Status Engine::step(std::span<Session* const> sessions,
                    std::span<const std::span<const int32_t>> inputs) const {
  return step(sessions, inputs, {});
}

Status Engine::step(std::span<Session* const> sessions,
                    std::span<const std::span<const int32_t>> inputs,
                    std::span<const std::span<const float* const>> rows) const {
  if (!rows.empty() && rows.size() != inputs.size())
    return Status::error("[session] step: " + std::to_string(rows.size()) + " row lists for " +
                         std::to_string(inputs.size()) + " inputs");
  for (size_t i = 0; i < rows.size(); ++i)
    if (!rows[i].empty() && rows[i].size() != inputs[i].size())
      return Status::error("[session] step: input " + std::to_string(i) + " has " +
                           std::to_string(inputs[i].size()) + " tokens but " +
                           std::to_string(rows[i].size()) + " row pointers");
  if (sessions.size() != inputs.size())
    return Status::error("[session] step: " + std::to_string(sessions.size()) + " sessions but " +
                         std::to_string(inputs.size()) + " inputs");
  const ModelConfig& c = impl_->model->config;
  for (size_t i = 0; i < sessions.size(); ++i) {
    if (!sessions[i] || sessions[i]->impl_->model != impl_->model.get())
      return Status::error("[session] step: session " + std::to_string(i) +
                           " belongs to another engine");
    for (size_t j = 0; j < i; ++j)
      if (sessions[j] == sessions[i])
        return Status::error("[session] step: a session appears twice");
    INK_RETURN_IF_ERROR(
        check_tokens(c, inputs[i], sessions[i]->impl_->state.pos, impl_->info.max_context));
  }
  std::lock_guard<std::mutex> lk(impl_->batch_mu);
  Scratch& scratch = impl_->batch_scratch;
  if (scratch.chunk == 0) scratch = Scratch::make(c, impl_->opts.prefill_chunk);
  // Pack pieces of the inputs into passes of at most `chunk` rows; a long input continues in
  // the next pass, so every session's tokens run in order.
  // Buffers kept across calls (guarded by batch_mu): a decode step allocates nothing.
  std::vector<Segment>& segs = impl_->batch_segs;
  std::vector<size_t>& done = impl_->batch_done;
  done.assign(sessions.size(), 0);
  for (;;) {
    segs.clear();
    int64_t room = scratch.chunk;
    for (size_t i = 0; i < sessions.size() && room > 0; ++i) {
      const size_t left = inputs[i].size() - done[i];
      if (left == 0) continue;
      const int64_t n = std::min<int64_t>(room, int64_t(left));
      Session::Impl& si = *sessions[i]->impl_;
      const bool last = done[i] + size_t(n) == inputs[i].size();
      segs.push_back(Segment{&si.state, inputs[i].data() + done[i], n,
                             last ? si.logits.data() : nullptr, false});
      if (si.hidden_sink) {  // a speculative decoder's prefill: every row's normed hidden
        const size_t at = si.hidden_sink->size();
        si.hidden_sink->resize(at + size_t(n * c.hidden));
        segs.back().all_positions = true;
        segs.back().last_logits_only = true;
        segs.back().hidden_normed = si.hidden_sink->data() + at;
      }
      if (i < rows.size() && !rows[i].empty()) segs.back().embeds = rows[i].data() + done[i];
      done[i] += size_t(n);
      room -= n;
    }
    if (segs.empty()) break;
    forward_batch(*impl_->model, segs.data(), segs.size(), scratch, impl_->pool.get());
  }
  return Status::success();
}

Status Session::fast_forward(int64_t n, uint64_t seed) {
  SequenceState& st = impl_->state;
  if (n < 0) return Status::error("[session] fast_forward: negative count");
  if (impl_->max_context > 0 && st.pos + n > impl_->max_context)
    return Status::error("[session] context length exceeded: " + std::to_string(st.pos) +
                         " cached + " + std::to_string(n) + " new tokens > " +
                         std::to_string(impl_->max_context));
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  auto next = [&x] {  // xorshift64*, uniform in [-1, 1)
    x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
    return float(double((x * 0x2545f4914f6cdd1dull) >> 11) / 4503599627370496.0 - 1.0);
  };
  for (LayerCache& l : st.layers) {
    l.reserve(st.pos + n);
    // A sliding ring only needs its last `ring` positions written.
    const int64_t first = l.ring ? std::max(st.pos, st.pos + n - l.ring) : st.pos;
    std::vector<float> k(size_t(l.row)), v(size_t(l.row));
    for (int64_t p = first; p < st.pos + n; ++p) {
      for (int64_t i = 0; i < l.row; ++i) k[size_t(i)] = next(), v[size_t(i)] = next();
      l.put(p, k.data(), v.data());
    }
    for (auto* c : {&l.conv_k, &l.conv_v, &l.conv_attn, &l.conv_mlp})
      for (float& f : *c) f = next();
  }
  st.pos += n;
  return Status::success();
}

Status Session::reserve(int64_t positions) {
  if (impl_->max_context > 0 && positions > impl_->max_context)
    return Status::error("[session] reserve: " + std::to_string(positions) + " positions > " +
                         "context limit " + std::to_string(impl_->max_context));
  for (LayerCache& l : impl_->state.layers) l.reserve(positions);
  return Status::success();
}

std::span<const float> Session::last_logits() const {
  return impl_->logits;
}

int64_t Session::position() const {
  return impl_->state.pos;
}

std::shared_ptr<const SessionSnapshot> Session::snapshot() const {
  auto snap = std::make_shared<SessionSnapshot>();
  snap->state = impl_->state.compact_copy();
  return snap;
}

void Session::restore(const SessionSnapshot& snap) {
  impl_->state = snap.state;
}

void Session::reset() {
  impl_->state = SequenceState::fresh(impl_->model->config, impl_->scratch.chunk, impl_->kv);
}

size_t Session::state_bytes() const {
  return impl_->state.bytes();
}

}  // namespace inkling
