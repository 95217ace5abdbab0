"""The original Thinking Machines ("OG") checkpoint layout <-> transformers' InklingForCausalLM:
tensor renames, the gate/up row interleave of fused w13 tensors, the OG config spelling, and
loading an OG folder into transformers. Shared by make_fixtures.py, make_quant_fixtures.py,
dump_activations.py and bench/compare.py (through make_fixtures, which re-exports it).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from transformers import InklingForCausalLM, InklingTextConfig
from transformers.models.inkling.configuration_inkling import InklingConfig

SLIDING, GLOBAL = "hybrid_sliding", "hybrid"  # transformers' layer_types values


def rematerialize(model: torch.nn.Module) -> torch.nn.Module:
    """Copy every parameter/buffer into freshly allocated memory.  Tensors loaded by from_pretrained
    are mmapped views at arbitrary byte offsets of the safetensors file; CPU BLAS kernels pick
    different code paths for unaligned data, which changes results in the last ulp.  Cloning makes
    bit-exact comparisons of "same weights" meaningful."""
    for mod in model.modules():
        for n, p in list(mod.named_parameters(recurse=False)):
            p.data = p.data.clone()
        for n, b in list(mod.named_buffers(recurse=False)):
            if b is not None:
                b.data = b.data.clone()
    return model


# ------------------------------------------------------------------------------------------------
# OG (Thinking Machines) layout
# ------------------------------------------------------------------------------------------------


def interleave_rows(gate: torch.Tensor, up: torch.Tensor, dim: int) -> torch.Tensor:
    """[.., I, ..] x2 -> [.., 2I, ..] with rows g0,u0,g1,u1,... along `dim`."""
    st = torch.stack([gate, up], dim=dim + 1)
    shape = list(gate.shape)
    shape[dim] *= 2
    return st.reshape(shape).contiguous()


def deinterleave_rows(w: torch.Tensor, dim: int):
    idx_g = torch.arange(0, w.shape[dim], 2)
    idx_u = torch.arange(1, w.shape[dim], 2)
    return w.index_select(dim, idx_g).contiguous(), w.index_select(dim, idx_u).contiguous()


# per-layer simple renames HF suffix -> OG suffix
_LAYER_RENAMES = [
    ("input_layernorm.weight", "attn_norm.weight"),
    ("post_attention_layernorm.weight", "mlp_norm.weight"),
    ("self_attn.q_proj.weight", "attn.wq_du.weight"),
    ("self_attn.k_proj.weight", "attn.wk_dv.weight"),
    ("self_attn.v_proj.weight", "attn.wv_dv.weight"),
    ("self_attn.r_proj.weight", "attn.wr_du.weight"),
    ("self_attn.o_proj.weight", "attn.wo_ud.weight"),
    ("self_attn.q_norm.weight", "attn.q_norm.weight"),
    ("self_attn.k_norm.weight", "attn.k_norm.weight"),
    ("self_attn.k_sconv.conv1d.weight", "attn.k_sconv.weight"),
    ("self_attn.v_sconv.conv1d.weight", "attn.v_sconv.weight"),
    ("self_attn.rel_logits_proj.proj", "attn.rel_logits_proj.proj"),
    ("attn_sconv.conv1d.weight", "attn_sconv.weight"),
    ("mlp_sconv.conv1d.weight", "mlp_sconv.weight"),
    # dense
    ("mlp.down_proj.weight", "mlp.w2_md.weight"),
    ("mlp.global_scale", "mlp.global_scale"),
    # MoE
    ("mlp.gate.weight", "mlp.gate.weight"),
    ("mlp.gate.e_score_correction_bias", "mlp.gate.bias"),
    ("mlp.gate.global_scale", "mlp.gate.global_scale"),
    ("mlp.experts.down_proj", "mlp.experts.w2_weight"),
    ("mlp.shared_experts.down_proj", "mlp.shared_experts.shared_w2_weight"),
]
_TOP_RENAMES = [
    ("model.embed_tokens.weight", "model.llm.embed.weight"),
    ("model.embed_tokens.embed_norm.weight", "model.llm.embed_norm.weight"),
    ("model.norm.weight", "model.llm.norm.weight"),
    ("lm_head.weight", "model.llm.unembed.weight"),
]
JUNK_TENSORS = {
    # loaders must drop these (MTP head, vision and audio towers)
    "model.mtp.layers.0.foo.weight": (4, 8),
    "model.visual.blocks.0.bar.weight": (3, 5),
    "model.audio.encoder.weight": (2, 6),
}


def hf_to_og(sd: dict, cfg: InklingTextConfig, bf16: bool) -> dict:
    sd = {k: v.detach().clone().float() for k, v in sd.items()}
    out = {}
    for hf, og in _TOP_RENAMES:
        out[og] = sd.pop(hf)
    for i in range(cfg.num_hidden_layers):
        p, q = f"model.layers.{i}.", f"model.llm.layers.{i}."
        for hf, og in _LAYER_RENAMES:
            if p + hf in sd:
                out[q + og] = sd.pop(p + hf)
        if cfg.mlp_layer_types[i] == "dense":
            g, u = sd.pop(p + "mlp.gate_proj.weight"), sd.pop(p + "mlp.up_proj.weight")
            out[q + "mlp.w13_dn.weight"] = interleave_rows(g, u, 0)
        else:
            gu = sd.pop(p + "mlp.experts.gate_up_proj")
            I = gu.shape[1] // 2
            out[q + "mlp.experts.w13_weight"] = interleave_rows(gu[:, :I], gu[:, I:], 1)
            g, u = sd.pop(p + "mlp.shared_experts.gate_proj"), sd.pop(p + "mlp.shared_experts.up_proj")
            out[q + "mlp.shared_experts.shared_w13_weight"] = interleave_rows(g, u, 1)
    assert not sd, f"unconverted tensors: {sorted(sd)}"
    g = torch.Generator().manual_seed(12345)
    for name, shape in JUNK_TENSORS.items():
        out[name] = torch.randn(shape, generator=g)
    if bf16:
        out = {
            k: (v if (k.endswith("mlp.gate.bias") or k.endswith("mlp.gate.global_scale")) else v.to(torch.bfloat16))
            for k, v in out.items()
        }
    return {k: v.contiguous() for k, v in out.items()}


def og_to_hf(og: dict, cfg: InklingTextConfig) -> dict:
    """Inverse of hf_to_og (independent of transformers' conversion_mapping); drops mtp/visual/audio."""
    og = {k: v.float() for k, v in og.items() if k.startswith("model.llm.")}
    out = {}
    for hf, o in _TOP_RENAMES:
        out[hf] = og.pop(o)
    for i in range(cfg.num_hidden_layers):
        p, q = f"model.layers.{i}.", f"model.llm.layers.{i}."
        for hf, o in _LAYER_RENAMES:
            if q + o in og:
                out[p + hf] = og.pop(q + o)
        if q + "mlp.w13_dn.weight" in og:
            g, u = deinterleave_rows(og.pop(q + "mlp.w13_dn.weight"), 0)
            out[p + "mlp.gate_proj.weight"], out[p + "mlp.up_proj.weight"] = g, u
        if q + "mlp.experts.w13_weight" in og:
            g, u = deinterleave_rows(og.pop(q + "mlp.experts.w13_weight"), 1)
            out[p + "mlp.experts.gate_up_proj"] = torch.cat([g, u], dim=1)
            g, u = deinterleave_rows(og.pop(q + "mlp.shared_experts.shared_w13_weight"), 1)
            out[p + "mlp.shared_experts.gate_proj"], out[p + "mlp.shared_experts.up_proj"] = g, u
    assert not og, f"unconverted OG tensors: {sorted(og)}"
    return out


def og_config(cfg: InklingTextConfig, fields: dict, omit: list, bf16: bool, eos: int) -> dict:
    n = cfg.num_hidden_layers
    dense = [t == "dense" for t in cfg.mlp_layer_types]
    n_dense = sum(dense)
    assert dense == [i < n_dense for i in range(n)], "OG configs can only express a dense prefix"
    tc = {
        "vocab_size": cfg.vocab_size,
        "unpadded_vocab_size": cfg.unpadded_vocab_size,
        "hidden_size": cfg.hidden_size,
        "num_hidden_layers": n,
        "num_attention_heads": cfg.num_attention_heads,
        "num_key_value_heads": cfg.num_key_value_heads,
        "head_dim": cfg.head_dim,
        "swa_num_attention_heads": cfg.swa_num_attention_heads,
        "swa_num_key_value_heads": cfg.swa_num_key_value_heads,
        "swa_head_dim": cfg.swa_head_dim,
        "sliding_window_size": cfg.sliding_window_size,
        "d_rel": cfg.d_rel,
        "rel_extent": cfg.rel_extent,
        "log_scaling_n_floor": cfg.log_scaling_n_floor,
        "log_scaling_alpha": cfg.log_scaling_alpha,
        "local_layer_ids": [i for i, t in enumerate(cfg.layer_types) if t == SLIDING],
        "dense_mlp_idx": n_dense,
        "model_max_length": cfg.max_position_embeddings,
        "rms_norm_eps": cfg.rms_norm_eps,
        "sconv_kernel_size": cfg.conv_kernel_size,
        "intermediate_size": cfg.moe_intermediate_size,  # OG meaning: routed/shared expert width
        "dense_intermediate_size": cfg.intermediate_size,  # OG: dense MLP width
        "hidden_act": cfg.hidden_act,
        "n_routed_experts": cfg.n_routed_experts,
        "num_experts_per_tok": cfg.num_experts_per_tok,
        "n_shared_experts": cfg.n_shared_experts,
        "shared_expert_sink": True,
        "route_scale": cfg.route_scale,
        "logits_mup_width_multiplier": cfg.logits_mup_width_multiplier,
        "use_embed_norm": True,
        "use_sconv": True,
        "use_gate_bias": True,
        "use_global_scale": True,
        "norm_after_topk": True,
        "gate_activation": "sigmoid",
        "q_bias": False,
        "o_bias": False,
        "final_logit_softcapping": None,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16" if bf16 else "float32",
        "bos_token_id": cfg.bos_token_id,
        "eos_token_id": eos,
    }
    for k in omit:
        tc.pop(k)
    return {
        "architectures": ["InklingForConditionalGeneration"],
        "model_type": "inkling_mm_model",
        "eos_token_id": eos,
        "vocab_size": cfg.vocab_size,
        "torch_dtype": "bfloat16" if bf16 else "float32",
        "mtp_config": {"num_nextn_predict_layers": 1, "chain_hidden_post_norm": False, "local_layer_ids": []},
        # tiny tower configs so that transformers' InklingForConditionalGeneration can instantiate this
        # directory (its default vision config would allocate ~1.5 TB); text loaders must ignore them
        "vision_config": {"hidden_size": 16, "n_layers": 4, "patch_size": 4, "temporal_patch_size": 2},
        "audio_config": {"n_mel_bins": 2, "mel_vocab_size": 3},
        "text_config": tc,
    }


def text_config_from_og(og_cfg: dict) -> InklingTextConfig:
    """How transformers itself parses an OG config.json (InklingConfig -> text_config)."""
    d = {k: v for k, v in og_cfg.items() if k not in ("model_type",)}
    mm = InklingConfig(**d)
    tc = mm.text_config
    tc._attn_implementation = "eager"
    tc._experts_implementation = "eager"
    return tc


@torch.no_grad()
def hf_native_og_logits(og_dir: Path, prompt) -> torch.Tensor:
    """Logits of transformers' own OG loader: InklingForConditionalGeneration.from_pretrained applies the
    `inkling_mm_model` conversion mapping (renames, Interleave/Chunk).  Text ids only."""
    from transformers import InklingForConditionalGeneration

    m, info = InklingForConditionalGeneration.from_pretrained(
        og_dir,
        dtype=torch.float32,
        attn_implementation="eager",
        experts_implementation="eager",
        output_loading_info=True,
        ignore_mismatched_sizes=True,  # the junk audio tensor does not fit the tiny audio tower
    )
    bad = [k for k in info["missing_keys"] if "language_model" in k or k.startswith("lm_head")]
    assert not bad, f"HF OG loader missed text weights: {bad}"
    rematerialize(m.eval())
    return m(input_ids=torch.tensor([prompt]), use_cache=False).logits[0].float()


def load_og_model(og_dir: Path) -> InklingForCausalLM:
    og_cfg = json.loads((og_dir / "config.json").read_text())
    tc = text_config_from_og(og_cfg)
    model = InklingForCausalLM(tc).to(torch.float32).eval()
    sd = og_to_hf(load_file(str(og_dir / "model.safetensors")), tc)
    model.load_state_dict(sd, strict=True)
    return rematerialize(model)


CFG_CHECK_FIELDS = [
    "vocab_size",
    "unpadded_vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "swa_num_attention_heads",
    "swa_num_key_value_heads",
    "swa_head_dim",
    "sliding_window_size",
    "sliding_window",
    "d_rel",
    "rel_extent",
    "log_scaling_n_floor",
    "log_scaling_alpha",
    "layer_types",
    "mlp_layer_types",
    "rms_norm_eps",
    "conv_kernel_size",
    "sconv_kernel_size",
    "intermediate_size",
    "moe_intermediate_size",
    "hidden_act",
    "n_routed_experts",
    "num_experts_per_tok",
    "n_shared_experts",
    "route_scale",
    "logits_mup_width_multiplier",
]
