#!/usr/bin/env python3
"""Check the MTP depths written by `inkling quantize --mtp quantize` against MLX itself.

For each case (a model with MTP depths, quantize options) the built `inkling quantize` writes a
folder with the trunk kept as stored and the depths' matrices MLX affine. MLX (`mlx`, CPU) then
reads the written file with mx.load and, for every quantized MTP matrix:

  * mx.quantize of the source matrix (the released bf16 weights, read with mx.load too) at the
    written bits / group gives exactly the written codes, scales and biases (the engine's
    quantizer is MLX's bit for bit, so the written tensors are what MLX would have written;
    mlp.w13_dn is quantized in its released interleaved row order, one row at a time);
  * mx.dequantize of the written tensors (scales and biases upcast to f32) equals an independent
    numpy decode, w = f32(scale) * q + f32(bias) with q read from each row's little-endian bit
    stream: the decode the engine's dequant_row() and tests/app/test_cli_quantize_mtp.cpp use;
  * the largest error against the source, in quantization steps (|scale|), is reported (MLX's
    quantizer refines the scale so that 0 or the group's edge is exact, so it is not always
    half a step).

Matrices kept as floats (their row length is not a multiple of the group) must be recorded
`false` in config.json's quantization block and copied unchanged. Exits 77 (ctest: skipped)
when mlx is not importable; CI has no mlx.

    python tools/check_mtp_quantize_mlx.py --inkling build/inkling [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

CASES = [  # (source folder, its MTP file, quantize arguments)
    ("tests/fixtures/mtp/multi", "mtp.safetensors", ["--bits", "4", "--group-size", "32"]),
    ("tests/fixtures/mtp/multi", "mtp.safetensors", ["--bits", "3", "--group-size", "32"]),
    ("tests/fixtures/mtp/multi", "mtp.safetensors", ["--bits", "8", "--group-size", "64"]),
    ("models/inkling-demo", "model.safetensors", ["--bits", "4", "--group-size", "64"]),
    ("models/inkling-demo", "model.safetensors", ["--bits", "8", "--group-size", "64"]),
    ("models/inkling-demo", "model.safetensors", ["--bits", "2", "--group-size", "128"]),
    ("models/inkling-demo", "model.safetensors", ["--bits", "6", "--group-size", "64"]),
]


MATRICES = tuple(m + ".weight" for m in (
    "input_proj", "attn.wq_du", "attn.wk_dv", "attn.wv_dv", "attn.wr_du", "attn.wo_ud",
    "mlp.w13_dn", "mlp.w2_md"))


def unpack(codes, bits: int, cols: int):
    import numpy as np

    words = np.asarray(codes, dtype=np.uint32)
    rows = words.shape[0]
    stream = np.unpackbits(words.view(np.uint8).reshape(rows, -1), axis=1, bitorder="little")
    stream = stream[:, : cols * bits].reshape(rows, cols, bits).astype(np.uint32)
    return (stream << np.arange(bits, dtype=np.uint32)).sum(axis=2).astype(np.uint32)


def check_case(inkling: str, work: Path, src: Path, mtp_file: str, args) -> list[str]:
    import mlx.core as mx
    import numpy as np

    out = work / "out"
    shutil.rmtree(out, ignore_errors=True)
    cmd = [inkling, "quantize", "-q", "-m", str(src), "-o", str(out), "--override",
           "language_model.*=off", "--mtp", "quantize", *args]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return [f"{' '.join(cmd)} failed: {r.stderr.strip()}"]
    bits, group = int(args[args.index("--bits") + 1]), int(args[args.index("--group-size") + 1])
    source = mx.load(str(src / mtp_file))
    written = {}
    for f in sorted(out.glob("*.safetensors")):
        written.update(mx.load(str(f)))
    quant = json.loads((out / "config.json").read_text())["quantization"]
    errors, checked, kept, worst = [], 0, 0, 0.0
    for name in sorted(n for n in source if n.startswith("model.mtp.layers.")):
        w = source[name]
        module = name[: -len(".weight")] if name.endswith(".weight") else None
        if module is None or module + ".scales" not in written:
            if name not in written:
                errors.append(f"{name}: not written")
            elif not mx.array_equal(written[name], w).item():
                errors.append(f"{name}: not copied unchanged")
            elif name.endswith(MATRICES):
                if quant.get(module) is not False:
                    errors.append(f"{module}: kept as floats but not recorded false")
                kept += 1
            continue
        codes, scales, biases = (written[module + s] for s in (".weight", ".scales", ".biases"))
        spec = quant.get(module, {"bits": quant["bits"], "group_size": quant["group_size"]})
        b, g = spec["bits"], spec["group_size"]
        if (b, g) != (bits, group):
            errors.append(f"{module}: written at q{b}/g{g}, asked q{bits}/g{group}")
            continue
        wq, sq, bq = mx.quantize(w, group_size=g, bits=b)
        for what, mine, theirs in (("codes", codes, wq), ("scales", scales, sq),
                                   ("biases", biases, bq)):
            if mine.dtype != theirs.dtype or not mx.array_equal(mine, theirs).item():
                errors.append(f"{module}: {what} differ from mx.quantize of the source")
        s32, b32 = scales.astype(mx.float32), biases.astype(mx.float32)
        deq = np.array(mx.dequantize(codes, s32, b32, group_size=g, bits=b))
        q = unpack(np.array(codes), b, w.shape[1])
        s_np = np.repeat(np.array(s32), g, axis=1)
        b_np = np.repeat(np.array(b32), g, axis=1)
        mine_np = (s_np * q.astype(np.float32)).astype(np.float32) + b_np
        if not np.array_equal(deq, mine_np):
            errors.append(f"{module}: mx.dequantize differs from the bit-stream decode "
                          f"(max {np.abs(deq - mine_np).max():.3g})")
        ref = np.array(w.astype(mx.float32))
        worst = max(worst, float((np.abs(deq - ref) / np.abs(s_np)).max()))
        checked += 1
    print(f"  {src.name} {' '.join(args)}: {checked} quantized MTP matrices equal MLX's, "
          f"{kept} kept as floats, largest error {worst:.2f} steps"
          + ("" if not errors else f", {len(errors)} problems"))
    return errors


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--inkling", required=True)
    ap.add_argument("--work", type=Path, default=None)
    a = ap.parse_args(argv)
    try:
        import mlx.core  # noqa: F401
        import numpy  # noqa: F401
    except ImportError as e:
        print(f"skipped: mlx is not importable ({e})")
        return 77
    work = a.work or Path(tempfile.mkdtemp(prefix="mtp_mlx_"))
    work.mkdir(parents=True, exist_ok=True)
    problems = []
    for src, mtp_file, args in CASES:
        path = REPO / src
        if not (path / mtp_file).exists():
            print(f"  {src}: absent, skipped")
            continue
        problems += check_case(a.inkling, work, path, mtp_file, args)
    for p in problems:
        print("FAIL", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
