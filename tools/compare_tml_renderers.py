#!/usr/bin/env python3
"""Compares the chat parity fixture with Thinking Machines' own renderer (`tml-renderers`, TMLv0).

tests/fixtures/chat/renders.jsonl holds OpenAI chat requests rendered by transformers'
apply_chat_template with tests/data/inkling/chat_template.jinja and tokenized by the HF
tokenizer (tools/make_chat_fixtures.py). This script renders every request it can express in
tml-renderers' types with `tml_renderers.v0.Renderer` and compares the token ids.

Two conversions are measured:

* native  — the request is translated into native `tml_renderers.chat.Message`s following the
            template's semantics wherever TMLv0 has a type for it (see `to_native`): effort
            strings mapped with the template's table and passed to
            `render_for_completion_with_effort` (0.9 when absent, as the template defaults);
            tools as a System message named `tool_declare` holding `ToolDeclareJson` (the
            package's own spelling: `from_oss` maps role `tool_declare` to exactly that);
            `reasoning_content` as a `Thinking` message; tool-result names resolved from
            `tool_call_id` as the template does; one `ModelEndSampling` after every assistant
            turn. TMLv0 prompts end with `<|end_message|>` (the model samples its own header), so
            for `add_generation_prompt` (default true) `<|message_model|>` (200001) is appended
            before comparing; that is the only adjustment.
* oss     — the package's own OpenAI-dict conversion, `chat.OpenAIMessage.from_oss_messages`
            (tools prepended as a `{"role": "tool_declare", "content": json}` message, the
            Tinker cookbook's convention; arguments passed as the client sent them), with the
            same effort and generation-prompt handling. This shows what the package's converter
            does differently from the template.

Each case lands in one group: identical; differing (first differing position and a decoded
snippet of each side, plus the convention the difference falls under); not expressible (why).
Cases identical under the native conversion are written to tests/fixtures/chat/tml_ids.jsonl as
{"request": ..., "ids": [...], "appended": [...]} where `ids` equals the fixture ids (tml ids plus
`appended`, the generation prompt) so a C++ test can use them.

Usage (offline; needs only tml-renderers, which bundles its o200k tokenizer):
    python3 tools/compare_tml_renderers.py [--verbose] [--no-write] [--json OUT]
"""

import argparse
import collections
import copy
import json
import os
import sys

from tml_renderers import chat, tokenizers, v0

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data", "inkling")
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "chat", "renders.jsonl")
OUT_IDS = os.path.join(ROOT, "tests", "fixtures", "chat", "tml_ids.jsonl")

MESSAGE_MODEL = 200001
EFFORT_TABLE = {"none": 0.0, "minimal": 0.1, "low": 0.2, "medium": 0.7, "high": 0.9, "max": 0.99}

A, K, M = chat.Author, chat.AuthorKind, chat.Message


class NotExpressible(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Request preparation, as tools/make_chat_fixtures.py and the engine do
# ---------------------------------------------------------------------------------------------

def prepare(request):
    messages = copy.deepcopy(request.get("messages", []))
    for m in messages:
        for tc in m.get("tool_calls") or []:
            fn = tc.get("function") if isinstance(tc, dict) else None
            if isinstance(fn, dict) and isinstance(fn.get("arguments"), str):
                fn["arguments"] = json.loads(fn["arguments"])
    kwargs = {}
    if request.get("reasoning_effort") is not None:
        kwargs["reasoning_effort"] = request["reasoning_effort"]
    kwargs.update(request.get("chat_template_kwargs") or {})
    return messages, request.get("tools"), request.get("add_generation_prompt", True), kwargs


def template_effort(kwargs):
    """The template's emit_thinking_effort() value (the fixture row rendered, so it is valid)."""
    v = kwargs.get("reasoning_effort")
    if v is None:
        return 0.9
    if isinstance(v, str):
        return EFFORT_TABLE[v.strip()]
    try:
        return float(v)
    except (TypeError, ValueError):
        return 0.0


# ---------------------------------------------------------------------------------------------
# Native conversion (template semantics -> TMLv0 types)
# ---------------------------------------------------------------------------------------------

MEDIA_TYPES = {"image", "input_image", "image_url", "audio", "input_audio", "audio_url"}
TEXT_TYPES = {"text", "input_text"}
REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")  # transformers' aliasing order


def content_parts(content, where):
    """Template content dispatch -> list of text strings (media cannot be expressed as ids)."""
    if isinstance(content, str):
        return [content]
    if not content:  # None, missing, [] -> nothing
        return []
    out = []
    for part in content:
        if isinstance(part, str):
            out.append(part)
            continue
        typ = part.get("type")
        if typ is None or typ in TEXT_TYPES:
            t = part.get("text")
            out.append(t if isinstance(t, str) else "")
        elif typ in MEDIA_TYPES:
            raise NotExpressible(
                f"{where}: media part {typ!r} - the template emits a fixed placeholder token "
                "(<|unused_200054|> / <|unused_200053|><|audio_end|>); TMLv0 needs a real "
                "ImagePointer/AudioPointer and renders an image-asset or dMel span, not ids")
        else:
            raise NotExpressible(f"{where}: part type {typ!r}")  # template raises anyway
    return out


def tool_spec(tool):
    fn = tool.get("function", tool)
    return chat.ToolSpecJson(tool.get("type") or "function", fn["name"],
                             fn.get("description") or "", fn.get("parameters") or {})


def tool_result_name(messages, m):
    if m.get("name"):
        return m["name"]
    name = None
    if m.get("tool_call_id"):
        for other in messages:  # the template scans the whole list; the last match wins
            for tc in other.get("tool_calls") or []:
                if tc.get("id") == m["tool_call_id"]:
                    name = (tc.get("function") or {}).get("name")
    return name or None


def to_native(messages, tools):
    out = []
    if tools:
        out.append(M(chat.ToolDeclareJson([tool_spec(t) for t in tools]), A(K.System, "tool_declare")))
    for i, m in enumerate(messages):
        role = m.get("role")
        where = f"messages[{i}]"
        if role in ("system", "user"):
            kind = K.System if role == "system" else K.User
            out += [M(chat.Text(t), A(kind)) for t in content_parts(m.get("content"), where)]
        elif role == "assistant":
            # transformers fills reasoning_content from the first non-None of these fields
            reasoning = next((m[k] for k in REASONING_FIELDS if m.get(k) is not None), None)
            if reasoning:
                out.append(M(chat.Thinking(reasoning), A(K.Model)))
            out += [M(chat.Text(t), A(K.Model)) for t in content_parts(m.get("content"), where)]
            for tc in m.get("tool_calls") or []:
                fn = tc["function"]
                args = fn.get("arguments") or {}
                targs = [chat.ToolArg(k, json.dumps(v, ensure_ascii=False)) for k, v in args.items()]
                out.append(M(chat.InvokeTool(chat.StructuredToolCall(fn["name"], targs)), A(K.Model)))
            out.append(M(chat.ModelEndSampling(), A(K.Model)))
        elif role == "tool":
            c = m.get("content")
            out.append(M(chat.Text(c if isinstance(c, str) else ""),
                         A(K.Tool, tool_result_name(messages, m))))
        else:
            raise NotExpressible(f"{where}: role {role!r}")
    return out


def to_oss(request):
    """The package's own OpenAI-dict path (from_oss_messages), cookbook tool_declare message."""
    messages = copy.deepcopy(request.get("messages", []))
    tools = request.get("tools")
    if tools:
        messages.insert(0, {"role": "tool_declare", "content": json.dumps(tools, ensure_ascii=False)})
    try:
        return chat.OpenAIMessage.from_oss_messages(messages)
    except Exception as e:  # noqa: BLE001
        raise NotExpressible(f"from_oss_messages rejects it: {e}")


# ---------------------------------------------------------------------------------------------
# Rendering and comparison
# ---------------------------------------------------------------------------------------------

def render_ids(renderer, msgs, effort):
    spans, _parser = renderer.render_for_completion_with_effort(msgs, effort)
    ids = []
    for s in spans:
        sp = s.span
        if not isinstance(sp, chat.EncodedTextTokenSpan):
            raise NotExpressible(f"renderer produced a {type(sp).__name__}")
        ids += list(sp.tokens)
    return ids


def _segment(text, start):
    """The JSON text that follows the last `start` marker, up to <|end_message|>."""
    i = text.rfind(start)
    return text[i + len(start):].split("<|end_message|>")[0]


def _json_kind(ref_text, got_text, marker):
    """Why two JSON blocks differ: value, nested key order, number spelling (or both of the last)."""
    a, b = _segment(ref_text, marker), _segment(got_text, marker)
    try:
        pa, pb = json.loads(a), json.loads(b)
        pairs = json.loads(b, object_pairs_hook=lambda kv: kv)
    except ValueError:
        return "json-other"
    if pa != pb:
        return "json-value"

    def unsorted(x):
        if isinstance(x, list) and x and all(isinstance(e, tuple) for e in x):  # an object
            keys = [k for k, _ in x]
            return keys != sorted(keys) or any(unsorted(v) for _, v in x)
        return isinstance(x, list) and any(unsorted(e) for e in x)

    if marker == "<|content_invoke_tool_json|>":  # the {"name","args"} wrapper is fixed, not sorted
        pairs = dict(pairs).get("args")
    ordered = json.loads(b, object_pairs_hook=dict)  # tml's key order, Python's number spelling
    kinds = []
    if unsorted(pairs):
        kinds.append("nested-key-order")
    if json.dumps(ordered, ensure_ascii=False, separators=(",", ":")) != b:
        kinds.append("number-format")
    return "json-" + "+".join(kinds or ["other"])


def classify(tok, ref, got, pos):
    """Names the convention a first difference falls under (by what surrounds it)."""
    ref_text, got_text = tok.decode(ref), tok.decode(got)
    if ref_text == got_text:
        return "special-token-text"  # same string, different tokenization
    before = tok.decode(ref[:pos])
    r_next = tok.decode(ref[pos:pos + 3])
    g_next = tok.decode(got[pos:pos + 3])
    seg = before[before.rfind("<|message_"):]
    inside = not before.endswith("<|end_message|>")  # the difference is inside this block
    if inside and "Thinking effort level: " in seg:
        return "effort-format"
    if inside and "<|content_invoke_tool_json|>" in seg:
        end_r = ref_text.find("<|end_message|>", len(before))
        end_g = got_text.find("<|end_message|>", len(before))
        return "tool-call-" + _json_kind(ref_text[:end_r], got_text[:end_g],
                                         "<|content_invoke_tool_json|>")
    if inside and "<|content_xml|>" in seg:
        end_r = ref_text.find("<|end_message|>", len(before))
        end_g = got_text.find("<|end_message|>", len(before))
        return "tool-declare-" + _json_kind(ref_text[:end_r], got_text[:end_g], "<|content_xml|>")
    if r_next.startswith("<|content_thinking|>"):
        return "reasoning-dropped"
    if before.endswith("<|message_tool|>") and g_next.startswith("<|content_text|>"):
        return "tool-name-not-resolved"
    if (r_next.startswith("<|content_model_end_sampling|>")
            and g_next.startswith("<|message_model|><|content_text|><|end_message|>")):
        return "empty-assistant-text-added"
    if r_next.startswith("<|content_text|><|end_message|>") and before.endswith("<|message_model|>"):
        return "empty-assistant-text-dropped"
    if before.endswith("<|content_text|>") and r_next.startswith("<|end_message|>"):
        return "list-tool-content-kept"
    if r_next.startswith("<|message_model|>") and g_next.startswith("<|message_user|>"):
        return "null-content-as-empty-text"
    return "other"


def snippet(tok, ids, pos, before=4, after=8):
    return tok.decode(ids[max(0, pos - before):pos]) + " ‖ " + tok.decode(ids[pos:pos + after])


def compare(tok, renderer, row, mode):
    req = row["request"]
    if "ids" not in row:
        why = row.get("error") or row.get("prep_error")
        return {"group": "not_expressible", "why": f"template error case: {why}"}
    messages, tools, agp, kwargs = prepare(req)
    effort = template_effort(kwargs)
    try:
        msgs = to_native(messages, tools) if mode == "native" else to_oss(req)
        got = render_ids(renderer, msgs, effort)
    except NotExpressible as e:
        return {"group": "not_expressible", "why": str(e)}
    appended = [MESSAGE_MODEL] if agp else []
    full = got + appended
    ref = row["ids"]
    if full == ref:
        return {"group": "identical", "ids": full, "appended": appended}
    pos = next((i for i, (a, b) in enumerate(zip(ref, full)) if a != b), min(len(ref), len(full)))
    return {"group": "differing", "pos": pos, "kind": classify(tok, ref, full, pos),
            "fixture": snippet(tok, ref, pos), "tml": snippet(tok, full, pos),
            "len": [len(ref), len(full)]}


def check_tokenizer(tok):
    """The package's bundled tokenizer vs tests/data/inkling/special_tokens.json."""
    notes = []
    path = os.path.join(DATA, "special_tokens.json")
    if not os.path.exists(path):
        return [f"{path} not found; special-token check skipped"]
    ours = {t["id"]: t for t in json.load(open(path, encoding="utf-8"))["special_tokens"]}
    theirs = {tok.encode_special(n): n for n in tok.special_tokens()}
    for i in sorted(set(ours) | set(theirs)):
        o = ours.get(i)
        on = o["content"][2:-2] if o else None
        if on != theirs.get(i):
            conf = "confirmed" if o and o["confirmed"] else "placeholder"
            notes.append(f"id {i}: shared data {o and o['content']!r} ({conf}), "
                         f"tml-renderers <|{theirs.get(i)}|>")
    return notes


def short(req, n=110):
    s = json.dumps(req, ensure_ascii=False)
    return s if len(s) <= n else s[:n - 1] + "…"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--verbose", action="store_true", help="list every case")
    ap.add_argument("--no-write", action="store_true", help="do not write tml_ids.jsonl")
    ap.add_argument("--json", help="write all per-case results here")
    a = ap.parse_args()

    tok = tokenizers.O200kBaseChatTokenizer()
    renderer = v0.Renderer(tok)
    rows = [json.loads(line) for line in open(FIXTURE, encoding="utf-8")]
    n_ids = sum("ids" in r for r in rows)
    print(f"fixture: {len(rows)} requests, {n_ids} renders with ids, {len(rows) - n_ids} errors")
    for note in check_tokenizer(tok):
        print("tokenizer:", note)

    results = {}
    for mode in ("native", "oss"):
        res = [compare(tok, renderer, r, mode) for r in rows]
        results[mode] = res
        groups = collections.Counter(x["group"] for x in res)
        kinds = collections.Counter(x["kind"] for x in res if x["group"] == "differing")
        raw = sum(1 for x in res if x["group"] == "identical" and not x["appended"])
        print(f"\n== {mode}: identical {groups['identical']} (of which {raw} without the appended "
              f"generation prompt), differing {groups['differing']}, not expressible "
              f"{groups['not_expressible']}")
        print("   differing by convention:", dict(kinds))
        why = collections.Counter(x["why"].split(":")[0] if x["why"].startswith("template error")
                                  else x["why"] for x in res if x["group"] == "not_expressible")
        for w, c in why.most_common():
            print(f"   not expressible ({c}): {w}")
        for r, x in zip(rows, res):
            if x["group"] == "differing" or (a.verbose and x["group"] != "not_expressible"):
                print(f" [{x['group']}{'/' + x['kind'] if 'kind' in x else ''}] {short(r['request'])}")
                if x["group"] == "differing":
                    print(f"     first difference at id {x['pos']} (lengths fixture/tml "
                          f"{x['len'][0]}/{x['len'][1]})")
                    print(f"     fixture: {x['fixture']!r}")
                    print(f"     tml:     {x['tml']!r}")

    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump([{"request": r["request"], **{m: results[m][i] for m in results}}
                       for i, r in enumerate(rows)], f, ensure_ascii=False, indent=1)
    if not a.no_write:
        n = 0
        with open(OUT_IDS, "w", encoding="utf-8") as f:
            for r, x in zip(rows, results["native"]):
                if x["group"] == "identical":
                    f.write(json.dumps({"request": r["request"], "ids": x["ids"],
                                        "appended": x["appended"]}, ensure_ascii=False) + "\n")
                    n += 1
        print(f"\nwrote {n} cases to {os.path.relpath(OUT_IDS, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
