#!/usr/bin/env python3
"""Benchmark checkpoint: an Inkling-Small slice with the real layer shapes (issue 6).

Writes a bf16 checkpoint in the original `model.llm.*` layout with an OG config.json: hidden 4096,
32/8 heads x 128 on sliding and global layers, W 512, d_rel 16, rel_extent 1024, dense width 16384,
expert width 2048, top-6 of 32 routed experts + 2 shared, vocab 201024 (unpadded 200058), 6 layers
(layer 0 dense, 1-5 MoE, layer 5 global). Weights are random (deterministic seed) and scaled so that
activations stay O(1). One shard per layer is streamed to disk, so memory stays well under 1 GB.

    python tools/make_bench_slice.py                     # -> models/inkling-small-slice-bf16 (~12.7 GB)
    python tools/make_bench_slice.py --experts 8 --out models/slice-e8   # a smaller variant

Never commit the output (models/ is gitignored). Needs numpy and safetensors only.
"""

import argparse
import json
import math
import shutil
import struct
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

# Inkling-Small text_config values (spec/inkling-text.md section 9) with the slice's reductions.
SMALL = dict(
    vocab_size=201024,
    unpadded_vocab_size=200058,
    hidden_size=4096,
    num_attention_heads=32,
    num_key_value_heads=8,
    head_dim=128,
    swa_num_attention_heads=32,
    swa_num_key_value_heads=8,
    swa_head_dim=128,
    sliding_window_size=512,
    d_rel=16,
    rel_extent=1024,
    log_scaling_n_floor=128000,
    log_scaling_alpha=0.1,
    rms_norm_eps=1e-6,
    sconv_kernel_size=4,
    intermediate_size=2048,  # OG meaning: routed/shared expert width
    dense_intermediate_size=16384,
    num_experts_per_tok=6,
    n_shared_experts=2,
    route_scale=8.0,
    logits_mup_width_multiplier=16.0,
)


def og_config(n_layers: int, n_experts: int, global_layers: list, n_dense: int) -> dict:
    tc = dict(SMALL)
    tc.update(
        num_hidden_layers=n_layers,
        n_routed_experts=n_experts,
        local_layer_ids=[i for i in range(n_layers) if i not in global_layers],
        dense_mlp_idx=n_dense,
        model_max_length=1048576,
        hidden_act="silu",
        shared_expert_sink=True,
        use_embed_norm=True,
        use_sconv=True,
        use_gate_bias=True,
        use_global_scale=True,
        norm_after_topk=True,
        gate_activation="sigmoid",
        q_bias=False,
        o_bias=False,
        final_logit_softcapping=None,
        tie_word_embeddings=False,
        torch_dtype="bfloat16",
        bos_token_id=1,
        eos_token_id=200001,
    )
    return {
        "architectures": ["InklingForConditionalGeneration"],
        "model_type": "inkling_mm_model",
        "eos_token_id": 200001,
        "vocab_size": SMALL["vocab_size"],
        "torch_dtype": "bfloat16",
        "mtp_config": {"num_nextn_predict_layers": 1, "chain_hidden_post_norm": False, "local_layer_ids": []},
        # tiny tower configs so transformers' InklingForConditionalGeneration can instantiate the folder
        "vision_config": {"hidden_size": 16, "n_layers": 4, "patch_size": 4, "temporal_patch_size": 2},
        "audio_config": {"n_mel_bins": 2, "mel_vocab_size": 3},
        "text_config": tc,
    }


# A tensor to write: name, shape, dtype ("BF16"/"F32") and how to fill it: ("normal", std) or
# ("uniform", lo, hi).
def layer_tensors(i: int, cfg: dict, dense: bool, sliding: bool) -> list:
    H, hd, d = cfg["hidden_size"], cfg["head_dim"], cfg["d_rel"]
    nh, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    if sliding:
        nh, nkv, hd = cfg["swa_num_attention_heads"], cfg["swa_num_key_value_heads"], cfg["swa_head_dim"]
    R = cfg["sliding_window_size"] if sliding else cfg["rel_extent"]
    K = cfg["sconv_kernel_size"]
    I, Id = cfg["intermediate_size"], cfg["dense_intermediate_size"]
    E, S = cfg["n_routed_experts"], cfg["n_shared_experts"]
    p = f"model.llm.layers.{i}."
    lin = lambda rows, cols: ("normal", 1.0 / math.sqrt(cols))  # noqa: E731
    t = [
        (p + "attn_norm.weight", [H], "BF16", ("uniform", 0.5, 1.5)),
        (p + "mlp_norm.weight", [H], "BF16", ("uniform", 0.5, 1.5)),
        (p + "attn.wq_du.weight", [nh * hd, H], "BF16", lin(nh * hd, H)),
        (p + "attn.wk_dv.weight", [nkv * hd, H], "BF16", lin(nkv * hd, H)),
        (p + "attn.wv_dv.weight", [nkv * hd, H], "BF16", lin(nkv * hd, H)),
        (p + "attn.wr_du.weight", [nh * d, H], "BF16", lin(nh * d, H)),
        (p + "attn.wo_ud.weight", [H, nh * hd], "BF16", lin(H, nh * hd)),
        (p + "attn.q_norm.weight", [hd], "BF16", ("uniform", 1.0, 3.0)),
        (p + "attn.k_norm.weight", [hd], "BF16", ("uniform", 1.0, 3.0)),
        (p + "attn.k_sconv.weight", [nkv * hd, 1, K], "BF16", ("normal", 0.3)),
        (p + "attn.v_sconv.weight", [nkv * hd, 1, K], "BF16", ("normal", 0.3)),
        (p + "attn.rel_logits_proj.proj", [d, R], "BF16", ("normal", 0.7)),
        (p + "attn_sconv.weight", [H, 1, K], "BF16", ("normal", 0.3)),
        (p + "mlp_sconv.weight", [H, 1, K], "BF16", ("normal", 0.3)),
    ]
    if dense:
        t += [
            (p + "mlp.w13_dn.weight", [2 * Id, H], "BF16", lin(2 * Id, H)),
            (p + "mlp.w2_md.weight", [H, Id], "BF16", lin(H, Id)),
            (p + "mlp.global_scale", [1], "BF16", ("uniform", 0.5, 2.0)),
        ]
    else:
        t += [
            (p + "mlp.gate.weight", [E + S, H], "BF16", ("normal", 1.5 / math.sqrt(H))),
            (p + "mlp.gate.bias", [E], "F32", ("normal", 0.15)),
            (p + "mlp.gate.global_scale", [1], "F32", ("uniform", 0.5, 2.0)),
            (p + "mlp.experts.w13_weight", [E, 2 * I, H], "BF16", lin(2 * I, H)),
            (p + "mlp.experts.w2_weight", [E, H, I], "BF16", lin(H, I)),
            (p + "mlp.shared_experts.shared_w13_weight", [S, 2 * I, H], "BF16", lin(2 * I, H)),
            (p + "mlp.shared_experts.shared_w2_weight", [S, H, I], "BF16", lin(H, I)),
        ]
    return t


def to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 -> bf16 bit patterns, round to nearest even (finite inputs only)."""
    b = x.astype(np.float32, copy=False).view(np.uint32)
    b = b + (np.uint32(0x7FFF) + ((b >> np.uint32(16)) & np.uint32(1)))
    return (b >> np.uint32(16)).astype(np.uint16)


def fill_chunks(rng: np.random.Generator, n: int, init: tuple, chunk: int = 1 << 24):
    done = 0
    while done < n:
        m = min(chunk, n - done)
        if init[0] == "normal":
            v = rng.standard_normal(m, dtype=np.float32)
            v *= np.float32(init[1])
        else:
            v = rng.random(m, dtype=np.float32)
            v = np.float32(init[1]) + np.float32(init[2] - init[1]) * v
        yield v
        done += m


SIZES = {"BF16": 2, "F32": 4, "U8": 1, "F8_E4M3": 1}
CHUNK = 1 << 24


def chunks(rng: np.random.Generator, n: int, dtype: str, init: tuple):
    """The bytes of n values of `dtype` in chunks. init: ("normal", std), ("uniform", lo, hi),
    ("const", v), or ("bytes", and_mask, or_bits) (uniform bytes, masked, then or-ed: E2M1
    pairs, or E4M3 values kept finite and near one magnitude)."""
    if init[0] == "bytes":
        for done in range(0, n, CHUNK):
            b = rng.integers(0, 256, min(CHUNK, n - done), dtype=np.uint8)
            yield ((b & np.uint8(init[1])) | np.uint8(init[2])).tobytes()
        return
    if init[0] == "const":
        one = np.full(min(CHUNK, n), init[1], dtype=np.float32)
        values = (one[: min(CHUNK, n - done)] for done in range(0, n, CHUNK))
    else:
        values = fill_chunks(rng, n, init, CHUNK)
    for v in values:
        yield (to_bf16_bits(v) if dtype == "BF16" else v.astype("<f4")).tobytes()


def write_shard(path: Path, tensors: list, seed: int, first_id: int) -> int:
    """Streams a safetensors file: header first (shapes are known), then each tensor in chunks.
    Tensor k of the shard draws from its own generator keyed by first_id + k, its index in the
    whole checkpoint: any shard can be regenerated alone, whatever the write order."""
    header, off = {}, 0
    for name, shape, dt, _ in tensors:
        nbytes = int(np.prod(shape, dtype=np.int64)) * SIZES[dt]
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + nbytes]}
        off += nbytes
    hjson = json.dumps(header, separators=(",", ":")).encode()
    hjson += b" " * ((8 - len(hjson) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hjson)))
        f.write(hjson)
        for k, (name, shape, dt, init) in enumerate(tensors):
            rng = np.random.default_rng([seed, first_id + k])
            for b in chunks(rng, int(np.prod(shape, dtype=np.int64)), dt, init):
                f.write(b)
    return off

def write_shards(out: Path, shards: list, seed: int) -> int:
    """Each list of tensor specs as model-KKKKK-of-NNNNN.safetensors (tensor ids counted across
    shards, so every tensor gets its own random stream) and the index; the total bytes."""
    weight_map, total, t0, first = {}, 0, time.time(), 0
    for k, tensors in enumerate(shards):
        fname = f"model-{k + 1:05d}-of-{len(shards):05d}.safetensors"
        total += write_shard(out / fname, tensors, seed, first)
        first += len(tensors)
        for t in tensors:
            weight_map[t[0]] = fname
        print(f"[{time.time() - t0:6.1f}s] {fname}: {len(tensors)} tensors, {total / 1e9:.2f} GB so far", flush=True)
    (out / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=1) + "\n"
    )
    return total


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "models" / "inkling-small-slice-bf16")
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--experts", type=int, default=32, help="routed experts per MoE layer")
    ap.add_argument("--seed", type=int, default=6006)
    ap.add_argument("--force", action="store_true", help="overwrite an existing output folder")
    a = ap.parse_args(argv)

    n = a.layers
    global_layers = [i for i in range(n) if (i + 1) % 6 == 0]  # layer 5 of 6, as in Inkling-Small
    cfg = og_config(n, a.experts, global_layers, n_dense=1)
    tc = cfg["text_config"]
    if a.out.exists():
        if not a.force:
            print(f"{a.out} exists (use --force to overwrite)", file=sys.stderr)
            return 2
        shutil.rmtree(a.out)
    a.out.mkdir(parents=True)

    H, V = tc["hidden_size"], tc["vocab_size"]
    shards = [
        [
            ("model.llm.embed.weight", [V, H], "BF16", ("normal", 1.0)),
            ("model.llm.embed_norm.weight", [H], "BF16", ("uniform", 0.5, 1.5)),
        ]
    ]
    for i in range(n):
        shards.append(layer_tensors(i, tc, dense=i < 1, sliding=i not in global_layers))
    mup = tc["logits_mup_width_multiplier"]
    shards.append(
        [
            ("model.llm.norm.weight", [H], "BF16", ("uniform", 0.5, 1.5)),
            ("model.llm.unembed.weight", [V, H], "BF16", ("normal", 2.7 * mup / math.sqrt(H))),
        ]
    )
    total = write_shards(a.out, shards, a.seed)
    (a.out / "config.json").write_text(json.dumps(cfg, indent=1) + "\n")
    print(f"wrote {a.out} ({total / 1e9:.2f} GB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
