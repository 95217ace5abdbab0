#!/usr/bin/env python3
"""ModelOpt NVFP4 conversion of the Inkling-Small benchmark slice.

Reads the bf16 slice written by tools/make_bench_slice.py (original `model.llm.*` layout) shard by
shard and writes the layout of Thinking Machines' NVFP4 checkpoints, as tools/make_quant_fixtures.py
writes its `quant_nvfp4` fixture: the routed experts of every MoE layer but the first become

    model.llm.layers.N.mlp.experts.{w13_weight,w2_weight}          U8 [E, rows, cols/2] (E2M1 pairs)
    model.llm.layers.N.mlp.experts.{w13_weight,w2_weight}.scale    F8_E4M3 [E, rows, cols/16]
    model.llm.layers.N.mlp.experts.{w13_weight,w2_weight}.scale2   F32 [E]

(w13 keeps its gate/up row interleave), everything else stays as it is (bf16), and
hf_quant_config.json lists the excluded modules. Per expert matrix: scale2 = amax / (6 * 448),
block scale = block amax / 6 / scale2 rounded to E4M3, codes = nearest E2M1 of w / (e4m3 * scale2)
(ties to the even magnitude index): tools/nvfp4.py, the fixture's own quantizer.

    python tools/make_bench_slice_nvfp4.py    # models/inkling-small-slice-bf16 -> models/inkling-small-slice-nvfp4

Never commit the output (models/ is gitignored). Needs numpy, torch and safetensors.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import save_file

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from nvfp4 import nvfp4_quantize  # noqa: E402  (the quantizer the quant_nvfp4 fixture uses)


def quantize(w: torch.Tensor):
    """One expert [rows, cols] (bf16) -> (codes U8 [rows, cols/2], scales E4M3 [rows, cols/16], scale2)."""
    packed, sbytes, scale2, _ = nvfp4_quantize(w.float().numpy(), with_deq=False)
    return torch.from_numpy(packed), torch.from_numpy(sbytes).view(torch.float8_e4m3fn), float(scale2)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", type=Path, default=ROOT / "models" / "inkling-small-slice-bf16")
    ap.add_argument("--out", type=Path, default=ROOT / "models" / "inkling-small-slice-nvfp4")
    ap.add_argument("--force", action="store_true")
    a = ap.parse_args(argv)
    if a.out.exists():
        if not a.force:
            print(f"{a.out} exists (use --force)", file=sys.stderr)
            return 1
        shutil.rmtree(a.out)
    a.out.mkdir(parents=True)
    cfg = json.loads((a.src / "config.json").read_text())
    index = json.loads((a.src / "model.safetensors.index.json").read_text())
    shards = sorted(set(index["weight_map"].values()))
    experts = [k for k in index["weight_map"] if k.endswith("mlp.experts.w13_weight")]
    moe = sorted(int(k.split(".")[3]) for k in experts)
    first = moe[0]
    n_layers = 1 + max(int(k.split(".")[3]) for k in index["weight_map"] if k.startswith("model.llm.layers."))
    weight_map = {}
    t0 = time.time()
    for shard in shards:
        out = {}
        with safe_open(str(a.src / shard), framework="pt") as f:
            for name in f.keys():
                t = f.get_tensor(name)
                parts = name.split(".")
                layer = int(parts[3]) if name.startswith("model.llm.layers.") else -1
                if layer in moe and layer != first and name.endswith(("mlp.experts.w13_weight", "mlp.experts.w2_weight")):
                    res = [quantize(t[e]) for e in range(t.shape[0])]
                    out[name] = torch.stack([r[0] for r in res])
                    out[name + ".scale"] = torch.stack([r[1] for r in res])
                    out[name + ".scale2"] = torch.tensor([r[2] for r in res], dtype=torch.float32)
                else:
                    out[name] = t
        save_file(out, str(a.out / shard), metadata={"format": "pt"})
        weight_map.update({k: shard for k in out})
        print(f"[{time.time() - t0:7.1f}s] {shard}: {len(out)} tensors", flush=True)
        del out
    (a.out / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}, indent=1))
    (a.out / "config.json").write_text(json.dumps(cfg, indent=1))
    exclude = [f"model.llm.layers.{i}.attn" for i in range(n_layers)]
    exclude += [f"model.llm.layers.{i}.mlp.w13_dn" for i in range(n_layers) if i not in moe]
    exclude += [f"model.llm.layers.{i}.mlp.w2_md" for i in range(n_layers) if i not in moe]
    exclude += [f"model.llm.layers.{i}.mlp.shared_experts" for i in moe] + [f"model.llm.layers.{i}.mlp.gate" for i in moe]
    exclude += [f"model.llm.layers.{first}.mlp.experts", "model.llm.embed", "model.llm.unembed", "model.mtp*"]
    hq = {"producer": {"name": "modelopt", "version": "0.31.0"},
          "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": None, "group_size": 16,
                           "exclude_modules": exclude}}
    (a.out / "hf_quant_config.json").write_text(json.dumps(hq, indent=1))
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
