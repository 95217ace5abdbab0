#!/usr/bin/env python3
"""Projected decode speed of Inkling-Small under `--expert-parallel` across 2-4 boxes
(docs/scale-out.md). A model of the design in src/dist: rank 0 runs attention, routers, shared
experts, dense MLPs and the head; routed expert e lives on rank e mod N; per MoE layer rank 0
sends each token's f32 row to the ranks owning its experts and gets one f32 row back per slot.

Decode time per token = (rank 0's bytes + the largest expert share of a layer) / memory
bandwidth + per MoE layer (round trip + (rows out + outputs back) / link speed).
Assumptions are printed with the table; change them on the command line.
"""
import argparse
import random

# Inkling-Small (tests/fixtures/quantize/inkling_small/config.json).
H, LAYERS, DENSE, E, K, S, I, ID, V, NH, NKV, HD, DREL = (
    4096, 42, 2, 256, 6, 2, 2048, 16384, 200058, 32, 8, 128, 16)
MOE = LAYERS - DENSE
EXPERT = 3 * I * H                        # params of one expert
ATTN = (2 * NH * HD + 2 * NKV * HD + NH * DREL) * H
NONEXP_ACTIVE = LAYERS * ATTN + MOE * (S * EXPERT + (E + S) * H) + DENSE * 3 * ID * H + V * H


def max_share(n, trials=20000, seed=1):
    """Expected largest number of a token's k experts on one rank (owner = e mod n)."""
    rng = random.Random(seed)
    tot = 0
    for _ in range(trials):
        own = [0] * n
        for e in rng.sample(range(E), K):
            own[e % n] += 1
        tot += max(own)
    return tot / trials


def exchange(n):
    """Expected bytes per token per MoE layer: rows out (per owner), outputs back."""
    owners = (n - 1) * (1 - (1 - 1 / n) ** K)
    out = owners * (H * 4 + K * 4 + 16)
    back = K * (n - 1) / n * H * 4
    return out, back, 2 * owners


def designs(n, rows):
    """Bytes and messages per MoE layer for `rows` tokens: (rank-0 driver, replicated)."""
    p_any = 1 - (1 - 1 / n) ** K                      # a rank owns one of a token's k experts
    owners = (n - 1) * (1 - (1 - p_any) ** rows)       # ranks that get a message
    drv_out = (n - 1) * p_any * rows * (H * 4 + K * 4) + owners * 16
    drv_back = rows * K * (n - 1) / n * H * 4
    # Replicated: every rank holds all rows; each sends its slots' outputs to the n-1 others.
    rep_send = rows * K / n * H * 4 * (n - 1)          # per rank
    rep_recv = rows * K * (n - 1) / n * H * 4          # per rank
    return (drv_out, drv_back, 2 * owners), (rep_send, rep_recv, 2 * (n - 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bw", type=float, default=100.0, help="memory read GB/s per box")
    ap.add_argument("--expert-bytes", type=float, default=0.5625,
                    help="bytes per routed-expert weight (NVFP4 / MLX q4 g64: 4.5 bits)")
    ap.add_argument("--chunk", type=int, default=256, help="prefill chunk (rows)")
    args = ap.parse_args()
    print(f"bytes and messages per MoE layer, x{MOE} MoE layers for a token / a chunk:")
    print("  N | rows | rank-0 driver: out, back (rank 0's link), msgs | replicated: per rank "
          "sent, received, msgs")
    for n in (2, 3, 4):
        for rows in (1, args.chunk):
            (o, b, m), (rs, rr, rm) = designs(n, rows)
            f = (lambda x: f"{x * MOE / 2**20:8.2f} MiB") if rows > 1 else (
                lambda x: f"{x * MOE / 2**10:8.1f} KiB")
            print(f"  {n} | {rows:4d} | {f(o)}, {f(b)}, {m:4.1f} | {f(rs)}, {f(rr)}, {rm:4.1f}")
    print(f"non-expert weights (replicated on every rank in that design): "
          f"{(NONEXP_ACTIVE + V * H) * 2 / 1e9:.1f} GB bf16")
    nets = [("10 GbE", 1.25e9, 50e-6), ("25 GbE", 3.125e9, 35e-6), ("100 GbE", 12.5e9, 25e-6)]
    print(f"assumptions: {args.bw:g} GB/s per box; experts {args.expert_bytes} B/weight; "
          "round trips (TCP, small messages): " +
          ", ".join(f"{n} {rtt * 1e6:.0f} us" for n, _, rtt in nets))
    for label, rest in (("rest bf16 (NVFP4 release)", 2.0), ("rest 4-bit too (MLX q4)", 0.5625)):
        rank0 = NONEXP_ACTIVE * rest
        experts = MOE * K * EXPERT * args.expert_bytes
        one = (rank0 + experts) / (args.bw * 1e9)
        print(f"\n{label}: rank 0 reads {rank0 / 1e9:.2f} GB per token, experts "
              f"{experts / 1e9:.2f} GB; one box (if it fits): {1 / one:.2f} tok/s")
        print("  N | max share | bytes/token/layer out, back | net per layer 10/25/100 GbE (us)"
              " | decode tok/s 10/25/100 GbE")
        for n in (2, 3, 4):
            m = max_share(n)
            out, back, msgs = exchange(n)
            compute = (rank0 + MOE * m * EXPERT * args.expert_bytes) / (args.bw * 1e9)
            per_layer = [rtt + (out + back) / bw for _, bw, rtt in nets]  # rows, then outputs
            tps = [1 / (compute + MOE * p) for p in per_layer]
            print(f"  {n} | {m:9.2f} | {out / 1024:7.1f} KiB, {back / 1024:5.1f} KiB "
                  f"({msgs:.1f} msgs) | " + " / ".join(f"{p * 1e6:5.0f}" for p in per_layer) +
                  " | " + " / ".join(f"{t:5.2f}" for t in tps))


if __name__ == "__main__":
    main()
