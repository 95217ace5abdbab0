#!/usr/bin/env python3
"""Side-by-side speed on the MLX 4-bit slice, in one run: `inkling bench --json` and MLX (CPU).

    python bench/compare_mlx.py [-m models/inkling-small-slice-mlx4] [--threads 2]
        [--prompt-tokens 128] [--gen-tokens 32] [--repeats 3] [--inkling build-perf/inkling]
        [--json-out results.json]

MLX side: mlx (CPU device, `mx.set_default_device(mx.cpu)`) + mlx-vlm's Inkling model
(mlx_vlm/models/inkling). The slice is loaded with `mlx_vlm.utils.load_model`, which maps
`model_type: inkling_mm_model` to that module, renames the original `model.llm.*` tensors
(Model.sanitize), fuses q/k/v/r, concatenates the two shared experts into one dense SwiGLU, and
quantizes exactly the modules that have `.scales` in the checkpoint (experts, shared experts, the
dense MLP; attention, router, embedding and lm_head stay bf16). The slice has no vision/audio
weights; mlx-vlm notices and disables both towers, and only `model.language_model` is called.

Timed on each side, in the same process run, interleaved A/B (order alternates per round):
prefill of `--prompt-tokens` random ids (fresh KV cache) and `--gen-tokens` greedy decode steps
with the cache. Ours is `inkling bench --json` with the same lengths and `--threads`; MLX's CPU
backend has no thread setting (its ops run on one stream thread; the cpu/wall ratio it reached is
printed). Before every timed run the script waits (up to --wait-max s) while another heavy
benchmark runs (`pgrep -f` on --busy-patterns) and records the load average.

Token agreement (informational): `inkling generate --token-ids <the MLX prompt> --temperature 0`
against MLX's greedy tokens of the first timed run; at the first disagreement it prints the rank
and logit of our token in MLX's logits (a near-tie on random weights is expected: MLX runs bf16
activations, ours f32).
"""

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def busy_procs(patterns) -> list:
    """Other processes whose command line matches a heavy-benchmark pattern (not us)."""
    me = {os.getpid(), os.getppid()}
    found = []
    for pat in patterns:
        r = subprocess.run(["pgrep", "-af", pat], capture_output=True, text=True)
        for line in r.stdout.splitlines():
            pid, _, cmd = line.partition(" ")
            if int(pid) not in me and "pgrep" not in cmd:
                found.append(line[:160])
    return found


def wait_quiet(a) -> dict:
    """Wait while another heavy benchmark runs (up to --wait-max s); return what we saw."""
    t0 = time.time()
    busy = busy_procs(a.busy_patterns)
    first = list(busy)
    while busy and time.time() - t0 < a.wait_max:
        time.sleep(5)
        busy = busy_procs(a.busy_patterns)
    waited = time.time() - t0
    if first:
        log(f"waited {waited:.0f}s for: {first}" + ("  (still busy, running anyway)" if busy else ""))
    return {"loadavg": os.getloadavg(), "waited_s": round(waited, 1), "still_busy": busy}


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


# ----------------------------------------------------------------------------------------- ours


def run_ours(a) -> dict:
    cmd = [a.inkling, "bench", "-m", str(a.model), "--threads", str(a.threads), "--json",
           "--prompt-tokens", str(a.prompt_tokens), "--gen-tokens", str(a.gen_tokens)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def ours_greedy(a, ids, n) -> list:
    cmd = [a.inkling, "generate", "-m", str(a.model), "--token-ids", ",".join(map(str, ids)),
           "-n", str(n), "--temperature", "0", "-t", str(a.threads), "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])["ids"]


# ------------------------------------------------------------------------------------------ MLX


def load_mlx(model_dir: Path):
    import mlx.core as mx

    mx.set_default_device(mx.cpu)
    from mlx_vlm.utils import load_model

    model = load_model(model_dir, lazy=False)  # reads every weight now, not in the first run
    return model.language_model


def mlx_run(lm, ids, gen_tokens, watch=None) -> dict:
    """Prefill `ids` in a fresh cache, then `gen_tokens` greedy decode steps. `watch`: our greedy
    ids; while MLX's tokens match them, the rank/logit of ours in MLX's logits is recorded."""
    import mlx.core as mx

    cache = lm.make_cache()
    toks, probe = [], None

    def step(x):
        nonlocal probe
        logits = lm(x, cache=cache).logits[0, -1].astype(mx.float32)
        tok = mx.argmax(logits)
        mx.eval(tok, logits)
        t = int(tok.item())
        i = len(toks)
        if watch is not None and probe is None and i < len(watch) and watch[i] != t:
            if toks == list(watch[:i]):
                ours = watch[i]
                lo = logits[ours]
                rank = int(mx.sum(logits > lo).item())
                top2 = mx.topk(logits, 2)
                probe = {"step": i, "mlx": t, "ours": ours, "rank_of_ours": rank,
                         "logit_mlx_top1": float(logits[t].item()),
                         "logit_of_ours": float(lo.item()),
                         "mlx_top1_minus_top2": float((mx.max(top2) - mx.min(top2)).item())}
        toks.append(t)
        return mx.array([[t]])

    c0, t0 = cpu_s(), time.perf_counter()
    nxt = step(mx.array([ids]))
    prefill_s, prefill_cpu = time.perf_counter() - t0, cpu_s() - c0
    c0, t0 = cpu_s(), time.perf_counter()
    for _ in range(gen_tokens):
        nxt = step(nxt)
    decode_s, decode_cpu = time.perf_counter() - t0, cpu_s() - c0
    return {"prefill_tok_s": len(ids) / prefill_s, "decode_tok_s": gen_tokens / decode_s,
            "prefill_s": prefill_s, "decode_s": decode_s,
            "prefill_cpu_per_wall": prefill_cpu / prefill_s,
            "decode_cpu_per_wall": decode_cpu / decode_s,
            "tokens": toks, "first_disagreement": probe}


# ----------------------------------------------------------------------------------------- main


def versions(a) -> dict:
    v = {"python": platform.python_version()}
    for mod in ("mlx", "mlx_vlm"):
        try:
            from importlib.metadata import version

            v[mod] = version(mod.replace("_", "-"))
        except Exception as e:  # noqa: BLE001
            v[mod] = f"? ({e})"
    try:
        v["mlx-cpu"] = __import__("importlib.metadata").metadata.version("mlx-cpu")
    except Exception:  # noqa: BLE001
        pass
    try:
        head = subprocess.run(["git", "-C", str(Path(a.inkling).resolve().parent), "rev-parse",
                               "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        v["inkling_binary"] = f"{a.inkling} (tree at {head or '?'})"
    except Exception:  # noqa: BLE001
        v["inkling_binary"] = a.inkling
    v["cpu"] = next((l.split(":", 1)[1].strip() for l in Path("/proc/cpuinfo").read_text().splitlines()
                     if l.startswith("model name")), platform.processor())
    v["nproc"] = os.cpu_count()
    return v


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-m", "--model", type=Path, default=ROOT / "models" / "inkling-small-slice-mlx4")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt-tokens", type=int, default=128)
    ap.add_argument("--gen-tokens", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--agree-steps", type=int, default=8, help="greedy tokens compared")
    ap.add_argument("--inkling", default=str(ROOT / "build-perf" / "inkling"))
    ap.add_argument("--wait-max", type=float, default=240.0,
                    help="seconds to wait for another benchmark to finish before each run")
    ap.add_argument("--busy-patterns", nargs="*", default=["inkling bench", "bench/compare.py"])
    ap.add_argument("--json-out", type=Path)
    ap.add_argument("--f32-agreement", action="store_true",
                    help="after timing, cast MLX's float parameters to f32 (f32 activations, the same "
                         "4-bit weights) and compare its greedy tokens with ours again (slow, untimed)")
    a = ap.parse_args(argv)

    import numpy as np

    cfg = json.loads((a.model / "config.json").read_text())
    tc = cfg.get("text_config", cfg)
    V = tc.get("unpadded_vocab_size") or tc["vocab_size"]
    ids = np.random.default_rng(a.seed).integers(0, V, size=a.prompt_tokens).tolist()
    ver = versions(a)
    log(f"versions: {ver}")

    n_agree = min(a.agree_steps, a.gen_tokens + 1)
    ours_ids = ours_greedy(a, ids, n_agree)
    log(f"ours greedy: {ours_ids}")

    t0 = time.perf_counter()
    lm = load_mlx(a.model)
    load_s = time.perf_counter() - t0
    log(f"MLX loaded in {load_s:.1f}s; warm-up (2-token prefill + 1 decode)")
    t0 = time.perf_counter()
    mlx_run(lm, ids[:2], 1)
    warm_s = time.perf_counter() - t0
    log(f"MLX warm-up {warm_s:.1f}s")

    runs = {"ours": [], "mlx": []}
    for r in range(a.repeats):
        order = ("ours", "mlx") if r % 2 == 0 else ("mlx", "ours")
        for who in order:
            env = wait_quiet(a)
            log(f"round {r + 1}/{a.repeats}: {who} (load avg {env['loadavg'][0]:.2f})")
            if who == "ours":
                res = run_ours(a)
            else:
                res = mlx_run(lm, ids, a.gen_tokens, watch=ours_ids if r == 0 else None)
            res.update(env)
            runs[who].append(res)
            log(f"  prefill {res['prefill_tok_s']:.3f} tok/s  decode {res['decode_tok_s']:.3f} tok/s")

    med = {w: {k: statistics.median(x[k] for x in runs[w]) for k in ("prefill_tok_s", "decode_tok_s")}
           for w in runs}
    mlx_toks = runs["mlx"][0]["tokens"][:n_agree]
    agree = 0
    while agree < min(len(mlx_toks), len(ours_ids)) and mlx_toks[agree] == ours_ids[agree]:
        agree += 1

    print(f"slice: {a.model}  prompt {a.prompt_tokens} random ids (seed {a.seed})  "
          f"gen {a.gen_tokens}  repeats {a.repeats} (interleaved, order alternating)")
    print("versions: " + ", ".join(f"{k} {v}" for k, v in ver.items()))
    print(f"MLX: load {load_s:.1f}s, warm-up {warm_s:.1f}s; cpu/wall of its runs: prefill "
          + ", ".join(f"{x['prefill_cpu_per_wall']:.2f}" for x in runs["mlx"]) + "; decode "
          + ", ".join(f"{x['decode_cpu_per_wall']:.2f}" for x in runs["mlx"])
          + f"  (ours: --threads {a.threads})")
    print(f"{'run':28s} {'prefill tok/s':>14s} {'decode tok/s':>13s} {'load avg (1m)':>14s}")
    names = {"ours": "inkling.cpp (4-bit experts)", "mlx": "MLX cpu + mlx-vlm"}
    for w in ("ours", "mlx"):
        for i, x in enumerate(runs[w]):
            note = f"  waited {x['waited_s']:.0f}s" if x["waited_s"] >= 5 else ""
            print(f"{names[w] + f' #{i + 1}':28s} {x['prefill_tok_s']:14.3f} {x['decode_tok_s']:13.3f} "
                  f"{x['loadavg'][0]:14.2f}{note}")
        print(f"{names[w] + ' median':28s} {med[w]['prefill_tok_s']:14.3f} {med[w]['decode_tok_s']:13.3f}")
    sp = {k: med["ours"][k] / med["mlx"][k] for k in ("prefill_tok_s", "decode_tok_s")}
    print(f"speed-up of inkling.cpp over MLX (medians): prefill {sp['prefill_tok_s']:.1f}x  "
          f"decode {sp['decode_tok_s']:.1f}x")
    ob = runs["ours"][-1]
    if "bandwidth_gbs" in ob:
        print(f"ours, last run: bandwidth {ob['bandwidth_gbs']:.1f} GB/s, decode_ratio "
              f"{ob.get('decode_ratio', float('nan')):.2f}, prefill_ratio {ob.get('prefill_ratio', float('nan')):.2f}")
    print(f"greedy tokens (first {n_agree}): MLX {mlx_toks}")
    print(f"                              ours {ours_ids}")
    print(f"agree on the first {agree} of {n_agree}")
    fd = runs["mlx"][0]["first_disagreement"]
    if fd:
        print(f"first disagreement at step {fd['step']}: our token {fd['ours']} has rank {fd['rank_of_ours']} "
              f"in MLX's logits ({fd['logit_of_ours']:.3f} vs MLX top-1 {fd['logit_mlx_top1']:.3f}; "
              f"MLX top-1 minus top-2 {fd['mlx_top1_minus_top2']:.3f})")

    f32 = None
    if a.f32_agreement:
        import mlx.core as mx

        lm.set_dtype(mx.float32)  # bf16 tensors (attention, norms, scales/biases...) -> f32
        f32 = mlx_run(lm, ids, n_agree - 1, watch=ours_ids)
        same = 0
        while same < n_agree and f32["tokens"][same] == ours_ids[same]:
            same += 1
        print(f"MLX with f32 activations: {f32['tokens']}  agree on the first {same} of {n_agree}")
        if f32["first_disagreement"]:
            print(f"  first disagreement: {f32['first_disagreement']}")

    if a.json_out:
        a.json_out.write_text(json.dumps({"mlx_f32": f32,
            "args": {k: str(v) for k, v in vars(a).items()}, "versions": ver, "prompt_ids": ids,
            "mlx_load_s": load_s, "mlx_warmup_s": warm_s, "runs": runs, "medians": med,
            "speedup": sp, "ours_greedy": ours_ids, "mlx_greedy": mlx_toks, "agree_prefix": agree,
        }, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
