#!/usr/bin/env python3
"""Generate tests/fixtures/affine_quantize/cases.safetensors: mx.quantize's exact output for every
MLX affine width and group, for the bit-exact test of inkling's quantizer (src/ops/affine_quantize).

Inputs: 12 rows x 256 columns, stored as `x_<dtype>` for dtype bf16, f16 and f32 (the same values
rounded to each dtype): random rows of different scales, plus rows built to hit the quantizer's
edge logic (an all-zero group, constant groups, groups whose min or max dominates, tiny values
near the 1e-7 scale floor, a group with exact ties between codes, large magnitudes).
Outputs, per dtype, width (2, 3, 4, 5, 6, 8) and group (32, 64, 128):
`q_<dtype>_b<bits>_g<group>.weight` (U32 codes), `.scales`, `.biases` (of the input dtype).

Also checks that MLX packs every width as one little-endian bit stream per row (element c at bits
[c*bits, (c+1)*bits)), which the C++ quantizer and decoder assume. Deterministic; run:
    python tools/make_affine_quantize_fixture.py
"""

from __future__ import annotations

from pathlib import Path

import mlx.core as mx
import numpy as np

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "affine_quantize"
DTYPES = {"bf16": mx.bfloat16, "f16": mx.float16, "f32": mx.float32}
BITS = (2, 3, 4, 5, 6, 8)
GROUPS = (32, 64, 128)
COLS = 256


def inputs() -> np.ndarray:
    rng = np.random.default_rng(20260715)
    rows = [rng.standard_normal(COLS) * s for s in (0.02, 0.3, 1.0, 7.5)]
    edge = np.zeros(COLS)
    edge[32:64] = 0.25                                   # constant positive group
    edge[64:96] = -3.0                                   # constant negative group
    edge[96:128] = np.linspace(-0.1, 2.0, 32)            # max dominates
    edge[128:160] = np.linspace(-2.0, 0.1, 32)           # min dominates
    edge[160:192] = rng.standard_normal(32) * 1e-8       # below the 1e-7 scale floor
    edge[192:224] = np.arange(32) * 0.125 - 1.0          # exact grid: ties between codes
    edge[224:256] = np.clip(rng.standard_normal(32) * 2e4, -6e4, 6e4)  # large (finite in f16)
    rows.append(edge)                                    # edge[0:32] stays all zero
    sym = rng.standard_normal(COLS)
    sym[::32] = 4.0                                      # |max| == |min| in every group
    sym[1::32] = -4.0
    rows.append(sym)
    rows.append(rng.uniform(0.0, 1.0, COLS))             # all positive
    rows.append(-rng.uniform(0.0, 1.0, COLS))            # all negative
    rows.append(rng.standard_normal(COLS) * 1e-3 + 5.0)  # offset, narrow
    rows.append(np.round(rng.standard_normal(COLS) * 4) / 4)  # few distinct values
    rows.append(rng.laplace(size=COLS))
    rows.append(rng.standard_normal(COLS) * 1e-6)
    return np.stack(rows).astype(np.float32)


def unpack_stream(words: np.ndarray, bits: int, cols: int) -> np.ndarray:
    out = np.zeros((words.shape[0], cols), dtype=np.int64)
    for r in range(words.shape[0]):
        v = 0
        for i, w in enumerate(words[r]):
            v |= int(w) << (32 * i)
        for c in range(cols):
            out[r, c] = (v >> (bits * c)) & ((1 << bits) - 1)
    return out


def main():
    x = inputs()
    tensors = {}
    for dname, dt in DTYPES.items():
        xd = mx.array(x).astype(dt)
        tensors[f"x_{dname}"] = xd
        for bits in BITS:
            for group in GROUPS:
                wq, s, b = mx.quantize(xd, group_size=group, bits=bits)
                # The bit-stream packing, checked against MLX's own dequantize.
                q = unpack_stream(np.array(wq), bits, COLS)
                s32, b32 = s.astype(mx.float32), b.astype(mx.float32)
                deq = np.array(mx.dequantize(wq, s32, b32, group_size=group, bits=bits))
                mine = (np.repeat(np.array(s32), group, -1) * q.astype(np.float32)).astype(np.float32)
                mine = mine + np.repeat(np.array(b32), group, -1)
                assert np.array_equal(deq.view(np.uint32), mine.view(np.uint32)), (dname, bits, group)
                stem = f"q_{dname}_b{bits}_g{group}"
                tensors[stem + ".weight"], tensors[stem + ".scales"], tensors[stem + ".biases"] = wq, s, b
    OUT.mkdir(parents=True, exist_ok=True)
    mx.save_safetensors(str(OUT / "cases.safetensors"), tensors, metadata={"format": "mlx", "mlx": mx.__version__})
    print(f"wrote {OUT / 'cases.safetensors'} ({len(tensors)} tensors, mlx {mx.__version__})")


if __name__ == "__main__":
    main()
