#!/usr/bin/env python3
"""Benchmark checkpoint: a full-geometry random Inkling 2 Mini (issue 29).

Every layer and every expert at the real widths (transformers' Inkling2LoopTextConfig defaults:
hidden 2304, 24 layers with the core 6-17 run three times, 24/8 heads x 128, 128 experts top-8 of
width 1152, vocab 201024 padded / 200058), in the original `model.llm.*` layout, one shard per
layer, streamed (memory stays under 1 GB). Routed experts:

    --experts-format released   NVFP4 in layers 0-19 (U8 E2M1 pairs, E4M3 scale per 16, per-expert
                                amax / outer_scale_denominator) and MXFP8 in 20-23 (E4M3 values,
                                U8 E8M0 per 32), as the release stores them (~18.6 GB)
    --experts-format bf16       bf16 (for a reduced --experts slice transformers can hold)

Everything else is bf16 (routers and their biases f32). Values are random with magnitudes that
keep activations O(1); codes are drawn directly in their formats. The MLX 4-bit variant is what
`inkling quantize` makes of the released one:

    python tools/make_bench_inkling2.py --out models/inkling2-mini-released
    build/inkling quantize -m models/inkling2-mini-released -o models/inkling2-mini-mlx4
    python tools/make_bench_inkling2.py --experts 16 --experts-format bf16 --out models/mini-e16
    python tools/make_bench_inkling2.py --experts 8 --vision --out models/mini-e8-vision

`--vision` adds the vision tower at its released geometry (Inkling2VisionConfig's defaults: a
23-layer ViT of width 1024, 20x20 patches, 2x2 merge, projector 4096) in the original
`model.visual.*` names, bf16, and writes the top inkling2_loop config (text_config,
vision_config, image_token_id) around the text config.

Never commit the output (models/ is gitignored). Needs numpy and transformers (for the config).
"""

import argparse
import json
import math
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_bench_slice import write_shards  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
NVFP4_LAYERS = 20  # the release: NVFP4 experts in layers 0-19, MXFP8 after
NVFP4_DENOMINATOR = 6.0 * 448.0
WEIGHT = 0.02  # typical |w| of the random matrices (activations stay O(1) at these widths)


def normal(std):
    """bf16/f32 values ~ N(0, std)."""
    return ("normal", float(std))


def const(v):
    return ("const", float(v))


def random_bytes(lo_mask=0xFF, or_bits=0x00):
    """Bytes drawn uniformly, then masked and or-ed: E2M1 pairs (all 256 patterns are values) or
    E4M3 values kept finite and near one magnitude."""
    return ("bytes", lo_mask, or_bits)


def experts(p: str, E: int, I: int, H: int, fmt: str) -> list:
    """w13 [E, 2I, H] (gate and up rows interleaved, as released) and w2 [E, H, I]."""
    out = []
    for name, rows, cols in (("w13_weight", 2 * I, H), ("w2_weight", H, I)):
        t = p + "mlp.experts." + name
        if fmt == "bf16":
            out.append((t, [E, rows, cols], "BF16", normal(WEIGHT)))
        elif fmt == "nvfp4":
            # |e2m1| averages ~2.6; block scale 1.0 (E4M3 0x38); scale2 = amax / denominator.
            amax = WEIGHT / 2.6 * NVFP4_DENOMINATOR
            out += [(t, [E, rows, cols // 2], "U8", random_bytes()),
                    (t + "_scale", [E, rows, cols // 16], "F8_E4M3", random_bytes(0x00, 0x38)),
                    (t + "_amax", [E], "F32", const(amax)),
                    (t + "_outer_scale_denominator", [], "F32", const(NVFP4_DENOMINATOR))]
        else:  # mxfp8: E4M3 exponent field 7 (|v| in [1, 1.875]) times 2^(121 - 127)
            out += [(t, [E, rows, cols], "F8_E4M3", random_bytes(0x87, 0x38)),
                    (t + "_scale", [E, rows, cols // 32], "U8", random_bytes(0x00, 121))]
    return out


def layer(i: int, c: dict, E: int, fmt: str) -> list:
    H, K, d = c["hidden_size"], c["conv_kernel_size"], c["d_rel"]
    sliding = c["layer_types"][i] == "hybrid_sliding"
    pre = "swa_" if sliding else ""
    nh, nkv, hd = (c[pre + "num_attention_heads"], c[pre + "num_key_value_heads"],
                   c[pre + "head_dim"])
    R = c["sliding_window_size"] if sliding else c["rel_extent"]
    I = c["moe_intermediate_size"]
    p = f"model.llm.layers.{i}."
    a = p + "attn."
    lin = lambda cols: normal(1.0 / math.sqrt(cols))  # noqa: E731
    t = [(p + "mlp_norm.weight", [H], "BF16", const(1.0)),
         (a + "wq_du.weight", [nh * hd, H], "BF16", lin(H)),
         (a + "q_l2_clip.scale", [nh, hd], "F32", const(1.0)),
         (a + "wk_dv.weight", [nkv * hd, H], "BF16", lin(H)),
         (a + "wv_dv.weight", [nkv * hd, H], "BF16", lin(H)),
         (a + "wr_du.weight", [nh * d, H], "BF16", lin(H)),
         (a + "rel_l2_clip.scale", [nh, d], "F32", const(1.0)),
         (a + "rel_logits_proj.proj", [d, R], "BF16", normal(0.5)),
         (a + "attn_sink_proj.weight", [nh, H], "BF16", lin(H)),
         (a + "gate_attn.weight", [nh * hd, H], "BF16", lin(H)),
         (a + "wo_ud.weight", [H, nh * hd], "BF16", lin(nh * hd)),
         (p + "attn_sconv.weight", [H, 1, K], "BF16", normal(0.3)),
         (p + "mlp_sconv.weight", [H, 1, K], "BF16", normal(0.3)),
         (p + "mlp.gate.weight", [E, H], "F32", lin(H)),
         (p + "mlp.gate.bias", [E], "F32", normal(0.1))]
    if sliding:
        t += [(p + "attn_norm.weight", [H], "BF16", const(1.0)),
              (a + "k_sconv.weight", [nkv * hd, 1, K], "BF16", normal(0.3)),
              (a + "v_sconv.weight", [nkv * hd, 1, K], "BF16", normal(0.3))]
    else:
        t += [(p + n + "_input_norm.weight", [H], "BF16", const(1.0)) for n in "qkv"]
        for n in "kv":
            t += [(a + n + "_sconv.static_w", [K, nkv * hd], "BF16", normal(0.3)),
                  (a + n + "_sconv.weight_proj", [nkv * K, H], "BF16", normal(0.1 / math.sqrt(H)))]
    if c["loop_layer_index_start"] <= i < c["loop_layer_index_end"] and c["loop_num_passes"] > 1:
        r = c["loop_gate_rank"]
        for g in ("attn", "k", "v", "mlp"):
            q = p + "controllers." + g + "."
            t += [(q + "down_weight", [r, 2 * H], "BF16", lin(2 * H)),
                  (q + "forget_weight", [H, r], "F32", normal(0.05)),
                  (q + "gain_weight", [H, r], "F32", normal(0.05))]
    return t + experts(p, E, I, H, fmt)


def vision(v: dict) -> list:
    """The ViT in the original names (spec/inkling2.md section 7.1), bf16; norms 1/0, layer
    scales at their init value."""
    D, F, P, G = v["hidden_size"], v["intermediate_size"], v["projection_hidden_dim"], \
        v["posemb_grid_size"]
    inp = v["num_channels"] * v["patch_size"] ** 2
    lin = lambda cols: normal(1.0 / math.sqrt(cols))  # noqa: E731
    e = "model.visual.backbone.embeddings."
    t = [(e + "patch_embedding.weight", [D, inp], "BF16", lin(inp)),
         (e + "position_embedding", [G * G, D], "BF16", normal(0.02)),
         (e + "class_embedding", [D], "BF16", normal(0.02)),
         (e + "cls_position_embedding", [D], "BF16", normal(0.02)),
         ("model.visual.backbone.ln_pre.weight", [D], "BF16", const(1.0)),
         ("model.visual.backbone.ln_pre.bias", [D], "BF16", const(0.0))]
    for i in range(v["num_hidden_layers"]):
        p = f"model.visual.backbone.layers.{i}."
        for n in ("ln_1", "ln_2"):
            t += [(p + n + ".weight", [D], "BF16", const(1.0)),
                  (p + n + ".bias", [D], "BF16", const(0.0))]
        t += [(p + n + ".gamma", [D], "BF16", const(v["layer_scale_init_value"]))
              for n in ("ls_1", "ls_2")]
        for n in ("q", "k", "v", "out"):
            t += [(p + f"self_attn.{n}_proj.weight", [D, D], "BF16", lin(D)),
                  (p + f"self_attn.{n}_proj.bias", [D], "BF16", normal(0.02))]
        t += [(p + "mlp.c_fc.weight", [F, D], "BF16", lin(D)),
              (p + "mlp.c_fc.bias", [F], "BF16", normal(0.02)),
              (p + "mlp.c_proj.weight", [D, F], "BF16", lin(F)),
              (p + "mlp.c_proj.bias", [D], "BF16", normal(0.02))]
    m = v["spatial_merge_size"] ** 2
    t += [("model.visual.proj_in.weight", [P, m * D], "BF16", lin(m * D)),
          ("model.visual.proj_out.weight", [v["text_hidden_size"], P], "BF16", lin(P))]
    return t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "models" / "inkling2-mini-released")
    ap.add_argument("--experts", type=int, default=128, help="routed experts per layer")
    ap.add_argument("--experts-format", choices=["released", "bf16"], default="released")
    ap.add_argument("--seed", type=int, default=2029)
    ap.add_argument("--force", action="store_true", help="overwrite an existing output folder")
    ap.add_argument("--vision", action="store_true", help="add the released vision tower")
    a = ap.parse_args(argv)
    from transformers.models.inkling2_loop.configuration_inkling2_loop import \
        Inkling2LoopTextConfig

    c = Inkling2LoopTextConfig(n_routed_experts=a.experts).to_dict()
    for k in ("id2label", "label2id"):
        c.pop(k, None)
    c["architectures"] = ["Inkling2LoopForCausalLM"]
    c["dtype"] = "bfloat16"
    if a.out.exists():
        if not a.force:
            print(f"{a.out} exists (use --force to overwrite)", file=sys.stderr)
            return 2
        shutil.rmtree(a.out)
    a.out.mkdir(parents=True)
    H, V, L = c["hidden_size"], c["vocab_size"], c["num_hidden_layers"]
    n_core = c["loop_layer_index_end"] - c["loop_layer_index_start"]
    top = [("model.llm.embed.weight", [V, H], "BF16", normal(1.0)),
           ("model.llm.embed_norm.weight", [H], "BF16", const(1.0)),
           ("model.llm.norm.weight", [H], "BF16", const(1.0)),
           ("model.llm.unembed.weight", [V, H], "BF16", normal(1.0 / math.sqrt(H))),
           ("model.llm.attn_res.output_query", [H], "F32", normal(0.02)),
           ("model.llm.middle_cycle_cross_pass_queries", [2 * n_core, H], "F32", normal(0.02)),
           ("model.llm.middle_cycle_cross_pass_kv_queries", [2 * n_core, H], "F32", normal(0.02))]
    top += [(f"model.llm.attn_res.mlp_queries.{i}", [H], "F32", normal(0.02)) for i in range(L)]
    top += [(f"model.llm.attn_res.attn_queries.{i - 1}",
             [H] if c["layer_types"][i] == "hybrid_sliding" else [3, H], "F32", normal(0.02))
            for i in range(1, L)]
    shards = [top]
    for i in range(L):
        fmt = a.experts_format if a.experts_format == "bf16" else (
            "nvfp4" if i < NVFP4_LAYERS else "mxfp8")
        shards.append(layer(i, c, a.experts, fmt))
    config = c
    if a.vision:
        from transformers.models.inkling2.configuration_inkling2 import Inkling2VisionConfig
        v = Inkling2VisionConfig(text_hidden_size=H).to_dict()
        for k in ("id2label", "label2id"):
            v.pop(k, None)
        shards.append(vision(v))
        config = {"model_type": "inkling2_loop",
                  "architectures": ["Inkling2LoopForConditionalGeneration"],
                  "text_config": c, "vision_config": v, "image_token_id": 200054,
                  "dtype": "bfloat16"}
    total = write_shards(a.out, shards, a.seed)
    (a.out / "config.json").write_text(json.dumps(config, indent=1) + "\n")
    # The Inkling tokenizer and chat template (tests/data/inkling), so generate and chat run too.
    tok = ROOT / "tests" / "data" / "inkling"
    for f in tok.iterdir() if tok.is_dir() else []:
        if f.is_file() and f.suffix != ".md":
            shutil.copy(f, a.out / f.name)
        elif f.is_dir():
            shutil.copytree(f, a.out / f.name, dirs_exist_ok=True)
    print(f"wrote {a.out} ({total / 1e9:.2f} GB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
