// decode_image(): sniffs the format and dispatches; the checks shared by both decoders.
#include "media/image.h"

#include <cstring>

namespace inkling {

std::string sniff_image_format(std::span<const uint8_t> b) {
  auto is = [&](const char* magic, size_t n, size_t at = 0) {
    return b.size() >= at + n && std::memcmp(b.data() + at, magic, n) == 0;
  };
  if (is("\x89PNG\r\n\x1a\n", 8)) return "png";
  if (is("\xff\xd8\xff", 3)) return "jpeg";
  if (is("GIF8", 4)) return "gif";
  if (is("RIFF", 4) && is("WEBP", 4, 8)) return "webp";
  if (is("BM", 2)) return "bmp";
  if (is("II*\0", 4) || is("MM\0*", 4)) return "tiff";
  if (is("ftyp", 4, 4)) return "heif/avif";
  return "";
}

Result<RgbImage> decode_image(std::span<const uint8_t> bytes, const std::string& name,
                              const ImageLimits& limits) {
  const std::string fmt = sniff_image_format(bytes);
  if (fmt == "png") return decode_png(bytes, name, limits);
  if (fmt == "jpeg") return decode_jpeg(bytes, name, limits);
  if (bytes.empty()) return Status::error("[image] " + name + ": empty file");
  if (fmt.empty())
    return Status::error("[image] " + name + ": not a PNG or JPEG file (unrecognised header)");
  return Status::error("[image] " + name + ": " + fmt +
                       " images are not supported; convert it to PNG or JPEG");
}

}  // namespace inkling
