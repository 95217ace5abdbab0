// load_media_parts / attach_media_rows (see media_parts.h).
#include "media_parts.h"

#include <filesystem>
#include <fstream>
#include <iterator>

#include "context.h"

namespace inkling::server {

namespace {

bool base64_decode(std::string_view in, std::vector<uint8_t>* out) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
  };
  out->clear();
  out->reserve(in.size() / 4 * 3);
  uint32_t acc = 0;
  int bits = 0;
  size_t pad = 0;
  for (char c : in) {
    if (c == '=') {
      ++pad;
      continue;
    }
    if (c == '\n' || c == '\r' || c == ' ') continue;
    const int v = val(c);
    if (v < 0 || pad) return false;
    acc = (acc << 6) | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out->push_back(uint8_t(acc >> bits));
    }
  }
  return pad <= 2;
}

std::optional<ApiError> read_local(const Context& ctx, const MediaPart& p, std::string path,
                                   std::vector<uint8_t>* bytes) {
  if (ctx.opts.media_dir.empty())
    return bad_request(
        "local files are not served: start the server with --media-dir DIR to "
        "allow paths under DIR, or send the file as a data: URL",
        p.param, "local_files_disabled");
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path root = fs::weakly_canonical(ctx.opts.media_dir, ec);
  const fs::path file = fs::weakly_canonical(fs::path(path), ec);
  const auto rel = file.lexically_relative(root);
  if (ec || rel.empty() || *rel.begin() == ".." || !fs::is_regular_file(file, ec))
    return bad_request("'" + path + "' is not a file under --media-dir", p.param, "invalid_path");
  std::ifstream f(file, std::ios::binary);
  bytes->assign(std::istreambuf_iterator<char>(f), {});
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> load_media_parts(const Context& ctx, const std::vector<MediaPart>& parts,
                                         std::vector<MediaEmbedding>* out) {
  MediaOptions opts;
  opts.max_audio_seconds = ctx.opts.max_audio_seconds;
  opts.max_image_pixels = ctx.opts.max_image_pixels;
  opts.use_engine_threads = false;  // the scheduler thread owns the pool
  for (const MediaPart& p : parts) {
    std::vector<uint8_t> bytes;
    const std::string& url = p.url;
    if (!p.image && !p.data.empty()) {
      if (!base64_decode(p.data, &bytes))
        return bad_request("input_audio.data is not valid base64", p.param, "invalid_base64");
    } else if (url.rfind("data:", 0) == 0) {
      const size_t comma = url.find(',');
      if (comma == std::string::npos || url.substr(0, comma).find(";base64") == std::string::npos)
        return bad_request("expected a base64 data URL (data:<type>;base64,...)", p.param,
                           "invalid_data_url");
      if (!base64_decode(std::string_view(url).substr(comma + 1), &bytes))
        return bad_request("the data URL is not valid base64", p.param, "invalid_base64");
    } else if (url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0) {
      return bad_request("remote URLs are never fetched: send the file as a data: URL", p.param,
                         "remote_url_not_supported");
    } else {
      const std::string path = url.rfind("file://", 0) == 0 ? url.substr(7) : url;
      if (auto e = read_local(ctx, p, path, &bytes)) return e;
    }
    auto e = p.image ? ctx.engine->encode_image(bytes, p.param, opts)
                     : ctx.engine->encode_audio(bytes, p.param, opts);
    if (!e.ok())
      return bad_request(e.status().message(), p.param,
                         p.image ? "invalid_image" : "invalid_audio");
    out->push_back(std::move(e).value());
  }
  return std::nullopt;
}

std::optional<ApiError> attach_media_rows(const Context& ctx, std::vector<MediaEmbedding> media,
                                          std::vector<int32_t>* ids,
                                          std::shared_ptr<const std::vector<MediaEmbedding>>* keep,
                                          std::vector<const float*>* rows,
                                          std::vector<int32_t>* key) {
  auto expanded = expand_media_placeholders(*ctx.engine, *ids, media);
  if (!expanded.ok()) return bad_request(expanded.status().message(), "messages", "media_mismatch");
  *ids = std::move(expanded).value();
  auto owned = std::make_shared<const std::vector<MediaEmbedding>>(std::move(media));
  const ModelInfo& info = ctx.engine->info();
  rows->assign(ids->size(), nullptr);
  size_t k = 0;
  int64_t r = 0;
  for (size_t i = 0; i < ids->size(); ++i) {
    if ((*ids)[i] != info.image_token_id && (*ids)[i] != info.audio_token_id) continue;
    while (r >= (*owned)[k].rows) ++k, r = 0;
    (*rows)[i] = (*owned)[k].data.data() + r * info.hidden;
    ++r;
  }
  // The prefix-cache identity (scheduler.h: JobParams::key): FNV-1a of each row's bytes.
  *key = *ids;
  for (size_t i = 0; i < ids->size(); ++i) {
    if (!(*rows)[i]) continue;
    uint64_t h = 1469598103934665603ull;
    const auto* b = reinterpret_cast<const uint8_t*>((*rows)[i]);
    for (size_t j = 0; j < size_t(info.hidden) * sizeof(float); ++j)
      h = (h ^ b[j]) * 1099511628211ull;
    (*key)[i] = -1 - int32_t(h & 0x3fffffff);
  }
  *keep = std::move(owned);
  return std::nullopt;
}

}  // namespace inkling::server
