// JPEG -> RGB8 with libjpeg(-turbo) at its defaults (ISLOW DCT, fancy upsampling), as PIL
// decodes. Greyscale is replicated; CMYK/YCCK are refused. Corrupt-data warnings (truncation
// included, which libjpeg would pad with grey) are errors. Errors arrive by longjmp.
// jpeglib.h needs size_t and FILE declared first.
#include <cstddef>
#include <cstdio>

#include <jpeglib.h>

#include <csetjmp>
#include <memory>

#include "media/image.h"
#include "media/image_limits.h"

namespace inkling {

namespace {

struct JpegError {
  jpeg_error_mgr mgr;
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX] = {};
};

void jpeg_on_error(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->message);
  std::longjmp(e->jump, 1);
}

void jpeg_on_message(j_common_ptr cinfo, int level) {
  if (level >= 0) return;  // trace messages
  jpeg_on_error(cinfo);    // warnings: corrupt or truncated data
}

}  // namespace

Result<RgbImage> decode_jpeg(std::span<const uint8_t> bytes, const std::string& name,
                             const ImageLimits& limits) {
  jpeg_decompress_struct cinfo;
  JpegError err;
  auto img = std::make_unique<RgbImage>();  // stable across a longjmp
  Status size_error;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_on_error;
  err.mgr.emit_message = jpeg_on_message;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return Status::error("[image] " + name + ": invalid JPEG: " + err.message);
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&cinfo, TRUE);
  size_error = check_image_size(cinfo.image_width, cinfo.image_height, name, limits);
  if (!size_error.ok()) {
    jpeg_destroy_decompress(&cinfo);
    return size_error;
  }
  if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
    jpeg_destroy_decompress(&cinfo);
    return Status::error("[image] " + name +
                         ": CMYK JPEG images are not supported; convert it to RGB");
  }
  cinfo.out_color_space = JCS_RGB;
  jpeg_start_decompress(&cinfo);
  if (cinfo.output_components != 3) {
    jpeg_destroy_decompress(&cinfo);
    return Status::error("[image] " + name + ": unsupported JPEG colour layout");
  }
  img->width = cinfo.output_width;
  img->height = cinfo.output_height;
  img->pixels.resize(size_t(img->width * img->height * 3));
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = img->pixels.data() + size_t(cinfo.output_scanline) * size_t(img->width) * 3;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return std::move(*img);
}

}  // namespace inkling
