#!/usr/bin/env python3
"""schemathesis against a running `inkling serve` (issue 31): every operation of the OpenAPI
description the server serves (GET /openapi.json = docs/openapi.json) is fuzzed from its schemas
(coverage phase, then random generation, then stateful links) on the tiny random-weight model, and
every response must conform: no 5xx (not_a_server_error), a documented status, content type and
headers, a body matching the response schema. Bounded: at most `--seconds` (120) and at least
`--min-requests` (1000) generated cases, or the test fails. Exits 77 (ctest: skipped) when
schemathesis is not importable.

    python tests/server/test_schemathesis.py --inkling build/inkling \
        --maker build/make_tiny_chat_model --tokenizer-dir tests/data/inkling --work build

The acceptance checks (a schema-valid request accepted, an invalid one rejected) are not run: the
server enforces rules JSON Schema cannot state (a grammar must parse, a named tool must be among
`tools`, tool-call arguments must be a JSON object in a string, budget_tokens < max_tokens), which
such checks would report as failures of the description.
"""

import os
import re
import subprocess
import sys
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tiny_model import ensure_tiny_model, server_test_args, start_server  # noqa: E402

CHECKS = ("not_a_server_error,status_code_conformance,content_type_conformance,"
          "response_headers_conformance,response_schema_conformance")


def run_once(args, port, proc) -> bool:
    t0 = time.time()
    cmd = [sys.executable, "-m", "schemathesis.cli", "run",
           "http://127.0.0.1:%d/openapi.json" % port, "--checks", CHECKS,
           "--max-examples", str(args.max_examples), "--request-timeout", "30", "--generation-deterministic",
           "--no-shrink", "--workers", "2"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.seconds + 60,
                       cwd=args.work)  # its example folder (.schemathesis) lands there
    took = time.time() - t0
    out = r.stdout + r.stderr
    m = re.search(r"(\d+) generated", out)
    generated = int(m.group(1)) if m else 0
    alive = proc.poll() is None
    ok = r.returncode == 0 and alive and generated >= args.min_requests and took <= args.seconds
    print(out if not ok else out[-2000:])
    print("schemathesis: %d requests in %.0f s, exit %d, server %s" %
          (generated, took, r.returncode, "alive" if alive else "DEAD"))
    return ok


def main():
    ap = server_test_args()
    ap.add_argument("--seconds", type=int, default=120)
    ap.add_argument("--min-requests", type=int, default=1000)
    # Examples per operation: with 20, about 2,400 requests (the coverage phase makes most of
    # them) in about 40 s on a 2-vCPU VM, so a CI machine three times slower meets the bound.
    ap.add_argument("--max-examples", type=int, default=20)
    args = ap.parse_args()
    try:
        import schemathesis  # noqa: F401
    except ImportError:
        print("SKIP: schemathesis is not installed (pip install schemathesis)")
        return 77
    model = ensure_tiny_model(args.maker, args.tokenizer_dir, args.work)
    proc, port = start_server(args.inkling, model, "--parallel", "2", "--ctx-size", "64")
    try:
        # Two retries, each failure printed in full: about one run in ten stops inside hypothesis
        # itself (SystemError "AST constructor recursion depth mismatch" while it describes a
        # strategy on a worker thread), not at the server. (The /v1/messages 400 answered in the
        # OpenAI shape it used to find is fixed: docs/security.md.)
        for attempt in (1, 2, 3):
            ok = run_once(args, port, proc)
            if ok or proc.poll() is not None:
                break
            print("schemathesis: attempt %d failed (output above); trying once more" % attempt)
        return 0 if ok else 1
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


if __name__ == "__main__":
    sys.exit(main())
