#!/usr/bin/env python3
"""Check that folders written by `inkling quantize` load in mlx-vlm and that mlx-vlm's logits match
the engine's.

For each case (a bundled fixture, quantize options), the built `inkling quantize` writes a folder;
mlx-vlm loads it with its own loader (mlx_vlm.utils.load_model: its config parsing, sanitize,
per-module quantization predicate and strict weight loading) and runs its own Inkling forward on
the fixture prompt. The engine (`inkling generate --dump-logits`) runs the same folder. Compared:

  * f32 run: every float parameter mlx-vlm loaded (norms, convs, scales, biases, unquantized
    matrices; bf16/f16 -> f32 is exact) is cast to f32 so both sides compute in f32 from the same
    stored values: max |diff| <= 1e-4 * max |logit| and the same argmax at every position;
  * native run (bf16/f16 checkpoints only): mlx-vlm as a user runs it, with activations in the
    stored dtype; reported only: bf16 activations round every op and flip router choices on these
    tiny random models (as transformers in bf16 does), so it is no parity criterion.

Widths the engine does not load in this build are still loaded and run by mlx-vlm (reported as
"mlx-vlm only"). Every case of tests/fixtures/quantize/refs.json (every width x group on full/og
and quant_nvfp4, MLX sources requantized) is run too, and there mlx-vlm's f32 logits must also
match transformers on the dequantized weights (1e-4 of the largest): so 2/3/5/6-bit outputs are
checked end to end even where the engine does not run them yet. Exits 77 (ctest: skipped) when
mlx_vlm is not importable.

    python tools/check_quantize_mlxvlm.py --inkling build/inkling [--work DIR] [--model DIR ...]
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
FIX = REPO / "tests" / "fixtures"

CASES = [  # (source model, prompt, quantize arguments)
    ("full/og", "full/ref/prompt.json", ["--bits", "4", "--group-size", "64"]),
    ("full/og", "full/ref/prompt.json", ["--bits", "8", "--group-size", "32"]),
    ("full/hf", "full/ref/prompt.json", ["--recipe", "mixed", "--group-size", "32"]),
    ("full/og", "full/ref/prompt.json", ["--bits", "3", "--group-size", "32"]),
    ("quant_nvfp4/model", "quant_nvfp4/ref/prompt.json", ["--bits", "4", "--group-size", "64"]),
    ("quant_nvfp4/model", "quant_nvfp4/ref/prompt.json", ["--recipe", "fit-128gb", "--group-size", "128"]),
    ("quant_nvfp4/model", "quant_nvfp4/ref/prompt.json", ["--bits", "2", "--group-size", "32"]),
    ("quant_nvfp4/model", "quant_nvfp4/ref/prompt.json", ["--bits", "5", "--group-size", "64"]),
    ("quant_nvfp4/model", "quant_nvfp4/ref/prompt.json", ["--bits", "6", "--group-size", "128"]),
    ("quant_mlx4/model", "quant_mlx4/ref/prompt.json", ["--recipe", "mlp-only"]),
    ("quant_mlxvlm/model", "quant_mlxvlm/ref/prompt.json", ["--bits", "8", "--group-size", "64"]),
    # Quantized MTP depths and their config.json entries (model.mtp.layers.*): mlx-vlm drops them.
    ("mtp/multi", "mtp/multi/ref.json", ["--bits", "4", "--group-size", "32", "--mtp", "quantize"]),
]


def mlxvlm_logits(folder: Path, ids, f32: bool):
    import mlx.core as mx
    from mlx.utils import tree_flatten, tree_unflatten
    from mlx_vlm.utils import load_model

    model = load_model(folder)
    if f32:
        params = [(k, v.astype(mx.float32) if v.dtype in (mx.bfloat16, mx.float16) else v)
                  for k, v in tree_flatten(model.parameters())]
        model.update(tree_unflatten(params))
    out = model(mx.array([ids]))
    import numpy as np
    return np.array(out.logits.astype(mx.float32))[0]


def run(inkling: str, work: Path, model: Path, prompt_file: Path, args, ref=None) -> dict:
    """ref: (tail logits [TAIL, V'] of transformers on the dequantized output) or None."""
    import numpy as np

    out = work / "out"
    if out.exists():
        shutil.rmtree(out)
    subprocess.run([inkling, "quantize", "-q", "-m", str(model), "-o", str(out)] + args, check=True)
    ids = json.loads(prompt_file.read_text())["prompt_ids"]
    cfg = json.loads((out / "config.json").read_text())
    dtypes = set()
    for f in out.glob("*.safetensors"):
        with open(f, "rb") as fh:
            n = int.from_bytes(fh.read(8), "little")
            header = json.loads(fh.read(n))
        dtypes |= {v["dtype"] for k, v in header.items() if k != "__metadata__"}
    res = {"case": f"{model.relative_to(REPO) if model.is_relative_to(REPO) else model} {' '.join(args)}"}
    theirs = mlxvlm_logits(out, ids, f32=True)
    ref_ok = True
    if ref is not None:
        tail = theirs[-ref.shape[0]:]
        res["ref_max_diff"] = float(np.abs(tail - ref).max())
        ref_ok = res["ref_max_diff"] <= 1e-4 * float(np.abs(ref).max())
    dump = work / "ours.npy"
    r = subprocess.run([inkling, "generate", "-m", str(out), "--token-ids=" + ",".join(map(str, ids)), "-n", "1",
                        "--temperature", "0", "--dump-logits", str(dump)], capture_output=True, text=True)
    if r.returncode != 0:
        res["status"] = "mlx-vlm only"
        res["note"] = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "engine failed"
        res["ok"] = bool(np.isfinite(theirs).all()) and ref_ok
        return res
    ours = np.load(dump)
    scale = float(np.abs(ours).max())
    diff = float(np.abs(ours - theirs).max())
    agree = float((ours.argmax(-1) == theirs.argmax(-1)).mean())
    res.update(status="compared", f32_max_diff=diff, max_logit=scale, f32_argmax_agree=agree,
               ok=diff <= 1e-4 * scale and agree == 1.0 and ref_ok)
    if "BF16" in dtypes or "F16" in dtypes:
        try:
            native = mlxvlm_logits(out, ids, f32=False)
            res["native_max_diff"] = float(np.abs(ours - native).max())
            res["native_argmax_agree"] = float((ours.argmax(-1) == native.argmax(-1)).mean())
        except RuntimeError as e:  # MLX's CPU backend lacks some bf16 kernels (gather_mm)
            res["native"] = f"not run by MLX on this CPU: {e}"
    res["bits"] = cfg["quantization"]["bits"]
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inkling", required=True)
    ap.add_argument("--work", help="scratch folder (default: a temporary one)")
    ap.add_argument("--model", action="append", default=[],
                    help="extra source folder(s) to check at 4-bit g64 with the prompt 1..16")
    a = ap.parse_args(argv)
    try:
        import mlx_vlm  # noqa: F401
        import mlx.core  # noqa: F401
    except ImportError as e:
        print(f"SKIPPED: mlx_vlm is not importable ({e}); pip install 'mlx[cpu]' mlx-vlm")
        return 77
    tmp = None
    work = Path(a.work) if a.work else Path(tmp := tempfile.mkdtemp(prefix="inkling_mlxvlm_"))
    work.mkdir(parents=True, exist_ok=True)
    import numpy as np

    cases = [(FIX / m, FIX / p, args, None) for m, p, args in CASES]
    refs = json.loads((FIX / "quantize" / "refs.json").read_text())
    arrays = {}
    for c in refs["cases"]:
        src = c["source"]
        arrays.setdefault(src, np.load(FIX / "quantize" / f"{src}.npy"))
        cases.append((FIX / refs["models"][src], FIX / refs["prompts"][src], c["args"],
                      arrays[src][c["index"]]))
    for m in a.model:
        pf = work / "prompt16.json"
        pf.write_text(json.dumps({"prompt_ids": list(range(1, 17))}))
        cases.append((Path(m).resolve(), pf, ["--bits", "4", "--group-size", "64", "-t", "2"], None))
    failed = 0
    try:
        for model, prompt, args, ref in cases:
            res = run(a.inkling, work, model, prompt, args, ref)
            failed += not res["ok"]
            print(json.dumps(res))
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(cases) - failed} of {len(cases)} cases ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
