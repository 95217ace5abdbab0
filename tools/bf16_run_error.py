#!/usr/bin/env python3
"""The reference's own bf16 error on a committed fixture: transformers (InklingForCausalLM, or Inkling
2's classes through AutoModelForCausalLM) loaded in bfloat16 (eager attention and experts) runs the
fixture's prompt teacher-forced; its logits are compared with the fixture's float32 reference logits
(ref/logits.npy) as max |diff| / max |logit|, the figure fast numerics must not exceed (DESIGN rule
12). Writes <fixture>/ref/bf16_run.json.

The folder loaded is the fixture's tf/ (transformers' names) where it has one, else hf/. A fixture
whose reference is an MLX copy (mlx/ present, as tools/make_inkling2_fixtures.py writes it) runs
the model holding MLX's dequantized weights (mx.dequantize of mlx/, put into tf/'s model as the
fixture's own oracle was built), in bf16.

    python tools/bf16_run_error.py tests/fixtures/bf16 [more fixtures...]

Needs torch and transformers (the versions in tests/fixtures/VERSIONS.txt).
"""

import json
import sys
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForCausalLM


def put_mlx_weights(model, mlx_dir):
    """Replaces the model's quantized matrices by mx.dequantize of the MLX copy (switch_mlp's
    gate/up halves into experts.gate_up_proj, down into experts.down_proj)."""
    import mlx.core as mx

    cfg = json.loads((mlx_dir / "config.json").read_text())["quantization"]
    arrays = mx.load(str(mlx_dir / "model.safetensors"))
    params = dict(model.named_parameters())
    for k in arrays:
        if not k.endswith(".scales"):
            continue
        module = k[: -len(".scales")]
        spec = cfg.get(module) if isinstance(cfg.get(module), dict) else cfg
        deq = torch.from_numpy(np.array(mx.dequantize(
            arrays[module + ".weight"], arrays[k], arrays[module + ".biases"],
            group_size=spec["group_size"], bits=spec["bits"]).astype(mx.float32)))
        with torch.no_grad():
            if module.endswith("switch_mlp.down_proj"):
                params[module[: -len("switch_mlp.down_proj")] + "experts.down_proj"].copy_(deq)
            elif module.endswith(("switch_mlp.gate_proj", "switch_mlp.up_proj")):
                p = params[module.rsplit("switch_mlp.", 1)[0] + "experts.gate_up_proj"]
                row0 = 0 if module.endswith("gate_proj") else p.shape[1] // 2
                p[:, row0 : row0 + deq.shape[1]].copy_(deq)
            else:
                params[module + ".weight"].copy_(deq)


def run(folder, ids, dtype, mlx_dir=None):
    m = AutoModelForCausalLM.from_pretrained(
        folder, dtype=dtype, attn_implementation="eager", experts_implementation="eager"
    ).eval()
    if mlx_dir is not None:
        put_mlx_weights(m, mlx_dir)  # copied in f32, rounded to the model's dtype
    with torch.no_grad():
        return m(input_ids=torch.tensor([ids]), use_cache=False).logits[0].float().numpy()


def main(argv):
    for d in map(Path, argv):
        ids = json.loads((d / "ref" / "prompt.json").read_text())["prompt_ids"]
        folder = d / "tf" if (d / "tf").is_dir() else d / "hf"
        mlx_dir = d / "mlx" if (d / "mlx").is_dir() else None
        how = "transformers bf16 (eager) vs the fixture's f32 reference logits"
        if mlx_dir:
            how += " (model holding mx.dequantize of mlx/)"
        ref = np.load(d / "ref" / "logits.npy").astype(np.float64)
        if mlx_dir:  # the oracle rebuilt here in f32 must be the fixture's
            f32 = run(folder, ids, torch.float32, mlx_dir)[:, : ref.shape[1]]
            assert np.abs(f32 - ref).max() <= 1e-4 * np.abs(ref).max(), "MLX weights misplaced"
        out = run(folder, ids, torch.bfloat16, mlx_dir)[:, : ref.shape[1]].astype(np.float64)
        ratio = float(np.abs(out - ref).max() / np.abs(ref).max())
        top1 = float((out.argmax(-1) == ref.argmax(-1)).mean())
        res = {"max_rel_diff": ratio, "top1": top1, "positions": len(ids), "how": how}
        (d / "ref" / "bf16_run.json").write_text(json.dumps(res, indent=1) + "\n")
        print(d, res)


if __name__ == "__main__":
    main(sys.argv[1:])
