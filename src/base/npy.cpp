// .npy header formatting/parsing ('<f4', fortran_order False) with 64-byte header alignment.
#include "base/npy.h"

#include <cstring>
#include <fstream>
#include <regex>

#include "base/mapped_file.h"

namespace inkling {

namespace {

Status write_npy(const std::string& path, const void* data, const std::vector<int64_t>& shape,
                 const char* descr) {
  std::string dims;
  int64_t n = 1;
  for (int64_t d : shape) {
    dims += std::to_string(d) + ", ";
    n *= d;
  }
  if (shape.size() > 1) dims.resize(dims.size() - 2);
  std::string header =
      std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out) return Status::error(path + ": cannot open for writing");
  const uint16_t hlen = uint16_t(header.size());
  out.write("\x93NUMPY\x01\x00", 8);
  out.write(reinterpret_cast<const char*>(&hlen), 2);
  out.write(header.data(), std::streamsize(header.size()));
  out.write(reinterpret_cast<const char*>(data), std::streamsize(n * 4));
  if (!out) return Status::error(path + ": write failed");
  return Status::success();
}

}  // namespace

Status write_npy_f32(const std::string& path, const float* data,
                     const std::vector<int64_t>& shape) {
  return write_npy(path, data, shape, "<f4");
}

Status write_npy_i32(const std::string& path, const int32_t* data,
                     const std::vector<int64_t>& shape) {
  return write_npy(path, data, shape, "<i4");
}

Result<NpyArray> read_npy_f32(const std::string& path) {
  INK_ASSIGN_OR_RETURN(std::string bytes, read_text_file(path));
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
    return Status::error(path + ": not a .npy file");
  size_t hlen = 0, off = 0;
  if (bytes[6] == 1) {
    hlen = uint8_t(bytes[8]) | (size_t(uint8_t(bytes[9])) << 8);
    off = 10;
  } else {
    if (bytes.size() < 12) return Status::error(path + ": truncated header");
    uint32_t h;
    std::memcpy(&h, bytes.data() + 8, 4);
    hlen = h;
    off = 12;
  }
  if (off + hlen > bytes.size()) return Status::error(path + ": truncated header");
  const std::string header = bytes.substr(off, hlen);
  const bool i32 = header.find("'<i4'") != std::string::npos;
  if ((header.find("'<f4'") == std::string::npos && !i32) ||
      header.find("'fortran_order': False") == std::string::npos)
    return Status::error(path +
                         ": only little-endian float32 (or int32) C-order arrays are supported");
  std::smatch m;
  if (!std::regex_search(header, m, std::regex(R"('shape': \(([^)]*)\))")))
    return Status::error(path + ": no shape");
  NpyArray a;
  int64_t n = 1;
  const std::string dims = m[1];
  static const std::regex kDigits(R"(\d+)");
  // Each dimension and the running product stay <= the file's float count, so neither stoll
  // nor the product can overflow; the exact size check follows.
  const size_t max_floats = (bytes.size() - off - hlen) / 4;
  for (std::sregex_iterator it(dims.begin(), dims.end(), kDigits), end; it != end; ++it) {
    const std::string d = it->str();
    const int64_t dim = d.size() <= 18 ? std::stoll(d) : -1;  // 18 digits fit int64
    if (dim < 0 || (dim > 0 && size_t(n) > max_floats / size_t(dim)))
      return Status::error(path + ": data size does not match the shape");
    a.shape.push_back(dim);
    n *= dim;
  }
  if (off + hlen + size_t(n) * 4 != bytes.size())
    return Status::error(path + ": data size does not match the shape");
  a.data.resize(size_t(n));
  if (i32) {  // int32 values (ids) widened to float: exact below 2^24
    for (int64_t i = 0; i < n; ++i) {
      int32_t v;
      std::memcpy(&v, bytes.data() + off + hlen + size_t(i) * 4, 4);
      a.data[size_t(i)] = float(v);
    }
    return a;
  }
  std::memcpy(a.data.data(), bytes.data() + off + hlen, size_t(n) * 4);
  return a;
}

}  // namespace inkling
