#!/usr/bin/env python3
"""MTP (multi-token prediction) reference fixtures for the C++ depth forward, from
tools/mtp_reference.py (the PyTorch reference of /work/shared/spec/inkling-mtp.md).

    python3 tools/make_mtp_fixtures.py            # both fixtures
    python3 tools/make_mtp_fixtures.py --demo     # only the demo model's (after it is retrained)

tests/fixtures/mtp/demo/    models/inkling-demo (its trained depths) on the 32-token demo prompt:
    ref.json                prompt_ids, per depth: rows, argmax of every row, the rows stored
    depth<d>.npy            float32 [len(stored rows), unpadded_vocab] teacher-forced depth logits
tests/fixtures/mtp/multi/   the `full` random fixture's trunk (model.safetensors is a symlink to
                            ../../full/og/model.safetensors) + 3 random depths in mtp.safetensors
                            (depth 0 banded, 1 global, 2 banded; OG names), config.json = full's
                            OG config with that mtp_config; ref.json + depth<d>.npy as above
                            (every row: the vocabulary is 500).
Depth d's row p predicts prompt[p+2+d] (mtp_reference.mtp_forward)."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from mtp_reference import InklingMTP, load_og_state_dict, mtp_forward, og_state_dict  # noqa: E402
from og_layout import load_og_model  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "mtp"


def save_npy(path: Path, arr: np.ndarray) -> None:
    np.save(path, np.ascontiguousarray(arr, dtype="<f4"))


def checksum(path: Path) -> int:
    """sum_i word_i * (2i + 1) mod 2^64 over the file's little-endian 64-bit words (zero-padded);
    tests/model/test_mtp.cpp computes the same to tell a fixture made from other weights."""
    raw = path.read_bytes()
    raw += b"\0" * (-len(raw) % 8)
    w = np.frombuffer(raw, dtype="<u8")
    with np.errstate(over="ignore"):
        return int(np.sum(w * (2 * np.arange(len(w), dtype=np.uint64) + 1), dtype=np.uint64))


def write_ref(out: Path, prompt, heads, rows_of, model_file: Path | None = None) -> None:
    depths = []
    for d, h in enumerate(heads):
        h = h[0].float().numpy()
        rows = rows_of(h.shape[0])
        save_npy(out / f"depth{d}.npy", h[rows])
        depths.append({"depth": d, "rows": int(h.shape[0]), "argmax": h.argmax(-1).tolist(),
                       "stored_rows": rows, "max_abs": float(np.abs(h).max())})
    ref = {"prompt_ids": prompt, "depths": depths}
    if model_file is not None:  # the test names the regeneration command when the model changes
        ref["model_checksum"] = str(checksum(model_file))
    (out / "ref.json").write_text(json.dumps(ref, indent=1) + "\n")


@torch.no_grad()
def make_demo() -> None:
    src = ROOT / "models" / "inkling-demo"
    model = load_og_model(src).eval()
    mc = json.loads((src / "config.json").read_text())["mtp_config"]
    mtp = InklingMTP(model.config, mc["num_nextn_predict_layers"], mc["local_layer_ids"]).float().eval()
    load_og_state_dict(mtp, load_file(str(src / "model.safetensors")))
    prompt = json.loads((ROOT / "tests" / "fixtures" / "demo" / "prompt.json").read_text())["prompt_ids"]
    _, heads = mtp_forward(model, mtp, torch.tensor([prompt]))
    out = OUT / "demo"
    out.mkdir(parents=True, exist_ok=True)
    # A few full rows (the vocabulary is 4060): first, middle ones, last.
    write_ref(out, prompt, heads, lambda n: sorted({0, n // 4, n // 2, (3 * n) // 4, n - 1}),
              src / "model.safetensors")
    print(f"[demo] {len(heads)} depths written to {out}")


@torch.no_grad()
def randomize_mtp(mtp: InklingMTP, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    for name, p in sorted(mtp.named_parameters()):
        shape = tuple(p.shape)
        if name.endswith("q_norm.weight") or name.endswith("k_norm.weight"):
            v = 1.0 + 2.0 * torch.rand(shape, generator=g)
        elif name.endswith("norm.weight"):
            v = 0.5 + torch.rand(shape, generator=g)
        elif "sconv" in name:
            v = torch.randn(shape, generator=g) * 0.3
        elif name.endswith("rel_logits_proj.proj"):
            v = torch.randn(shape, generator=g) * 0.7
        elif name.endswith("global_scale"):
            v = 0.5 + 1.5 * torch.rand(shape, generator=g)
        elif p.dim() == 2:
            v = torch.randn(shape, generator=g) / math.sqrt(shape[1])
        else:
            raise RuntimeError(f"no randomization rule for {name} {shape}")
        p.copy_(v)


@torch.no_grad()
def make_multi() -> None:
    out = OUT / "multi"
    out.mkdir(parents=True, exist_ok=True)
    cfg = json.loads((ROOT / "tests" / "fixtures" / "full" / "og" / "config.json").read_text())
    cfg["mtp_config"] = {"num_nextn_predict_layers": 3, "chain_hidden_post_norm": False,
                         "local_layer_ids": [0, 2], "hidden_states_first": True}
    (out / "config.json").write_text(json.dumps(cfg, indent=1) + "\n")
    link = out / "model.safetensors"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(Path("..") / ".." / "full" / "og" / "model.safetensors")
    model = load_og_model(out).eval()
    mtp = InklingMTP(model.config, 3, [0, 2]).float().eval()
    randomize_mtp(mtp, 1234)
    # bf16 like the released depths; the reference below reads the rounded values back.
    og = {k: v.to(torch.bfloat16).contiguous() for k, v in og_state_dict(mtp).items()}
    save_file(og, str(out / "mtp.safetensors"), metadata={"format": "pt"})
    os.chmod(out / "mtp.safetensors", 0o644)
    mtp2 = InklingMTP(model.config, 3, [0, 2]).float().eval()
    load_og_state_dict(mtp2, load_file(str(out / "mtp.safetensors")))  # the written file round-trips
    prompt = json.loads((ROOT / "tests" / "fixtures" / "full" / "ref" / "prompt.json").read_text())["prompt_ids"]
    _, heads = mtp_forward(model, mtp2, torch.tensor([prompt]))
    write_ref(out, prompt, heads, lambda n: list(range(n)))
    print(f"[multi] {len(heads)} depths written to {out}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--demo", action="store_true", help="only the demo model's fixture")
    ap.add_argument("--multi", action="store_true", help="only the random multi-depth fixture")
    a = ap.parse_args()
    torch.set_num_threads(1)
    if a.demo or not a.multi:
        make_demo()
    if a.multi or not a.demo:
        make_multi()


if __name__ == "__main__":
    main()
