#!/usr/bin/env python3
"""Dump per-module activations of the transformers reference for debugging the C++ engine.

    python tools/dump_activations.py MODEL_DIR PROMPT_JSON OUT_DIR [--append-generated] [--no-attn-weights]

MODEL_DIR   an `hf/` directory (transformers layout, model_type "inkling_text") or an `og/` directory
            (Thinking Machines layout, model_type "inkling_mm_model"; converted with the same inverse
            mapping make_fixtures.py asserts on).
PROMPT_JSON {"prompt_ids": [...]} (ref/prompt.json), a bare list of ids, or ref/greedy.json; with
            --append-generated the greedy "ids" are appended to the prompt (teacher forcing over the
            whole greedy sequence).

Runs one float32 eager forward (use_cache=False, batch 1) of InklingForCausalLM and writes one
`<name>.npy` per hooked module output (little-endian '<f4', or '<i4' for ids, C order, npy 1.0; the
batch dimension of 1 is dropped) plus `manifest.json` ({name: shape}, in execution order).

Names (N = layer index, T = tokens):
  embed                              [T, H]        raw embedding rows (input of the embed norm)
  embed_norm                         [T, H]        normalized embeddings (input of layer 0)
  layers.N.input_layernorm           [T, H]
  layers.N.self_attn.q_proj          [T, nH*hd]
  layers.N.self_attn.k_proj          [T, nKV*hd]   before k_sconv
  layers.N.self_attn.v_proj          [T, nKV*hd]   before v_sconv
  layers.N.self_attn.r_proj          [T, nH*d_rel]
  layers.N.self_attn.k_sconv         [T, nKV*hd]   k after its short conv (incl. conv residual)
  layers.N.self_attn.v_sconv         [T, nKV*hd]
  layers.N.self_attn.q_norm          [T, nH, hd]   normalized q (before tau)
  layers.N.self_attn.k_norm          [T, nKV, hd]
  layers.N.self_attn.attn_weights    [nH, T, T]    softmax probabilities (after bias, tau and mask)
  layers.N.self_attn                 [T, H]        attention output after o_proj
  layers.N.attn_sconv                [T, H]        attention branch after its conv (added to residual)
  layers.N.post_attention_layernorm  [T, H]
  layers.N.router_logits             [T, E]        MoE layers: raw routed logits (shared rows excluded)
  layers.N.router_topk_ids           [T, k]  int32 selected experts, sorted ascending per token
  layers.N.router_topk_weights       [T, k]        their weights (route_scale * global_scale included)
  layers.N.router_shared_gammas      [T, S]        shared-expert weights
  layers.N.mlp.experts               [T, H]        routed experts' sum
  layers.N.mlp.shared_experts        [T, H]        shared experts' sum
  layers.N.mlp                       [T, H]        dense MLP or MoE output (before mlp_sconv)
  layers.N.mlp_sconv                 [T, H]        MLP branch after its conv (added to residual)
  layers.N                           [T, H]        decoder layer output (residual stream)
  norm                               [T, H]        final RMSNorm output (before the muP division)
  logits                             [T, V']       V' = unpadded_vocab_size (or vocab_size)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_fixtures as mf  # noqa: E402

from transformers import InklingForCausalLM  # noqa: E402


def load_model(model_dir: Path) -> InklingForCausalLM:
    cfg = json.loads((model_dir / "config.json").read_text())
    if cfg.get("model_type") == "inkling_mm_model" or "text_config" in cfg:
        return mf.load_og_model(model_dir).eval()
    model = InklingForCausalLM.from_pretrained(
        model_dir, dtype=torch.float32, attn_implementation="eager", experts_implementation="eager"
    )
    return mf.rematerialize(model.eval())


def load_ids(path: Path, append_generated: bool) -> list[int]:
    obj = json.loads(path.read_text())
    if isinstance(obj, list):
        return [int(x) for x in obj]
    ids = [int(x) for x in obj["prompt_ids"]]
    if append_generated:
        if "ids" not in obj:
            sys.exit("--append-generated needs a greedy.json with an 'ids' list")
        ids += [int(x) for x in obj["ids"]]
    return ids


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model_dir", type=Path)
    ap.add_argument("prompt_json", type=Path)
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--append-generated", action="store_true")
    ap.add_argument(
        "--no-attn-weights",
        action="store_true",
        help="skip layers.N.self_attn.attn_weights (the C++ engine never materialises them)",
    )
    args = ap.parse_args(argv)

    torch.set_num_threads(1)
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    model = load_model(args.model_dir)
    ids = load_ids(args.prompt_json, args.append_generated)
    args.out_dir.mkdir(parents=True, exist_ok=True)

    dumps: dict[str, np.ndarray] = {}

    def put(name, t, batched=True):
        t = t.detach().float() if t.is_floating_point() else t.detach().to(torch.int32)
        if batched:
            assert t.shape[0] == 1, (name, t.shape)
            t = t[0]
        dumps[name] = t.cpu().numpy()

    handles = []

    def out_hook(name, index=None, batched=True):
        def h(mod, inp, out):
            o = out[index] if index is not None else out
            put(name, o, batched)

        return h

    base = model.model
    handles.append(base.embed_tokens.embed_norm.register_forward_pre_hook(lambda m, inp: put("embed", inp[0])))
    handles.append(base.embed_tokens.register_forward_hook(out_hook("embed_norm")))
    for i, layer in enumerate(base.layers):
        p = f"layers.{i}"
        handles.append(layer.input_layernorm.register_forward_hook(out_hook(f"{p}.input_layernorm")))
        att = layer.self_attn
        for sub in ("q_proj", "k_proj", "v_proj", "r_proj", "k_sconv", "v_sconv", "q_norm", "k_norm"):
            handles.append(getattr(att, sub).register_forward_hook(out_hook(f"{p}.self_attn.{sub}")))

        def att_hook(mod, inp, out, p=p):
            if not args.no_attn_weights:
                put(f"{p}.self_attn.attn_weights", out[1])
            put(f"{p}.self_attn", out[0])

        handles.append(att.register_forward_hook(att_hook))
        handles.append(layer.attn_sconv.register_forward_hook(out_hook(f"{p}.attn_sconv")))
        handles.append(layer.post_attention_layernorm.register_forward_hook(out_hook(f"{p}.post_attention_layernorm")))
        if hasattr(layer.mlp, "gate") and hasattr(layer.mlp, "experts"):

            def router_hook(mod, inp, out, p=p):
                routed_logits, weights, idx, gammas = out
                order = torch.argsort(idx, dim=-1)
                put(f"{p}.router_logits", routed_logits, batched=False)
                put(f"{p}.router_topk_ids", torch.gather(idx, -1, order), batched=False)
                put(f"{p}.router_topk_weights", torch.gather(weights, -1, order), batched=False)
                put(f"{p}.router_shared_gammas", gammas, batched=False)

            handles.append(layer.mlp.gate.register_forward_hook(router_hook))
            handles.append(layer.mlp.experts.register_forward_hook(out_hook(f"{p}.mlp.experts", batched=False)))
            handles.append(layer.mlp.shared_experts.register_forward_hook(out_hook(f"{p}.mlp.shared_experts")))
        handles.append(layer.mlp.register_forward_hook(out_hook(f"{p}.mlp")))
        handles.append(layer.mlp_sconv.register_forward_hook(out_hook(f"{p}.mlp_sconv")))
        handles.append(layer.register_forward_hook(out_hook(p)))
    handles.append(base.norm.register_forward_hook(out_hook("norm")))

    with torch.no_grad():
        out = model(input_ids=torch.tensor([ids], dtype=torch.long), use_cache=False, output_attentions=True)
    put("logits", out.logits)
    for h in handles:
        h.remove()

    manifest = {}
    for name, arr in dumps.items():
        mf.save_npy(args.out_dir / f"{name}.npy", arr)
        manifest[name] = list(arr.shape)
    (args.out_dir / "manifest.json").write_text(json.dumps({"ids": ids, "arrays": manifest}, indent=1) + "\n")
    print(f"wrote {len(manifest)} arrays for {len(ids)} tokens to {args.out_dir}")


if __name__ == "__main__":
    main()
