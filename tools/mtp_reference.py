#!/usr/bin/env python3
"""PyTorch reference of Inkling's MTP (multi-token prediction) heads, written from
/work/shared/spec/inkling-mtp.md (the semantics vLLM and SGLang agree on). transformers has no MTP
module, so this is the oracle the C++ MTP work is checked against.

One depth d at sequence row p:
    h_in  = d == 0: the trunk's final hidden at p AFTER model.norm, NOT divided by the muP multiplier
            d  > 0: the raw output y of depth d-1 at the same row p
    tok   = the token at p+1+d
    e     = trunk.embed_norm(trunk.embed[tok])                  (the trunk's normed embedding)
    c     = concat(RMSNorm_hidden_norm(h_in), RMSNorm_embed_norm(e))   (hidden first)
    x     = input_proj(c)                                       (2H -> H, no bias)
    y     = one ordinary Inkling decoder layer (dense MLP; banded iff d in mtp local_layer_ids)
    logits= trunk.lm_head(y / logits_mup_width_multiplier)[:unpadded_vocab]   (no final norm)
so depth d's logits at row p predict the token at p+2+d.  The depth's own attention positions
are its row indices (row p sits at position p, like the trunk row it extends).

Tensor names (OG layout) per depth: model.mtp.layers.{d}.embed_norm.weight, .hidden_norm.weight,
.input_proj.weight and .transformer_block.<the trunk layer's OG names> (attn.wq_du, ...,
mlp.w13_dn interleaved, mlp.w2_md, mlp.global_scale).  `og_state_dict` / `load_og_state_dict`
convert.  chain_hidden_post_norm is false (no chain_norm), hidden_states_first is true.

Use:
    mtp = InklingMTP(model.config, num_layers=2, local_layer_ids=[0])
    out = mtp_forward(model, mtp, input_ids)     # trunk logits + per-depth logits
"""

from __future__ import annotations

import copy

import torch
import torch.nn as nn

from transformers.masking_utils import create_causal_mask, create_recurrent_attention_mask, create_sliding_window_causal_mask
from transformers.models.inkling.modeling_inkling import InklingDecoderLayer, InklingRMSNorm

SLIDING, GLOBAL = "hybrid_sliding", "hybrid"


def depth_config(text_cfg, sliding: bool):
    """The text config of one MTP depth's decoder layer: one layer of the right kind, dense MLP."""
    cfg = copy.deepcopy(text_cfg)
    cfg.num_hidden_layers = 1
    cfg.layer_types = [SLIDING if sliding else GLOBAL]
    cfg.mlp_layer_types = ["dense"]
    return cfg


class InklingMTPDepth(nn.Module):
    def __init__(self, text_cfg, sliding: bool):
        super().__init__()
        H = text_cfg.hidden_size
        self.cfg = depth_config(text_cfg, sliding)
        self.sliding = sliding
        self.embed_norm = InklingRMSNorm(H, eps=text_cfg.rms_norm_eps)
        self.hidden_norm = InklingRMSNorm(H, eps=text_cfg.rms_norm_eps)
        self.input_proj = nn.Linear(2 * H, H, bias=False)
        self.transformer_block = InklingDecoderLayer(self.cfg, 0)

    def masks(self, x: torch.Tensor, attention_mask=None, cache=None):
        pos = torch.arange(x.shape[1], device=x.device)[None]
        kw = dict(config=self.cfg, inputs_embeds=x, attention_mask=attention_mask, cache=cache, position_ids=pos)
        attn = create_sliding_window_causal_mask(**kw) if self.sliding else create_causal_mask(**kw)
        return attn, create_recurrent_attention_mask(**kw)

    def forward(self, h_in: torch.Tensor, e: torch.Tensor, cache=None) -> torch.Tensor:
        """h_in, e: [B, L, H] -> y [B, L, H] (raw layer output)."""
        c = torch.cat([self.hidden_norm(h_in), self.embed_norm(e)], dim=-1)
        x = self.input_proj(c)
        attn_mask, conv_mask = self.masks(x, cache=cache)
        return self.transformer_block(x, attention_mask=attn_mask, conv_mask=conv_mask, cache=cache)


class InklingMTP(nn.Module):
    """`num_layers` chained depths; depth d is banded (sliding) iff d in local_layer_ids."""

    def __init__(self, text_cfg, num_layers: int, local_layer_ids=(), chain_hidden_post_norm: bool = False):
        super().__init__()
        assert not chain_hidden_post_norm, "the released checkpoints have no chain_norm"
        self.local_layer_ids = list(local_layer_ids)
        self.layers = nn.ModuleList(
            [InklingMTPDepth(text_cfg, d in self.local_layer_ids) for d in range(num_layers)])

    def mtp_config(self) -> dict:
        return {"num_nextn_predict_layers": len(self.layers), "chain_hidden_post_norm": False,
                "local_layer_ids": self.local_layer_ids, "hidden_states_first": True}


def head_logits(model, h: torch.Tensor) -> torch.Tensor:
    """trunk.lm_head(h / mup)[..., :unpadded] — exactly InklingForCausalLM's head."""
    cfg = model.config
    logits = model.lm_head(h / cfg.logits_mup_width_multiplier)
    u = cfg.unpadded_vocab_size
    return logits[..., :u] if u is not None and u < logits.shape[-1] else logits


def mtp_forward(model, mtp: InklingMTP, input_ids: torch.Tensor, depths: int | None = None):
    """Teacher-forced trunk + MTP pass over input_ids [B, T].

    Returns (trunk_logits [B, T, V], [depth_logits_d [B, T-1-d, V] for each depth]).  Row p of
    depth d predicts input_ids[:, p+2+d] (the last row of each depth has no target inside T).
    Depth d runs over rows 0 .. T-2-d: the rows whose input token p+1+d exists."""
    T = input_ids.shape[1]
    out = model.model(input_ids=input_ids, use_cache=False)
    hidden = out.last_hidden_state  # after the final norm, before / mup
    trunk = head_logits(model, hidden)
    embed = model.model.embed_tokens  # InklingNormedEmbedding: embed_norm(embed[tok])
    res = []
    h = hidden
    n = len(mtp.layers) if depths is None else depths
    for d in range(n):
        L = T - 1 - d
        if L <= 0:
            break
        e = embed(input_ids[:, 1 + d: 1 + d + L])
        y = mtp.layers[d](h[:, :L], e)
        res.append(head_logits(model, y))
        h = y
    return trunk, res


# ------------------------------------------------------------------------------------------------
# OG tensor names
# ------------------------------------------------------------------------------------------------


def _layer_renames():
    import os
    import sys

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from og_layout import _LAYER_RENAMES, deinterleave_rows, interleave_rows  # noqa: E402

    return _LAYER_RENAMES, interleave_rows, deinterleave_rows


def og_state_dict(mtp: InklingMTP) -> dict:
    """model.mtp.layers.{d}.* tensors (float32) in the OG layout."""
    renames, interleave_rows, _ = _layer_renames()
    out = {}
    for d, layer in enumerate(mtp.layers):
        p = f"model.mtp.layers.{d}."
        out[p + "embed_norm.weight"] = layer.embed_norm.weight
        out[p + "hidden_norm.weight"] = layer.hidden_norm.weight
        out[p + "input_proj.weight"] = layer.input_proj.weight
        sd = dict(layer.transformer_block.state_dict())
        q = p + "transformer_block."
        for hf, og in renames:
            if hf in sd:
                out[q + og] = sd.pop(hf)
        g, u = sd.pop("mlp.gate_proj.weight"), sd.pop("mlp.up_proj.weight")
        out[q + "mlp.w13_dn.weight"] = interleave_rows(g, u, 0)
        assert not sd, f"unconverted MTP tensors: {sorted(sd)}"
    return {k: v.detach().float().contiguous() for k, v in out.items()}


def load_og_state_dict(mtp: InklingMTP, og: dict) -> None:
    renames, _, deinterleave_rows = _layer_renames()
    og = {k: v.float() for k, v in og.items() if k.startswith("model.mtp.")}
    for d, layer in enumerate(mtp.layers):
        p = f"model.mtp.layers.{d}."
        layer.embed_norm.weight.data.copy_(og.pop(p + "embed_norm.weight"))
        layer.hidden_norm.weight.data.copy_(og.pop(p + "hidden_norm.weight"))
        layer.input_proj.weight.data.copy_(og.pop(p + "input_proj.weight"))
        q = p + "transformer_block."
        sd = {}
        for hf, o in renames:
            if q + o in og:
                sd[hf] = og.pop(q + o)
        g, u = deinterleave_rows(og.pop(q + "mlp.w13_dn.weight"), 0)
        sd["mlp.gate_proj.weight"], sd["mlp.up_proj.weight"] = g, u
        layer.transformer_block.load_state_dict(sd, strict=True)
    assert not og, f"unused MTP tensors: {sorted(og)}"
