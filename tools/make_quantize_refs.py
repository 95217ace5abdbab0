#!/usr/bin/env python3
"""Reference logits for `inkling quantize` (tests/fixtures/quantize/), from transformers run on the
DEQUANTIZED output of our own quantizer.

For every case below, the built `inkling quantize` writes an MLX checkpoint (mlx-vlm layout) from a
bundled fixture; this script reads it back with mlx (mx.load), dequantizes every affine module with
mx.dequantize in f32 (w = s*q + b from the stored scales and biases: the engine's definition,
cross-checked against an independent numpy bit-stream decode), maps the mlx-vlm names back to
transformers' InklingForCausalLM (qkvr_proj split by rows, switch_mlp -> experts.gate_up_proj,
flattened shared experts -> [S, ...], convs [C,K,1] -> [C,1,K]) and runs the model in float32,
eager, on the fixture's prompt. Stored per source fixture: `<source>.npy` float32
[cases, TAIL, V'] (teacher-forced logits of the last TAIL prompt positions) and in refs.json, per
case, its source, quantize arguments, N_GREEDY greedy ids (full recompute) with their top1-top2
margins, and the number of leading greedy steps whose margin is large enough to be compared
exactly (`greedy_checked`).

Cases: every MLX width (2, 3, 4, 5, 6, 8) x group (32, 64, 128) on full/og (f32, hidden 64) and on
quant_nvfp4 (bf16 + NVFP4 experts requantized from their decoded values, hidden 128); MLX sources
requantized: quant_mlx4 (4-bit g64 experts) at 4/64 (experts copied byte for byte), 8/64 and
3/64, quant_mlxvlm (4-bit g32 with overrides, f16 scales) at 8/64 and 6/128.

Run after building:  python tools/make_quantize_refs.py --inkling build/inkling
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import mlx.core as mx
import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_fixtures as mf  # noqa: E402
import make_quant_fixtures as mqf  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
FIX = REPO / "tests" / "fixtures"
OUT = FIX / "quantize"
TAIL = 4
N_GREEDY = 12
MIN_MARGIN = 2e-3  # top1 - top2 logit a greedy step needs to be compared exactly

WIDTHS = (2, 3, 4, 5, 6, 8)
GROUPS = (32, 64, 128)
SOURCES = {  # name: (fixture model dir, fixture ref dir, HF config fields)
    "og": ("full/og", "full/ref", mf.FULL_CFG),
    "nvfp4": ("quant_nvfp4/model", "quant_nvfp4/ref", mqf.QCFG),
    "mlx4": ("quant_mlx4/model", "quant_mlx4/ref", mqf.QCFG),
    "mlxvlm": ("quant_mlxvlm/model", "quant_mlxvlm/ref", mqf.QCFG),
}


def cases():
    out = []
    for src in ("og", "nvfp4"):
        for b in WIDTHS:
            for g in GROUPS:
                out.append({"source": src, "args": ["--bits", str(b), "--group-size", str(g)]})
    for b, g in ((4, 64), (8, 64), (3, 64)):
        out.append({"source": "mlx4", "args": ["--bits", str(b), "--group-size", str(g)]})
    for b, g in ((8, 64), (6, 128)):
        out.append({"source": "mlxvlm", "args": ["--bits", str(b), "--group-size", str(g)]})
    return out


def np_decode(wq: np.ndarray, scales: np.ndarray, biases: np.ndarray, bits: int, group: int) -> np.ndarray:
    """Independent decode of MLX's bit stream: element c at bits [c*bits, (c+1)*bits) of the row."""
    lead, words = wq.shape[:-1], wq.shape[-1]
    cols = words * 32 // bits
    raw = wq.reshape(-1, words).astype("<u4").view(np.uint8)
    bitsarr = np.unpackbits(raw, axis=-1, bitorder="little")[:, : cols * bits]
    q = (bitsarr.reshape(-1, cols, bits) * (1 << np.arange(bits))).sum(-1).astype(np.float32)
    s = np.repeat(scales.reshape(-1, cols // group), group, -1)
    b = np.repeat(biases.reshape(-1, cols // group), group, -1)
    return ((s * q).astype(np.float32) + b).reshape(*lead, cols)


def dequantized(tensors: dict, quant: dict, path: str) -> torch.Tensor:
    w = tensors[path + ".weight"]
    if path + ".scales" not in tensors:
        return torch.from_numpy(np.array(w.astype(mx.float32)))
    spec = quant.get(path)
    spec = spec if isinstance(spec, dict) else quant
    bits, group = spec["bits"], spec["group_size"]
    s32, b32 = tensors[path + ".scales"].astype(mx.float32), tensors[path + ".biases"].astype(mx.float32)
    d = np.array(mx.dequantize(w, s32, b32, group_size=group, bits=bits))
    mine = np_decode(np.array(w), np.array(s32), np.array(b32), bits, group)
    assert np.array_equal(d.view(np.uint32), mine.view(np.uint32)), f"{path}: mx.dequantize != s*q+b"
    return torch.from_numpy(d)


def hf_state_dict(folder: Path, fields: dict) -> dict:
    cfg = mf.make_hf_config(fields)
    tensors = {}
    for f in sorted(folder.glob("*.safetensors")):
        tensors.update(mx.load(str(f)))
    quant = json.loads((folder / "config.json").read_text())["quantization"]
    f32 = lambda k: torch.from_numpy(np.array(tensors[k].astype(mx.float32)))  # noqa: E731
    L = "language_model.model."
    sd = {"model.embed_tokens.weight": dequantized(tensors, quant, L + "embed_tokens"),
          "lm_head.weight": dequantized(tensors, quant, "language_model.lm_head"),
          "model.embed_tokens.embed_norm.weight": f32(L + "embed_norm.weight"),
          "model.norm.weight": f32(L + "norm.weight")}
    S, I, H = cfg.n_shared_experts, cfg.moe_intermediate_size, cfg.hidden_size
    for i in range(cfg.num_hidden_layers):
        P, p = f"{L}layers.{i}.", f"model.layers.{i}."
        sliding = cfg.layer_types[i] == "hybrid_sliding"
        nh = cfg.swa_num_attention_heads if sliding else cfg.num_attention_heads
        nkv = cfg.swa_num_key_value_heads if sliding else cfg.num_key_value_heads
        hd = cfg.swa_head_dim if sliding else cfg.head_dim
        for a in ("input_layernorm.weight", "post_attention_layernorm.weight",
                  "self_attn.q_norm.weight", "self_attn.k_norm.weight"):
            sd[p + a] = f32(P + a)
        sd[p + "self_attn.rel_logits_proj.proj"] = f32(P + "self_attn.rel_proj")
        for a, b in (("self_attn.k_sconv.conv1d.weight", "self_attn.k_sconv.conv.weight"),
                     ("self_attn.v_sconv.conv1d.weight", "self_attn.v_sconv.conv.weight"),
                     ("attn_sconv.conv1d.weight", "attn_sconv.conv.weight"),
                     ("mlp_sconv.conv1d.weight", "mlp_sconv.conv.weight")):
            sd[p + a] = f32(P + b).transpose(1, 2).contiguous()
        qkvr = dequantized(tensors, quant, P + "self_attn.qkvr_proj")
        for n, part in zip("qkvr", torch.split(qkvr, [nh * hd, nkv * hd, nkv * hd, nh * cfg.d_rel])):
            sd[p + f"self_attn.{n}_proj.weight"] = part.contiguous()
        sd[p + "self_attn.o_proj.weight"] = dequantized(tensors, quant, P + "self_attn.o_proj")
        if cfg.mlp_layer_types[i] == "dense":
            for n in ("gate_proj", "up_proj", "down_proj"):
                sd[p + f"mlp.{n}.weight"] = dequantized(tensors, quant, P + f"mlp.{n}")
            sd[p + "mlp.global_scale"] = f32(P + "mlp.global_scale")
            continue
        sd[p + "mlp.gate.weight"] = f32(P + "mlp.gate_weight")
        sd[p + "mlp.gate.e_score_correction_bias"] = f32(P + "mlp.e_score_correction_bias")
        sd[p + "mlp.gate.global_scale"] = f32(P + "mlp.global_scale")
        for k in ("gate_scale", "out_scale"):
            assert bool(mx.all(tensors[P + "mlp.switch_mlp." + k] == 1)), "expert scales must be ones"
        g = dequantized(tensors, quant, P + "mlp.switch_mlp.gate_proj")
        u = dequantized(tensors, quant, P + "mlp.switch_mlp.up_proj")
        sd[p + "mlp.experts.gate_up_proj"] = torch.cat([g, u], dim=1)
        sd[p + "mlp.experts.down_proj"] = dequantized(tensors, quant, P + "mlp.switch_mlp.down_proj")
        for n in ("gate_proj", "up_proj"):
            sd[p + f"mlp.shared_experts.{n}"] = dequantized(tensors, quant, P + f"mlp.shared_experts.{n}").reshape(S, I, H)
        d = dequantized(tensors, quant, P + "mlp.shared_experts.down_proj")  # [H, S*I]
        sd[p + "mlp.shared_experts.down_proj"] = d.reshape(H, S, I).permute(1, 0, 2).contiguous()
    return sd


def run_case(inkling: str, case: dict, work: Path):
    model_dir, ref_dir, fields = SOURCES[case["source"]]
    out = work / "out"
    subprocess.run([inkling, "quantize", "-q", "--force", "-m", str(FIX / model_dir), "-o", str(out)] + case["args"],
                   check=True)
    prompt = json.loads((FIX / ref_dir / "prompt.json").read_text())["prompt_ids"]
    model = mqf.reference_model(hf_state_dict(out, fields), fields)
    logits = mf.forward_logits(model, prompt)[-TAIL:]
    gen, steps = mf.greedy_full(model, prompt, N_GREEDY)
    top2 = torch.topk(steps, 2, dim=-1).values
    margins = (top2[:, 0] - top2[:, 1]).tolist()
    checked = next((i for i, m in enumerate(margins) if m < MIN_MARGIN), len(margins))
    return logits.numpy().astype(np.float32), dict(case, greedy=gen, margins=[round(m, 6) for m in margins],
                                                   greedy_checked=checked)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inkling", required=True, help="the built inkling binary")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    per_source: dict = {}
    manifest = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases():
            logits, entry = run_case(args.inkling, case, Path(tmp))
            entry["index"] = len(per_source.setdefault(case["source"], []))
            per_source[case["source"]].append(logits)
            manifest.append(entry)
            print(f"{case['source']:7s} {' '.join(case['args']):28s} greedy checked "
                  f"{entry['greedy_checked']}/{N_GREEDY}, min margin {min(entry['margins']):.4f}")
    OUT.mkdir(parents=True, exist_ok=True)
    for src, arrs in per_source.items():
        mf.save_npy(OUT / f"{src}.npy", np.stack(arrs))
    mf.save_json(OUT / "refs.json", {"tail": TAIL, "n_greedy": N_GREEDY, "min_margin": MIN_MARGIN,
                                     "prompts": {s: SOURCES[s][1] + "/prompt.json" for s in SOURCES},
                                     "models": {s: SOURCES[s][0] for s in SOURCES}, "cases": manifest})
    print(f"wrote {OUT} ({len(manifest)} cases)")


if __name__ == "__main__":
    main()
