#!/usr/bin/env python3
"""Trains the demo model (models/inkling-demo) on CPU: transformers' InklingForCausalLM in float32
(eager attention, eager experts) plus the MTP heads of tools/mtp_reference.py, on the token
streams written by tools/demo_data.py.  Reproducible: fixed seeds, a step-based schedule (the
--deadline only cuts a run short; the log says where it stopped).

    python3 tools/demo_data.py                      # corpus, tokenizer, chats -> build-demo/data
    nice -n 5 python3 tools/train_demo.py --deadline 04:38
    python3 tools/demo_data.py --stage 2 --no-install --out build-demo/data2
    nice -n 5 python3 tools/train_demo.py --data build-demo/data2 --ckpt build-demo/ckpt2 \
        --init build-demo/ckpt/last.pt --steps 800 --lr 1e-3 --warmup 20
    python3 tools/export_demo.py --ckpt build-demo/ckpt2/best.pt   # -> models/inkling-demo

--init starts a second stage from a checkpoint's weights with a fresh optimizer and its own
warm-up + cosine schedule (the step counter starts at 0 again).

Checkpoints: build-demo/ckpt/{last,best}.pt (best = lowest validation loss of the periodic
evaluations), written every --eval-every steps, so a kill loses little.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from transformers import InklingForCausalLM, InklingTextConfig  # noqa: E402

from mtp_reference import InklingMTP, mtp_forward  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SLIDING, GLOBAL = "hybrid_sliding", "hybrid"
SEED = 1234

# HF spellings.  Every architectural feature is live: sliding + global layers, banded relative bias
# (R = W on sliding layers, rel_extent on global ones), log-position temperature active inside the
# training length (n_floor 64 < 256), short convs, 2 dense + 4 MoE layers (8 routed experts, top-2,
# 1 shared), muP head divisor, padded vocabulary (4096 rows, 4060 real tokens).
MODEL_CFG = dict(
    vocab_size=4096,
    unpadded_vocab_size=4060,
    hidden_size=256,
    num_hidden_layers=6,
    num_attention_heads=8,  # global layers: 8 heads / 2 kv heads / head_dim 32
    num_key_value_heads=2,
    head_dim=32,
    swa_num_attention_heads=8,  # sliding layers: 8 heads / 4 kv heads / head_dim 32
    swa_num_key_value_heads=4,
    swa_head_dim=32,
    sliding_window_size=64,
    d_rel=16,
    rel_extent=128,
    log_scaling_n_floor=64,
    log_scaling_alpha=0.1,
    layer_types=[SLIDING, SLIDING, GLOBAL, SLIDING, SLIDING, GLOBAL],
    mlp_layer_types=["dense", "dense", "sparse", "sparse", "sparse", "sparse"],
    max_position_embeddings=4096,
    rms_norm_eps=1e-6,
    conv_kernel_size=4,
    intermediate_size=512,  # dense width (HF meaning)
    moe_intermediate_size=128,  # routed and shared expert width
    hidden_act="silu",
    n_routed_experts=8,
    num_experts_per_tok=2,
    n_shared_experts=1,
    route_scale=2.0,
    logits_mup_width_multiplier=4.0,
    initializer_range=0.02,
    bos_token_id=None,
    eos_token_id=4008,  # <|content_model_end_sampling|>
    pad_token_id=None,
)
MTP_LAYERS = 2
MTP_LOCAL = [0]  # depth 0 banded, depth 1 global


def make_config():
    return InklingTextConfig(**MODEL_CFG, attn_implementation="eager", experts_implementation="eager")


def build(seed=SEED):
    torch.manual_seed(seed)
    cfg = make_config()
    model = InklingForCausalLM(cfg).float()
    mtp = InklingMTP(cfg, MTP_LAYERS, MTP_LOCAL).float()
    for m in mtp.modules():  # the trunk's init rules (normal 0.02, norms 1, global scales 1)
        model._init_weights(m)
    return cfg, model, mtp


class Balancer:
    """Auxiliary-loss-free load balancing (DeepSeek-V3 style): after each step, each router's
    e_score_correction_bias moves by `rate` towards equal expert loads.  It only steers selection."""

    def __init__(self, model, rate=1e-3):
        self.rate = rate
        self.counts = {}
        self.routers = []
        for name, mod in model.named_modules():
            if type(mod).__name__ == "InklingTopkRouter":
                self.routers.append((name, mod))
                mod.register_forward_hook(self._hook(name))

    def _hook(self, name):
        def f(mod, inp, out):
            idx = out[2].reshape(-1)
            c = torch.bincount(idx, minlength=mod.num_experts).float()
            self.counts[name] = self.counts.get(name, 0) + c
        return f

    @torch.no_grad()
    def step(self):
        worst = 0.0
        for name, mod in self.routers:
            c = self.counts.get(name)
            if c is None:
                continue
            load = c / c.sum()
            mod.e_score_correction_bias += self.rate * torch.sign(load.mean() - load)
            worst = max(worst, float(load.max() * len(load)))
        self.counts = {}
        return worst  # max load relative to uniform


def losses(model, mtp, x):
    trunk, heads = mtp_forward(model, mtp, x)
    V = trunk.shape[-1]
    l0 = F.cross_entropy(trunk[:, :-1].reshape(-1, V), x[:, 1:].reshape(-1))
    lm = []
    for d, lg in enumerate(heads):
        L = lg.shape[1] - 1  # rows with a target inside the window
        lm.append(F.cross_entropy(lg[:, :L].reshape(-1, V), x[:, 2 + d: 2 + d + L].reshape(-1)))
    return l0, lm, trunk, heads


@torch.no_grad()
def evaluate(model, mtp, val, seq, n_seqs):
    model.eval()
    mtp.eval()
    stride = max(seq, (len(val) - seq - 1) // n_seqs)
    tot, totm, agree, cnt = 0.0, [0.0] * len(mtp.layers), [0] * len(mtp.layers), 0
    for i in range(n_seqs):
        s = i * stride
        x = torch.from_numpy(val[s: s + seq].astype(np.int64))[None]
        l0, lm, trunk, heads = losses(model, mtp, x)
        tot += float(l0)
        am = trunk[0].argmax(-1)
        for d, (l, lg) in enumerate(zip(lm, heads)):
            totm[d] += float(l)
            L = lg.shape[1] - 1
            agree[d] += int((lg[0, :L].argmax(-1) == am[1 + d: 1 + d + L]).sum())
        cnt += 1
    model.train()
    mtp.train()
    n_rows = [n_seqs * (seq - 2 - d) for d in range(len(mtp.layers))]
    return tot / cnt, [t / cnt for t in totm], [a / n for a, n in zip(agree, n_rows)]


def save(path, model, mtp, opt, step, info):
    tmp = str(path) + ".tmp"
    torch.save({"model": model.state_dict(), "mtp": mtp.state_dict(), "opt": opt.state_dict() if opt else None,
                "step": step, "info": info, "model_cfg": MODEL_CFG, "mtp_layers": MTP_LAYERS,
                "mtp_local": MTP_LOCAL}, tmp)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(ROOT / "build-demo" / "data"))
    ap.add_argument("--ckpt", default=str(ROOT / "build-demo" / "ckpt"))
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--mtp-weight", type=float, default=0.3)
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--eval-seqs", type=int, default=24)
    ap.add_argument("--deadline", default=None, help="HH:MM UTC: stop (and keep the best checkpoint) by then")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--seed", type=int, default=SEED, help="numpy seed of the batch windows (a later stage uses another)")
    ap.add_argument("--init", default=None, help="start from this checkpoint's weights (fresh optimizer and schedule)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    ck = Path(args.ckpt)
    ck.mkdir(parents=True, exist_ok=True)
    deadline = None
    if args.deadline:
        now = dt.datetime.now(dt.timezone.utc)
        hh, mm = map(int, args.deadline.split(":"))
        deadline = now.replace(hour=hh, minute=mm, second=0, microsecond=0)
        if deadline < now:
            deadline += dt.timedelta(days=1)

    train = np.fromfile(Path(args.data) / "train.bin", dtype=np.uint16)
    val = np.fromfile(Path(args.data) / "val.bin", dtype=np.uint16)
    cfg, model, mtp = build()
    n_trunk = sum(p.numel() for p in model.parameters())
    n_mtp = sum(p.numel() for p in mtp.parameters())
    print(f"params: trunk {n_trunk/1e6:.2f} M, mtp {n_mtp/1e6:.2f} M; train tokens {len(train)}, val {len(val)}", flush=True)
    balancer = Balancer(model)
    params = [p for p in list(model.parameters()) + list(mtp.parameters()) if p.requires_grad]
    decay = [p for p in params if p.ndim >= 2]
    no_decay = [p for p in params if p.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    step0, best = 0, float("inf")
    if args.init and not (args.resume and (ck / "last.pt").exists()):
        st = torch.load(args.init, weights_only=False)
        model.load_state_dict(st["model"])
        mtp.load_state_dict(st["mtp"])
        print(f"initialised from {args.init} (step {st['step']})", flush=True)
    if args.resume and (ck / "last.pt").exists():
        st = torch.load(ck / "last.pt", weights_only=False)
        model.load_state_dict(st["model"])
        mtp.load_state_dict(st["mtp"])
        opt.load_state_dict(st["opt"])
        step0 = st["step"]
        best = st["info"].get("best", best)
        print(f"resumed at step {step0}", flush=True)

    def lr_at(s):
        if s < args.warmup:
            return args.lr * (s + 1) / args.warmup
        f = (s - args.warmup) / max(1, args.steps - args.warmup)
        return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, f))))

    g = np.random.default_rng(args.seed)
    for _ in range(step0):  # keep the batch sequence identical on resume
        g.integers(0, len(train) - args.seq - 1, size=args.batch)
    t0 = time.time()
    tokens = 0
    log = open(ck / "train_log.jsonl", "a")
    for step in range(step0, args.steps):
        offs = g.integers(0, len(train) - args.seq - 1, size=args.batch)
        x = torch.from_numpy(np.stack([train[o: o + args.seq] for o in offs]).astype(np.int64))
        for grp in opt.param_groups:
            grp["lr"] = lr_at(step)
        l0, lm, _, _ = losses(model, mtp, x)
        loss = l0 + args.mtp_weight * sum(lm)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        imb = balancer.step()
        tokens += x.numel()
        el = time.time() - t0
        if step % 10 == 0:
            rec = {"step": step, "loss": round(l0.item(), 4), "mtp": [round(v.item(), 4) for v in lm],
                   "lr": lr_at(step), "gnorm": round(float(gn), 3), "imbalance": round(imb, 2),
                   "tok_s": round(tokens / el, 1), "elapsed": round(el, 1)}
            print(json.dumps(rec), flush=True)
            log.write(json.dumps(rec) + "\n")
            log.flush()
        last = step + 1 == args.steps
        late = deadline is not None and dt.datetime.now(dt.timezone.utc) >= deadline
        if (step + 1) % args.eval_every == 0 or last or late:
            vl, vm, agree = evaluate(model, mtp, val, args.seq, args.eval_seqs)
            info = {"step": step + 1, "val_loss": vl, "val_ppl": math.exp(vl), "val_mtp": vm, "mtp_agree": agree,
                    "train_tokens": (step + 1) * args.batch * args.seq, "elapsed": time.time() - t0}
            if vl < best:
                best = vl
                save(ck / "best.pt", model, mtp, None, step + 1, {**info, "best": best})
            info["best"] = best
            save(ck / "last.pt", model, mtp, opt, step + 1, info)
            print("EVAL " + json.dumps(info), flush=True)
            log.write("EVAL " + json.dumps(info) + "\n")
            log.flush()
        if late:
            print(f"deadline reached at step {step + 1}", flush=True)
            break
    print("done", flush=True)


if __name__ == "__main__":
    main()
