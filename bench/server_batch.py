#!/usr/bin/env python3
"""Server throughput at N concurrent clients against `inkling bench --batch N` (Engine::step).

    python bench/server_batch.py -m models/slice-bf16-e8 [--clients 16] [--gen-tokens 16]
        [--prompt-tokens 8] [--inkling build/inkling] [--tokenizer tests/data/inkling]

Starts `inkling serve --parallel N`, warms it up with one request, then sends N streaming
/v1/completions requests at once (token-id prompts, greedy, ignore_eos) from N threads and
records when each token arrives. The decode throughput is the number of tokens that arrived
while all N streams were decoding (from the last stream's first token to the first stream's last
token) over that window, so prefill and the ramp-up/down are not counted. Then runs
`inkling bench --batch N --json` on the same model and prints both and their ratio.

A benchmark slice (tools/make_bench_slice.py) has no tokenizer; the server needs one to detokenize,
so the script serves a temporary folder of links to the slice plus the tokenizer files of
--tokenizer (default: the repository's tests/data/inkling, Inkling's vocabulary).
"""

import argparse
import http.client
import json
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def model_folder(model: Path, tokenizer: Path, tmp: Path) -> Path:
    """`model` if it has a tokenizer, else a folder of links to it plus the tokenizer files."""
    if (model / "tokenizer.json").exists() or (model / "tiktoken").exists():
        return model
    out = tmp / "model"
    out.mkdir()
    for f in list(model.iterdir()) + list(tokenizer.iterdir()):
        if not (out / f.name).exists():
            (out / f.name).symlink_to(f.resolve())
    return out


def wait_ready(port: int, proc: subprocess.Popen, timeout: float) -> None:
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            sys.exit(f"the server exited with {proc.returncode}")
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            c.request("GET", "/health")
            if c.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(1)
    sys.exit("the server did not become ready")


def stream(port: int, prompt: list, gen: int, stamps: list) -> None:
    """One streaming completion; appends the arrival time of each token chunk to `stamps`."""
    body = json.dumps({"prompt": prompt, "max_tokens": gen, "temperature": 0, "stream": True,
                       "ignore_eos": True})
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=3600)
    c.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
    r = c.getresponse()
    if r.status != 200:
        raise RuntimeError(f"HTTP {r.status}: {r.read()[:200]!r}")
    for raw in r:
        line = raw.decode().strip()
        if not line.startswith("data:") or line == "data: [DONE]":
            continue
        ev = json.loads(line[5:])
        if ev.get("choices") and ev["choices"][0].get("text") is not None:
            stamps.append(time.time())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-m", "--model", type=Path, required=True)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--gen-tokens", type=int, default=16)
    ap.add_argument("--prompt-tokens", type=int, default=8)
    ap.add_argument("--inkling", type=Path, default=ROOT / "build" / "inkling")
    ap.add_argument("--tokenizer", type=Path, default=ROOT / "tests" / "data" / "inkling")
    ap.add_argument("--port", type=int, default=18473)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--skip-bench", action="store_true", help="serve only")
    a = ap.parse_args()

    n = a.clients
    with tempfile.TemporaryDirectory() as tmp:
        folder = model_folder(a.model, a.tokenizer, Path(tmp))
        cmd = [str(a.inkling), "serve", "-m", str(folder), "--parallel", str(n), "--port",
               str(a.port), "-t", str(a.threads)]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_ready(a.port, proc, 600)
            rng = random.Random(7)
            stream(a.port, [rng.randrange(1000, 100000) for _ in range(a.prompt_tokens)], 2, [])
            stamps = [[] for _ in range(n)]
            prompts = [[rng.randrange(1000, 100000) for _ in range(a.prompt_tokens)]
                       for _ in range(n)]
            ts = [threading.Thread(target=stream, args=(a.port, prompts[i], a.gen_tokens,
                                                        stamps[i])) for i in range(n)]
            t0 = time.time()
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            wall = time.time() - t0
        finally:
            proc.terminate()
            proc.wait(30)
    if any(len(s) < 2 for s in stamps):
        sys.exit("a stream returned fewer than 2 tokens")
    lo = max(s[0] for s in stamps)   # every stream decoding from here ...
    hi = min(s[-1] for s in stamps)  # ... to here
    inside = sum(1 for s in stamps for x in s if lo < x <= hi)
    serve_tok_s = inside / (hi - lo) if hi > lo and inside else float("nan")
    total = sum(len(s) for s in stamps)
    print(f"serve --parallel {n}: {total} tokens in {wall:.1f} s; "
          f"{inside} tokens while all {n} streams decoded: {serve_tok_s:.3f} tok/s")
    out = {"clients": n, "serve_tok_s": serve_tok_s, "serve_window_tokens": inside,
           "serve_wall_s": wall}
    if not a.skip_bench:
        r = subprocess.run([str(a.inkling), "bench", "-m", str(a.model), "--prompt-tokens",
                            str(a.prompt_tokens), "--gen-tokens", str(a.gen_tokens), "--batch",
                            str(n), "--json", "-t", str(a.threads)],
                           capture_output=True, text=True, check=True)
        j = json.loads(r.stdout[r.stdout.index("{"):r.stdout.rindex("}") + 1])
        out["step_tok_s"] = j["batch_decode_tok_s"]
        out["serve_over_step"] = serve_tok_s / j["batch_decode_tok_s"]
        print(f"Engine::step over {n} sessions: {j['batch_decode_tok_s']:.3f} tok/s; "
              f"server / step = {out['serve_over_step']:.3f}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
