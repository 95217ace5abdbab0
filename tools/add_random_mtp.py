#!/usr/bin/env python3
"""Adds random MTP draft depths to an OG-layout checkpoint folder, for timing speculative decoding
on shapes where no trained depths exist (e.g. the Inkling-Small benchmark slice of
tools/make_bench_slice.py). Writes <dir>/mtp.safetensors (bf16, model.mtp.layers.{d}.* in OG
names, as Inkling-Small ships them) and sets mtp_config in <dir>/config.json. The drafts of random
depths are almost never accepted: this measures the cost of drafting, not acceptance.

    python3 tools/add_random_mtp.py models/slice-e8 --depths 2 --local 0
"""

import argparse
import json
import math
import os
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from mtp_reference import InklingMTP, og_state_dict  # noqa: E402
from og_layout import text_config_from_og  # noqa: E402


@torch.no_grad()
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--depths", type=int, default=2)
    ap.add_argument("--local", type=int, nargs="*", default=[0], help="banded depth indices")
    ap.add_argument("--seed", type=int, default=5)
    a = ap.parse_args()
    cfg_path = a.dir / "config.json"
    og = json.loads(cfg_path.read_text())
    tc = text_config_from_og(og)
    g = torch.Generator().manual_seed(a.seed)
    tensors = {}
    for d in range(a.depths):  # one depth at a time keeps memory to one depth in f32
        mtp = InklingMTP(tc, 1, [0] if d in a.local else [])
        for name, p in mtp.named_parameters():
            if name.endswith("norm.weight"):
                p.fill_(1.0)
            elif "sconv" in name or name.endswith("rel_logits_proj.proj"):
                p.normal_(0.0, 0.3, generator=g)
            elif name.endswith("global_scale"):
                p.fill_(1.0)
            elif p.dim() == 2:
                p.normal_(0.0, 1.0 / math.sqrt(p.shape[1]), generator=g)
        for k, v in og_state_dict(mtp).items():
            tensors[k.replace("model.mtp.layers.0.", f"model.mtp.layers.{d}.")] = v.to(torch.bfloat16).contiguous()
        del mtp
    save_file(tensors, str(a.dir / "mtp.safetensors"), metadata={"format": "pt"})
    og["mtp_config"] = {"num_nextn_predict_layers": a.depths, "chain_hidden_post_norm": False,
                        "local_layer_ids": list(a.local), "hidden_states_first": True}
    cfg_path.write_text(json.dumps(og, indent=1) + "\n")
    print(f"{a.dir}: {a.depths} random MTP depths in mtp.safetensors")


if __name__ == "__main__":
    main()
