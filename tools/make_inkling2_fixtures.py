#!/usr/bin/env python3
"""Reference fixtures for Inkling 2 (``inkling2`` = Inkling 2 Small, ``inkling2_loop`` = Inkling 2 Mini).

The oracle is transformers' ``Inkling2ForCausalLM`` / ``Inkling2LoopForCausalLM`` run in float32 on
the CPU with eager attention and experts.  Each fixture is a tiny random text config that keeps
every mechanism active at small sizes: attention-residual blocks of 3 layers (so a handful of
layers crosses several block boundaries), full and sliding layers in the prelude, the looped core
and the coda, a sliding window and relative extent the prompt crosses, a log-scaling floor the
prompt passes, L2-clip thresholds and softcaps small enough to bind.  Every parameter is
re-randomised (the reference initialises the attention-residual queries and dynamic conv taps to
zero, which would hide orientation bugs).  Written per fixture:

    tests/fixtures/<name>/hf/{config.json, model.safetensors}   save_pretrained: the original key names
                                                                (model.llm.*, interleaved w13, padded unembed)
    tests/fixtures/<name>/tf/{config.json, model.safetensors}   transformers' in-memory names (model.*,
                                                                gate_up_proj halves, unpadded lm_head)
    tests/fixtures/<name>/ref/prompt.json                       {"prompt_ids": [...]}
    tests/fixtures/<name>/ref/logits.npy                        f32 [T, unpadded_vocab], teacher forced
    tests/fixtures/<name>/ref/greedy.json                       greedy ids with the cache
    tests/fixtures/<name>/ref/stats.json                        seed, spreads, self checks

Self checks: greedy with the reference cache equals greedy by full recompute; the teacher-forced
logits of a prefill split in two chunks (cache) equal the single pass.

    python tools/make_inkling2_fixtures.py            # all
    python tools/make_inkling2_fixtures.py inkling2   # one
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file

import transformers
from transformers import Inkling2ForCausalLM, Inkling2LoopForCausalLM
from transformers.cache_utils import DynamicCache
from transformers.models.inkling2.configuration_inkling2 import Inkling2TextConfig
from transformers.models.inkling2_loop.configuration_inkling2_loop import Inkling2LoopTextConfig

REPO = Path(__file__).resolve().parent.parent
FIXTURES_DIR = REPO / "tests" / "fixtures"
N_GEN = 64
QUERY_STD = 1.0
S, F = "hybrid_sliding", "hybrid"

COMMON = dict(
    vocab_size=512,
    unpadded_vocab_size=500,
    hidden_size=48,
    num_attention_heads=6,  # full layers: 6 / 2 / 8 (G = 3)
    num_key_value_heads=2,
    head_dim=8,
    swa_num_attention_heads=4,  # sliding layers: 4 / 2 / 12 (G = 2)
    swa_num_key_value_heads=2,
    swa_head_dim=12,
    sliding_window_size=8,
    d_rel=4,
    rel_extent=12,
    log_scaling_n_floor=6,
    log_scaling_alpha=0.3,
    max_position_embeddings=4096,
    rms_norm_eps=1e-6,
    conv_kernel_size=4,
    moe_intermediate_size=24,
    n_routed_experts=8,
    num_experts_per_tok=3,
    route_scale=2.5,
    qk_l2_clip_threshold=2.5,
    rel_l2_clip_threshold=1.2,
    n_layers_per_attn_res_block=3,
    mlp_gate_softcap=1.5,
    mlp_up_softcap=2.0,
    final_logit_softcapping=6.0,
    eos_token_id=None,
    pad_token_id=None,
)

FIXTURES = {
    # 8 layers, blocks at 0, 3, 6; full layers 2 and 5 (a boundary-adjacent full layer) and 6
    # (a full layer *on* a boundary, whose 3-query input mixes the just-finished block).
    "inkling2": dict(cls="inkling2", seed=2024, prompt_len=40,
                     cfg=dict(COMMON, num_hidden_layers=8, layer_types=[S, S, F, S, S, F, F, S])),
    # 9 layers: prelude 0-2, core 3-5 run 3 times, coda 6-8; full layers in every part.
    "inkling2_loop": dict(cls="inkling2_loop", seed=2025, prompt_len=40,
                          cfg=dict(COMMON, num_hidden_layers=9,
                                   layer_types=[S, F, S, S, F, S, F, S, S],
                                   loop_layer_index_start=3, loop_layer_index_end=6,
                                   loop_num_passes=3, loop_gate_rank=5)),
}


def build(spec):
    if spec["cls"] == "inkling2":
        cfg = Inkling2TextConfig(**spec["cfg"])
        model = Inkling2ForCausalLM(cfg)
    else:
        cfg = Inkling2LoopTextConfig(**spec["cfg"])
        model = Inkling2LoopForCausalLM(cfg)
    cfg._attn_implementation = "eager"
    return model.float().eval()


def randomize(model, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    H = model.config.hidden_size

    def normal(shape, std):
        return torch.randn(shape, generator=g, dtype=torch.float32) * std

    def uniform(shape, lo, hi):
        return lo + (hi - lo) * torch.rand(shape, generator=g, dtype=torch.float32)

    sd = model.state_dict(keep_vars=True)
    for name in sorted(sd.keys()):
        p = sd[name]
        shape = tuple(p.shape)
        fan_in = shape[-1] if len(shape) else 1
        if name.endswith("embed_tokens.weight"):
            v = normal(shape, 1.0)
        elif name == "lm_head.weight":
            v = normal(shape, 1.5 / math.sqrt(H))
        elif name.endswith("norm.weight"):  # weighted RMSNorms
            v = uniform(shape, 0.5, 1.5)
        elif name.endswith("norm.scale"):  # q / relative scaled L2 clips
            v = uniform(shape, 0.5, 2.0)
        elif name.endswith(".query"):  # attention-residual and message queries
            v = normal(shape, QUERY_STD)
        elif name.endswith("conv1d.weight"):
            v = normal(shape, 0.4)
        elif name.endswith("static_weight"):
            v = normal(shape, 0.4)
        elif name.endswith("sconv.weight_proj.weight"):
            v = normal(shape, 0.5 / math.sqrt(fan_in))
        elif name.endswith("relative_position_bias.proj"):
            v = normal(shape, 0.7)
        elif name.endswith("e_score_correction_bias"):
            v = normal(shape, 0.15)
        elif name.endswith("mlp.gate.weight"):
            v = normal(shape, 1.5 / math.sqrt(fan_in))
        elif name.endswith("experts.gate_up_proj"):
            v = normal(shape, 2.0 / math.sqrt(fan_in))
        elif name.endswith("experts.down_proj"):
            v = normal(shape, 1.0 / math.sqrt(fan_in))
        elif name.endswith("sink_proj.weight"):
            v = normal(shape, 1.0 / math.sqrt(fan_in))
        elif name.endswith("forget_gate_proj.weight") or name.endswith("message_gate_proj.weight"):
            v = normal(shape, 1.0 / math.sqrt(fan_in))
        elif len(shape) == 2:  # q/k/v/o/gate/relative/down projections
            v = normal(shape, 1.0 / math.sqrt(fan_in))
        else:
            raise SystemExit(f"randomize: no rule for {name} {shape}")
        with torch.no_grad():
            p.copy_(v.to(p.dtype))


@torch.no_grad()
def logits_of(model, ids):
    return model(input_ids=torch.tensor([ids]), use_cache=False).logits[0].float()


@torch.no_grad()
def greedy_cached(model, prompt, n):
    cache = DynamicCache(config=model.config)
    out = model(input_ids=torch.tensor([prompt]), cache=cache, use_cache=True)
    ids = []
    for _ in range(n):
        t = int(out.logits[0, -1].argmax())
        ids.append(t)
        out = model(input_ids=torch.tensor([[t]]), cache=out.cache, use_cache=True)
    return ids


@torch.no_grad()
def greedy_recompute(model, prompt, n):
    ids = list(prompt)
    for _ in range(n):
        ids.append(int(logits_of(model, ids)[-1].argmax()))
    return ids[len(prompt):]


@torch.no_grad()
def chunked_logits(model, ids, split):
    cache = DynamicCache(config=model.config)
    a = model(input_ids=torch.tensor([ids[:split]]), cache=cache, use_cache=True)
    b = model(input_ids=torch.tensor([ids[split:]]), cache=a.cache, use_cache=True)
    return torch.cat([a.logits[0], b.logits[0]]).float()


def make(name: str) -> None:
    spec = FIXTURES[name]
    torch.manual_seed(spec["seed"])
    model = build(spec)
    randomize(model, spec["seed"])
    rng = np.random.default_rng(spec["seed"])
    V = model.config.unpadded_vocab_size
    prompt = [int(x) for x in rng.integers(0, V, spec["prompt_len"])]

    logits = logits_of(model, prompt)
    chunked = chunked_logits(model, prompt, 13)
    chunk_diff = float((chunked - logits).abs().max())
    greedy = greedy_cached(model, prompt, N_GEN)
    recompute = greedy_recompute(model, prompt, N_GEN)
    assert greedy == recompute, f"{name}: cached greedy != recompute greedy"
    assert chunk_diff < 1e-4 * float(logits.abs().max()), f"{name}: chunked prefill differs {chunk_diff}"
    top2 = logits.topk(2, dim=-1).values
    margin = float((top2[:, 0] - top2[:, 1]).min())

    out = FIXTURES_DIR / name
    if out.exists():
        shutil.rmtree(out)
    (out / "ref").mkdir(parents=True)
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp, safe_serialization=True)
        (out / "hf").mkdir()
        for f in ("config.json", "model.safetensors"):
            shutil.copy(Path(tmp) / f, out / "hf" / f)
    (out / "tf").mkdir()
    shutil.copy(out / "hf" / "config.json", out / "tf" / "config.json")
    sd = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    save_file(sd, str(out / "tf" / "model.safetensors"), metadata={"format": "pt"})
    # The reloaded model must give the same logits (the saved layout is what the tests read).
    cls = Inkling2ForCausalLM if spec["cls"] == "inkling2" else Inkling2LoopForCausalLM
    re = cls.from_pretrained(out / "hf", dtype=torch.float32, attn_implementation="eager").eval()
    assert torch.equal(logits_of(re, prompt), logits), f"{name}: reload changed the logits"

    (out / "ref" / "prompt.json").write_text(json.dumps({"prompt_ids": prompt}) + "\n")
    np.save(out / "ref" / "logits.npy", logits.numpy().astype(np.float32))
    (out / "ref" / "greedy.json").write_text(json.dumps({"ids": greedy}) + "\n")
    stats = dict(seed=spec["seed"], transformers=transformers.__version__, torch=torch.__version__,
                 max_abs_logit=float(logits.abs().max()), logit_std=float(logits.std()),
                 min_top1_margin=margin, chunked_prefill_max_diff=chunk_diff,
                 greedy_cached_equals_recompute=True)
    (out / "ref" / "stats.json").write_text(json.dumps(stats, indent=1) + "\n")
    print(f"{name}: max|logit| {stats['max_abs_logit']:.3f} std {stats['logit_std']:.3f} "
          f"margin {margin:.2e} chunk diff {chunk_diff:.2e} greedy {greedy[:8]}...")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*", default=list(FIXTURES))
    for n in ap.parse_args().names:
        make(n)


if __name__ == "__main__":
    main()
