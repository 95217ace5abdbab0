#!/usr/bin/env python3
"""Quantization quality per MLX affine width: KL divergence of the quantized model's next-token
distribution from the source model's, on a prompt (teacher forced), plus top-1 agreement.

    python tools/quant_quality.py -m MODEL_DIR --prompt PROMPT_JSON [--bits 2,3,4,5,6,8]
        [--group-size 64] [--recipe uniform] [--inkling build/inkling] [--json]
    python tools/quant_quality.py -m models/inkling-demo --ids-bin VAL.bin --windows 16 ...

With --ids-bin (uint16 token ids, e.g. build-demo/data/val.bin from tools/demo_data.py) it also
reports the next-token loss (nats) of the source and of each width over --windows windows of
--window-len tokens drawn with a fixed seed: the increase over the source is the quality cost.

Each width is made with `inkling quantize -m MODEL_DIR -o TMP --recipe R --bits B
--group-size G` (the recipe's modules at that width) for each of --methods (rtn: the min/max rule;
search: `--search`; imatrix: `--calibrate TEXT`, its importance matrix reused for every width),
then both models' logits come from `inkling generate --dump-logits` on the same ids.
KL(p_src || p_quant) is averaged over every position of every window (with --ids-bin) or of the
prompt (nats per token). Until a trained model exists this is measured on the random
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
    ap.add_argument("--prompt", type=Path, help='{"prompt_ids": [...]} or a list (without --ids-bin)')
    ap.add_argument("--bits", default="2,3,4,5,6,8")
    ap.add_argument("--group-size", type=int, default=64)
    ap.add_argument("--recipe", default="uniform")
    ap.add_argument("--inkling", default="build/inkling")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--ids-bin", type=Path)
    ap.add_argument("--windows", type=int, default=16)
    ap.add_argument("--window-len", type=int, default=256)
    ap.add_argument("--methods", default="rtn",
                    help="comma list: rtn (mx.quantize's rule), search (weighted error search, "
                         "uniform weights), imatrix (search weighed by --calibrate's statistics), "
                         "auto (--recipe auto with --weights-gb = the size of --recipe at this "
                         "width, weighted as imatrix; its costs measured once and reused)")
    ap.add_argument("--calibrate", type=Path, help="calibration text for the imatrix method")
    ap.add_argument("--calibrate-tokens", type=int, default=65536)
    a = ap.parse_args()
    methods = a.methods.split(",")
    if not a.ids_bin and not a.prompt:
        ap.error("give --prompt or --ids-bin")
    if ("imatrix" in methods or "auto" in methods) and not a.calibrate:
        ap.error("--methods imatrix and auto need --calibrate TEXT")
    if a.ids_bin:
        stream = np.fromfile(a.ids_bin, dtype=np.uint16).astype(np.int64)
        rng = np.random.default_rng(1234)
        starts = rng.integers(0, len(stream) - a.window_len - 1, size=a.windows)
        windows = [stream[s : s + a.window_len + 1].tolist() for s in starts]
        ids = windows[0][:-1]
    else:
        obj = json.loads(a.prompt.read_text())
        ids = obj["prompt_ids"] if isinstance(obj, dict) else obj
        windows = []

    def loss(model: Path, t: Path) -> float:  # mean next-token NLL over the windows
        total, n = 0.0, 0
        for i, w in enumerate(windows):
            lp = log_softmax(logits(a.inkling, model, w[:-1], t / f"w{i}.npy"))
            total += -lp[np.arange(len(w) - 1), w[1:]].sum()
            n += len(w) - 1
        return total / n
    # KL and top-1 over every window (all positions), or over the prompt without --ids-bin.
    seqs = [w[:-1] for w in windows] if windows else [ids]

    def all_logits(model: Path, t: Path, tag: str) -> list[np.ndarray]:
        return [log_softmax(logits(a.inkling, model, s, t / f"{tag}{i}.npy"))
                for i, s in enumerate(seqs)]

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        refs = all_logits(a.model, t, "ref")
        base_loss = loss(a.model, t) if windows else None
        imatrix = t / "calib.imatrix"
        sensitivity = t / "sensitivity.json"

        def tensor_bytes(folder: Path) -> int:  # of every tensor but the MTP depths'
            n = 0
            for f in folder.glob("*.safetensors"):
                with open(f, "rb") as fh:
                    header = json.loads(fh.read(int.from_bytes(fh.read(8), "little")))
                n += sum(v["data_offsets"][1] - v["data_offsets"][0] for k, v in header.items()
                         if k != "__metadata__" and ".mtp." not in k and not k.startswith("mtp."))
            return n

        def plan_bytes(bits: int) -> int:  # what --recipe writes at this width
            if (t / f"q{bits}rtn").exists():
                return tensor_bytes(t / f"q{bits}rtn")
            out = subprocess.run(
                [a.inkling, "quantize", "-m", str(a.model), "--dry-run", "--recipe", a.recipe,
                 "--bits", str(bits), "--group-size", str(a.group_size)],
                check=True, capture_output=True, text=True).stdout.splitlines()
            unit = next(l.split()[-1] for l in out if l.strip().startswith("module group"))
            total = float(next(l.split()[-1] for l in out if l.strip().startswith("total")))
            return int(total * {"KiB": 1024, "MiB": 1 << 20, "GiB": 1 << 30}[unit])
        for bits in [int(b) for b in a.bits.split(",")]:
          for method in methods:
            dst = t / f"q{bits}{method}"
            extra = []
            if method == "search":
                extra = ["--search"]
            elif method in ("imatrix", "auto"):
                extra = (["--imatrix", str(imatrix)] if imatrix.exists() else
                         ["--calibrate", str(a.calibrate), "--imatrix", str(imatrix),
                          "--calibrate-tokens", str(a.calibrate_tokens)])
            spec = ["--recipe", a.recipe, "--bits", str(bits)]
            if method == "auto":
                budget = plan_bytes(bits)
                spec = ["--recipe", "auto", "--weights-gb", f"{budget / (1 << 30):.12f}",
                        "--sensitivity", str(sensitivity)]
                if not sensitivity.exists():  # measured (and the imatrix saved) on first use
                    extra = ["--calibrate", str(a.calibrate), "--imatrix", str(imatrix),
                             "--calibrate-tokens", str(a.calibrate_tokens)]
            if method != "auto":  # auto chooses its own group sizes
                spec += ["--group-size", str(a.group_size)]
            subprocess.run(
                [a.inkling, "quantize", "-m", str(a.model), "-o", str(dst), *spec, "-q", *extra],
                check=True, capture_output=True)
            qs = all_logits(dst, t, "q")
            kl = np.concatenate([(np.exp(r) * (r - q)).sum(axis=-1) for r, q in zip(refs, qs)])
            agree = np.concatenate([r.argmax(-1) == q.argmax(-1) for r, q in zip(refs, qs)])
            size = tensor_bytes(dst)
            row = {"bits": bits, "group_size": a.group_size, "recipe": a.recipe, "bytes": size,
                   "method": method, "kl_mean": float(kl.mean()), "kl_max": float(kl.max()),
                   "top1_agreement": float(agree.mean())}
            if windows:
                row["loss"] = loss(dst, t)
                row["loss_source"] = base_loss
                row["loss_increase"] = row["loss"] - base_loss
            rows.append(row)
    if a.json:
        print(json.dumps(rows, indent=1))
    else:
        if windows:
            print(f"source loss {base_loss:.4f} nats/token over {len(windows)} x {a.window_len}")
        print(f"{'bits':>4} {'group':>5} {'method':>8} {'bytes':>9} {'KL mean (nats)':>15} {'KL max':>10} {'top-1 agree':>12}"
              + (f" {'loss':>8} {'+loss':>8}" if windows else ""))
        for r in rows:
            print(f"{r['bits']:>4} {r['group_size']:>5} {r['method']:>8} {r['bytes']:>9} {r['kl_mean']:>15.5f} {r['kl_max']:>10.4f} "
                  f"{r['top1_agreement']:>12.3f}"
                  + (f" {r['loss']:>8.4f} {r['loss_increase']:>+8.4f}" if windows else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
