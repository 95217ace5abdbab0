#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/) from the test
fixtures and tests/data/inkling: small, real-ish inputs in each target's input format
(see the comment at the top of tests/fuzz/fuzz_<target>.cpp). Deterministic; rerun to refresh."""
import base64, json, os, struct, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures")
DATA = os.path.join(ROOT, "tests", "data", "inkling")
OUT = os.path.join(ROOT, "tests", "fuzz", "corpus")
SEP = b"\n@@@@\n"


def put(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def st_image(tensors, metadata=None):
    """safetensors bytes for [(name, dtype, shape, nbytes)] with patterned data."""
    header, off = {}, 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dt, shape, n in tensors:
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + n]}
        off += n
    h = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack("<Q", len(h)) + h + bytes((7 * i) & 255 for i in range(off))


def fixture_header(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return f.read(n)


def safetensors():
    put("safetensors", "mixed", st_image([("a", "F32", [2, 3], 24), ("b", "BF16", [4], 8),
                                           ("c", "U8", [0, 5], 0), ("d", "I64", [1], 8),
                                           ("e", "F8_E4M3", [2, 2], 4)], {"format": "pt"}))
    put("safetensors", "empty", st_image([]))
    put("safetensors", "meta_null", st_image([("x", "F16", [3], 6)], None).replace(b'{"x"', b'{"__metadata__":null,"x"', 1))
    h = fixture_header(os.path.join(FIX, "defaults", "hf", "model.safetensors"))
    j = json.loads(h)
    small = [(k, v["dtype"], v["shape"], v["data_offsets"][1] - v["data_offsets"][0])
             for k, v in list(j.items())[:6] if k != "__metadata__" and
             v["data_offsets"][1] - v["data_offsets"][0] <= 4096]
    put("safetensors", "fixture_subset", st_image(small))


def configs():
    for sub in ["defaults/hf", "defaults/og", "full/hf", "full/og", "hfspell/hf",
                "quant_mlx4/model", "quant_mlxvlm/model", "quant_nvfp4/model", "inkling2/hf",
                "inkling2_loop/tf", "inkling2_loop_q/hf", "inkling2_mxfp8/tf", "inkling2_loop_mlx/mlx"]:
        p = os.path.join(FIX, sub, "config.json")
        if os.path.exists(p):
            cfg = open(p, "rb").read()
            put("config", sub.replace("/", "_"), cfg)
            st = os.path.join(FIX, sub, "model.safetensors")
            if os.path.exists(st) and os.path.getsize(st) < (4 << 20):
                put("model_load", sub.replace("/", "_"), cfg + SEP + fixture_header(st))


MTP_MATRICES = tuple(m + ".weight" for m in (
    "input_proj", "attn.wq_du", "attn.wk_dv", "attn.wv_dv", "attn.wr_du", "attn.wo_ud",
    "mlp.w13_dn", "mlp.w2_md"))


def mtp_configs():
    """Configs with mtp_config (the demo model, the random 3-depth fixture) and a model-load seed
    whose one safetensors header holds the trunk's tensors and the MTP depths' (offsets shifted
    past the trunk's data), so the fuzzer reaches the MTP binding."""
    demo = os.path.join(ROOT, "models", "inkling-demo", "config.json")
    if os.path.exists(demo):
        put("config", "demo_mtp", open(demo, "rb").read())
    multi = os.path.join(FIX, "mtp", "multi")
    if not os.path.exists(os.path.join(multi, "config.json")):
        return
    cfg = open(os.path.join(multi, "config.json"), "rb").read()
    put("config", "mtp_multi", cfg)
    trunk = json.loads(fixture_header(os.path.join(multi, "model.safetensors")))
    mtp = json.loads(fixture_header(os.path.join(multi, "mtp.safetensors")))
    shift = max(v["data_offsets"][1] for k, v in trunk.items() if k != "__metadata__")
    for k, v in mtp.items():
        if k == "__metadata__":
            continue
        a, b = v["data_offsets"]
        trunk[k] = {**v, "data_offsets": [a + shift, b + shift]}
    put("model_load", "mtp_multi", cfg + SEP + json.dumps(trunk, separators=(",", ":")).encode())
    # The same with the depths' matrices MLX affine 4-bit g32 as `inkling quantize --mtp quantize`
    # writes them (codes, scales, biases; rows of 48 or 72 stay floats, recorded false).
    end = max(v["data_offsets"][1] for k, v in trunk.items() if k != "__metadata__")
    quant = {"group_size": 32, "bits": 4, "mode": "affine"}
    for k in sorted(trunk):
        v = trunk[k]
        if not k.startswith("model.mtp.layers.") or not k.endswith(MTP_MATRICES):
            continue
        rows, cols = v["shape"]
        module = k[: -len(".weight")]
        if cols % 32:
            quant[module] = False
            continue
        for name, dt, shape in ((k, "U32", [rows, cols // 8]), (module + ".scales", "BF16",
                                [rows, cols // 32]), (module + ".biases", "BF16", [rows, cols // 32])):
            n = shape[0] * shape[1] * (4 if dt == "U32" else 2)
            trunk[name] = {"dtype": dt, "shape": shape, "data_offsets": [end, end + n]}
            end += n
    qcfg = json.loads(cfg)
    qcfg["quantization"] = qcfg["quantization_config"] = quant
    put("model_load", "mtp_multi_q4", json.dumps(qcfg).encode() + SEP +
        json.dumps(trunk, separators=(",", ":")).encode())


def byte_alphabet():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def tokenizers():
    real = json.load(open(os.path.join(DATA, "tokenizer.json")))
    alpha = byte_alphabet()
    merges = [b"he", b"ll", b"hell", b"hello", b" w", b"or", b" wor", b"ld", b" world"]
    ranks = [bytes([b]) for b in range(256)] + merges
    vocab = {"".join(alpha[c] for c in tok): i for i, tok in enumerate(ranks)}

    def split_pair(tok):  # the merge that builds `tok` from two lower-ranked tokens
        for k in range(1, len(tok)):
            if tok[:k] in ranks[:ranks.index(tok)] and tok[k:] in ranks[:ranks.index(tok)]:
                return ["".join(alpha[c] for c in tok[:k]), "".join(alpha[c] for c in tok[k:])]
    hf = dict(real)
    hf["model"] = dict(real["model"], vocab=vocab, merges=[split_pair(t) for t in merges])
    hf["added_tokens"] = [dict(real["added_tokens"][1], id=len(ranks)),
                          dict(real["added_tokens"][3], id=len(ranks) + 1)]
    put("tokenizer_load", "hf_json", b"\x00" + json.dumps(hf, ensure_ascii=False).encode())
    tik = b"".join(base64.b64encode(t) + b" %d\n" % i for i, t in enumerate(ranks))
    specials = json.dumps({"special_tokens": [{"id": len(ranks), "content": "<|endoftext|>"}],
                           "pat_str": hf["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"]})
    put("tokenizer_load", "tiktoken", b"\x01" + tik + SEP + specials.encode())
    cfg = json.dumps({"added_tokens_decoder": {str(len(ranks)): {"content": "<|im_end|>", "special": True}}})
    put("tokenizer_load", "tiktoken_config", b"\x01" + tik + SEP + specials.encode() + SEP + cfg.encode())


def tokenizer_texts():
    lines = [l for l in open(os.path.join(FIX, "tokenizer", "corpus.jsonl"), encoding="utf-8").read().split("\n") if l.strip()]
    for i, line in enumerate(lines[::400][:12]):
        e = json.loads(line)
        put("tokenizer", "text%02d" % i, bytes([2 * (i % 4)]) + e["text"].encode())
        put("tokenizer", "ids%02d" % i, bytes([1 + 2 * (i % 4)]) + struct.pack("<%di" % len(e["hf"]), *e["hf"]))
    put("tokenizer", "specials", b"\x02<|message_user|><|content_text|>Hi<|end_message|>\xff\xc3")


def jinja():
    lines = [l for l in open(os.path.join(FIX, "jinja", "cases.jsonl"), encoding="utf-8").read().split("\n") if l.strip()]
    for i, line in enumerate(lines[::6]):
        e = json.loads(line)
        put("jinja", "case%02d" % i, e["template"].encode() + SEP + json.dumps(e.get("context", {})).encode())
    chat = open(os.path.join(DATA, "chat_template.jinja"), "rb").read()
    req = json.loads(open(os.path.join(FIX, "chat", "renders.jsonl")).readline())["request"]
    put("jinja", "chat_template", chat + SEP + json.dumps(dict(req, add_generation_prompt=True)).encode())


def chat_parser():
    C = {n: i for i, n in enumerate(["endoftext", "message_user", "message_model", "message_system",
         "message_tool", "content_text", "end_sampling", "content_thinking", "end_message",
         "content_tool_error", "invoke_tool_json", "invoke_tool_text"])}

    def text(s):
        out = b""
        s = s.encode()
        while s:
            n = min(8, len(s))
            out += bytes([0x30 + 8 * 20 + (n - 1)]) + s[:n]  # tag % 8 == n - 1, tag >= 0x30
            s = s[n:]
        return out
    ctl = lambda n: bytes([C[n]])
    put("chat_parser", "reason_then_text", b"\x05" + ctl("content_thinking") + text("Let me think.") +
        ctl("end_message") + ctl("message_model") + ctl("content_text") + text("Hello there!") + ctl("end_sampling"))
    put("chat_parser", "tool_call", b"\x05" + ctl("content_thinking") + text("need weather") + ctl("end_message") +
        ctl("message_model") + text("get_weather") + ctl("invoke_tool_json") +
        text('{"name": "get_weather", "args": {"city": "Paris", "n": [1, 2.5, {"x": null}]}}') +
        ctl("end_message") + ctl("end_sampling"))
    put("chat_parser", "truncated_call", b"\x04" + text("f") + ctl("invoke_tool_json") + text('{"name": "f", "args": {"a": "b'))
    put("chat_parser", "plain", b"\x0b" + text("just text, no header") + ctl("endoftext"))


def api_requests():
    reqs = {
        "chat": {"model": "inkling", "messages": [{"role": "system", "content": "Be brief."},
                 {"role": "user", "content": "Hi"}], "temperature": 0.7, "max_tokens": 16, "stream": True,
                 "stream_options": {"include_usage": True}, "stop": ["\n\n"], "seed": 3},
        "chat_tools": {"messages": [{"role": "user", "content": "Weather in Paris?"},
                       {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
                        "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
                       {"role": "tool", "tool_call_id": "c1", "content": "sunny"}],
                       "tools": [{"type": "function", "function": {"name": "get_weather", "description": "d",
                        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
                       "tool_choice": "auto", "reasoning_effort": "low", "logprobs": True, "top_logprobs": 2},
        "chat_parts": {"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}],
                       "chat_template_kwargs": {"reasoning_effort": 0.2}, "logit_bias": {"12": -100}},
        "completion": {"prompt": "Once upon a time", "max_tokens": 8, "echo": True, "top_p": 0.9, "top_k": 40},
        "completion_ids": {"prompt": [976, 9029, 328], "max_tokens": 2, "presence_penalty": 0.5, "frequency_penalty": 0.1},
        "tokenize": {"content": "Hello <|endoftext|>", "add_special": True, "with_pieces": True},
        "tokenize_chat": {"messages": [{"role": "user", "content": "Hi"}], "add_generation_prompt": True},
        "detokenize": {"tokens": [976, 9029, 200010]},
    }
    for name, r in reqs.items():
        put("api_request", name, json.dumps(r))


if __name__ == "__main__":
    safetensors(); configs(); mtp_configs(); tokenizers(); tokenizer_texts(); jinja(); chat_parser(); api_requests()
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(OUT) for f in fs)
    print("wrote %s (%d bytes)" % (OUT, total), file=sys.stderr)
