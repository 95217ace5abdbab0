// make_jobs() binds the plan to the source; write_job() streams one item: rows in chunks of
// about 32 MB of output, quantized (or converted) by the pool, written at their offsets, and the
// source pages of each chunk released once it is written.
#include "quantize/quantize_jobs.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

#include "ops/affine_quantize.h"
#include "quantize/weighted_affine.h"

namespace inkling::quant {

namespace {

constexpr uint64_t kChunkBytes = 32u << 20;

bool row_major(const TensorRef& r) {
  int64_t stride = 1;
  for (size_t d = r.shape.size(); d-- > 0;) {
    if (r.shape[d] != 1 && r.strides[d] != stride) return false;
    stride *= r.shape[d];
  }
  return true;
}

int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

bool is_float(DType t) {
  return t == DType::F32 || t == DType::BF16 || t == DType::F16;
}

// A small tensor the source stores otherwise and binding assembled: Inkling 2 Mini's message
// queries, two tensors in the original layout and one [core, 4, H] in transformers'.
const std::vector<float>* assembled(const Source& src, const std::string& name) {
  if (name == "model.message_input.query" && !src.tensors.count(name) &&
      !src.weights.v2.message_query.empty())
    return &src.weights.v2.message_query;
  return nullptr;
}

}  // namespace

void attach_importance(std::vector<Job>& jobs, const Imatrix* imatrix) {
  for (Job& j : jobs) {
    if (!j.module || !j.module->spec.quantized) continue;
    const Module& m = *j.module;
    j.search = true;
    if (!imatrix) continue;
    auto it = imatrix->entries.find(m.path);
    if (it == imatrix->entries.end()) continue;
    const ImatrixEntry& e = it->second;
    const int64_t C = m.cols;
    std::vector<double> seen(size_t(C), 0.0);  // mean over the rows (experts) with tokens
    int64_t n_seen = 0;
    for (int64_t x = 0; x < e.n; ++x)
      if (e.tokens[size_t(x)] > 0) {
        ++n_seen;
        for (int64_t c = 0; c < C; ++c) seen[size_t(c)] += e.mean_sq[size_t(x * C + c)];
      }
    if (n_seen == 0) continue;  // nothing reached it: every column alike
    j.weights.assign(e.mean_sq.begin(), e.mean_sq.end());
    for (int64_t x = 0; x < e.n; ++x) {
      float* w = j.weights.data() + x * C;
      if (e.tokens[size_t(x)] == 0)
        for (int64_t c = 0; c < C; ++c) w[c] = float(seen[size_t(c)] / double(n_seen));
      double mean = 0;
      for (int64_t c = 0; c < C; ++c) mean += w[c];
      const float floor = float(mean / double(C)) * kImportanceFloor;
      for (int64_t c = 0; c < C; ++c) w[c] += floor;
    }
    j.rows_per_weight = m.total_rows() / e.n;
  }
}

Status bad_row_error(const Module& m, int64_t row) {
  std::string where = "row " + std::to_string(row);
  if (m.n > 0)
    where +=
        " (expert " + std::to_string(row / m.rows) + ", row " + std::to_string(row % m.rows) + ")";
  return Status::error("[quantize] " + m.path + ": " + where +
                       " of the source holds a NaN or infinite value");
}

int64_t encode_rows(const Job& j, int64_t r0, int64_t n, uint8_t* codes, uint8_t* scales,
                    uint8_t* biases, ThreadPool& pool) {
  const Module& m = *j.module;
  const RowSource& rs = j.rows;
  const int64_t C = m.cols;
  const DType fd = m.float_dtype;
  const size_t fs = dtype_size(fd);
  const QuantSpec& q = m.spec;
  const size_t code_row = q.quantized ? size_t(affine_code_bytes(C, q.bits)) : size_t(C) * fs;
  const size_t side_row = q.quantized ? size_t(affine_scale_bytes(C, q.group, fd)) : 0;
  const bool copy = rs.copyable(q, fd);
  std::mutex mu;
  int64_t bad_row = -1;
  pool.parallel_for(size_t(n), [&](size_t b, size_t e) {
    std::vector<float> row(static_cast<size_t>(C));
    for (size_t i = b; i < e; ++i) {
      const int64_t r = r0 + int64_t(i);
      uint8_t* c = codes + i * code_row;
      if (copy) {
        rs.copy_row(r, q, fd, c, scales + i * side_row, biases + i * side_row);
        continue;
      }
      rs.row(r, row.data());
      if (q.quantized) {
        const float* imp =
            j.weights.empty() ? nullptr : j.weights.data() + (r / j.rows_per_weight) * C;
        const bool ok =
            j.search ? affine_quantize_row_weighted(row.data(), imp, C, q.bits, q.group, fd, c,
                                                    scales + i * side_row, biases + i * side_row)
                     : affine_quantize_row(row.data(), C, q.bits, q.group, fd, c,
                                           scales + i * side_row, biases + i * side_row);
        if (!ok) {
          std::lock_guard<std::mutex> lock(mu);
          if (bad_row < 0 || r < bad_row) bad_row = r;
        }
      } else {
        for (int64_t k = 0; k < C; ++k) store_float(fd, row[size_t(k)], c + size_t(k) * fs);
      }
    }
  });
  return bad_row;
}

namespace {

Status write_module(const Job& j, SafetensorsWriter& w, size_t first, ThreadPool& pool,
                    const std::atomic<bool>& stop, const ProgressFn& progress) {
  const Module& m = *j.module;
  const RowSource& rs = j.rows;
  const int64_t R = m.total_rows(), C = m.cols;
  const DType fd = m.float_dtype;
  const size_t fs = dtype_size(fd);
  const QuantSpec& q = m.spec;
  const size_t code_row = q.quantized ? size_t(affine_code_bytes(C, q.bits)) : size_t(C) * fs;
  const size_t side_row = q.quantized ? size_t(affine_scale_bytes(C, q.group, fd)) : 0;
  const size_t out_row = code_row + 2 * side_row;
  const int64_t chunk =
      std::clamp<int64_t>(int64_t(kChunkBytes / std::max<size_t>(out_row, 1)), 1, R);
  std::vector<uint8_t> codes(size_t(chunk) * code_row), scales(size_t(chunk) * side_row),
      biases(size_t(chunk) * side_row);
  for (int64_t r0 = 0; r0 < R; r0 += chunk) {
    const int64_t n = std::min(chunk, R - r0);
    const int64_t bad_row = encode_rows(j, r0, n, codes.data(), scales.data(), biases.data(), pool);
    if (bad_row >= 0) return bad_row_error(m, bad_row);
    INK_RETURN_IF_ERROR(
        w.write(first, uint64_t(r0) * code_row, codes.data(), size_t(n) * code_row));
    if (q.quantized) {
      INK_RETURN_IF_ERROR(
          w.write(first + 1, uint64_t(r0) * side_row, scales.data(), size_t(n) * side_row));
      INK_RETURN_IF_ERROR(
          w.write(first + 2, uint64_t(r0) * side_row, biases.data(), size_t(n) * side_row));
    }
    rs.release(r0, r0 + n);
    progress(uint64_t(n) * out_row, r0 + n == R ? int64_t(j.decls.size()) : 0);
    if (stop.load()) return Status::success();
  }
  return Status::success();
}

Status write_small(const Job& j, SafetensorsWriter& w, size_t first) {
  const TensorDecl& d = j.decls[0];
  std::vector<uint8_t> out(size_t(d.nbytes()));
  if (j.values) {
    std::memcpy(out.data(), j.values->data(), out.size());
  } else if (!j.ref) {  // generated: ones
    for (size_t i = 0; i < out.size() / 4; ++i) store_float(DType::F32, 1.0f, out.data() + i * 4);
  } else if (row_major(*j.ref)) {
    std::memcpy(out.data(), j.ref->data, out.size());
  } else {
    // A strided view: walk it in row-major order.
    const TensorRef& r = *j.ref;
    const size_t es = dtype_size(r.dtype);
    std::vector<int64_t> idx(r.shape.size(), 0);
    for (int64_t i = 0, n = numel(r.shape); i < n; ++i) {
      int64_t off = 0;
      for (size_t k = 0; k < r.shape.size(); ++k) off += idx[k] * r.strides[k];
      std::memcpy(out.data() + size_t(i) * es, r.data + size_t(off) * es, es);
      for (size_t k = r.shape.size(); k-- > 0;) {
        if (++idx[k] < r.shape[k]) break;
        idx[k] = 0;
      }
    }
  }
  return w.write(first, 0, out.data(), out.size());
}

Status write_raw(const Job& j, SafetensorsWriter& w, size_t first, const std::atomic<bool>& stop,
                 const ProgressFn& progress) {
  const TensorInfo& t = *j.raw;
  for (size_t off = 0; off < t.nbytes; off += kChunkBytes) {
    const size_t n = std::min<size_t>(kChunkBytes, t.nbytes - off);
    INK_RETURN_IF_ERROR(w.write(first, off, t.data + off, n));
    release_pages(t.data + off, n);
    progress(n, off + n == t.nbytes ? 1 : 0);
    if (stop.load()) return Status::success();
  }
  if (t.nbytes == 0) progress(0, 1);
  return Status::success();
}

}  // namespace

Result<std::vector<Job>> make_jobs(const Source& src, Plan& plan, std::optional<DType> dtype,
                                   bool keep_mtp) {
  std::vector<Job> jobs;
  for (PlanItem& item : plan.items) {
    Job j;
    if (Module* m = std::get_if<Module>(&item)) {
      INK_ASSIGN_OR_RETURN(j.rows, RowSource::of(src, *m));
      m->float_dtype = dtype.value_or(j.rows.natural_dtype());
      j.module = m;
      const QuantSpec& q = m->spec;
      if (q.quantized) {
        j.decls.push_back({m->tensor_name(), DType::U32, m->shape(m->cols * q.bits / 32)});
        j.decls.push_back({m->path + ".scales", m->float_dtype, m->shape(m->cols / q.group)});
        j.decls.push_back({m->path + ".biases", m->float_dtype, m->shape(m->cols / q.group)});
      } else {
        j.decls.push_back({m->tensor_name(), m->float_dtype, m->shape(m->cols)});
      }
    } else {
      SmallTensor& t = std::get<SmallTensor>(item);
      j.small = &t;
      const std::vector<float>* values = assembled(src, t.source);
      if (values && size_t(numel(t.shape)) == values->size()) {
        j.values = values;
        t.dtype = DType::F32;
      } else if (!t.source.empty()) {
        auto it = src.tensors.find(t.source);
        if (it == src.tensors.end())
          return Status::error("[quantize] " + src.dir + ": missing tensor '" + t.source + "'");
        j.ref = &it->second;
        if (!is_float(j.ref->dtype) || numel(j.ref->shape) != numel(t.shape))
          return Status::error("[quantize] " + j.ref->origin + ": expected " +
                               std::to_string(numel(t.shape)) + " float values, got " +
                               dtype_name(j.ref->dtype) + " " + shape_str(j.ref->origin_shape));
        t.dtype = j.ref->dtype;
      } else {
        t.dtype = DType::F32;
      }
      j.decls.push_back({t.name, t.dtype, t.shape});
    }
    for (const TensorDecl& d : j.decls) j.bytes += d.nbytes();
    jobs.push_back(std::move(j));
  }
  // MTP tensors the plan does not write (all of them unless --mtp quantize planned the depths)
  // are copied as stored; with planned depths under the release's spelling model.mtp.layers.
  std::set<std::string> planned_names, planned_modules;
  for (const PlanItem& item : plan.items) {
    if (const Module* m = std::get_if<Module>(&item); m && m->group == Group::kMtp)
      planned_modules.insert(m->path);
    else if (const SmallTensor* t = std::get_if<SmallTensor>(&item))
      planned_names.insert(t->name);
  }
  const bool mtp_planned = !planned_modules.empty();
  if (keep_mtp)
    for (const TensorInfo* t : src.mtp) {
      std::string name = t->name;
      if (mtp_planned && name.rfind("mtp.", 0) == 0) name = "model." + name;
      const size_t dot = name.rfind('.');
      if (planned_names.count(name) ||
          (dot != std::string::npos && planned_modules.count(name.substr(0, dot))))
        continue;
      Job j;
      j.raw = t;
      j.decls.push_back({name, t->dtype, t->shape});
      j.bytes = t->nbytes;
      jobs.push_back(std::move(j));
    }
  return jobs;
}

Status write_job(const Job& j, SafetensorsWriter& w, size_t first, ThreadPool& pool,
                 const std::atomic<bool>& stop, const ProgressFn& progress) {
  if (j.module) return write_module(j, w, first, pool, stop, progress);
  if (j.raw) return write_raw(j, w, first, stop, progress);
  INK_RETURN_IF_ERROR(write_small(j, w, first));
  if (j.ref) release_pages(j.ref->data, size_t(j.bytes));
  progress(j.bytes, 1);
  return Status::success();
}

}  // namespace inkling::quant
