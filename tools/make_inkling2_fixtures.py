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

``inkling2_loop_q`` is Mini as released: the same kind of model with its routed experts rewritten
in NVFP4 (E2M1 codes, E4M3 scale per 16, per-expert amax / outer_scale_denominator) and MXFP8
(E4M3 values, E8M0 exponent per 32) in the original layout (hf/ only); its reference is
transformers loading that folder, which dequantizes the experts on load.

``inkling2_loop_mlx`` is Mini quantized by MLX itself: a random model saved as a source in both
layouts (hf/ original, tf/ transformers), and mlx/ holding what `inkling quantize` writes for it,
made here by ``mx.quantize`` (MLX affine, several widths and groups per module, one module kept
as floats): transformers' names, the routed experts stacked as mlp.switch_mlp.{gate,up,down}_proj,
a config.json ``quantization`` block. Its reference is transformers holding the weights
``mx.dequantize`` returns. The C++ tests check that the engine runs mlx/ to the reference, and
that `inkling quantize` of either source writes mlx/ byte for byte (tests/app).
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

# The specs of inkling2_loop_mlx beyond the main q4/g32, in `inkling quantize --override` terms
# (tests/app/test_cli_quantize_inkling2.cpp passes the same): (group or module, bits, group),
# bits None = kept as floats. Later entries win.
MLX_OVERRIDES = [
    ("attention", 8, 64),
    ("embed", 6, 32),
    ("head", 5, 64),
    ("model.layers.0.self_attn.o_proj.linear", None, None),
]

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
    # Inkling 2 Mini as released: routed experts NVFP4 in the first layers, MXFP8 after them (the
    # release: NVFP4 layers 0-19, MXFP8 20-23), in the original layout. Widths that whole NVFP4
    # (16) and MXFP8 (32) blocks divide. The reference is transformers loading this very folder
    # (Inkling2LoopDequantizeExperts dequantizes on load).
    "inkling2_loop_q": dict(cls="inkling2_loop", seed=2026, prompt_len=40,
                            quant=dict(nvfp4_layers=range(0, 5), mxfp8_layers=range(5, 9)),
                            cfg=dict(COMMON, num_hidden_layers=9, hidden_size=64,
                                     moe_intermediate_size=32,
                                     layer_types=[S, F, S, S, F, S, F, S, S],
                                     loop_layer_index_start=3, loop_layer_index_end=6,
                                     loop_num_passes=3, loop_gate_rank=5)),
    # Inkling 2 Small as released (-MXFP8): every layer's routed experts in MXFP8, in the original
    # layout (w13_weight / w13_weight_scale) and in transformers' (gate_up_proj /
    # gate_up_proj_scale_inv, quantization_config mxfp8). transformers loads such a folder only
    # through its FP8 quantizer (not on a CPU), so the reference is the model holding the
    # dequantized experts, the dequantization checked bitwise against Inkling2LoopDequantizeExperts.
    "inkling2_mxfp8": dict(cls="inkling2", seed=2027, prompt_len=40,
                           quant=dict(nvfp4_layers=range(0), mxfp8_layers=range(0, 8)),
                           cfg=dict(COMMON, num_hidden_layers=8, hidden_size=64,
                                    moe_intermediate_size=32,
                                    layer_types=[S, S, F, S, S, F, F, S])),
    # Inkling 2 Mini quantized by MLX (see the module docstring); every attention row length a
    # multiple of 64 so the 8-bit g64 attention spec applies everywhere but where kept as floats.
    "inkling2_loop_mlx": dict(cls="inkling2_loop", seed=2030, prompt_len=40,
                              mlx=dict(bits=4, group=32, overrides=MLX_OVERRIDES),
                              cfg=dict(COMMON, num_hidden_layers=9, hidden_size=64,
                                       moe_intermediate_size=32, num_attention_heads=8,
                                       swa_head_dim=16,
                                       layer_types=[S, F, S, S, F, S, F, S, S],
                                       loop_layer_index_start=3, loop_layer_index_end=6,
                                       loop_num_passes=3, loop_gate_rank=5)),
}

E2M1 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
NVFP4_DENOMINATOR = 6.0 * 448.0  # ModelOpt's convention: amax maps to e2m1 max x e4m3 max


def quantize_nvfp4(w):
    """[E, R, C] f32 -> (u8 codes [E, R, C/2] low nibble first, e4m3 scales [E, R, C/16],
    f32 amax [E], f32 denominator []), as the original Mini release stores NVFP4 experts."""
    E, R, C = w.shape
    amax = w.abs().reshape(E, -1).amax(dim=1).float()
    factor = amax / NVFP4_DENOMINATOR
    blocks = w.reshape(E, R, C // 16, 16)
    bscale = (blocks.abs().amax(dim=-1) / 6.0) / factor[:, None, None]
    scale = bscale.clamp(min=2.0 ** -9).to(torch.float8_e4m3fn)
    step = scale.float()[..., None] * factor[:, None, None, None]
    v = (blocks / step).clamp(-6.0, 6.0)
    mag = (v.abs()[..., None] - E2M1).abs().argmin(dim=-1)
    code = (mag | ((v < 0).long() << 3)).reshape(E, R, C).to(torch.uint8)
    packed = code[..., 0::2] | (code[..., 1::2] << 4)
    return packed.contiguous(), scale.contiguous(), amax.contiguous(), torch.tensor(NVFP4_DENOMINATOR)


def quantize_mxfp8(w):
    """[E, R, C] f32 -> (e4m3 values [E, R, C], u8 E8M0 exponents [E, R, C/32])."""
    E, R, C = w.shape
    blocks = w.reshape(E, R, C // 32, 32)
    amax = blocks.abs().amax(dim=-1).clamp(min=2.0 ** -100)
    e = torch.ceil(torch.log2(amax / 448.0)).clamp(-127, 127)
    vals = (blocks / torch.exp2(e)[..., None]).to(torch.float8_e4m3fn).reshape(E, R, C)
    return vals.contiguous(), (e + 127).to(torch.uint8).contiguous()


def quantize_folder(folder: Path, q) -> dict:
    """Rewrites the routed experts of an original-layout folder in NVFP4 / MXFP8; returns counts."""
    from safetensors.torch import load_file
    sd = load_file(str(folder / "model.safetensors"))
    counts = dict(nvfp4=0, mxfp8=0)
    for key in sorted(sd):
        if not (key.endswith("mlp.experts.w13_weight") or key.endswith("mlp.experts.w2_weight")):
            continue
        layer = int(key.split(".layers.")[1].split(".")[0])
        w = sd.pop(key).float()
        if layer in q["nvfp4_layers"]:
            codes, scale, amax, den = quantize_nvfp4(w)
            sd[key] = codes
            sd[key + "_scale"] = scale
            sd[key + "_amax"] = amax
            sd[key + "_outer_scale_denominator"] = den
            counts["nvfp4"] += 1
        elif layer in q["mxfp8_layers"]:
            vals, scale = quantize_mxfp8(w)
            sd[key] = vals
            sd[key + "_scale"] = scale
            counts["mxfp8"] += 1
        else:
            sd[key] = w
    save_file(sd, str(folder / "model.safetensors"), metadata={"format": "pt"})
    return counts


def dequant_mxfp8_hf(vals, scale):
    """transformers' own MXFP8 dequantization (the reference's code, not ours)."""
    from transformers.core_model_loading import Inkling2LoopDequantizeExperts
    op = Inkling2LoopDequantizeExperts()
    pats = ["w", "s", "a", "d"]
    out = op.convert({"w": vals, "s": scale}, pats, ["out"], model=None, full_layer_name=None)
    return out["out"]


def make_mxfp8_small(name: str) -> None:
    spec = FIXTURES[name]
    torch.manual_seed(spec["seed"])
    model = build(spec)
    randomize(model, spec["seed"])
    quantized = {}
    with torch.no_grad():
        for k, p in model.state_dict(keep_vars=True).items():
            if k.endswith("experts.gate_up_proj") or k.endswith("experts.down_proj"):
                vals, scale = quantize_mxfp8(p.detach().float())
                deq = dequant_mxfp8_hf(vals, scale).float()
                mine = vals.float() * torch.exp2(scale.float() - 127).repeat_interleave(32, -1)
                assert torch.equal(deq, mine), f"{name}: MXFP8 dequantization disagrees at {k}"
                p.copy_(deq)
                quantized[k] = (vals, scale)
    out = save_original(model, name)
    counts = quantize_folder(out / "hf", spec["quant"])
    (out / "tf").mkdir()
    cfg = json.loads((out / "hf" / "config.json").read_text())
    cfg["quantization_config"] = {"quant_method": "mxfp8", "modules_to_not_convert": ["lm_head"]}
    (out / "tf" / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    sd = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    for k, (vals, scale) in quantized.items():
        sd[k] = vals
        sd[k + "_scale_inv"] = scale
    save_file(sd, str(out / "tf" / "model.safetensors"), metadata={"format": "pt"})
    write_reference(name, spec, model, out, expert_tensors=dict(counts, tf_tensors=len(quantized)))


# transformers state-dict names of the Linear weights of an Inkling 2 layer, by module group.
MLX_ATTENTION = ("self_attn.q_proj.linear", "self_attn.k_proj.linear", "self_attn.v_proj.linear",
                 "self_attn.k_proj.sconv.weight_proj", "self_attn.v_proj.sconv.weight_proj",
                 "self_attn.relative_position_bias.linear", "self_attn.sink_proj",
                 "self_attn.o_proj.gate_proj", "self_attn.o_proj.linear")


def mlx_group(module: str):
    """The quantize group of an output module path, or None for tensors copied as stored."""
    if module == "model.embed_tokens":
        return "embed"
    if module == "lm_head":
        return "head"
    if module.endswith(".mlp.gate"):
        return "router"
    if ".mlp.switch_mlp." in module:
        return "experts"
    if module.endswith(MLX_ATTENTION):
        return "attention"
    return None


def mlx_spec(module: str, group: str, q):
    """(bits, group_size) of a module, or None when kept as floats; as `inkling quantize` plans."""
    if group == "router":
        return None
    spec = (q["bits"], q["group"])
    for pattern, bits, gs in q["overrides"]:
        if pattern in (group, module):
            spec = None if bits is None else (bits, gs)
    return spec


def make_mlx(name: str) -> None:
    import mlx.core as mx

    spec = FIXTURES[name]
    q = spec["mlx"]
    model, out, sd = save_both(name, spec)
    # Output modules: the state dict's Linear weights, the experts' gate_up_proj split in halves.
    modules = {}
    for k, v in sd.items():
        if k.endswith("mlp.experts.gate_up_proj"):
            stem = k[: -len("experts.gate_up_proj")] + "switch_mlp."
            half = v.shape[1] // 2
            modules[stem + "gate_proj"] = (v[:, :half], k, 0)
            modules[stem + "up_proj"] = (v[:, half:], k, half)
        elif k.endswith("mlp.experts.down_proj"):
            modules[k[: -len("experts.down_proj")] + "switch_mlp.down_proj"] = (v, k, None)
        elif k.endswith(".weight") and mlx_group(k[:-7]):
            modules[k[:-7]] = (v, k, None)
    written = {k: mx.array(v.numpy()) for k, v in sd.items()
               if not (k.endswith("experts.gate_up_proj") or k.endswith("experts.down_proj")
                       or (k.endswith(".weight") and mlx_group(k[:-7])))}
    quantization = {"group_size": q["group"], "bits": q["bits"], "mode": "affine"}
    dequantized = {}
    counts = {}
    for module, (w, key, row0) in modules.items():
        group = mlx_group(module)
        s = mlx_spec(module, group, q)
        counts[f"{group} {'float' if s is None else f'q{s[0]}/g{s[1]}'}"] = \
            counts.get(f"{group} {'float' if s is None else f'q{s[0]}/g{s[1]}'}", 0) + 1
        if s is None:
            written[module + ".weight"] = mx.array(w.numpy())
            quantization[module] = False
            continue
        codes, scales, biases = mx.quantize(mx.array(w.numpy()), group_size=s[1], bits=s[0])
        written[module + ".weight"], written[module + ".scales"], written[module + ".biases"] = \
            codes, scales, biases
        deq = torch.from_numpy(np.array(mx.dequantize(codes, scales, biases, group_size=s[1],
                                                      bits=s[0])))
        if row0 is None:
            dequantized[key] = deq
        else:
            dequantized.setdefault(key, sd[key].clone())[:, row0:row0 + deq.shape[1]] = deq
        if s != (q["bits"], q["group"]) or w.numel() % 64 != 0:
            quantization[module] = {"group_size": s[1], "bits": s[0], "mode": "affine"}
    (out / "mlx").mkdir()
    cfg = json.loads((out / "tf" / "config.json").read_text())
    cfg["quantization"] = quantization
    cfg["quantization_config"] = quantization
    (out / "mlx" / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    mx.save_safetensors(str(out / "mlx" / "model.safetensors"), written, metadata={"format": "mlx"})
    # The oracle: the same model holding MLX's dequantized weights.
    params = dict(model.named_parameters())
    with torch.no_grad():
        for key, deq in dequantized.items():
            params[key].copy_(deq)
    write_reference(name, spec, model, out, mlx=mx.__version__, modules=counts)


def save_both(name: str, spec):
    """A fresh random model of `spec` saved in both layouts (hf/ original, tf/ transformers'
    in-memory names); returns the model, the fixture folder and the state dict."""
    torch.manual_seed(spec["seed"])
    model = build(spec)
    randomize(model, spec["seed"])
    out = save_original(model, name)
    (out / "tf").mkdir()
    shutil.copy(out / "hf" / "config.json", out / "tf" / "config.json")
    sd = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    save_file(sd, str(out / "tf" / "model.safetensors"), metadata={"format": "pt"})
    return model, out, sd


def save_original(model, name: str) -> Path:
    """A fresh tests/fixtures/<name> with ref/ and hf/ (save_pretrained: the original layout)."""
    out = FIXTURES_DIR / name
    if out.exists():
        shutil.rmtree(out)
    (out / "ref").mkdir(parents=True)
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp, safe_serialization=True)
        (out / "hf").mkdir()
        for f in ("config.json", "model.safetensors"):
            shutil.copy(Path(tmp) / f, out / "hf" / f)
    return out


def write_reference(name, spec, ref, out, **extra) -> None:
    """ref/: the prompt, teacher-forced logits, greedy ids and stats of model `ref`, self-checked
    (cached greedy = recompute greedy; a prefill in two chunks = one pass)."""
    rng = np.random.default_rng(spec["seed"])
    V = ref.config.unpadded_vocab_size
    prompt = [int(x) for x in rng.integers(0, V, spec["prompt_len"])]
    logits = logits_of(ref, prompt)
    chunked = chunked_logits(ref, prompt, 13)
    chunk_diff = float((chunked - logits).abs().max())
    greedy = greedy_cached(ref, prompt, N_GEN)
    assert greedy == greedy_recompute(ref, prompt, N_GEN), f"{name}: cached greedy != recompute"
    assert chunk_diff < 1e-4 * float(logits.abs().max()), f"{name}: chunked prefill differs"
    top2 = logits.topk(2, dim=-1).values
    margin = float((top2[:, 0] - top2[:, 1]).min())
    (out / "ref" / "prompt.json").write_text(json.dumps({"prompt_ids": prompt}) + "\n")
    np.save(out / "ref" / "logits.npy", logits.numpy().astype(np.float32))
    (out / "ref" / "greedy.json").write_text(json.dumps({"ids": greedy}) + "\n")
    stats = dict(seed=spec["seed"], transformers=transformers.__version__, torch=torch.__version__,
                 max_abs_logit=float(logits.abs().max()), logit_std=float(logits.std()),
                 min_top1_margin=margin, chunked_prefill_max_diff=chunk_diff,
                 greedy_cached_equals_recompute=True, **extra)
    (out / "ref" / "stats.json").write_text(json.dumps(stats, indent=1) + "\n")
    print(f"{name}: max|logit| {stats['max_abs_logit']:.3f} std {stats['logit_std']:.3f} "
          f"margin {margin:.2e} chunk diff {chunk_diff:.2e} {extra} greedy {greedy[:8]}...")


def make_quantized(name: str) -> None:
    spec = FIXTURES[name]
    if spec["cls"] == "inkling2":
        return make_mxfp8_small(name)
    torch.manual_seed(spec["seed"])
    model = build(spec)
    randomize(model, spec["seed"])
    out = save_original(model, name)
    counts = quantize_folder(out / "hf", spec["quant"])
    # The oracle: transformers loading the quantized folder (it dequantizes the experts on load).
    ref = Inkling2LoopForCausalLM.from_pretrained(out / "hf", dtype=torch.float32,
                                                  attn_implementation="eager").eval()
    # Self check: the loaded experts moved by no more than the formats' steps (the quantizer and
    # the loader agree on the layout: nibble order, interleave, scale rows).
    sd0, sd1 = model.state_dict(), ref.state_dict()
    worst = 0.0
    for k in sd0:
        if "experts.gate_up_proj" in k or "experts.down_proj" in k:
            a, b = sd0[k].float(), sd1[k].float()
            worst = max(worst, float(((a - b).abs().amax() / a.abs().amax())))
    assert 0 < worst < 0.2, f"{name}: dequantized experts differ by {worst} of max"
    write_reference(name, spec, ref, out, expert_tensors=counts, max_rel_expert_quant_error=worst)


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
    model, out, sd = save_both(name, spec)
    # The reloaded model must give the same logits (the saved layout is what the tests read).
    cls = Inkling2ForCausalLM if spec["cls"] == "inkling2" else Inkling2LoopForCausalLM
    re = cls.from_pretrained(out / "hf", dtype=torch.float32, attn_implementation="eager").eval()
    prompt = [int(x) for x in np.random.default_rng(spec["seed"]).integers(
        0, model.config.unpadded_vocab_size, spec["prompt_len"])]
    assert torch.equal(logits_of(re, prompt), logits_of(model, prompt)), \
        f"{name}: reload changed the logits"
    write_reference(name, spec, model, out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*", default=list(FIXTURES))
    for n in ap.parse_args().names:
        spec = FIXTURES[n]
        (make_mlx if "mlx" in spec else make_quantized if "quant" in spec else make)(n)


if __name__ == "__main__":
    main()
