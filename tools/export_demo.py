#!/usr/bin/env python3
"""Exports the trained demo model (build-demo/ckpt/best.pt from tools/train_demo.py) to
models/inkling-demo in the original Thinking Machines layout (model.llm.*, bf16; router bias and
global scale F32; MTP depths under model.mtp.* with an mtp_config in config.json), then re-loads
the written files and, with transformers float32 eager on the bf16 weights as the oracle, writes

    models/inkling-demo/results.json        validation loss / perplexity, MTP loss and agreement
    tests/fixtures/demo/prompt.json          32 validation tokens (teacher-forced logits)
    tests/fixtures/demo/logits.npy           f32 [32, 4060]
    tests/fixtures/demo/greedy.json          64 greedy ids after the text prompt "In the beginning"
    tests/fixtures/demo/ppl.json             a validation passage (~320 tokens) and its perplexity
    tests/fixtures/demo/mtp.json             MTP reference: per-depth argmax and logits sample

Usage:  python3 tools/export_demo.py [--ckpt build-demo/ckpt/best.pt] [--eval-seqs 64]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from mtp_reference import InklingMTP, load_og_state_dict, mtp_forward, og_state_dict  # noqa: E402
from og_layout import JUNK_TENSORS, hf_to_og, load_og_model, og_config  # noqa: E402
from train_demo import MODEL_CFG, build, losses  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
GREEDY_PROMPT = "In the beginning"
EOT_ID = 4001  # <|endoftext|> in the demo tokenizer (Inkling's added tokens start at 4000)


def write_model(model, mtp, cfg, out: Path):
    og = hf_to_og(model.state_dict(), cfg, bf16=True)
    for k in JUNK_TENSORS:
        og.pop(k)
    for k, v in og_state_dict(mtp).items():
        og[k] = v.to(torch.bfloat16).contiguous()
    save_file(og, str(out / "model.safetensors"), metadata={"format": "pt"})
    c = og_config(cfg, {}, [], bf16=True, eos=MODEL_CFG["eos_token_id"])
    c["mtp_config"] = mtp.mtp_config()
    c["text_config"]["model_max_length"] = cfg.max_position_embeddings
    c["pad_token_id"] = None
    (out / "config.json").write_text(json.dumps(c, indent=1) + "\n")
    # Generation ends at the end of an answer (<|content_model_end_sampling|>) and at the end of a
    # document (<|endoftext|>, the separator of the training stream): a plain-text prompt's
    # continuation otherwise runs on into the next, unrelated document. (transformers' config
    # classes take one eos id; its GenerationConfig, like the engine, takes a list.)
    eos = [MODEL_CFG["eos_token_id"], EOT_ID]
    (out / "generation_config.json").write_text(json.dumps(
        {"eos_token_id": eos, "do_sample": False}, indent=1) + "\n")
    return og


def load_exported(out: Path):
    """transformers float32 eager on the written bf16 tensors (og_layout's loader) + the MTP."""
    model = load_og_model(out)
    cfg = model.config
    mc = json.loads((out / "config.json").read_text())["mtp_config"]
    mtp = InklingMTP(cfg, mc["num_nextn_predict_layers"], mc["local_layer_ids"]).float()
    load_og_state_dict(mtp, load_file(str(out / "model.safetensors")))
    return model.eval(), mtp.eval()


@torch.no_grad()
def full_eval(model, mtp, val, seq, n_seqs):
    stride = (len(val) - seq - 1) // n_seqs
    nll, n, nm, agree, acc, rows = 0.0, 0, [0.0] * len(mtp.layers), [0] * len(mtp.layers), [0] * len(mtp.layers), [0] * len(mtp.layers)
    acc0 = 0
    for i in range(n_seqs):
        x = torch.from_numpy(val[i * stride: i * stride + seq].astype(np.int64))[None]
        l0, lm, trunk, heads = losses(model, mtp, x)
        nll += float(l0) * (seq - 1)
        n += seq - 1
        am = trunk[0].argmax(-1)
        acc0 += int((am[:-1] == x[0, 1:]).sum())
        for d, (l, lg) in enumerate(zip(lm, heads)):
            L = lg.shape[1] - 1
            nm[d] += float(l) * L
            rows[d] += L
            pred = lg[0, :L].argmax(-1)
            agree[d] += int((pred == am[1 + d: 1 + d + L]).sum())
            acc[d] += int((pred == x[0, 2 + d: 2 + d + L]).sum())
    return {
        "val_tokens_scored": n, "val_loss": nll / n, "val_ppl": math.exp(nll / n), "trunk_top1_acc": acc0 / n,
        "mtp": [{"depth": d, "banded": d in mtp.local_layer_ids, "val_loss": nm[d] / rows[d],
                 "top1_agreement_with_trunk_next_next": agree[d] / rows[d], "top1_acc": acc[d] / rows[d]}
                for d in range(len(mtp.layers))],
    }


def text48(tok, ids):
    stops = {MODEL_CFG["eos_token_id"], EOT_ID}
    cut = next((i for i, t in enumerate(ids[:48]) if t in stops), 48)
    text = tok.decode(ids[:cut], skip_special_tokens=True)
    return text if cut < 48 else text.rsplit(" ", 1)[0]


@torch.no_grad()
def greedy(model, ids, n):
    """Full recompute each step (no cache): the plainest reference; returns ids and margins."""
    ids = list(ids)
    out, margins = [], []
    for _ in range(n):
        lg = model(input_ids=torch.tensor([ids]), use_cache=False).logits[0, -1].float()
        top = torch.topk(lg, 2)
        margins.append(float(top.values[0] - top.values[1]))
        t = int(top.indices[0])
        out.append(t)
        ids.append(t)
    return out, margins


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ckpt", default=str(ROOT / "build-demo" / "ckpt" / "best.pt"))
    ap.add_argument("--data", default=str(ROOT / "build-demo" / "data"))
    ap.add_argument("--out", default=str(ROOT / "models" / "inkling-demo"))
    ap.add_argument("--fixtures", default=str(ROOT / "tests" / "fixtures" / "demo"))
    ap.add_argument("--eval-seqs", type=int, default=64)
    args = ap.parse_args()
    torch.set_num_threads(2)
    out, fx = Path(args.out), Path(args.fixtures)
    out.mkdir(parents=True, exist_ok=True)
    fx.mkdir(parents=True, exist_ok=True)

    st = torch.load(args.ckpt, weights_only=False)
    cfg, model, mtp = build()
    model.load_state_dict(st["model"])
    mtp.load_state_dict(st["mtp"])
    write_model(model, mtp, cfg, out)
    ref, rmtp = load_exported(out)
    # the re-loaded weights are the trained ones rounded to bf16 (F32 router bias/scale exact)
    sd = model.state_dict()
    for k, v in ref.state_dict().items():
        want = sd[k] if (k.endswith("e_score_correction_bias") or k.endswith("gate.global_scale")) else sd[k].to(torch.bfloat16).float()
        assert torch.equal(v, want), k

    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(out / "tokenizer.json"))
    val = np.fromfile(Path(args.data) / "val.bin", dtype=np.uint16)
    res = full_eval(ref, rmtp, val, 256, args.eval_seqs)
    res["checkpoint_step"] = st["step"]
    res["train_info"] = st["info"]
    res["params"] = {"trunk": sum(p.numel() for p in ref.parameters()),
                     "mtp": sum(p.numel() for p in rmtp.parameters()),
                     "file_bytes": (out / "model.safetensors").stat().st_size}

    # fixtures: a validation passage starting at a document start (after <|endoftext|>)
    eot = tok.token_to_id("<|endoftext|>")
    starts = [i + 1 for i in np.nonzero(val == eot)[0][:400]]
    vtext_ids = None
    for s in starts:  # first plain-text (non-chat) document of >= 320 tokens
        seg = val[s: s + 320].astype(np.int64)
        if int(seg[0]) < 4000 and eot not in seg[:320].tolist():
            vtext_ids = seg.tolist()
            break
    assert vtext_ids is not None
    prompt = vtext_ids[:32]
    with torch.no_grad():
        lg = ref(input_ids=torch.tensor([prompt]), use_cache=False).logits[0].float().numpy()
        np.save(fx / "logits.npy", lg.astype(np.float32))
        full = ref(input_ids=torch.tensor([vtext_ids]), use_cache=False).logits[0].float()
        nll = F.cross_entropy(full[:-1].double(), torch.tensor(vtext_ids[1:]), reduction="sum")
    (fx / "prompt.json").write_text(json.dumps({"prompt_ids": prompt, "text": tok.decode(prompt)}, indent=1) + "\n")
    (fx / "ppl.json").write_text(json.dumps({
        "ids": vtext_ids, "text": tok.decode(vtext_ids), "predicted": len(vtext_ids) - 1,
        "nll_sum": float(nll), "ppl": math.exp(float(nll) / (len(vtext_ids) - 1))}, indent=1) + "\n")
    gp = tok.encode(GREEDY_PROMPT, add_special_tokens=False).ids
    gids, margins = greedy(ref, gp, 64)
    (fx / "greedy.json").write_text(json.dumps({
        "prompt": GREEDY_PROMPT, "prompt_ids": gp, "ids": gids, "text": tok.decode(gids),
        # what `generate -n 48` prints (control tokens left out; it stops at an eos id), cut at
        # the last space when it runs all 48 tokens (no partial UTF-8 at the end)
        "text48": text48(tok, gids),
        "min_margin": min(margins)}, indent=1) + "\n")
    # MTP reference on the 32-token prompt: per depth argmax ids and a few logits rows
    with torch.no_grad():
        trunk, heads = mtp_forward(ref, rmtp, torch.tensor([prompt]))
    (fx / "mtp.json").write_text(json.dumps({
        "prompt_ids": prompt, "mtp_config": rmtp.mtp_config(),
        "depths": [{"depth": d, "rows": h.shape[1], "argmax": h[0].argmax(-1).tolist(),
                    "logits_row0_first16": h[0, 0, :16].tolist(),
                    "logits_max_abs": float(h.abs().max())} for d, h in enumerate(heads)]}, indent=1) + "\n")

    # tokenizer + chat template parity: validation documents and rendered validation chats with
    # the HF tokenizer's ids (the engine must give the same text and ids)
    with open(fx / "tokenizer.jsonl", "w") as f:
        docs = open(Path(args.data) / "val_text.txt").read().split("\n\n")
        for d in [d for d in docs if d.strip()][:: max(1, len(docs) // 24)][:24]:
            f.write(json.dumps({"text": d, "ids": tok.encode(d, add_special_tokens=False).ids}, ensure_ascii=False) + "\n")
        chats = [json.loads(line) for line in open(Path(args.data) / "val_chats.jsonl")][:24]
        for c in chats:
            req = {"messages": c["messages"], "add_generation_prompt": False}
            if c["reasoning_effort"] is not None:
                req["reasoning_effort"] = c["reasoning_effort"]
            f.write(json.dumps({"request": req, "text": c["text"],
                                "ids": tok.encode(c["text"], add_special_tokens=False).ids}, ensure_ascii=False) + "\n")

    # HF samples (greedy) for the README
    samples = {}
    for p in [GREEDY_PROMPT, "And God said", "A fool"]:
        ids = tok.encode(p, add_special_tokens=False).ids
        g, _ = greedy(ref, ids, 48)
        samples[p] = p + text48(tok, g)
    res["hf_greedy_samples"] = samples
    res["greedy_fixture"] = {"text": GREEDY_PROMPT + tok.decode(gids), "min_margin": min(margins)}
    res["ppl_fixture"] = {"tokens": len(vtext_ids), "ppl": math.exp(float(nll) / (len(vtext_ids) - 1))}
    (out / "results.json").write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
