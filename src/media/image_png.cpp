// PNG -> RGB8 with libpng's classic API: palette and low-bit grey expanded, 16-bit samples
// reduced to their high byte, grey replicated, alpha (and tRNS) dropped or, with keep_alpha,
// kept as RgbImage::alpha (tRNS expanded to an alpha channel), interlacing undone.
// libpng reports errors by longjmp: only trivially destructible locals live across setjmp.
#include <png.h>

#include <csetjmp>
#include <cstring>
#include <memory>

#include "media/image.h"
#include "media/image_limits.h"

namespace inkling {

namespace {

struct PngReader {
  const uint8_t* data = nullptr;
  size_t size = 0, pos = 0;
  char error[256] = {};
};

void png_read_mem(png_structp png, png_bytep out, png_size_t n) {
  auto* r = static_cast<PngReader*>(png_get_io_ptr(png));
  if (n > r->size - r->pos) png_error(png, "the file is truncated");
  std::memcpy(out, r->data + r->pos, n);
  r->pos += n;
}

void png_on_error(png_structp png, png_const_charp msg) {
  auto* r = static_cast<PngReader*>(png_get_error_ptr(png));
  std::snprintf(r->error, sizeof(r->error), "%s", msg ? msg : "unknown error");
  png_longjmp(png, 1);
}

void png_on_warning(png_structp, png_const_charp) {
}  // benign (unknown chunks, bad CRC in ancillary)

}  // namespace

Result<RgbImage> decode_png(std::span<const uint8_t> bytes, const std::string& name,
                            const ImageLimits& limits) {
  PngReader reader;
  reader.data = bytes.data();
  reader.size = bytes.size();
  // Heap objects: the pointers do not change after setjmp, so they stay valid across a longjmp.
  auto img = std::make_unique<RgbImage>();
  auto rows = std::make_unique<std::vector<png_bytep>>();
  Status size_error;
  png_structp png =
      png_create_read_struct(PNG_LIBPNG_VER_STRING, &reader, png_on_error, png_on_warning);
  if (!png) return Status::error("[image] " + name + ": out of memory");
  png_infop info = png_create_info_struct(png);
  if (!info) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    return Status::error("[image] " + name + ": out of memory");
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return Status::error("[image] " + name + ": invalid PNG: " + reader.error);
  }
  png_set_read_fn(png, &reader, png_read_mem);
  // Refuse absurd headers inside libpng too (it checks before any row allocation).
  png_set_user_limits(png, png_uint_32(limits.max_side), png_uint_32(limits.max_side));
  png_read_info(png, info);
  const int64_t w = png_get_image_width(png, info), h = png_get_image_height(png, info);
  size_error = check_image_size(w, h, name, limits);
  if (!size_error.ok()) {
    png_destroy_read_struct(&png, &info, nullptr);
    return size_error;
  }
  const int color = png_get_color_type(png, info);
  png_set_expand(png);  // palette -> RGB, grey < 8 bits -> 8 bits, tRNS -> alpha
  png_set_strip_16(png);
  if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
  const bool alpha = limits.keep_alpha && ((color & PNG_COLOR_MASK_ALPHA) != 0 ||
                                           png_get_valid(png, info, PNG_INFO_tRNS) != 0);
  if (!alpha) png_set_strip_alpha(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  const int64_t ch = alpha ? 4 : 3;
  if (png_get_rowbytes(png, info) != size_t(w * ch) || png_get_channels(png, info) != ch) {
    png_destroy_read_struct(&png, &info, nullptr);
    return Status::error("[image] " + name + ": unsupported PNG pixel layout");
  }
  img->height = h;
  img->width = w;
  img->pixels.resize(size_t(w * h * ch));
  rows->resize(size_t(h));
  for (int64_t y = 0; y < h; ++y) (*rows)[size_t(y)] = img->pixels.data() + y * w * ch;
  png_read_image(png, rows->data());
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  if (alpha) {  // RGBA rows -> RGB pixels + alpha plane
    img->alpha.resize(size_t(w * h));
    for (int64_t i = 0; i < w * h; ++i) {
      for (int c = 0; c < 3; ++c) img->pixels[size_t(i * 3 + c)] = img->pixels[size_t(i * 4 + c)];
      img->alpha[size_t(i)] = img->pixels[size_t(i * 4 + 3)];
    }
    img->pixels.resize(size_t(w * h * 3));
  }
  return std::move(*img);
}

}  // namespace inkling
