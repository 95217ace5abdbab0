#!/usr/bin/env python3
"""Soak test for `inkling serve` on 127.0.0.1 (docs/security.md).

Starts the server (prefix cache on), runs N client threads for a fixed time with a mix of
greedy chat / completion requests (streaming and not), clients that hang up mid-answer, bad
requests (broken JSON, 1e400, wrong method, oversized chunked and gzip bodies, a slowloris),
and checks: no crash, every good greedy request gets exactly the answer a solo run gave,
every bad one its 4xx, resident memory flat after warm-up. Prints the RSS curve and the counts
as JSON; exits 1 on any failure. Standard library only.

    python3 tools/soak.py --inkling build/inkling --model build/tiny_chat_model --minutes 10
"""
import argparse
import gzip
import http.client
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

PROMPTS = [f"Tell me about topic {i} and its history" for i in range(24)]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


class Soak:
    def __init__(self, port, seed):
        self.port = port
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.counts = {}
        self.failures = []
        self.reference = {}

    def count(self, what):
        with self.lock:
            self.counts[what] = self.counts.get(what, 0) + 1

    def fail(self, what):
        with self.lock:
            if len(self.failures) < 50:
                self.failures.append(what)
            self.counts["failures"] = self.counts.get("failures", 0) + 1

    def conn(self, timeout=60):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def post(self, path, body, headers=None, timeout=60):
        c = self.conn(timeout)
        try:
            h = {"Content-Type": "application/json"}
            h.update(headers or {})
            c.request("POST", path, body=body, headers=h)
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def chat_body(self, i, stream):
        return json.dumps({"messages": [{"role": "user", "content": PROMPTS[i]}],
                           "max_tokens": 8, "temperature": 0, "stream": stream})

    def solo(self, i):
        st, body = self.post("/v1/chat/completions", self.chat_body(i, False))
        assert st == 200, (st, body)
        return json.loads(body)["choices"][0]["message"].get("content") or ""

    def check_chat(self, rng):
        i = rng.randrange(len(PROMPTS))
        st, body = self.post("/v1/chat/completions", self.chat_body(i, False))
        if st != 200:
            return self.fail(f"chat {i}: status {st}: {body[:200]!r}")
        text = json.loads(body)["choices"][0]["message"].get("content") or ""
        if text != self.reference[i]:
            return self.fail(f"chat {i}: {text!r} != solo {self.reference[i]!r}")
        self.count("chat_ok")

    def check_stream(self, rng):
        i = rng.randrange(len(PROMPTS))
        st, body = self.post("/v1/chat/completions", self.chat_body(i, True))
        if st != 200:
            return self.fail(f"stream {i}: status {st}")
        text, done = "", False
        for line in body.decode().split("\n"):
            if line == "data: [DONE]":
                done = True
            elif line.startswith("data: "):
                for ch in json.loads(line[6:]).get("choices", []):
                    text += ch.get("delta", {}).get("content") or ""
        if not done or text != self.reference[i]:
            return self.fail(f"stream {i}: {text!r} (done={done}) != solo {self.reference[i]!r}")
        self.count("stream_ok")

    def completion(self, rng):
        body = json.dumps({"prompt": "Once upon a time " + str(rng.randrange(1000)),
                           "max_tokens": 6, "temperature": 0.7, "seed": rng.randrange(1 << 30)})
        st, out = self.post("/v1/completions", body)
        if st != 200 or "choices" not in json.loads(out):
            return self.fail(f"completion: status {st}")
        self.count("completion_ok")

    def disconnect(self, rng):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=30)
        body = json.dumps({"messages": [{"role": "user", "content": "Write a long story"}],
                           "max_tokens": 200, "temperature": 0, "ignore_eos": True,
                           "stream": rng.random() < 0.5}).encode()
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                  b"application/json\r\nContent-Length: " + str(len(body)).encode() +
                  b"\r\n\r\n" + body)
        time.sleep(rng.random() * 0.2)
        s.close()
        self.count("disconnect")

    def bad(self, rng):
        kind = rng.randrange(6)
        if kind == 0:
            st, _ = self.post("/v1/chat/completions", "{broken")
            want = 400
        elif kind == 1:
            st, _ = self.post("/v1/chat/completions",
                              '{"messages":[{"role":"user","content":"x"}],"top_p":1e400}')
            want = 400
        elif kind == 2:
            c = self.conn()
            c.request("GET", "/v1/completions")
            r = c.getresponse()
            r.read()
            st = r.status
            c.close()
            want = 405
        elif kind == 3:  # 12 MiB chunked (limit 8 MiB)
            def chunks():
                for _ in range(12):
                    yield b" " * (1 << 20)
            try:
                c = self.conn()
                c.request("POST", "/tokenize", body=chunks(),
                          headers={"Content-Type": "application/json"}, encode_chunked=True)
                r = c.getresponse()
                r.read()
                st = r.status
                c.close()
            except (ConnectionError, BrokenPipeError):
                st = 413  # the server stopped reading after its limit
            want = 413
        elif kind == 4:  # gzip bomb: 40 MiB inflated
            z = gzip.compress(b'{"content":"' + b"x" * (40 << 20) + b'"}')
            st, _ = self.post("/tokenize", z, {"Content-Encoding": "gzip"})
            want = 413
        else:  # slowloris for a moment
            s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\n")
            time.sleep(0.5)
            s.sendall(b"X-A: 1\r\n")
            s.close()
            self.count("slow_client")
            return
        if st != want:
            return self.fail(f"bad request kind {kind}: status {st}, want {want}")
        self.count("bad_ok")

    def worker(self, seed, until):
        rng = random.Random(seed)
        actions = [self.check_chat] * 4 + [self.check_stream] * 3 + [self.completion] * 2 + \
                  [self.disconnect, self.bad]
        while time.time() < until:
            try:
                rng.choice(actions)(rng)
            except Exception as e:  # noqa: BLE001 - every unexpected error is a failure
                self.fail(f"{type(e).__name__}: {e}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--inkling", default="build/inkling")
    ap.add_argument("--model", default="build/tiny_chat_model")
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--prefix-cache-mb", default="64")
    ap.add_argument("--sample-s", type=float, default=30)
    ap.add_argument("--max-growth-mb", type=float, default=32,
                    help="largest allowed RSS rise from the first sample after warm-up")
    ap.add_argument("--maker", help="make_tiny_chat_model: builds --model first if missing")
    ap.add_argument("--tokenizer-dir", help="tokenizer folder for --maker")
    args = ap.parse_args()
    if args.maker and not os.path.exists(os.path.join(args.model, "model.safetensors")):
        # Made aside and renamed into place: other test processes may start servers on it.
        tmp = "%s.tmp.%d" % (args.model, os.getpid())
        subprocess.run([args.maker, tmp, args.tokenizer_dir], check=True,
                       stdout=subprocess.DEVNULL)
        try:
            os.rename(tmp, args.model)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)  # another process made it first
    srv = subprocess.Popen([args.inkling, "serve", "-m", args.model, "--port", "0", "-t", "2",
                            "--parallel", "4", "--prefix-cache-mb", args.prefix_cache_mb],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = srv.stdout.readline()
    port = int(line.strip().rsplit(":", 1)[1])
    soak = Soak(port, 1)
    for i in range(len(PROMPTS)):
        soak.reference[i] = soak.solo(i)
    t0 = time.time()
    until = t0 + args.minutes * 60
    threads = [threading.Thread(target=soak.worker, args=(100 + k, until))
               for k in range(args.clients)]
    for t in threads:
        t.start()
    curve = []
    while time.time() < until and srv.poll() is None:
        curve.append((round(time.time() - t0), rss_kib(srv.pid)))
        time.sleep(min(args.sample_s, max(0.1, until - time.time())))
    for t in threads:
        t.join()
    crashed = srv.poll() is not None
    curve.append((round(time.time() - t0), rss_kib(srv.pid) if not crashed else -1))
    srv.send_signal(signal.SIGTERM)
    try:
        code = srv.wait(timeout=30)
    except subprocess.TimeoutExpired:
        srv.kill()
        code = -9
    warm = curve[min(len(curve) - 1, max(1, len(curve) // 5))][1]
    growth_mb = (max(r for _, r in curve[len(curve) // 5:]) - warm) / 1024
    report = {"minutes": args.minutes, "clients": args.clients, "counts": soak.counts,
              "rss_curve_kib": curve, "growth_after_warmup_mb": round(growth_mb, 1),
              "exit_code": code, "crashed": crashed, "failures": soak.failures[:20]}
    print(json.dumps(report, indent=1))
    ok = not crashed and code == 0 and not soak.failures and growth_mb <= args.max_growth_mb
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
