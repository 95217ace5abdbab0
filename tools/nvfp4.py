"""NVFP4 (ModelOpt) quantization in numpy, shared by the quant fixtures and the benchmark slice.

Per expert matrix [rows, cols]: scale2 = amax / (6 * 448); per 16-column block, the E4M3 scale is
block_amax / 6 / scale2 (clamped to [2^-9, 448], rounded to nearest even by torch's float8_e4m3fn
cast); values are rounded to the nearest E2M1 of w / (e4m3 * scale2), ties to the even magnitude
index, and packed two per byte, low nibble first. Decoding is e2m1 * (f32(e4m3) * scale2), the
block factor rounded once, as the engine's dequant_row() defines it.
"""

from __future__ import annotations

import numpy as np
import torch

E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6], dtype=np.float32)
_MIDS = (E2M1[1:] + E2M1[:-1]) / 2


def e4m3_round(x: np.ndarray) -> np.ndarray:
    """f32 -> E4M3 bytes (round to nearest even, via torch's float8_e4m3fn cast)."""
    return torch.from_numpy(x.astype(np.float32)).to(torch.float8_e4m3fn).view(torch.uint8).numpy()


def e4m3_value(b: np.ndarray) -> np.ndarray:
    return torch.from_numpy(b.astype(np.uint8)).view(torch.float8_e4m3fn).float().numpy()


def e2m1_round(a: np.ndarray) -> np.ndarray:
    """Nearest E2M1 code (sign bit 3), ties to the even magnitude index."""
    mag = np.abs(a)
    idx = np.searchsorted(_MIDS, mag, side="left")  # a tie at _MIDS[k] gives k (the lower index)
    tie = (idx < 7) & (mag == _MIDS[np.minimum(idx, 6)]) & (idx % 2 == 1)
    idx = np.where(tie, idx + 1, idx)
    return (idx | np.where((a < 0) & (idx > 0), 8, 0)).astype(np.uint8)


def nvfp4_quantize(w: np.ndarray, with_deq: bool = True):
    """One expert [rows, cols] -> (codes U8 [rows, cols/2], scales U8 [rows, cols/16], scale2, deq or None)."""
    w = w.astype(np.float32)
    rows, cols = w.shape
    scale2 = np.float32(np.abs(w).max() / np.float32(6.0 * 448.0))
    blocks = w.reshape(rows, cols // 16, 16)
    bs = (np.abs(blocks).max(-1) / np.float32(6.0)) / scale2
    sbytes = e4m3_round(np.clip(bs, 2.0**-9, 448.0))
    factor = (e4m3_value(sbytes) * scale2).astype(np.float32)  # the block factor, rounded once
    codes = e2m1_round(blocks / factor[..., None]).reshape(rows, cols)
    packed = (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8)
    deq = nvfp4_decode(packed, sbytes, scale2) if with_deq else None
    return packed, sbytes, scale2, deq


def nvfp4_decode(packed, sbytes, scale2):
    lo, hi = packed & 15, packed >> 4
    codes = np.stack([lo, hi], -1).reshape(packed.shape[0], -1)
    val = np.where(codes & 8, -1.0, 1.0).astype(np.float32) * E2M1[codes & 7]
    factor = (e4m3_value(sbytes) * np.float32(scale2)).astype(np.float32)
    return (val * np.repeat(factor, 16, axis=-1)).astype(np.float32)
