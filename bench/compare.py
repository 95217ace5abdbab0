#!/usr/bin/env python3
"""Side-by-side speed on one benchmark slice, in one run: `inkling bench --json` and transformers.

    python bench/compare.py -m models/inkling-small-slice-bf16 [--threads 2] [--prompt-tokens 64]
        [--gen-tokens 8] [--dtypes bf16,f32] [--inkling build-perf/inkling (else build/inkling)]

Loads the OG (`model.llm.*`) slice into transformers' InklingForCausalLM (renames and gate/up
de-interleave from tools/og_layout.py, tensor by tensor, no f32 copy of a bf16 model), or an
Inkling 2 folder (tools/make_bench_inkling2.py) into Inkling2(Loop)ForCausalLM, times
prefill of random ids and cached greedy decode on CPU with the same thread count, then prints our
speed-up over each. A dtype whose weights do not fit in memory is skipped with a note (f32 needs
2x the checkpoint size). MLX is not compared here (no mlx-cpu wheel on this machine).
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def mem_available() -> int:
    """MemAvailable from /proc/meminfo (free + reclaimable page cache), in bytes."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def run_inkling(a) -> dict:
    cmd = [a.inkling, "bench", "-m", str(a.model), "--threads", str(a.threads), "--json",
           "--prompt-tokens", str(a.prompt_tokens), "--gen-tokens", str(a.gen_tokens)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def load_hf_inkling2(model_dir: Path, dtype):
    """Inkling 2 (Mini or Small) in the original layout: transformers reads it itself (its
    conversion mapping renames and splits on load; NVFP4 / MXFP8 experts are dequantized)."""
    from transformers import Inkling2ForCausalLM, Inkling2LoopForCausalLM

    cfg = json.loads((model_dir / "config.json").read_text())
    tc = cfg.get("text_config", cfg)
    looped = "loop" in tc.get("model_type", cfg.get("model_type", ""))
    cls = Inkling2LoopForCausalLM if looped else Inkling2ForCausalLM
    return cls.from_pretrained(model_dir, dtype=dtype, attn_implementation="eager").eval()


def load_hf(model_dir: Path, dtype):
    cfg = json.loads((model_dir / "config.json").read_text())
    if cfg.get("text_config", cfg).get("model_type", cfg.get("model_type", "")).startswith("inkling2"):
        return load_hf_inkling2(model_dir, dtype)
    import torch
    from safetensors import safe_open
    from transformers import InklingForCausalLM

    sys.path.insert(0, str(ROOT / "tools"))
    import og_layout as mf  # the OG <-> HF converter the fixtures use

    og_cfg = json.loads((model_dir / "config.json").read_text())
    tc = mf.text_config_from_og(og_cfg)
    tc.torch_dtype = dtype
    with torch.device("meta"):
        model = InklingForCausalLM(tc)
    renames = {o: h for h, o in mf._TOP_RENAMES}
    for i in range(tc.num_hidden_layers):
        for h, o in mf._LAYER_RENAMES:
            renames[f"model.llm.layers.{i}.{o}"] = f"model.layers.{i}.{h}"
    sd = {}
    files = sorted(model_dir.glob("*.safetensors"))
    for f in files:
        with safe_open(str(f), framework="pt") as st:
            for k in st.keys():
                if not k.startswith("model.llm."):
                    continue
                t = st.get_tensor(k).to(dtype)
                p = k.replace("model.llm.layers.", "model.layers.")
                if k.endswith("mlp.w13_dn.weight"):
                    g, u = mf.deinterleave_rows(t, 0)
                    sd[p.replace("w13_dn.weight", "gate_proj.weight")] = g
                    sd[p.replace("w13_dn.weight", "up_proj.weight")] = u
                elif k.endswith("mlp.experts.w13_weight"):
                    g, u = mf.deinterleave_rows(t, 1)
                    sd[p.replace("w13_weight", "gate_up_proj")] = torch.cat([g, u], dim=1)
                elif k.endswith("shared_experts.shared_w13_weight"):
                    g, u = mf.deinterleave_rows(t, 1)
                    sd[p.replace("shared_w13_weight", "gate_proj")] = g
                    sd[p.replace("shared_w13_weight", "up_proj")] = u
                else:
                    sd[renames[k]] = t
                del t
    model.load_state_dict(sd, strict=True, assign=True)
    return model.eval()


def time_hf(model, a) -> dict:
    import torch

    g = torch.Generator().manual_seed(1234)
    V = model.config.unpadded_vocab_size or model.config.vocab_size
    ids = torch.randint(0, V, (1, a.prompt_tokens), generator=g)
    with torch.no_grad():
        t0 = time.perf_counter()
        out = model(input_ids=ids, use_cache=True)
        prefill_s = time.perf_counter() - t0
        past, tok = out.past_key_values, out.logits[:, -1:].argmax(-1)
        t0 = time.perf_counter()
        for _ in range(a.gen_tokens):
            out = model(input_ids=tok, past_key_values=past, use_cache=True)
            past, tok = out.past_key_values, out.logits[:, -1:].argmax(-1)
        decode_s = time.perf_counter() - t0
    return {"prefill_tok_s": a.prompt_tokens / prefill_s, "decode_tok_s": a.gen_tokens / decode_s}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-m", "--model", type=Path, required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt-tokens", type=int, default=64)
    ap.add_argument("--gen-tokens", type=int, default=8)
    ap.add_argument("--dtypes", default="bf16,f32")
    # build-perf/ where a perf build exists, else README's build/.
    default_bin = ROOT / "build-perf" / "inkling"
    if not default_bin.exists():
        default_bin = ROOT / "build" / "inkling"
    ap.add_argument("--inkling", default=str(default_bin))
    a = ap.parse_args(argv)

    import torch

    torch.set_num_threads(a.threads)
    before = run_inkling(a)
    rows = []
    ckpt = sum(f.stat().st_size for f in a.model.glob("*.safetensors"))
    avail = mem_available()
    for name in a.dtypes.split(","):
        dtype = {"bf16": torch.bfloat16, "f32": torch.float32}[name]
        need = ckpt * (2 if name == "f32" else 1) * 1.1
        if need > avail:
            rows.append((f"transformers {name}", {"skipped": f"needs ~{need / 1e9:.0f} GB, {avail / 1e9:.0f} GB free"}))
            continue
        model = load_hf(a.model, dtype)
        impl = getattr(model.config, "_attn_implementation", None) or "default"
        experts = getattr(model.config, "_experts_implementation", None) or "default"
        rows.append((f"transformers {name} (attn {impl}, experts {experts})", time_hf(model, a)))
        del model
        avail = mem_available()

    # Ours again after the others: on a shared machine speed drifts; the speed-ups use the mean.
    after = run_inkling(a)
    ours = {k: 0.5 * (before[k] + after[k]) for k in ("prefill_tok_s", "decode_tok_s")}
    rows = [(f"inkling.cpp, run before ({before.get('numerics', 'exact')} numerics)", before),
            ("inkling.cpp, run after", after), ("inkling.cpp, mean of the two", ours)] + rows
    print(f"slice: {a.model}  threads: {a.threads}  prompt {a.prompt_tokens}  gen {a.gen_tokens}")
    print(f"{'engine':42s} {'prefill tok/s':>14s} {'decode tok/s':>13s} {'ours/x prefill':>15s} {'ours/x decode':>14s}")
    for name, r in rows:
        if "skipped" in r:
            print(f"{name:42s} skipped: {r['skipped']}")
            continue
        print(f"{name:42s} {r['prefill_tok_s']:14.3f} {r['decode_tok_s']:13.3f} "
              f"{ours['prefill_tok_s'] / r['prefill_tok_s']:15.2f} {ours['decode_tok_s'] / r['decode_tok_s']:14.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
