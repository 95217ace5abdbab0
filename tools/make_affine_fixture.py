#!/usr/bin/env python3
"""Write tests/fixtures/affine_mlx/affine.safetensors: MLX affine quantization at every width.

For each bits in (1, 2, 3, 4, 5, 6, 8), group in (32, 64, 128) and scale dtype in (bf16, f16,
f32), a 3 x 256 matrix is quantized by mlx.core.quantize and stored as MLX stores it
(`b{bits}_g{group}_{dtype}.weight` U32 [3, 256 * bits / 32], `.scales` and `.biases` [3, 256 /
group] in the dtype), with `.dequant`: mlx.core.dequantize of the stored codes on the scales and
biases upcast to f32 (w = s * q + b in f32, the engine's definition), F32 [3, 256].
tests/ops/test_affine_widths.cpp checks dequant_row against it bit for bit.

Before writing, the script verifies what the C++ side assumes about MLX's format and stops if
any of it fails:
  * packing: every width is one little-endian bit stream per row, element c at bits
    [c * bits, (c + 1) * bits), codes straddling u32 words when bits does not divide 32
    (checked by dequantizing hand-packed codes with scale 1 and bias 0, and by unpacking the
    quantizer's own output);
  * dequantization on f32 scales and biases is s * q rounded, then + b rounded (two roundings,
    not a fused multiply-add): equal bit for bit to numpy's float32 (s * q) + b;
  * scales of either sign occur (the quantizer picks the sign per group).

The source rows mix magnitudes (1e-3 .. 30), a constant group and a group of one repeated pair,
so degenerate ranges and negative scales are covered. Deterministic; run:
    python tools/make_affine_fixture.py
"""

from __future__ import annotations

from pathlib import Path

import mlx.core as mx
import numpy as np

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "affine_mlx"
WIDTHS = (1, 2, 3, 4, 5, 6, 8)
GROUPS = (32, 64, 128)
DTYPES = {"bf16": mx.bfloat16, "f16": mx.float16, "f32": mx.float32}
ROWS, COLS = 3, 256


def unpack(words: np.ndarray, bits: int, cols: int) -> np.ndarray:
    """Codes of a [rows, cols * bits / 32] U32 array read as one little-endian bit stream per row."""
    stream = np.unpackbits(words.astype("<u4").view(np.uint8).reshape(words.shape[0], -1), axis=1, bitorder="little")
    q = np.zeros((words.shape[0], cols), np.uint32)
    for b in range(bits):
        q |= stream[:, b::bits][:, :cols].astype(np.uint32) << b
    return q


def pack(q: np.ndarray, bits: int) -> np.ndarray:
    rows, cols = q.shape
    stream = np.zeros((rows, cols * bits), np.uint8)
    for b in range(bits):
        stream[:, b::bits] = (q >> b) & 1
    return np.packbits(stream, axis=1, bitorder="little").view("<u4").reshape(rows, cols * bits // 32)


def check_packing(rng: np.random.Generator):
    for bits in WIDTHS:
        q = rng.integers(0, 1 << bits, size=(4, 128), dtype=np.uint32)
        words = mx.array(pack(q, bits))
        ones, zeros = mx.ones((4, 4)), mx.zeros((4, 4))
        d = np.array(mx.dequantize(words, ones, zeros, group_size=32, bits=bits))
        assert np.array_equal(d, q.astype(np.float32)), f"bits {bits}: MLX does not unpack a little-endian bit stream"


def source(rng: np.random.Generator, group: int) -> np.ndarray:
    w = rng.standard_normal((ROWS, COLS)).astype(np.float32)
    w *= np.array([[1e-3], [1.0], [30.0]], np.float32)
    w[1, :group] = 0.37  # constant group (zero range)
    w[2, group : 2 * group] = np.tile(np.array([-2.5, 4.0], np.float32), group // 2)
    return w


def main():
    rng = np.random.default_rng(20251201)
    check_packing(rng)
    tensors, negative = {}, 0
    for bits in WIDTHS:
        for group in GROUPS:
            for dname, dt in DTYPES.items():
                w = mx.array(source(rng, group)).astype(dt)
                wq, s, b = mx.quantize(w, group_size=group, bits=bits)
                s32, b32 = s.astype(mx.float32), b.astype(mx.float32)
                deq = np.array(mx.dequantize(wq, s32, b32, group_size=group, bits=bits).astype(mx.float32))
                q = unpack(np.array(wq), bits, COLS)
                assert int(q.max()) < (1 << bits)
                sn = np.repeat(np.array(s32), group, axis=1)
                bn = np.repeat(np.array(b32), group, axis=1)
                mine = (sn * q.astype(np.float32)).astype(np.float32) + bn
                assert np.array_equal(mine.view(np.uint32), deq.view(np.uint32)), f"b{bits} g{group} {dname}: not (s*q)+b in f32"
                negative += int((np.array(s32) < 0).sum())
                stem = f"b{bits}_g{group}_{dname}"
                tensors[stem + ".weight"], tensors[stem + ".scales"], tensors[stem + ".biases"] = wq, s, b
                tensors[stem + ".dequant"] = mx.array(deq)
    assert negative > 0, "no negative scale: the fixture would not cover them"
    OUT.mkdir(parents=True, exist_ok=True)
    mx.save_safetensors(str(OUT / "affine.safetensors"), tensors, metadata={"format": "mlx", "mlx": mx.__version__})
    print(f"wrote {OUT / 'affine.safetensors'}: {len(tensors) // 4} matrices, {negative} negative scales, mlx {mx.__version__}")


if __name__ == "__main__":
    main()
