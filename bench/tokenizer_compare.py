#!/usr/bin/env python3
"""Encode throughput, single thread, same text, one run: inkling.cpp vs tiktoken vs HF tokenizers.

The text is written by our benchmark binary (parity corpus + generated English prose), so all
three encode the same bytes; each encodes it as one string, allowed_special="all" semantics,
best of --reps. Also checks that our ids equal tiktoken's (FNV hash of the id list).
Usage: python3 bench/tokenizer_compare.py --bin build/bench/tokenizer/bench_tokenize [--mb 8]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ.setdefault("RAYON_NUM_THREADS", "1")

import tiktoken  # noqa: E402
from tiktoken.load import load_tiktoken_bpe  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")


def fnv(ids):
    h = 1469598103934665603
    for b in ("".join(f"{i}," for i in ids)).encode():
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def best_of(reps, fn):
    best, out = 1e30, None
    for _ in range(reps):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bench", "tokenizer", "bench_tokenize"))
    ap.add_argument("--mb", type=int, default=8)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--model", default=os.path.join(DATA, "inkling"))
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench.txt")
        subprocess.run([args.bin, "--root", ROOT, "--mb", str(args.mb), "--write-text", path],
                       check=True)
        with open(path, "rb") as f:
            raw = f.read()
        text = raw.decode("utf-8")
        nbytes = len(raw)

        st = json.load(open(os.path.join(args.model, "special_tokens.json")))
        specials = {s["content"]: s["id"] for s in st["special_tokens"]}
        enc = tiktoken.Encoding(
            name="inkling", pat_str=st["pat_str"],
            mergeable_ranks=load_tiktoken_bpe(os.path.join(DATA, "o200k_base.tiktoken")),
            special_tokens=specials)
        hf = Tokenizer.from_file(os.path.join(args.model, "tokenizer.json"))

        ours = json.loads(subprocess.run(
            [args.bin, "--model", args.model, "--file", path, "--reps", str(args.reps)],
            check=True, capture_output=True, text=True).stdout)
        t_tk, tk_ids = best_of(args.reps, lambda: enc.encode(text, allowed_special="all"))
        t_hf, hf_ids = best_of(args.reps, lambda: hf.encode(text, add_special_tokens=False).ids)

    same_tk = fnv(tk_ids) == ours["ids_fnv"]
    same_hf = hf_ids == tk_ids
    rows = [("inkling.cpp", ours["seconds"], ours["tokens"]), ("tiktoken", t_tk, len(tk_ids)),
            ("HF tokenizers", t_hf, len(hf_ids))]
    print(f"text: {nbytes / 1e6:.2f} MB, {len(tk_ids)} tokens; single thread, best of {args.reps}")
    print(f"{'':16}{'MB/s':>10}{'Mtok/s':>10}{'vs tiktoken':>13}{'vs HF':>8}")
    for name, sec, ntok in rows:
        print(f"{name:16}{nbytes / sec / 1e6:10.2f}{ntok / sec / 1e6:10.2f}"
              f"{t_tk / sec:12.2f}x{t_hf / sec:7.2f}x")
    print(f"ids: ours == tiktoken: {same_tk}; HF == tiktoken: {same_hf}")
    return 0 if same_tk and same_hf else 1


if __name__ == "__main__":
    sys.exit(main())
