#!/usr/bin/env python3
"""Quantization quality per MLX affine width: KL divergence of the quantized model's next-token
distribution from the source model's, on a prompt (teacher forced), plus top-1 agreement.

    python tools/quant_quality.py -m MODEL_DIR --prompt PROMPT_JSON [--bits 2,3,4,5,6,8]
        [--group-size 64] [--recipe uniform] [--inkling build/inkling] [--json]

Each width is made with `inkling quantize -m MODEL_DIR -o TMP --recipe R --bits B
--group-size G` (the recipe's modules at that width), then both models' logits come from
`inkling generate --dump-logits` on the same ids. KL(p_src || p_quant) is averaged over the
prompt positions (nats per token). Until a trained model exists this is measured on the random
fixtures, whose routers have small gaps: a width that flips a router choice moves its logits far
more than the weight error alone would.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np


def logits(inkling: str, model: Path, ids: list[int], out: Path) -> np.ndarray:
    subprocess.run(
        [inkling, "generate", "-m", str(model), "--token-ids", ",".join(map(str, ids)), "-n", "0",
         "--dump-logits", str(out)],
        check=True, capture_output=True)
    return np.load(out).astype(np.float64)


def log_softmax(x: np.ndarray) -> np.ndarray:
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", type=Path, required=True)
    ap.add_argument("--prompt", type=Path, required=True, help='{"prompt_ids": [...]} or a list')
    ap.add_argument("--bits", default="2,3,4,5,6,8")
    ap.add_argument("--group-size", type=int, default=64)
    ap.add_argument("--recipe", default="uniform")
    ap.add_argument("--inkling", default="build/inkling")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    obj = json.loads(a.prompt.read_text())
    ids = obj["prompt_ids"] if isinstance(obj, dict) else obj
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        ref = log_softmax(logits(a.inkling, a.model, ids, t / "ref.npy"))
        p = np.exp(ref)
        for bits in [int(b) for b in a.bits.split(",")]:
            dst = t / f"q{bits}"
            subprocess.run(
                [a.inkling, "quantize", "-m", str(a.model), "-o", str(dst), "--recipe", a.recipe,
                 "--bits", str(bits), "--group-size", str(a.group_size), "-q"],
                check=True, capture_output=True)
            q = log_softmax(logits(a.inkling, dst, ids, t / f"q{bits}.npy"))
            kl = (p * (ref - q)).sum(axis=-1)
            rows.append({"bits": bits, "group_size": a.group_size, "recipe": a.recipe,
                         "kl_mean": float(kl.mean()), "kl_max": float(kl.max()),
                         "top1_agreement": float((ref.argmax(-1) == q.argmax(-1)).mean())})
    if a.json:
        print(json.dumps(rows, indent=1))
    else:
        print(f"{'bits':>4} {'group':>5} {'KL mean (nats)':>15} {'KL max':>10} {'top-1 agree':>12}")
        for r in rows:
            print(f"{r['bits']:>4} {r['group_size']:>5} {r['kl_mean']:>15.5f} {r['kl_max']:>10.4f} "
                  f"{r['top1_agreement']:>12.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
