"""The tiny real-vocabulary chat model of the Python server tests, made once per build folder."""

import argparse
import os
import shutil
import subprocess


def server_test_args() -> argparse.ArgumentParser:
    """The options every Python server test takes from CTest (tests/CMakeLists.txt)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--inkling", required=True)
    ap.add_argument("--maker", required=True)
    ap.add_argument("--tokenizer-dir", required=True)
    ap.add_argument("--work", required=True)
    return ap


def ensure_tiny_model(maker: str, tokenizer_dir: str, work: str) -> str:
    """WORK/tiny_chat_model, made by `maker` from the tokenizer files if absent; its path."""
    model = os.path.join(work, "tiny_chat_model")
    if not os.path.exists(os.path.join(model, "model.safetensors")):
        # Made aside and renamed into place: other test processes may start servers on it.
        tmp = "%s.tmp.%d" % (model, os.getpid())
        subprocess.run([maker, tmp, tokenizer_dir], check=True, stdout=subprocess.DEVNULL)
        try:
            os.rename(tmp, model)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)  # another process made it first
    return model


def start_server(inkling: str, model: str, *options: str):
    """`inkling serve -m model --port 0 -t 2 options...`, waited for until it listens; (process,
    port). Raises if it does not start."""
    proc = subprocess.Popen([inkling, "serve", "-m", model, "--port", "0", "-t", "2", *options],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    if "listening on" not in line:
        proc.kill()
        raise RuntimeError("server did not start: %r" % line)
    return proc, int(line.strip().rsplit(":", 1)[1])
