// attach_media(): reads and encodes --image/--audio files and lays them out in the prompt.
#include "media_attach.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace inkling::cli {

void add_media_options(CLI::App& app, MediaArgs* a) {
  app.add_option("--image", a->images,
                 "PNG or JPEG file(s) to show the model (repeatable; filled into the prompt's "
                 "image placeholders in order, else placed before the prompt)");
  app.add_option("--audio", a->audios,
                 "16 kHz WAV recording(s) for the model (repeatable; as --image)");
  app.add_option("--upscale", a->upscale,
                 "image long-edge upscale factor before tiling (0 = off; default: the model's "
                 "preprocessor_config.json, else 2.0 capped at 2048 pixels, as vLLM/SGLang)")
      ->check(CLI::Range(0.0, 16.0));
}

Result<PromptMedia> attach_media(const Engine& engine, std::vector<int32_t> ids, const MediaArgs& a,
                                 bool verbose) {
  const ModelInfo& info = engine.info();
  size_t n_img = 0, n_aud = 0;
  for (int32_t t : ids) n_img += t == info.image_token_id, n_aud += t == info.audio_token_id;
  if (n_img == 0 && n_aud == 0) {
    std::vector<int32_t> pre;
    for (size_t i = 0; i < a.images.size(); ++i)
      pre.insert(pre.end(), {info.image_bos_id, info.image_token_id});
    for (size_t i = 0; i < a.audios.size(); ++i)
      pre.insert(pre.end(), {info.audio_bos_id, info.audio_token_id, info.audio_end_id});
    ids.insert(ids.begin(), pre.begin(), pre.end());
    n_img = a.images.size(), n_aud = a.audios.size();
  }
  if (n_img != a.images.size() || n_aud != a.audios.size())
    return Status::error("the prompt has " + std::to_string(n_img) + " image and " +
                         std::to_string(n_aud) + " audio placeholders but " +
                         std::to_string(a.images.size()) + " --image and " +
                         std::to_string(a.audios.size()) + " --audio files were given");
  MediaOptions opts;
  if (a.upscale >= 0) opts.upscale = a.upscale;
  PromptMedia out;
  size_t ki = 0, ka = 0;
  for (int32_t t : ids) {
    if (t != info.image_token_id && t != info.audio_token_id) continue;
    const bool image = t == info.image_token_id;
    const std::string& path = image ? a.images[ki++] : a.audios[ka++];
    const auto t0 = std::chrono::steady_clock::now();
    auto e = encode_file(engine, image, path, opts);
    if (!e.ok()) return e.status();
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (verbose)
      std::fprintf(stderr, "%s: %s (decode + preprocess + tower %.1f ms)\n", path.c_str(),
                   e->description.c_str(), ms);
    out.media.push_back(std::move(e).value());
  }
  INK_ASSIGN_OR_RETURN(out.ids, expand_media_placeholders(engine, ids, out.media));
  return out;
}

Result<MediaEmbedding> encode_file(const Engine& engine, bool image, const std::string& path,
                                   const MediaOptions& opts) {
  std::error_code ec;  // a FIFO would block the read below until a writer comes (for ever)
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    return Status::error(path + ": not a regular file");
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::error(path + ": cannot open the file");
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), {});
  return image ? encode_image(engine, bytes, path, opts) : encode_audio(engine, bytes, path, opts);
}

Status media_rows(const Engine& engine, std::vector<int32_t>& ids,
                  std::span<const MediaEmbedding> media, std::vector<const float*>* rows) {
  INK_ASSIGN_OR_RETURN(ids, expand_media_placeholders(engine, ids, media));
  const ModelInfo& info = engine.info();
  rows->assign(ids.size(), nullptr);
  size_t k = 0;
  int64_t r = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] != info.image_token_id && ids[i] != info.audio_token_id) continue;
    while (r >= media[k].rows) ++k, r = 0;  // expansion made the counts match
    (*rows)[i] = media[k].data.data() + r * info.hidden;
    ++r;
  }
  return Status::success();
}

}  // namespace inkling::cli
