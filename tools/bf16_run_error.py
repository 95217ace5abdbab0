#!/usr/bin/env python3
"""The reference's own bf16 error on a committed fixture: transformers' InklingForCausalLM loaded in
bfloat16 (eager attention and experts) runs the fixture's prompt teacher-forced; its logits are
compared with the fixture's float32 reference logits (ref/logits.npy) as max |diff| / max |logit|,
the figure fast numerics must not exceed (DESIGN rule 12). Writes <fixture>/ref/bf16_run.json.

    python tools/bf16_run_error.py tests/fixtures/bf16 [more fixtures...]

Needs torch and transformers (the versions in tests/fixtures/VERSIONS.txt).
"""

import json
import sys
from pathlib import Path

import numpy as np
import torch
from transformers import InklingForCausalLM


def main(argv):
    for d in map(Path, argv):
        ids = json.loads((d / "ref" / "prompt.json").read_text())["prompt_ids"]
        ref = np.load(d / "ref" / "logits.npy").astype(np.float64)
        m = InklingForCausalLM.from_pretrained(
            d / "hf", dtype=torch.bfloat16, attn_implementation="eager", experts_implementation="eager"
        ).eval()
        with torch.no_grad():
            out = m(input_ids=torch.tensor([ids]), use_cache=False).logits[0].float().numpy()
        out = out[:, : ref.shape[1]].astype(np.float64)
        ratio = float(np.abs(out - ref).max() / np.abs(ref).max())
        top1 = float((out.argmax(-1) == ref.argmax(-1)).mean())
        res = {"max_rel_diff": ratio, "top1": top1, "positions": len(ids),
               "how": "transformers bf16 (eager) vs the fixture's f32 reference logits"}
        (d / "ref" / "bf16_run.json").write_text(json.dumps(res, indent=1) + "\n")
        print(d, res)


if __name__ == "__main__":
    main(sys.argv[1:])
