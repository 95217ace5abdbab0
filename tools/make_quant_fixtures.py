#!/usr/bin/env python3
"""Generate the quantized-checkpoint fixtures for inkling.cpp (tests/fixtures/quant_*).

One tiny random Inkling text model (widths divisible by 64 so every MLX group size fits) is built
with tools/make_fixtures.py's own helpers, then written in three published layouts:

    quant_mlx4/model     mlx-community "Inkling-Small-mlx-4bit" naming: model.llm.* attention, norms,
                         embed/unembed and router in BF16; dense MLP, routed experts
                         (mlp.experts.{gate,up,down}_proj.*) and shared experts
                         (mlp.shared_experts.*, [S, ...]) MLX affine 4-bit, group 64, BF16 scales.
                         Quantized with mlx.core.quantize, saved with mlx.core.save_safetensors.
    quant_mlx{2,3,5,6,8}/model  the same layout and recipe at the other MLX widths, groups varied
                         (MLX_WIDTHS below): 2-bit g32, 3-bit g64 with everything quantized
                         (attention q/k/v/r/o, embed g128 by override, unembed), 5-bit g128 (the
                         routed/shared down projections, 64 columns wide, g32 by override), 6-bit
                         g32, 8-bit g128 (downs g64 by override). Codes of widths that do not
                         divide 32 straddle u32 words (one little-endian bit stream per row).
    quant_mlxvlm/model   mlx-vlm's own names (language_model.model.*), everything quantized incl.
                         embedding and lm_head: default 4-bit group 32 (F16 scales) plus per-module
                         overrides (8-bit g64 lm_head, 8-bit g128 embed_tokens, 8-bit g128 dense
                         down_proj, a q_proj override that applies to the fused qkvr_proj, one
                         module left unquantized with `false`); fused self_attn.qkvr_proj (layer 0
                         keeps separate q/k/v/r), switch_mlp, flat shared experts [S*I, H] /
                         [H, S*I], gate_weight, router mlp.global_scale, gate_scale/out_scale.
    quant_nvfp4/model    ModelOpt NVFP4 layout (thinkingmachines/Inkling-NVFP4): model.llm.*, routed
                         experts of every MoE layer after the first as U8 codes + F8_E4M3 block
                         scales + F32 scale2 (+ input_amax, original_shape), rows gate/up interleaved;
                         first MoE layer and everything else BF16; hf_quant_config.json.

The NVFP4 quantizer follows ModelOpt's definition (numpy + torch's float8 cast): scale2 =
amax / (6 * 448) per expert tensor, per-16 block scale = block_amax / 6 / scale2 cast to E4M3
(clamped to [2^-9, 448]), values rounded to the nearest E2M1 (ties to even), packed low nibble
first. Reference = transformers InklingForCausalLM in float32 (eager) on the DEQUANTIZED weights:
MLX fixtures dequantized by mlx.core.dequantize (scales/biases upcast to f32 first, so w = s*q + b
is evaluated in f32, the engine's definition), NVFP4 by e2m1 * (f32(e4m3) * scale2) in f32.
Those dequantizations are cross-checked (asserted) against an independent numpy decode, and the
NVFP4 decode against MLX's own nvfp4 mode.

Per fixture: <name>/model/{config.json, model.safetensors[, hf_quant_config.json]} and
<name>/ref/{prompt.json, logits.npy, greedy.json, greedy_logits.npy, stats.json, dequant.json,
dq_*.npy} (dequant.json lists a few rows of some matrices, dequantized by Python, for bit-exact
C++ checks). Deterministic; run:  python tools/make_quant_fixtures.py [names...]
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import mlx.core as mx
import numpy as np
import torch
from safetensors.torch import save_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_fixtures as mf  # noqa: E402  (reuse the fixture builder, renames and writers)
from nvfp4 import nvfp4_decode, nvfp4_quantize  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "tests" / "fixtures"
S, G = mf.SLIDING, mf.GLOBAL

QCFG = dict(
    mf.FULL_CFG,
    vocab_size=384,
    unpadded_vocab_size=380,
    hidden_size=128,
    num_hidden_layers=4,
    num_attention_heads=4,  # global: 4 x 32 = 128 query rows, kv 2 x 32
    num_key_value_heads=2,
    head_dim=32,
    swa_num_attention_heads=8,  # sliding: 8 x 16 = 128 query rows, kv 2 x 16
    swa_num_key_value_heads=2,
    swa_head_dim=16,
    layer_types=[S, G, S, G],
    mlp_layer_types=["dense", "sparse", "sparse", "sparse"],
    intermediate_size=128,  # dense width
    moe_intermediate_size=64,  # expert width
)
PROMPT_LEN = 32

# ------------------------------------------------------------------------------------------------
# MLX affine
# ------------------------------------------------------------------------------------------------


def to_mx(t: torch.Tensor, dtype) -> mx.array:
    return mx.array(t.detach().float().numpy()).astype(dtype)


def np_affine_decode(wq: np.ndarray, scales: np.ndarray, biases: np.ndarray, bits: int, group: int):
    """Independent decode: each row one little-endian bit stream (element c at bits [c*bits,
    (c+1)*bits), MLX's packing for every width), w = s * q + b in f32 (two roundings)."""
    words = np.ascontiguousarray(wq.astype("<u4"))
    lead, nw = words.shape[:-1], words.shape[-1]
    cols = nw * 32 // bits
    stream = np.unpackbits(words.reshape(-1, nw).view(np.uint8), axis=1, bitorder="little")
    q = np.zeros((stream.shape[0], cols), np.uint32)
    for b in range(bits):
        q |= stream[:, b::bits][:, :cols].astype(np.uint32) << b
    q = q.reshape(*lead, cols).astype(np.float32)
    s = np.repeat(scales.astype(np.float32), group, axis=-1)
    b = np.repeat(biases.astype(np.float32), group, axis=-1)
    return (s * q).astype(np.float32) + b


class Affine:
    """mx.quantize of one tensor: the stored triplet (mx arrays) and its f32 dequantization."""

    def __init__(self, w: torch.Tensor, bits: int, group: int, dtype):
        wq, s, b = mx.quantize(to_mx(w, dtype), group_size=group, bits=bits)
        self.wq, self.scales, self.biases, self.bits, self.group = wq, s, b, bits, group
        deq = mx.dequantize(wq, s.astype(mx.float32), b.astype(mx.float32), group_size=group, bits=bits)
        self.deq = np.array(deq.astype(mx.float32))
        mine = np_affine_decode(np.array(wq), np.array(s.astype(mx.float32)), np.array(b.astype(mx.float32)), bits, group)
        assert np.array_equal(self.deq.view(np.uint32), mine.view(np.uint32)), "mx.dequantize != s*q+b in f32"

    def put(self, out: dict, stem: str):
        out[stem + ".weight"], out[stem + ".scales"], out[stem + ".biases"] = self.wq, self.scales, self.biases


# MLX widths in the mlx-community layout: (bits, group, quantize attention/embed/unembed too,
# per-module overrides {module path (og name without .weight): (bits, group)} (as callables of the
# config, since they name layers)).
def _downs(cfg, bits, group):
    out = {}
    for i, t in enumerate(cfg.mlp_layer_types):
        if t == "sparse":
            for m in ("experts", "shared_experts"):
                out[f"model.llm.layers.{i}.mlp.{m}.down_proj"] = (bits, group)
    return out


MLX_WIDTHS = {
    "quant_mlx4": (4, 64, False, lambda cfg: {}),
    "quant_mlx2": (2, 32, False, lambda cfg: {}),
    "quant_mlx3": (3, 64, True, lambda cfg: {"model.llm.embed": (3, 128)}),
    "quant_mlx5": (5, 128, False, lambda cfg: _downs(cfg, 5, 32)),
    "quant_mlx6": (6, 32, False, lambda cfg: {}),
    "quant_mlx8": (8, 128, False, lambda cfg: _downs(cfg, 8, 64)),
}
_ATTN = (("q_proj", "wq_du"), ("k_proj", "wk_dv"), ("v_proj", "wv_dv"), ("r_proj", "wr_du"), ("o_proj", "wo_ud"))


def mlx_files(sd: dict, cfg, bits: int, group: int, everything: bool, overrides: dict):
    """mlx-community naming, experts-only recipe (everything=True: attention, embed and unembed
    quantized too). Returns (tensors, dequantized HF state dict)."""
    og = mf.hf_to_og(sd, cfg, bf16=True)  # bf16 everywhere except router bias / global scale
    deq = {k: v.detach().clone().float() for k, v in sd.items()}
    out = {}
    for k, v in og.items():
        if k.startswith("model.llm."):
            out[k] = mx.array(v.float().numpy()).astype(mx.bfloat16 if v.dtype == torch.bfloat16 else mx.float32)
    # every non-quantized tensor of the reference is the bf16-rounded value
    for k in deq:
        if not mf.keep_f32_in_og(k):
            deq[k] = mf.bf16_round(deq[k])

    def q(stem: str, w: torch.Tensor) -> torch.Tensor:
        b, g = overrides.get(stem, (bits, group))
        a = Affine(w, b, g, mx.bfloat16)
        a.put(out, stem)
        return torch.from_numpy(a.deq)

    I = cfg.moe_intermediate_size
    if everything:
        del out["model.llm.embed.weight"], out["model.llm.unembed.weight"]
        deq["model.embed_tokens.weight"] = q("model.llm.embed", sd["model.embed_tokens.weight"])
        deq["lm_head.weight"] = q("model.llm.unembed", sd["lm_head.weight"])
    for i in range(cfg.num_hidden_layers):
        p, o = f"model.layers.{i}.", f"model.llm.layers.{i}."
        if everything:
            for hf, ogn in _ATTN:
                del out[o + f"attn.{ogn}.weight"]
                deq[p + f"self_attn.{hf}.weight"] = q(o + f"attn.{ogn}", sd[p + f"self_attn.{hf}.weight"])
        if cfg.mlp_layer_types[i] == "dense":
            del out[o + "mlp.w13_dn.weight"], out[o + "mlp.w2_md.weight"]
            for name in ("gate_proj", "up_proj", "down_proj"):
                deq[p + f"mlp.{name}.weight"] = q(o + f"mlp.{name}", sd[p + f"mlp.{name}.weight"])
            continue
        del out[o + "mlp.experts.w13_weight"], out[o + "mlp.experts.w2_weight"]
        del out[o + "mlp.shared_experts.shared_w13_weight"], out[o + "mlp.shared_experts.shared_w2_weight"]
        gu = sd[p + "mlp.experts.gate_up_proj"]
        parts = {"gate_proj": gu[:, :I], "up_proj": gu[:, I:], "down_proj": sd[p + "mlp.experts.down_proj"]}
        dq = {name: q(o + f"mlp.experts.{name}", w) for name, w in parts.items()}
        deq[p + "mlp.experts.gate_up_proj"] = torch.cat([dq["gate_proj"], dq["up_proj"]], dim=1)
        deq[p + "mlp.experts.down_proj"] = dq["down_proj"]
        for name in ("gate_proj", "up_proj", "down_proj"):
            deq[p + f"mlp.shared_experts.{name}"] = q(o + f"mlp.shared_experts.{name}", sd[p + f"mlp.shared_experts.{name}"])
    # conv weights already in MLX layout [C, K, 1]
    for k in list(out):
        if k.endswith("sconv.weight"):
            out[k] = out[k].transpose(0, 2, 1)
    # the audio tower's quantized embedding (must be ignored)
    a = Affine(torch.randn(8, 64, generator=torch.Generator().manual_seed(5)), 4, 64, mx.bfloat16)
    a.put(out, "model.audio.encoder")
    return out, deq


def mlxvlm_files(sd: dict, cfg):
    """mlx-vlm naming, everything quantized (with overrides). Returns (tensors, deq, quant dict)."""
    L = "language_model.model."
    deq = {k: v.detach().clone().float() for k, v in sd.items()}
    out = {}
    quant = {"group_size": 32, "bits": 4, "mode": "affine"}
    overrides = {
        "language_model.lm_head": {"group_size": 64, "bits": 8},
        L + "embed_tokens": {"group_size": 128, "bits": 8},
        L + "layers.0.mlp.down_proj": {"group_size": 128, "bits": 8},
        L + "layers.2.self_attn.q_proj": {"group_size": 64, "bits": 8},  # applies to qkvr_proj
        L + "layers.1.self_attn.o_proj": False,
    }
    quant.update(overrides)

    def q(stem: str, w: torch.Tensor):
        o = overrides.get(stem, {})
        if stem.endswith(".qkvr_proj"):
            o = overrides.get(stem[: -len(".qkvr_proj")] + ".q_proj", o)
        if o is False:
            out[stem + ".weight"] = to_mx(w, mx.float16)
            return w.detach().float().to(torch.float16).float()
        a = Affine(w, o.get("bits", 4), o.get("group_size", 32), mx.float16)
        a.put(out, stem)
        return torch.from_numpy(a.deq)

    def f(name: str, w: torch.Tensor, dtype=mx.float16):
        out[name] = to_mx(w, dtype)
        return w.detach().float() if dtype == mx.float32 else w.detach().float().to(torch.float16).float()

    deq["model.embed_tokens.weight"] = q(L + "embed_tokens", sd["model.embed_tokens.weight"])
    deq["lm_head.weight"] = q("language_model.lm_head", sd["lm_head.weight"])
    deq["model.embed_tokens.embed_norm.weight"] = f(L + "embed_norm.weight", sd["model.embed_tokens.embed_norm.weight"])
    deq["model.norm.weight"] = f(L + "norm.weight", sd["model.norm.weight"])
    I, Sh = cfg.moe_intermediate_size, cfg.n_shared_experts
    for i in range(cfg.num_hidden_layers):
        p, v = f"model.layers.{i}.", f"{L}layers.{i}."
        for a, b in (("input_layernorm.weight",) * 2, ("post_attention_layernorm.weight",) * 2,
                     ("self_attn.q_norm.weight",) * 2, ("self_attn.k_norm.weight",) * 2,
                     ("self_attn.rel_logits_proj.proj", "self_attn.rel_proj")):
            deq[p + a] = f(v + b, sd[p + a])
        for a, b in (("self_attn.k_sconv.conv1d.weight", "self_attn.k_sconv.conv.weight"),
                     ("self_attn.v_sconv.conv1d.weight", "self_attn.v_sconv.conv.weight"),
                     ("attn_sconv.conv1d.weight", "attn_sconv.conv.weight"),
                     ("mlp_sconv.conv1d.weight", "mlp_sconv.conv.weight")):
            deq[p + a] = f(v + b, sd[p + a].transpose(1, 2), mx.float32).transpose(1, 2)  # [C, K, 1]
        names = ["q_proj", "k_proj", "v_proj", "r_proj"]
        if i == 0:
            for n in names:
                deq[p + f"self_attn.{n}.weight"] = q(v + f"self_attn.{n}", sd[p + f"self_attn.{n}.weight"])
        else:
            ws = [sd[p + f"self_attn.{n}.weight"] for n in names]
            d = q(v + "self_attn.qkvr_proj", torch.cat(ws, dim=0))
            for n, part in zip(names, torch.split(d, [w.shape[0] for w in ws], dim=0)):
                deq[p + f"self_attn.{n}.weight"] = part.contiguous()
        deq[p + "self_attn.o_proj.weight"] = q(v + "self_attn.o_proj", sd[p + "self_attn.o_proj.weight"])
        if cfg.mlp_layer_types[i] == "dense":
            for n in ("gate_proj", "up_proj", "down_proj"):
                deq[p + f"mlp.{n}.weight"] = q(v + f"mlp.{n}", sd[p + f"mlp.{n}.weight"])
            deq[p + "mlp.global_scale"] = f(v + "mlp.global_scale", sd[p + "mlp.global_scale"], mx.float32)
            continue
        deq[p + "mlp.gate.weight"] = f(v + "mlp.gate_weight", sd[p + "mlp.gate.weight"])
        deq[p + "mlp.gate.e_score_correction_bias"] = f(
            v + "mlp.e_score_correction_bias", sd[p + "mlp.gate.e_score_correction_bias"], mx.float32)
        deq[p + "mlp.gate.global_scale"] = f(v + "mlp.global_scale", sd[p + "mlp.gate.global_scale"], mx.float32)
        gu = sd[p + "mlp.experts.gate_up_proj"]
        g = q(v + "mlp.switch_mlp.gate_proj", gu[:, :I])
        u = q(v + "mlp.switch_mlp.up_proj", gu[:, I:])
        deq[p + "mlp.experts.gate_up_proj"] = torch.cat([g, u], dim=1)
        deq[p + "mlp.experts.down_proj"] = q(v + "mlp.switch_mlp.down_proj", sd[p + "mlp.experts.down_proj"])
        E = gu.shape[0]
        out[v + "mlp.switch_mlp.gate_scale"] = mx.ones((E,), dtype=mx.float32)
        out[v + "mlp.switch_mlp.out_scale"] = mx.ones((E,), dtype=mx.float32)
        H = cfg.hidden_size
        for n in ("gate_proj", "up_proj"):  # [S, I, H] -> [S*I, H]
            d = q(v + f"mlp.shared_experts.{n}", sd[p + f"mlp.shared_experts.{n}"].reshape(Sh * I, H))
            deq[p + f"mlp.shared_experts.{n}"] = d.reshape(Sh, I, H)
        flat = sd[p + "mlp.shared_experts.down_proj"].permute(1, 0, 2).reshape(H, Sh * I)  # [H, S*I]
        d = q(v + "mlp.shared_experts.down_proj", flat)
        deq[p + "mlp.shared_experts.down_proj"] = d.reshape(H, Sh, I).permute(1, 0, 2).contiguous()
    return out, deq, quant


# ------------------------------------------------------------------------------------------------
# NVFP4 (ModelOpt)
# ------------------------------------------------------------------------------------------------

# The quantizer itself lives in tools/nvfp4.py (shared with make_bench_slice_nvfp4.py).


def nvfp4_files(sd: dict, cfg):
    og = mf.hf_to_og(sd, cfg, bf16=True)
    deq = {k: (v.detach().float() if mf.keep_f32_in_og(k) else mf.bf16_round(v.detach().float())) for k, v in sd.items()}
    out = {k: v for k, v in og.items()}
    moe = [i for i, t in enumerate(cfg.mlp_layer_types) if t == "sparse"]
    first = moe[0]
    exclude = [f"model.llm.layers.{i}.attn" for i in range(cfg.num_hidden_layers)]
    exclude += [f"model.llm.layers.{i}.mlp.w13_dn" for i in range(first)]
    exclude += [f"model.llm.layers.{i}.mlp.w2_md" for i in range(first)]
    exclude += [f"model.llm.layers.{i}.mlp.shared_experts" for i in moe] + [f"model.llm.layers.{i}.mlp.gate" for i in moe]
    exclude += [f"model.llm.layers.{first}.mlp.experts", "model.llm.embed", "model.llm.unembed", "model.mtp*"]
    mlx_check = 0.0
    for i in moe[1:]:
        q, p = f"model.llm.layers.{i}.", f"model.layers.{i}."
        I = cfg.moe_intermediate_size
        for og_name in ("mlp.experts.w13_weight", "mlp.experts.w2_weight"):
            w = og[q + og_name].float().numpy()  # [E, rows, cols]; w13 rows interleaved g0,u0,...
            res = [nvfp4_quantize(w[e]) for e in range(w.shape[0])]
            out[q + og_name] = torch.from_numpy(np.stack([r[0] for r in res]))
            out[q + og_name + ".scale"] = torch.from_numpy(np.stack([r[1] for r in res])).view(torch.float8_e4m3fn)
            out[q + og_name + ".scale2"] = torch.tensor([r[2] for r in res], dtype=torch.float32)
            out[q + og_name + ".input_amax"] = torch.tensor([3.5], dtype=torch.bfloat16)
            out[q + og_name + ".original_shape"] = torch.tensor(list(w.shape), dtype=torch.int64)
            d = torch.from_numpy(np.stack([r[3] for r in res]))
            if og_name.endswith("w13_weight"):
                g, u = mf.deinterleave_rows(d, 1)
                deq[p + "mlp.experts.gate_up_proj"] = torch.cat([g, u], dim=1)
            else:
                deq[p + "mlp.experts.down_proj"] = d
            # MLX's nvfp4 mode decodes the same codes: e2m1 * e4m3 (no scale2)
            for e in range(w.shape[0]):
                packed, sb = res[e][0], res[e][1]
                m = mx.dequantize(mx.array(packed.view(np.uint32)), mx.array(sb), group_size=16, bits=4,
                                  mode="nvfp4", dtype=mx.float32)
                ref = nvfp4_decode(packed, sb, np.float32(1.0))
                mlx_check = max(mlx_check, float(np.abs(np.array(m) - ref).max()))
    assert mlx_check == 0.0, f"MLX nvfp4 decode differs from ours by {mlx_check}"
    hq = {"producer": {"name": "modelopt", "version": "0.31.0"},
          "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": None, "group_size": 16,
                           "exclude_modules": exclude}}
    return out, deq, hq


# ------------------------------------------------------------------------------------------------
# Reference, acceptance, writing
# ------------------------------------------------------------------------------------------------


def reference_model(deq: dict, cfg_fields: dict):
    model = mf.InklingForCausalLM(mf.make_hf_config(cfg_fields)).to(torch.float32).eval()
    model.load_state_dict({k: v.contiguous() for k, v in deq.items()}, strict=True)
    return mf.rematerialize(model)


def accept(model, prompt):
    logits = mf.forward_logits(model, prompt)
    gen, steps = mf.greedy_full(model, prompt, mf.N_GEN)
    top2 = torch.topk(steps, 2, dim=-1).values
    margins = (top2[:, 0] - top2[:, 1]).tolist()
    probe = mf.RouterProbe(model)
    mf.forward_logits(model, prompt + gen)
    probe.close()
    info = dict(logits_std=float(logits.std()), logits_max_abs=float(logits.abs().max()),
                greedy_min_margin=float(min(margins)), greedy_distinct=len(set(gen)),
                router_min_gap=probe.min_gap, router_bias_changed_selections=probe.changed)
    ok = (mf.LOGITS_STD_RANGE[0] <= info["logits_std"] <= mf.LOGITS_STD_RANGE[1]
          and info["greedy_min_margin"] >= mf.MIN_GREEDY_MARGIN and info["greedy_distinct"] >= mf.MIN_DISTINCT_GREEDY
          and probe.min_gap >= mf.MIN_ROUTER_GAP and probe.changed > 0)
    return ok, logits, gen, steps, margins, info


def dequant_samples(deq: dict, picks):
    """A few rows of some dequantized matrices (HF names + index) for bit-exact C++ checks."""
    items = []
    for what, name, index, rows in picks:
        t = deq[name]
        for i in index:
            t = t[i]
        if name.endswith("gate_up_proj"):  # [2I, H] = [gate; up]: rows are relative to the half
            half = t.shape[0] // 2
            t = t[half:] if what.endswith(".up") else t[:half]
        items.append((what, rows, t[rows].numpy().astype(np.float32)))
    return items


def write(name, files_writer, cfg, prompt, logits, gen, steps, margins, info, samples, extra_json):
    d = OUT / name
    if d.exists():
        shutil.rmtree(d)
    (d / "model").mkdir(parents=True)
    (d / "ref").mkdir()
    files_writer(d / "model" / "model.safetensors")
    vocab_out = cfg.unpadded_vocab_size or cfg.vocab_size
    eos = max(i for i in range(vocab_out) if i not in set(gen) | set(prompt) and i != cfg.bos_token_id)
    og_cfg = mf.og_config(cfg, QCFG, [], True, eos)
    for fname, obj in extra_json(og_cfg).items():
        mf.save_json(d / "model" / fname, obj)
    mf.save_json(d / "ref" / "prompt.json", {"prompt_ids": prompt})
    mf.save_npy(d / "ref" / "logits.npy", logits)
    mf.save_json(d / "ref" / "greedy.json", {"prompt_ids": prompt, "ids": gen, "eos_token_id": eos, "eos_index": None})
    mf.save_npy(d / "ref" / "greedy_logits.npy", steps)
    manifest = []
    for k, (what, rows, arr) in enumerate(samples):
        mf.save_npy(d / "ref" / f"dq_{k}.npy", arr)
        manifest.append({"what": what, "rows": [int(r) for r in rows], "file": f"dq_{k}.npy"})
    mf.save_json(d / "ref" / "dequant.json", manifest)
    info["greedy_margins"] = [round(m, 6) for m in margins]
    mf.save_json(d / "ref" / "stats.json", info)


def make(name: str, seed0: int, log):
    for t in range(mf.MAX_SEED_TRIES):
        seed = seed0 + t
        model = mf.build_model(QCFG, seed, bf16=False)
        cfg, sd = model.config, {k: v.detach().clone() for k, v in model.state_dict().items()}
        if name in MLX_WIDTHS:
            bits, group, everything, ov = MLX_WIDTHS[name]
            tensors, deq = mlx_files(sd, cfg, bits, group, everything, ov(cfg))
        elif name == "quant_mlxvlm":
            tensors, deq, quant = mlxvlm_files(sd, cfg)
        else:
            tensors, deq, hq = nvfp4_files(sd, cfg)
        ref = reference_model(deq, QCFG)
        g = torch.Generator().manual_seed(seed + 7)
        prompt = torch.randint(0, cfg.unpadded_vocab_size, (PROMPT_LEN,), generator=g).tolist()
        ok, logits, gen, steps, margins, info = accept(ref, prompt)
        if ok:
            break
    else:
        raise RuntimeError(f"{name}: no acceptable seed")
    gen_c, steps_c = mf.greedy_cached(ref, prompt, mf.N_GEN)
    assert gen_c == gen and float((steps_c - steps).abs().max()) < 1e-4
    info.update(seed=seed, cached_vs_recompute_max_abs_diff=float((steps_c - steps).abs().max()))
    f32 = mf.forward_logits(model, prompt)  # unquantized model: how much quantization moved the logits
    info["quantization_logit_shift_max_abs"] = float((f32 - logits).abs().max())
    log(f"[{name}] seed {seed}: {info}")
    L = "model.layers."
    if name in MLX_WIDTHS:
        bits, group, everything, ov = MLX_WIDTHS[name]
        picks = [("layers.1.routed.5.gate", L + "1.mlp.experts.gate_up_proj", [5], [0, 1, 63]),
                 ("layers.1.routed.5.up", L + "1.mlp.experts.gate_up_proj", [5], [0, 1, 63]),
                 ("layers.3.routed.7.down", L + "3.mlp.experts.down_proj", [7], [0, 50, 127]),
                 ("layers.0.dense.down", L + "0.mlp.down_proj.weight", [], [0, 127]),
                 ("layers.2.shared.1.down", L + "2.mlp.shared_experts.down_proj", [1], [3, 100])]
        if everything:
            picks += [("embed", "model.embed_tokens.weight", [], [0, 7, 383]),
                      ("lm_head", "lm_head.weight", [], [1, 200]),
                      ("layers.1.q", L + "1.self_attn.q_proj.weight", [], [0, 127]),
                      ("layers.1.k", L + "1.self_attn.k_proj.weight", [], [0, 63]),
                      ("layers.3.r", L + "3.self_attn.r_proj.weight", [], [0, 15]),
                      ("layers.0.o", L + "0.self_attn.o_proj.weight", [], [0, 5])]
        writer = lambda path: mx.save_safetensors(str(path), tensors, metadata={"format": "mlx"})  # noqa: E731
        qd = {"group_size": group, "bits": bits, "mode": "affine", "recipe": "all" if everything else "experts_only"}
        for module, (b, g) in ov(cfg).items():
            qd[module] = {"group_size": g, "bits": b}
        extra = lambda c: {"config.json": dict(c, quantization=qd, quantization_config=qd)}  # noqa: E731
    elif name == "quant_mlxvlm":
        picks = [("embed", "model.embed_tokens.weight", [], [0, 7, 383]),
                 ("lm_head", "lm_head.weight", [], [1, 200]),
                 ("layers.2.q", L + "2.self_attn.q_proj.weight", [], [0, 127]),
                 ("layers.1.r", L + "1.self_attn.r_proj.weight", [], [0, 15]),
                 ("layers.1.o", L + "1.self_attn.o_proj.weight", [], [0, 5]),
                 ("layers.0.dense.down", L + "0.mlp.down_proj.weight", [], [2, 127]),
                 ("layers.2.shared.1.down", L + "2.mlp.shared_experts.down_proj", [1], [0, 9, 127]),
                 ("layers.3.routed.0.up", L + "3.mlp.experts.gate_up_proj", [0], [0, 63])]
        writer = lambda path: mx.save_safetensors(str(path), tensors, metadata={"format": "mlx"})  # noqa: E731
        extra = lambda c: {"config.json": dict(c, quantization=quant)}  # noqa: E731
    else:
        picks = [("layers.2.routed.3.gate", L + "2.mlp.experts.gate_up_proj", [3], [0, 1, 63]),
                 ("layers.2.routed.3.up", L + "2.mlp.experts.gate_up_proj", [3], [0, 1, 63]),
                 ("layers.3.routed.6.down", L + "3.mlp.experts.down_proj", [6], [0, 77, 127]),
                 ("layers.1.routed.2.gate", L + "1.mlp.experts.gate_up_proj", [2], [0, 5])]
        writer = lambda path: save_file({k: v.contiguous() for k, v in tensors.items()}, str(path),  # noqa: E731
                                        metadata={"format": "pt"})
        extra = lambda c: {"config.json": c, "hf_quant_config.json": hq}  # noqa: E731
    write(name, writer, cfg, prompt, logits, gen, steps, margins, info, dequant_samples(deq, picks), extra)


FIXTURES = {"quant_mlx4": 7000, "quant_mlxvlm": 7100, "quant_nvfp4": 7200, "quant_mlx2": 7300,
            "quant_mlx3": 7400, "quant_mlx5": 7500, "quant_mlx6": 7600, "quant_mlx8": 7700}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help=f"default: all of {list(FIXTURES)}")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    for n in args.names or list(FIXTURES):
        make(n, FIXTURES[n], print)
    print(f"mlx {mx.__version__} (transformers/torch/numpy versions: tests/fixtures/VERSIONS.txt)")


if __name__ == "__main__":
    main()
