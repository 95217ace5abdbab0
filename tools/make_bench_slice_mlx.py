#!/usr/bin/env python3
"""MLX affine conversion (4-bit group 64 by default; --bits 1-6/8, --group-size 32/64/128) of the
Inkling-Small benchmark slice.

Reads the bf16 slice written by tools/make_bench_slice.py (original `model.llm.*` layout, OG
config.json) shard by shard and writes the same model in the mlx-community "Inkling-Small-mlx-4bit"
naming, experts-only recipe, exactly as tools/make_quant_fixtures.py writes its `quant_mlx4`
fixture (the layout src/model/layouts.cpp sanitize() accepts):

    model.llm.{embed,embed_norm,norm,unembed}.weight, attn.*, *_norm      BF16, names unchanged
    model.llm.layers.N.mlp.gate.{weight,bias,global_scale}               router, unchanged (BF16/F32)
    model.llm.layers.N.{attn.k_sconv,attn.v_sconv,attn_sconv,mlp_sconv}.weight
                                                                          BF16 [C, K, 1] (MLX conv layout)
    dense layers:    mlp.{gate_proj,up_proj,down_proj}.{weight,scales,biases}  (w13_dn de-interleaved)
                     mlp.global_scale                                     BF16, unchanged
    MoE layers:      mlp.experts.{gate_proj,up_proj,down_proj}.{weight,scales,biases}         [E, ...]
                     mlp.shared_experts.{gate_proj,up_proj,down_proj}.{weight,scales,biases}  [S, ...]
                     (w13 rows are gate/up interleaved: gate = even rows, up = odd rows)

Every quantized matrix [out, in] becomes weight U32 [.., out, in*bits/32] (codes as one
little-endian bit stream per row, as MLX packs every width), scales and biases BF16
[.., out, in/group], computed by mlx.core.quantize(bits=bits, group_size=group) on the bf16 values
(CPU). As in the fixture's recipe, "experts-only" means every MLP matrix (dense MLP, routed and
shared experts) is quantized; attention, embed/unembed, norms, convs and the router stay BF16
(router bias/global scale F32). config.json = the slice's OG config plus
`quantization` = `quantization_config` = {group_size, bits, mode: "affine",
recipe: "experts_only"} (the fixture writes no per-module overrides, so neither does this).

Streaming: one output shard per input shard; each output file's header is computed first (shapes
are known), then every quantized piece (one expert's gate/up/down, or a block of rows of a dense
matrix) is quantized on its own and written at its offset. Peak memory stays at a few hundred MB.
Input is read through numpy memmaps of the safetensors files.

    python tools/make_bench_slice_mlx.py          # models/inkling-small-slice-bf16 -> models/inkling-small-slice-mlx4
    python tools/make_bench_slice_mlx.py --src DIR --out DIR [--bits B] [--group-size G] [--force] [--check]

(The default output folder is models/inkling-small-slice-mlx{bits}, with a g{group} suffix when the
group is not 64.)

Never commit the output (models/ is gitignored). Needs numpy and mlx.
"""

from __future__ import annotations

import argparse
import json
import shutil
import struct
import sys
import time
from pathlib import Path

import mlx.core as mx
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
BITS, GROUP = 4, 64  # set from --bits / --group-size in main()
ROW_BLOCK = 2048  # rows of a dense matrix quantized at a time

NP_DTYPES = {"BF16": np.uint16, "F16": np.float16, "F32": np.float32, "U32": np.uint32}
ITEMSIZE = {"BF16": 2, "F16": 2, "F32": 4, "U32": 4}


# ------------------------------------------------------------------------------------------------
# safetensors input (memmap views)
# ------------------------------------------------------------------------------------------------


class Shard:
    def __init__(self, path: Path):
        self.path = path
        with open(path, "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            self.header = json.loads(f.read(n))
        self.header.pop("__metadata__", None)
        self.base = 8 + n

    def names(self):
        return list(self.header)

    def info(self, name):
        h = self.header[name]
        return h["dtype"], list(h["shape"])

    def array(self, name) -> np.ndarray:
        dt, shape = self.info(name)
        start, end = self.header[name]["data_offsets"]
        if dt not in NP_DTYPES:
            raise ValueError(f"{self.path.name}: {name}: unsupported dtype {dt}")
        return np.memmap(self.path, dtype=NP_DTYPES[dt], mode="r", offset=self.base + start, shape=tuple(shape))


# ------------------------------------------------------------------------------------------------
# quantization
# ------------------------------------------------------------------------------------------------


def quantize_bf16(rows_u16: np.ndarray):
    """bf16 bit patterns [rows, in] -> (codes U32 [rows, in/8], scales bf16 bits, biases bf16 bits)."""
    x = mx.view(mx.array(np.ascontiguousarray(rows_u16)), mx.bfloat16)
    wq, s, b = mx.quantize(x, group_size=GROUP, bits=BITS)
    mx.eval(wq, s, b)
    assert wq.dtype == mx.uint32 and s.dtype == mx.bfloat16 and b.dtype == mx.bfloat16
    return np.array(wq), np.array(mx.view(s, mx.uint16)), np.array(mx.view(b, mx.uint16))


def qshapes(lead: list, out_f: int, in_f: int):
    if in_f % GROUP:
        raise ValueError(f"in_features {in_f} is not a multiple of the group size {GROUP}")
    return [
        ("weight", "U32", lead + [out_f, in_f * BITS // 32]),
        ("scales", "BF16", lead + [out_f, in_f // GROUP]),
        ("biases", "BF16", lead + [out_f, in_f // GROUP]),
    ]


# ------------------------------------------------------------------------------------------------
# the plan: output tensors of one input shard
# ------------------------------------------------------------------------------------------------
#
# A plan entry is (out_name, dtype, shape, producer). Quantized matrices share one producer that
# writes the weight/scales/biases triplet; the producer is attached to the ".weight" entry.


def plan_shard(shard: Shard):
    out = []  # (name, dtype, shape)
    jobs = []  # callables(writer) that fill the data
    for name in shard.names():
        dt, shape = shard.info(name)
        if name.endswith("mlp.w13_dn.weight"):  # dense [2*Id, H], rows gate/up interleaved
            stem = name[: -len("w13_dn.weight")]
            Id, H = shape[0] // 2, shape[1]
            for proj, parity in (("gate_proj", 0), ("up_proj", 1)):
                s = stem + proj
                out += [(f"{s}.{k}", d, sh) for k, d, sh in qshapes([], Id, H)]
                jobs.append(("dense", name, s, parity, 2))
        elif name.endswith("mlp.w2_md.weight"):  # dense [H, Id]
            s = name[: -len("w2_md.weight")] + "down_proj"
            out += [(f"{s}.{k}", d, sh) for k, d, sh in qshapes([], shape[0], shape[1])]
            jobs.append(("dense", name, s, 0, 1))
        elif name.endswith("mlp.experts.w13_weight") or name.endswith("mlp.shared_experts.shared_w13_weight"):
            stem = name[: name.rindex(".") + 1]  # "...mlp.experts." / "...mlp.shared_experts."
            E, I2, H = shape
            for proj, parity in (("gate_proj", 0), ("up_proj", 1)):
                s = stem + proj
                out += [(f"{s}.{k}", d, sh) for k, d, sh in qshapes([E], I2 // 2, H)]
                jobs.append(("stacked", name, s, parity, 2))
        elif name.endswith("mlp.experts.w2_weight") or name.endswith("mlp.shared_experts.shared_w2_weight"):
            s = name[: name.rindex(".") + 1] + "down_proj"
            E, H, I = shape
            out += [(f"{s}.{k}", d, sh) for k, d, sh in qshapes([E], H, I)]
            jobs.append(("stacked", name, s, 0, 1))
        elif name.endswith("sconv.weight") and len(shape) == 3 and shape[1] == 1:
            # torch [C, 1, K] -> MLX [C, K, 1]: the same bytes, only the shape changes
            out.append((name, dt, [shape[0], shape[2], 1]))
            jobs.append(("copy", name, name, 0, 1))
        else:
            out.append((name, dt, shape))
            jobs.append(("copy", name, name, 0, 1))
    return out, jobs


class ShardWriter:
    """A safetensors file whose header is written first; tensor data is written at offsets."""

    def __init__(self, path: Path, tensors: list):
        header, off = {"__metadata__": {"format": "mlx"}}, 0
        self.spec = {}
        for name, dt, shape in tensors:
            nbytes = int(np.prod(shape)) * ITEMSIZE[dt]
            header[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + nbytes]}
            self.spec[name] = (dt, shape, off)
            off += nbytes
        h = json.dumps(header, separators=(",", ":")).encode()
        h += b" " * ((8 - len(h) % 8) % 8)
        self.base = 8 + len(h)
        self.total = off
        self.f = open(path, "wb")
        self.f.write(struct.pack("<Q", len(h)))
        self.f.write(h)
        self.f.truncate(self.base + off)
        self.written = {name: 0 for name in self.spec}

    def put(self, name: str, byte_offset: int, arr: np.ndarray):
        dt, shape, off = self.spec[name]
        assert arr.dtype == NP_DTYPES[dt], (name, arr.dtype, dt)
        b = np.ascontiguousarray(arr).tobytes()
        assert byte_offset + len(b) <= int(np.prod(shape)) * ITEMSIZE[dt], name
        self.f.seek(self.base + off + byte_offset)
        self.f.write(b)
        self.written[name] += len(b)

    def close(self):
        for name, (dt, shape, _) in self.spec.items():
            want = int(np.prod(shape)) * ITEMSIZE[dt]
            assert self.written[name] == want, f"{name}: wrote {self.written[name]} of {want} bytes"
        self.f.close()


def put_triplet(w: ShardWriter, stem: str, row_bytes_off: tuple, q):
    wq, s, b = q
    w.put(stem + ".weight", row_bytes_off[0], wq)
    w.put(stem + ".scales", row_bytes_off[1], s)
    w.put(stem + ".biases", row_bytes_off[1], b)


def run_job(job, src: Shard, w: ShardWriter, stats: dict, check: bool):
    kind, name, stem, parity, stride = job
    a = src.array(name)
    if kind == "copy":
        # stream in ~64 MB pieces along dim 0
        flat = a.reshape(a.shape[0], -1) if a.ndim > 1 else a.reshape(1, -1)
        row_b = flat.shape[1] * flat.dtype.itemsize
        step = max(1, (64 << 20) // max(1, row_b))
        for r in range(0, flat.shape[0], step):
            w.put(stem, r * row_b, np.asarray(flat[r : r + step]))
        return
    # quantized: per expert (stacked) or per block of rows (dense), rows = parity::stride
    mats = [a[e] for e in range(a.shape[0])] if kind == "stacked" else [a]
    in_f = a.shape[-1]
    out_rows = a.shape[-2] // stride
    wq_row, sc_row = in_f * BITS // 32 * 4, in_f // GROUP * 2  # bytes per output row
    for e, m in enumerate(mats):
        for r0 in range(0, out_rows, ROW_BLOCK):
            r1 = min(out_rows, r0 + ROW_BLOCK)
            rows = np.asarray(m[parity + r0 * stride : parity + r1 * stride : stride])
            q = quantize_bf16(rows)
            row = e * out_rows + r0
            put_triplet(w, stem, (row * wq_row, row * sc_row), q)
            stats["quantized_values"] += rows.size
            if check and e == 0 and r0 == 0:
                err = check_rows(rows, q)
                stats["max_rel_err"] = max(stats["max_rel_err"], err)


def unpack_codes(wq: np.ndarray, cols: int) -> np.ndarray:
    """Codes of U32 rows read as one little-endian bit stream each (MLX's packing, every width)."""
    stream = np.unpackbits(wq.astype("<u4").view(np.uint8).reshape(wq.shape[0], -1), axis=1, bitorder="little")
    q = np.zeros((wq.shape[0], cols), np.uint32)
    for b in range(BITS):
        q |= stream[:, b::BITS][:, :cols].astype(np.uint32) << b
    return q


def check_rows(rows_u16: np.ndarray, q) -> float:
    """Max |deq - w| / max|w| over one block, dequantized in f32 the engine's way (s*q + b)."""
    wq, s, b = q
    w = (rows_u16.astype(np.uint32) << 16).view(np.float32)
    codes = unpack_codes(wq, rows_u16.shape[1]).astype(np.float32)
    sf = np.repeat((s.astype(np.uint32) << 16).view(np.float32), GROUP, axis=-1)
    bf = np.repeat((b.astype(np.uint32) << 16).view(np.float32), GROUP, axis=-1)
    deq = (sf * codes).astype(np.float32) + bf
    return float(np.abs(deq - w).max() / np.abs(w).max())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", type=Path, default=ROOT / "models" / "inkling-small-slice-bf16")
    ap.add_argument("--out", type=Path, default=None, help="default: models/inkling-small-slice-mlx{bits}[g{group}]")
    ap.add_argument("--bits", type=int, default=4, choices=(1, 2, 3, 4, 5, 6, 8), help="code width (MLX affine)")
    ap.add_argument("--group-size", type=int, default=64, choices=(32, 64, 128), help="columns per scale/bias")
    ap.add_argument("--force", action="store_true", help="overwrite an existing output folder")
    ap.add_argument("--check", action="store_true", help="dequantize the first block of every matrix and report the error")
    a = ap.parse_args(argv)
    global BITS, GROUP
    BITS, GROUP = a.bits, a.group_size
    if a.out is None:
        a.out = ROOT / "models" / (f"inkling-small-slice-mlx{BITS}" + ("" if GROUP == 64 else f"g{GROUP}"))
    mx.set_default_device(mx.cpu)

    index = json.loads((a.src / "model.safetensors.index.json").read_text())
    cfg = json.loads((a.src / "config.json").read_text())
    if "quantization" in cfg or "quantization_config" in cfg:
        print(f"{a.src} is already quantized", file=sys.stderr)
        return 2
    if a.out.exists():
        if not a.force:
            print(f"{a.out} exists (use --force to overwrite)", file=sys.stderr)
            return 2
        shutil.rmtree(a.out)
    a.out.mkdir(parents=True)

    shards = sorted(set(index["weight_map"].values()))
    weight_map, total, t0 = {}, 0, time.time()
    stats = {"quantized_values": 0, "max_rel_err": 0.0}
    for fname in shards:
        src = Shard(a.src / fname)
        tensors, jobs = plan_shard(src)
        w = ShardWriter(a.out / fname, tensors)
        for job in jobs:
            run_job(job, src, w, stats, a.check)
        w.close()
        total += w.total
        for name, _, _ in tensors:
            weight_map[name] = fname
        print(f"[{time.time() - t0:6.1f}s] {fname}: {len(tensors)} tensors, {total / 1e9:.2f} GB so far", flush=True)

    (a.out / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}, indent=1) + "\n"
    )
    qd = {"group_size": GROUP, "bits": BITS, "mode": "affine", "recipe": "experts_only"}
    cfg = dict(cfg, quantization=qd, quantization_config=qd)
    (a.out / "config.json").write_text(json.dumps(cfg, indent=1) + "\n")
    for extra in ("tokenizer.json", "tokenizer_config.json", "generation_config.json", "chat_template.jinja"):
        if (a.src / extra).exists():
            shutil.copy2(a.src / extra, a.out / extra)
    msg = f"wrote {a.out} ({total / 1e9:.2f} GB, {stats['quantized_values'] / 1e9:.2f} G values quantized"
    if a.check:
        msg += f", max rel error of checked blocks {stats['max_rel_err']:.4f}"
    print(msg + f") in {time.time() - t0:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
