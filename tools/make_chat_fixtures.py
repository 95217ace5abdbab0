#!/usr/bin/env python3
"""Generates the chat-template and Jinja parity fixtures used by tests/text/test_chat*.cpp and
tests/text/test_jinja*.cpp.

* tests/fixtures/chat/renders.jsonl — OpenAI chat requests rendered with the real Inkling
  template through transformers (apply_chat_template's exact environment), with token ids from
  the HF tokenizer in tests/data/inkling, or the error the template raises.
* tests/fixtures/jinja/cases.jsonl — small templates covering every Jinja feature the engine
  implements, rendered with transformers' compiled environment (ImmutableSandboxedEnvironment,
  trim_blocks, lstrip_blocks, loopcontrols, generation, transformers' tojson/raise_exception).

Usage (offline; needs jinja2 and transformers):  python3 tools/make_chat_fixtures.py
"""

import copy
import json
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

from transformers import AutoTokenizer  # noqa: E402
from transformers.utils import chat_template_utils as ctu  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data", "inkling")
OUT_CHAT = os.path.join(ROOT, "tests", "fixtures", "chat", "renders.jsonl")
OUT_JINJA = os.path.join(ROOT, "tests", "fixtures", "jinja", "cases.jsonl")


# ---------------------------------------------------------------------------------------------
# Chat: request preparation identical to src/text/chat/chat_template.cpp
# ---------------------------------------------------------------------------------------------

class PrepError(Exception):
    pass


def prepare(request):
    """OpenAI request -> (messages, tools, add_generation_prompt, kwargs), as the engine does."""
    messages = copy.deepcopy(request.get("messages", []))
    for mi, m in enumerate(messages):
        for ti, tc in enumerate(m.get("tool_calls") or []):
            fn = tc.get("function") if isinstance(tc, dict) else None
            if isinstance(fn, dict) and isinstance(fn.get("arguments"), str):
                try:
                    fn["arguments"] = json.loads(fn["arguments"])
                except json.JSONDecodeError as e:
                    raise PrepError(f"messages[{mi}].tool_calls[{ti}].function.arguments: {e}")
    kwargs = {}
    if request.get("reasoning_effort") is not None:
        kwargs["reasoning_effort"] = request["reasoning_effort"]
    kwargs.update(request.get("chat_template_kwargs") or {})
    agp = request.get("add_generation_prompt", True)
    return messages, request.get("tools"), agp, kwargs


def render_request(tok, template, request):
    messages, tools, agp, kwargs = prepare(request)
    conv = ctu._normalize_chat_messages(messages)
    template_kwargs = {**tok.special_tokens_map, **kwargs}
    out, _ = ctu.render_jinja_template(conversations=[conv], tools=tools, chat_template=template,
                                       add_generation_prompt=agp, **template_kwargs)
    rendered = out[0]
    if messages:  # cross-check against the public entry point (it refuses empty conversations)
        direct = tok.apply_chat_template(messages, tools=tools, add_generation_prompt=agp,
                                         tokenize=False, **kwargs)
        assert direct == rendered, (request, direct, rendered)
    return rendered


U = lambda c: {"role": "user", "content": c}  # noqa: E731
S = lambda c: {"role": "system", "content": c}  # noqa: E731
A = lambda c, **kw: {"role": "assistant", "content": c, **kw}  # noqa: E731

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Get weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string",
                   "description": "City, e.g. Zürich"}}, "required": ["city"]}}}
SEARCH = {"type": "function", "function": {
    "name": "search", "description": "Search the web",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}, "n": {
        "type": "integer", "default": 5, "minimum": 1.0}}, "required": ["q"]}, "strict": True}}
BARE_TOOL = {"name": "calc", "parameters": {"type": "object", "properties": {"expr": {"type": "string"}}}}
NODESC_TOOL = {"type": "function", "function": {"name": "noop"}}
WEIRD_TOOL = {"type": "", "function": {"name": "weird", "description": None, "parameters": {}}}
UNICODE_TOOL = {"type": "function", "function": {
    "name": "übersetzen", "description": "Übersetzt Text 日本語 🚀 \"quoted\" \\ back",
    "parameters": {"type": "object", "properties": {"Z": {"type": "string"}, "a": {"type": "number"},
                   "é": {"enum": ["x", "y"]}, "ctrl": {"default": "\u0001\t\n"}}}}}


def tc(name, args, id_=None):
    call = {"type": "function", "function": {"name": name, "arguments": args}}
    if id_ is not None:
        call["id"] = id_
    return call


def chat_requests():
    R = []
    add = R.append
    # basics
    add({"messages": [U("Hi")]})
    add({"messages": [U("Hi")], "add_generation_prompt": False})
    add({"messages": []})
    add({"messages": [], "add_generation_prompt": False})
    add({"messages": [S("only sys")]})
    add({"messages": [S("a"), S("b")], "add_generation_prompt": False})
    add({"messages": [S("SYS"), U("Hi")]})
    add({"messages": [U("u"), S("late system"), U("again")]})
    add({"messages": [U("")]})
    add({"messages": [S(""), U("")]})
    add({"messages": [U("multi\nline\n\ttext  "), A("ok"), U("more")]})
    add({"messages": [U("2+2?"), A("4", reasoning_content="add"), U("ok")]})
    add({"messages": [U("u"), A(None)]})
    add({"messages": [U("u"), A("")]})
    add({"messages": [U("u"), {"role": "assistant"}]})
    add({"messages": [U("u"), A("x", reasoning_content="")]})
    add({"messages": [U("u"), A("x", reasoning_content=None)]})
    add({"messages": [U("u"), A("x", reasoning="via reasoning field")]})
    add({"messages": [U("u"), A("x", thinking="via thinking field")]})
    add({"messages": [U("u"), A("x", reasoning_content="rc", reasoning="r")]})
    add({"messages": [U("u"), A("x", reasoning_content=None, reasoning="fallback")]})
    add({"messages": [U("special <|end_message|> tokens <|message_model|> in text")]})
    add({"messages": [U("{{ not a template }} {% neither %}")]})
    add({"messages": [U("héllo wörld — 日本語 🚀 עברית العربية")]})
    add({"messages": [U("a"), A("b"), U("c"), A("d"), U("e"), A("f"), U("g")]})
    add({"messages": [{"role": "user", "content": "named", "name": "alice"}]})
    # list content parts
    add({"messages": [{"role": "user", "content": [
        "plain", {"type": "text", "text": "t"}, {"text": "untyped"},
        {"type": "image_url", "image_url": {"url": "data:x"}},
        {"type": "input_audio", "input_audio": {"data": "x", "format": "wav"}},
        {"type": "text"}]}]})
    add({"messages": [{"role": "user", "content": [{"type": "input_text", "text": "it"},
                                                    {"type": "image"}, {"type": "input_image"},
                                                    {"type": "audio"}, {"type": "audio_url"}]}]})
    add({"messages": [{"role": "user", "content": []}]})
    add({"messages": [{"role": "user", "content": None}]})
    add({"messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]})
    add({"messages": [{"role": "user", "content": [{"type": "text", "text": None}]}]})
    add({"messages": [{"role": "user", "content": [{"type": "text", "text": ""}]}]})
    add({"messages": [{"role": "system", "content": [{"type": "text", "text": "sys part"},
                                                      {"type": "image_url", "image_url": {}}]},
                      U("q")]})
    add({"messages": [U("look"), {"role": "assistant", "content": [
        {"type": "text", "text": "I see"}, {"type": "image_url", "image_url": {"url": "u"}}]}]})
    add({"messages": [U("u"), {"role": "assistant", "reasoning_content": "r", "content": [
        {"type": "audio", "audio": {}}, "str part"]}]})
    for bad in ["video", "file", "thinking", "refusal", "tool_result", ""]:
        add({"messages": [{"role": "user", "content": [{"type": "text", "text": "ok"},
                                                        {"type": bad}]}]})
    add({"messages": [{"role": "user", "content": [{"type": None}]}]})
    # roles
    for role in ["developer", "function", "bot", "", "User"]:
        add({"messages": [{"role": role, "content": "x"}]})
    add({"messages": [S("s"), {"role": "developer", "content": "x"}]})
    add({"messages": [{"content": "no role"}]})
    # tools
    add({"messages": [U("weather?")], "tools": [WEATHER]})
    add({"messages": [U("q")], "tools": [WEATHER, SEARCH]})
    add({"messages": [U("q")], "tools": [BARE_TOOL]})
    add({"messages": [U("q")], "tools": [NODESC_TOOL, WEIRD_TOOL]})
    add({"messages": [U("q")], "tools": [UNICODE_TOOL]})
    add({"messages": [U("q")], "tools": []})
    add({"messages": [S("sys"), U("q")], "tools": [WEATHER], "reasoning_effort": "high"})
    add({"messages": [], "tools": [SEARCH]})
    add({"messages": [S("only")], "tools": [SEARCH], "add_generation_prompt": False})
    add({"messages": [U("q")], "tools": [{"type": "function", "function": {
        "name": "n", "parameters": {"type": "object", "properties": {"x": {"type": "number",
                                    "default": 1e16, "min": 1e-05, "f": 0.1, "i": 12345678901234,
                                    "neg": -0.0, "big": 1.7976931348623157e308}}}}}]})
    # tool calls: object and string arguments, ids, results
    add({"messages": [U("weather?"), A("", tool_calls=[tc("get_weather", {"city": "Paris", "days": 3,
        "a": "é\n\"\u0001", "z": [1.0, 1e16, True, None]}, "c1")]),
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"}], "tools": [WEATHER]})
    add({"messages": [U("q"), A(None, reasoning_content="think", tool_calls=[
        tc("f", {"x": 1}, "a"), tc("g", {"y": [1, 2]}, "b")]),
        {"role": "tool", "tool_call_id": "a", "content": "ra"},
        {"role": "tool", "tool_call_id": "b", "content": "rb"}], "reasoning_effort": "none"})
    add({"messages": [U("q"), A(None, tool_calls=[tc("f", '{"x": 1, "b": [1.0, 2.50, 1e2]}', "a")])]})
    add({"messages": [U("q"), A(None, tool_calls=[tc("f", '{"nested": {"z": {"y": {"x": [{"b": 1, "a": 2}]}}}, "a": "\\u00e9\\n"}', "a")])]})
    add({"messages": [U("q"), A(None, tool_calls=[tc("f", "{}", "a")])]})
    add({"messages": [U("q"), A(None, tool_calls=[tc("f", "", "a")])]})
    add({"messages": [U("q"), A(None, tool_calls=[tc("f", {}, "a")])]})
    add({"messages": [U("q"), A(None, tool_calls=[tc("f", None, "a")])]})
    add({"messages": [U("q"), A(None, tool_calls=[{"id": "a", "function": {"name": "noargs"}}])]})
    add({"messages": [U("q"), A(None, tool_calls=[tc("f", "[1, 2]", "a")])]})
    add({"messages": [U("q"), A(None, tool_calls=[tc("f", "5", "a")])]})
    add({"messages": [U("q"), A(None, tool_calls=[tc("f", '"a json string"', "a")])]})
    add({"messages": [U("q"), A(None, tool_calls=[tc("f", [1, 2], "a")])]})
    add({"messages": [U("q"), A(None, tool_calls=[tc("f", "{not json", "a")])]})
    add({"messages": [U("q"), A(None, tool_calls=[tc(None, {"x": 1}, "a")])]})
    add({"messages": [U("q"), A(None, tool_calls=[tc(5, {"x": 1}, "a")])]})
    add({"messages": [U("q"), A(None, tool_calls=[{"id": "a", "type": "function"}])]})
    add({"messages": [U("q"), A(None, tool_calls=[{"id": "a", "function": {"arguments": {}}}])]})
    add({"messages": [U("q"), A(None, tool_calls=[])]})
    add({"messages": [U("q"), A("text and call", tool_calls=[tc("f", {"k": "v"}, "a")])]})
    add({"messages": [U("q"), A(None, tool_calls=[tc("f", {"unicode": "日本語 🚀", "Z": 1, "a": 2,
                                                            "é": 3, "_": 4, "ctrl": "\x1f\x7f\u2028"}, "a")])]})
    add({"messages": [U("q"), A(None, tool_calls=[tc("f", {"floats": [0.1, 0.30000000000000004,
        1e-7, 123456789.0, 1e22, -2.5, 100.0, 3.0e-310], "ints": [0, -1, 9007199254740993,
        -9223372036854775808, 9223372036854775807], "bools": [True, False], "none": None}, "a")])]})
    add({"messages": [U("q"), A(None, tool_calls=[tc("f", '{"floats": [0.1, 1E5, 1e-7, 5e-324, 2.0], "i": 10, "neg": -0, "negf": -0.0}', "a")])]})
    add({"messages": [U("q"), A(None, tool_calls=[tc("get_weather", {"city": "Oslo"}, "x1"),
                                                   tc("get_weather", {"city": "Rome"}, "x2")]),
                      {"role": "tool", "tool_call_id": "x2", "content": "rainy"},
                      {"role": "tool", "tool_call_id": "x1", "content": "snowy"}]})
    # tool result name resolution
    add({"messages": [U("q"), A(None, tool_calls=[tc("f", {}, "id1")]),
                      {"role": "tool", "name": "explicit", "tool_call_id": "id1", "content": "r"}]})
    add({"messages": [U("q"), A(None, tool_calls=[tc("f", {}, "id1")]),
                      {"role": "tool", "name": "", "tool_call_id": "id1", "content": "r"}]})
    add({"messages": [U("q"), A(None, tool_calls=[tc("f", {}, "id1")]),
                      {"role": "tool", "tool_call_id": "missing", "content": "r"}]})
    add({"messages": [U("q"), {"role": "tool", "content": "nameless"}]})
    add({"messages": [U("q"), {"role": "tool", "name": "byname", "content": "r"}]})
    add({"messages": [U("q"), {"role": "tool", "name": "t", "content": [{"type": "text", "text": "dropped"}]}]})
    add({"messages": [U("q"), {"role": "tool", "name": "t", "content": None}]})
    add({"messages": [U("q"), {"role": "tool", "name": "t", "content": 42}]})
    add({"messages": [U("q"), A(None, tool_calls=[tc("first", {}, "dup")]),
                      {"role": "tool", "tool_call_id": "dup", "content": "r"},
                      A(None, tool_calls=[tc("second", {}, "dup")])]})  # last match wins
    add({"messages": [U("q"), {"role": "tool", "tool_call_id": "later", "content": "r"},
                      A(None, tool_calls=[tc("future", {}, "later")])]})
    add({"messages": [U("q"), A(None, tool_calls=[{"function": {"name": "noid", "arguments": {}}}]),
                      {"role": "tool", "tool_call_id": "zzz", "content": "r"}]})
    add({"messages": [U("q"), A(None, tool_calls=[{"id": "i", "function": {"arguments": {}}}]),
                      {"role": "tool", "tool_call_id": "i", "content": "r"}]})
    add({"messages": [U("q"), A(None, tool_calls=[{"id": "i"}]),
                      {"role": "tool", "tool_call_id": "i", "content": "r"}]})
    add({"messages": [{"role": "tool", "tool_call_id": "i", "content": "first"}]})
    # full multi-turn agent loop
    add({"messages": [S("You are helpful."), U("Plan a trip"),
                      A(None, reasoning_content="Need weather.", tool_calls=[tc("get_weather", '{"city":"Lisbon"}', "w1")]),
                      {"role": "tool", "tool_call_id": "w1", "content": "{\"temp\": 21.5}"},
                      A("It is 21.5°C.", reasoning_content="Done."), U("thanks")],
         "tools": [WEATHER, SEARCH], "reasoning_effort": "medium"})
    # reasoning effort spellings and values
    for eff in ["none", "minimal", "low", "medium", "high", "max", " high ", "\tlow\n", "HIGH",
                "xhigh", "no_think", "0.5", "", "default", 0, 0.0, 0.1, 0.2, 0.33, 0.333, 0.5, 0.7,
                0.9, 0.99, 1e-05, 0.30000000000000004, 1, 1.0, 0.991, -0.1, -0.0, True, False, None,
                [], {}, [1], 2, 0.98999, 5e-324]:
        add({"messages": [U("Hi")], "reasoning_effort": eff})
    add({"messages": [U("Hi")], "chat_template_kwargs": {"reasoning_effort": "low"}})
    add({"messages": [U("Hi")], "chat_template_kwargs": {"reasoning_effort": 0.5}})
    add({"messages": [U("Hi")], "reasoning_effort": "high", "chat_template_kwargs": {"reasoning_effort": "low"}})
    add({"messages": [U("Hi")], "reasoning_effort": "high", "chat_template_kwargs": {"enable_thinking": False}})
    add({"messages": [U("Hi")], "chat_template_kwargs": {"reasoning_effort": None}})
    add({"messages": [S("s")], "reasoning_effort": "bogus"})
    add({"messages": [], "reasoning_effort": "minimal"})
    add({"messages": [S("s1"), S("s2"), U("u")], "reasoning_effort": 0.25})
    # long-ish and odd text
    add({"messages": [U("x" * 3000), A("y" * 500), U("z")]})
    add({"messages": [U("tabs\tand\r\nCRLF\rCR"), A("trailing spaces   \n\n")]})
    add({"messages": [U("\u0000\u0001 control chars \u007f")]})
    add({"messages": [U("emoji 👩‍👩‍👧‍👦 zwj 🏳️‍🌈 flags 🇯🇵 combining e\u0301")]})
    # misc combos to widen coverage
    for i in range(12):
        msgs = [S(f"system {i}")] if i % 3 == 0 else []
        msgs.append(U(f"question {i} ünï"))
        if i % 2:
            msgs.append(A(None, reasoning_content=f"thought {i}" if i % 4 == 1 else None,
                          tool_calls=[tc("search", json.dumps({"q": f"q{i}", "n": i}), f"s{i}")]))
            msgs.append({"role": "tool", "tool_call_id": f"s{i}", "content": f"result {i}"})
        msgs.append(A(f"answer {i}", reasoning_content=f"r{i}" if i % 3 == 1 else ""))
        req = {"messages": msgs, "tools": [SEARCH] if i % 2 else None}
        if i % 4 == 2:
            req["reasoning_effort"] = ["low", 0.7, "max"][i % 3]
        if i % 5 == 4:
            req["add_generation_prompt"] = False
        add(req)
    # Integers beyond 64 bits in tool-call arguments, as strings (OpenAI clients) and as objects
    # (within uint64: JSON parsers in C++ keep those), and in a tool's parameters: Python keeps
    # every one exact, never 1.2345678901234567e+19.
    big_args = ('{"big":12345678901234567890,"bigger":123456789012345678901234567890,'
                '"neg":-98765432109876543210,"edge":18446744073709551616,"f":1.0,"e":1e2,'
                '"small":-1,"nested":[9223372036854775808,{"z":-9223372036854775809}]}')
    add({"messages": [U("big"), A(None, tool_calls=[tc("f", big_args, "b1")]),
                      {"role": "tool", "tool_call_id": "b1", "content": "ok"}]})
    add({"messages": [U("big"), A("", tool_calls=[tc("f", {"u64": 12345678901234567890,
                                                           "i64": -9223372036854775808})])]})
    add({"messages": [U("big")], "tools": [{"type": "function", "function": {
        "name": "f", "parameters": {"type": "object", "properties": {"n": {
            "type": "integer", "default": 12345678901234567890, "maximum": 18446744073709551615}}}}}]})
    return R


def make_chat(tok, template):
    rows = []
    for req in chat_requests():
        row = {"request": req}
        try:
            text = render_request(tok, template, req)
            row["render"] = text
            row["ids"] = tok(text, add_special_tokens=False).input_ids
        except PrepError as e:
            row["prep_error"] = str(e)
        except Exception as e:  # noqa: BLE001 — record whatever the template raised
            row["error"] = str(e)
            row["error_type"] = type(e).__name__
        rows.append(row)
    return rows


# ---------------------------------------------------------------------------------------------
# Jinja feature corpus
# ---------------------------------------------------------------------------------------------

JINJA_CASES = []  # (template, context); filled below


def case(template, **context):
    JINJA_CASES.append((template, context))


# --- output, literals, printing -----------------------------------------------------------------
case("plain text only")
case("{{ 'single' }}{{ \"double\" }}{{ 'it\\'s' }}{{ \"say \\\"hi\\\"\" }}")
case("{{ 'esc \\n \\t \\\\ \\x41 \\u00e9 \\U0001F600 \\q' }}")
case("{{ 'a' 'b' \"c\" }}")
case("{{ 42 }} {{ -7 }} {{ 1_000 }} {{ 0x1F }} {{ 0o17 }} {{ 0b101 }}")
case("{{ 1.0 }} {{ 1.5 }} {{ 0.1 }} {{ 1e3 }} {{ 1e-5 }} {{ 1e16 }} {{ 1e15 }} {{ 2.5e-300 }} {{ 0.0001 }} {{ 123456789012345678.0 }}")
case("{{ x }} {{ y }} {{ z }} {{ w }}", x=0.30000000000000004, y=1e22, z=-0.0, w=5e-324)
case("{{ 'inf'|float }}|{{ -('inf'|float) }}|{{ 'nan'|float }}|{{ '-1e400'|float }}")
case("{{ true }} {{ false }} {{ none }} {{ True }} {{ False }} {{ None }}")
case("{{ [1, 'a', none, true, 1.5, [2]] }}")
case("{{ (1, 2) }} {{ (1,) }} {{ () }}")
case("{{ {'a': 1, 'b': [1, 2], 'c': {'d': none}} }}")
case("{{ {1: 'x', 2.5: 'y', none: 'z', true: 'w'} }}")
case("{{ ['it\\'s', \"q\\\"uote\", 'both\\'\"', 'nl\\n', 'tab\\t', 'é', '\\x00'] }}")
case("{{ missing }}|{{ missing is defined }}|{{ missing is undefined }}")
case("{{ d }}", d={"k": [1, 2.0, "s", None, True]})
case("{{ 1, 2 }}")
case("{{ big }} {{ neg }}", big=9007199254740993, neg=-9223372036854775808)
# --- whitespace control, trim_blocks, lstrip_blocks ----------------------------------------------
case("a\n{% if true %}\nb\n{% endif %}\nc")
case("a\n    {% if true %}\n    b\n    {% endif %}\nc")
case("a  {%- if true -%}  b  {%- endif -%}  c")
case("a\n  {%+ if true %}b{% endif %}\nc")
case("x  {{- 'y' -}}  z")
case("x\n  {{ 'y' }}\n  z")
case("{% for i in [1,2] %}\n  {{ i }}\n{% endfor %}\n")
case("start\n{# a comment #}\nend")
case("start\n  {#- trimmed comment -#}  \nend")
case("a {# inline #} b")
case("{% raw %}{{ not rendered }} {% if %}{% endraw %}")
case("  {% raw %}\n  {{ x }}\n  {% endraw %}\n")
case("{%- raw -%}  keep {{ }}  {%- endraw -%} after")
case("line1\r\nline2\rline3\n")
case("trailing newline kept once\n\n")
case("{% if true %}yes{% endif %}\n")
case("tabs\t{% if true %}\t{{ 1 }}\t{% endif %}\t.")
case("{% set x = 1 %}\n{% set y = 2 %}\n{{ x + y }}\n")
case("  {% for i in [1] %}{{ i }}{% endfor %}  ")
case("<{{- ' a ' -}}>")
case("{{ 'a' }}\n\n{{ 'b' }}")
case("{%- if true %}\n\nx{% endif -%}\n\ny")
# --- set, namespace, scoping ---------------------------------------------------------------------
case("{% set x = 5 %}{{ x }}")
case("{% set a, b = 1, 2 %}{{ a }}-{{ b }}")
case("{% set a, b = [3, 4] %}{{ b }}{{ a }}")
case("{% set ns = namespace(n=0, items=[]) %}{% for i in range(3) %}{% set ns.n = ns.n + i %}{% set ns.items = ns.items + [i] %}{% endfor %}{{ ns.n }} {{ ns.items }}")
case("{% set ns = namespace(found=false) %}{% for x in [1, 2, 3] %}{% if x == 2 %}{% set ns.found = true %}{% endif %}{% endfor %}{{ ns.found }}")
case("{% set x = 0 %}{% for i in range(3) %}{{ x }}{% set x = x + 1 %}{{ x }}{% endfor %}{{ x }}")
case("{% for i in range(3) %}{% if i == 0 %}{% set y = 5 %}{% endif %}{{ y }},{% endfor %}")
case("{% if true %}{% set z = 'if-scope' %}{% endif %}{{ z }}")
case("{% set s %}block {{ 1 + 1 }}{% endset %}[{{ s }}]")
case("{% set s | upper %}shout {{ 'it' }}{% endset %}{{ s }}")
case("{% set d = {'a': 1} %}{{ d.a }}{{ d['a'] }}")
case("{% set ns = namespace() %}{% set ns.v = 'late' %}{{ ns.v }}")
case("{% set ns = namespace({'a': 1}, b=2) %}{{ ns.a }}{{ ns.b }}")
case("{% set ns = namespace(a=1) %}{{ ns }}")
case("{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}{{ a }}")
case("{% set ns = namespace(_x=1) %}")
case("{% set ns = namespace() %}{% set ns._hidden = 1 %}")
case("{% set x = 1 %}{% set x.y = 2 %}")
# --- if / elif / else, truthiness ---------------------------------------------------------------
case("{% if x %}T{% elif y %}Y{% else %}F{% endif %}", x=0, y="")
case("{% if x %}T{% elif y %}Y{% else %}F{% endif %}", x=[], y={"k": 1})
case("{% for v in vals %}{{ 'T' if v else 'F' }}{% endfor %}", vals=["", "a", 0, 1, 0.0, 0.5, [], [0], {}, {"a": 1}, None, True, False])
case("{{ 'T' if missing else 'F' }}")
case("{{ 1 if false }}|")
case("{% if not x %}not{% endif %}{% if x is not none %}some{% endif %}", x=None)
# --- for loops ----------------------------------------------------------------------------------
case("{% for x in [1, 2, 3] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}")
case("{% for x in [1, 2, 3] %}{{ loop.previtem }}|{{ loop.nextitem }};{% endfor %}")
case("{% for x in [] %}a{% else %}empty{% endfor %}")
case("{% for x in [1, 2, 3, 4] if x is odd %}{{ x }}/{{ loop.length }}{% else %}none{% endfor %}")
case("{% for x in [2, 4] if x is odd %}{{ x }}{% else %}none{% endfor %}")
case("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", d={"b": 1, "a": 2})
case("{% for k in d %}{{ k }}{% endfor %}", d={"z": 1, "y": 2})
case("{% for c in 'héllo' %}{{ c }}.{% endfor %}")
case("{% for a, b in [[1, 2], [3, 4]] %}{{ a * b }}{% endfor %}")
case("{% for x in [1, 2, 3, 4] %}{% if x == 3 %}{% break %}{% endif %}{{ x }}{% endfor %}")
case("{% for x in [1, 2, 3, 4] %}{% if x is even %}{% continue %}{% endif %}{{ x }}{% endfor %}")
case("{% for i in range(2) %}{% for j in range(2) %}{{ loop.index }}{{ i }}{{ j }} {% endfor %}{% endfor %}")
case("{% for x in missing %}a{% else %}undefined iterates empty{% endfor %}")
case("{% for x in [1,2,3] %}{{ loop.cycle('a', 'b') }}{% endfor %}")
case("{% for x in [1,1,2,2,1] %}{% if loop.changed(x) %}{{ x }}{% endif %}{% endfor %}")
case("{% for x in tree recursive %}[{{ x.n }}{% if x.c %}{{ loop(x.c) }}{% endif %}]{% endfor %}",
     tree=[{"n": 1, "c": [{"n": 2, "c": []}, {"n": 3}]}, {"n": 4}])
case("{% for i in range(5) %}{{ i }}{% endfor %}|{% for i in range(2, 8, 3) %}{{ i }}{% endfor %}|{% for i in range(5, 0, -2) %}{{ i }}{% endfor %}")
case("{% for x in 5 %}{% endfor %}")
case("{% for x in none %}{% endfor %}")
case("{% for a, b in [[1, 2, 3]] %}{% endfor %}")
# --- macros and call blocks ----------------------------------------------------------------------
case("{% macro greet(name, greeting='Hello') %}{{ greeting }}, {{ name }}!{% endmacro %}{{ greet('Ann') }} {{ greet('Bob', greeting='Hi') }} {{ greet(name='Cy', greeting='Yo') }}")
case("{% macro m() %}{{ z }}{% endmacro %}{% set z = 1 %}{{ m() }}{% set z = 2 %}{{ m() }}")
case("{% macro m(a) %}[{{ a }}]{% endmacro %}{{ m() }}")
case("{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }}")
case("{% macro m(a) %}{{ a }}{% endmacro %}{{ m(b=2) }}")
case("{% macro m(a) %}{{ a }}|{{ varargs }}|{{ kwargs }}{% endmacro %}{{ m(1, 2, 3, k='v') }}")
case("{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1)|int }}{% endif %}{% endmacro %}{{ fact(6) }}")
case("{% macro wrap() %}<{{ caller() }}>{% endmacro %}{% call wrap() %}inner {{ 1 + 1 }}{% endcall %}")
case("{% macro each(items) %}{% for i in items %}{{ caller(i) }}{% endfor %}{% endmacro %}{% call(x) each([1, 2]) %}({{ x }}){% endcall %}")
case("{% macro m(a, b=a * 2) %}{{ a }},{{ b }}{% endmacro %}{{ m(3) }}")
case("{% macro outer() %}{% set v = 'local' %}{{ v }}{% endmacro %}{% set v = 'global' %}{{ outer() }}{{ v }}")
case("{% filter upper %}hello {{ 'world' }}{% endfilter %}")
case("{% filter replace('a', 'o') | title %}banana bread{% endfilter %}")
# --- generation / autoescape blocks ---------------------------------------------------------------
case("a{% generation %}gen {{ 1 }}{% endgeneration %}b")
case("{% autoescape false %}<b>{{ '<i>' }}</b>{% endautoescape %}")
# --- filters ------------------------------------------------------------------------------------
case("[{{ '  padded \\n\\t'|trim }}] [{{ 'xxhixx'|trim('x') }}] [{{ none|trim }}] [{{ missing|trim }}]")
case("{{ '3.5'|float }} {{ ' 2.5 '|float }} {{ 'x'|float }} {{ 'x'|float(1.5) }} {{ none|float }} {{ true|float }} {{ 7|float }} {{ '1_0'|float }} {{ 'inf'|float }} {{ '-Infinity'|float }} {{ '1e3'|float }} {{ '.5'|float }} {{ [1]|float }}")
case("{{ '42'|int }} {{ ' 7 '|int }} {{ '3.7'|int }} {{ 3.9|int }} {{ -3.9|int }} {{ 'x'|int }} {{ 'x'|int(-1) }} {{ true|int }} {{ 'ff'|int(base=16) }} {{ '1_000'|int }} {{ none|int }}")
case("{{ 5|string }}{{ 1.0|string }}{{ none|string }}{{ [1]|string }}{{ missing|string }}")
case("{{ 'héllo'|length }} {{ [1, 2]|length }} {{ {'a': 1}|length }} {{ missing|length }} {{ 'abc'|count }}")
case("{{ 5|length }}")
case("{{ [1, 2, 3]|join(', ') }} {{ ['a', none, 1.5]|join }} {{ [{'n': 'x'}, {'n': 'y'}]|join('+', attribute='n') }} {{ 'abc'|join('-') }}")
case("{{ 'mIxEd Ünï'|upper }} {{ 'mIxEd ÜNÏ'|lower }} {{ 'hello world-foo (bar) they\\'re'|title }} {{ 'hELLO wORLD'|capitalize }}")
case("{{ 'banana'|replace('a', 'o') }} {{ 'banana'|replace('a', 'o', 2) }} {{ 'abc'|replace('', '-') }}")
case("{{ missing|default('dflt') }} {{ ''|default('dflt') }} {{ ''|default('dflt', true) }} {{ none|d('n') }} {{ 0|d('z', boolean=true) }} {{ missing|default }}")
case("{{ [3, 1, 2]|first }} {{ [3, 1, 2]|last }} {{ 'xyz'|first }} {{ 'xyz'|last }} [{{ []|first }}] {{ {'k': 1}|first }}")
case("{{ 'abc'|list }} {{ {'a': 1, 'b': 2}|list }} {{ (1, 2)|list }} {{ missing|list }}")
case("{{ {'b': 1, 'a': 2}|items|list }} {% for k, v in {'x': [1]}|items %}{{ k }}{{ v }}{% endfor %} {{ missing|items|list }}")
case("{{ 3|items|list }}")
case("{{ users|selectattr('active')|map(attribute='name')|join(',') }}|{{ users|rejectattr('active')|map(attribute='name')|list }}",
     users=[{"name": "a", "active": True}, {"name": "b", "active": False}, {"name": "c"}])
case("{{ users|selectattr('age', 'gt', 30)|map(attribute='name')|list }} {{ users|selectattr('name', 'equalto', 'b')|list|length }} {{ users|selectattr('role', 'defined')|map(attribute='name')|list }}",
     users=[{"name": "a", "age": 31}, {"name": "b", "age": 20, "role": "x"}])
case("{{ items|map(attribute='a')|list }} {{ items|map(attribute='a', default=0)|list }} {{ items|map(attribute='p.q')|list }}",
     items=[{"a": 1, "p": {"q": "deep"}}, {"a": None, "p": {"q": 2}}, {"b": 2, "p": {}}])
case("{{ [1, 2, 3]|map('string')|join('-') }} {{ ['a', 'B']|map('upper')|list }} {{ [' x ', 'y ']|map('trim')|list }} {{ [1.5, 2.5]|map('int')|list }}")
case("{{ [1, 2, 3, 4]|select('odd')|list }} {{ [1, 2, 3, 4]|reject('odd')|list }} {{ [0, 1, '', 'a']|select|list }} {{ [1, 5, 10]|select('gt', 3)|list }} {{ [1, 2, 3]|select('in', [2, 3])|list }}")
case("{{ x|tojson }}", x={"b": [1, 2.0, "é", None, True], "a": {"z": "\"q\" \\ \n\t\u0001\u007f\u2028/"}})
case("{{ x|tojson(sort_keys=true) }}", x={"b": 1, "a": {"d": 2, "c": 3}, "B": 0, "é": 4, "_": 5})
case("{{ x|tojson(separators=(',', ':')) }}", x={"a": [1, {"b": None}]})
case("{{ x|tojson(indent=2) }}", x={"a": [1, {"b": None}, []], "c": {}, "d": "é"})
case("{{ x|tojson(indent=0) }}|{{ x|tojson(indent='\\t') }}|{{ x|tojson(indent=2, separators=(', ', ' = ')) }}", x={"a": [1, 2]})
case("{{ x|tojson(ensure_ascii=true) }}", x={"k": "é日本🚀\u007f\u0080", "é": 1})
case("{{ x|tojson(ensure_ascii=false) }}", x="é日本🚀")
case("{{ [1.0, 1e16, 1e-05, 0.1, 1e22, 100.0, -0.0, 1234567890123456789, 3.14159]|tojson }}")
case("{{ x|tojson }}", x=[1.5e300, 2.2250738585072014e-308, 0.30000000000000004, 1 / 3])
case("{{ ['inf'|float, '-inf'|float, 'nan'|float]|tojson }}")
case("{{ {1: 'a', 2.5: 'b', true: 'c', none: 'd'}|tojson }}")
case("{{ 'str'|tojson }} {{ 5|tojson }} {{ none|tojson }} {{ true|tojson }} {{ (1, 2)|tojson }} {{ ''|tojson }}")
case("{{ missing|tojson }}")
case("{{ namespace(a=1)|tojson }}")
case("{{ {'b': 1, 'a': 2}|tojson(sort_keys=true, separators=(',', ':'), indent=1) }}")
case("{{ x|tojson(sort_keys=true) }}", x={"1": 1, "10": 2, "2": 3, "a": 4, "A": 5})
case("{{ '<b>'|safe }} {{ '<b>&\"\\''|e }} {{ '<i>'|escape }}")
case("{{ -3|abs }} {{ -2.5|abs }} {{ 3|abs }} {{ true|abs }}")
case("{{ 2.5|round }} {{ 3.5|round }} {{ 3|round }} {{ 3.14159|round(2) }} {{ 2.675|round(2) }} {{ 3.7|round(method='floor') }} {{ 3.2|round(method='ceil') }} {{ -2.5|round }} {{ 1234.5|round(-2) }} {{ 0.125|round(2) }}")
case("{{ ['b', 'A', 'a', 'C']|unique|list }} {{ ['b', 'A', 'a']|unique(case_sensitive=true)|list }} {{ [1, 2, 1, 3, 2]|unique|list }} {{ [{'k': 1}, {'k': 1}, {'k': 2}]|unique(attribute='k')|list }}")
case("{{ [3, 1, 2]|sort }} {{ ['b', 'A', 'a', 'C']|sort }} {{ ['b', 'A', 'a']|sort(case_sensitive=true) }} {{ [3, 1, 2]|sort(reverse=true) }} {{ [{'n': 2}, {'n': 1}]|sort(attribute='n') }}")
case("{{ [1, 'a']|sort }}")
case("{{ {'b': 1, 'A': 3, 'a': 2}|dictsort }} {{ {'b': 1, 'A': 3, 'a': 2}|dictsort(true) }} {{ {'x': 2, 'y': 1}|dictsort(by='value') }} {{ {'x': 2, 'y': 1}|dictsort(reverse=true) }}")
case("{{ 'abc'|reverse }} {{ [1, 2, 3]|reverse|list }} {{ 'héllo'|reverse }}")
case("{{ [1, 2, 3]|sum }} {{ [1.5, 2]|sum }} {{ [{'v': 1}, {'v': 2}]|sum(attribute='v') }} {{ [3, 1, 2]|min }} {{ [3, 1, 2]|max }} {{ ['b', 'A']|min }} {{ []|max }}")
case("{{ 'a b  c'|wordcount }} {{ 'x'|center(5) }}| {{ 'line1\\nline2'|indent(2) }} {{ 'l1\\nl2'|indent(2, true) }}")
case("{{ [1, 2, 3, 4, 5]|batch(2)|list }} {{ [1, 2, 3]|batch(2, 'x')|list }}")
case("{{ '%s and %s'|format('a', 'b') }} {{ '%d%%'|format(50) }}")
case("{{ d|attr('keys') is callable }}|{{ d|attr('k') }}", d={"k": 1})
case("{{ x|unknown_filter }}")
case("{% if false %}{{ x|unknown_filter }}{% endif %}ok")
# --- tests --------------------------------------------------------------------------------------
case("{% for v in vals %}{{ v is defined }},{{ v is none }},{{ v is string }},{{ v is number }},{{ v is integer }},{{ v is float }},{{ v is mapping }},{{ v is sequence }},{{ v is iterable }},{{ v is boolean }},{{ v is true }},{{ v is false }};{% endfor %}",
     vals=[None, "s", 1, 1.5, True, False, [1], {"a": 1}, "", 0])
case("{{ missing is sequence }} {{ missing is iterable }} {{ missing is string }} {{ missing is mapping }} {{ missing is none }} {{ missing is callable }}")
case("{{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 9 is divisibleby(4) }} {{ 'abc' is lower }} {{ 'ABC' is upper }} {{ 'Abc' is lower }}")
case("{{ 1 is eq 1 }} {{ 1 is equalto 2 }} {{ 1 is ne 2 }} {{ 2 is gt 1 }} {{ 1 is lt 2 }} {{ 2 is ge 2 }} {{ 2 is le 1 }} {{ 'a' is in 'abc' }} {{ 3 is in [1, 2] }}")
case("{{ range is callable }} {{ 'x' is callable }} {{ raise_exception is callable }} {{ none is sameas none }} {{ 'upper' is filter }} {{ 'odd' is test }} {{ 'nope' is filter }}")
case("{{ x is not defined }} {{ x is not none }} {{ x is not string }} {{ x is not mapping }}", x={"a": 1})
case("{{ x is nosuchtest }}")
# --- operators ----------------------------------------------------------------------------------
case("{{ 1 + 2 }} {{ 1 + 2.0 }} {{ 'a' + 'b' }} {{ [1] + [2] }} {{ (1,) + (2,) }} {{ true + true }}")
case("{{ 5 - 2 }} {{ 5 - 2.5 }} {{ 3 * 4 }} {{ 'ab' * 3 }} {{ [0] * 3 }} {{ 3 * 'x' }} {{ 2 * 1.5 }}")
case("{{ 7 / 2 }} {{ 6 / 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7.5 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 7.5 % 2 }} {{ -7.5 % 2 }}")
case("{{ 2 ** 10 }} {{ 2 ** -1 }} {{ 2.0 ** 3 }} {{ -2 ** 2 }} {{ 2 ** 3 ** 2 }} {{ (-8) ** 2 }}")
case("{{ 1 ~ 2 ~ 'x' ~ none ~ missing ~ 1.0 ~ true ~ [1] }}")
case("{{ 1 == 1.0 }} {{ 1 != 2 }} {{ 'a' < 'b' }} {{ 2 > 1 }} {{ 1 <= 1 }} {{ 2 >= 3 }} {{ [1, 2] < [1, 3] }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ true == 1 }} {{ none == none }} {{ missing == missing }}")
case("{{ 1 in [1, 2] }} {{ 3 not in [1, 2] }} {{ 'a' in 'cat' }} {{ 'k' in {'k': 1} }} {{ 'v' in {'k': 'v'} }} {{ 1 in (1, 2) }} {{ 1 in [true] }} {{ 'x' in missing }}")
case("{{ true and 'yes' }} {{ 0 and 'no' }} {{ '' or 'fallback' }} {{ 'first' or 'second' }} {{ not 0 }} {{ not 'x' }} {{ none or [] }}")
case("{{ 'yes' if 1 > 0 else 'no' }} {{ 'a' if false else 'b' if false else 'c' }} {{ (1 if true else 2) + 10 }}")
case("{{ 'héllo'[1:3] }} {{ [1, 2, 3, 4][1:] }} {{ [1, 2, 3, 4][:-1] }} {{ [1, 2, 3, 4][::2] }} {{ [1, 2, 3, 4][::-1] }} {{ 'abcdef'[-2:] }} {{ 'abcdef'[5:1:-2] }} {{ [1, 2, 3][10:] }} {{ 'abc'[::-1] }}")
case("{{ [10, 20, 30][1] }} {{ [10, 20, 30][-1] }} {{ 'xyz'[0] }} {{ 'xyz'[-1] }} {{ d['k'] }} {{ d.k }} {{ d.nested.deep }} {{ l.0 }} {{ t[1] }}",
     d={"k": "v", "nested": {"deep": 1}}, l=[5], t=(1, 2))
case("[{{ [1][5] }}] [{{ d.missing }}] [{{ d['missing'] }}] [{{ 'abc'[10] }}] [{{ none.x }}]", d={})
case("{{ d.x.y }}", d={})
case("{{ missing.attr }}")
case("{{ [1][5].x }}")
case("{{ d[0].x }}", d={})
case("{{ 'abc'.nope.x }}")
case("{{ 1 + 'a' }}")
case("{{ 'a' + 1 }}")
case("{{ [1] + 1 }}")
case("{{ 1 - 'a' }}")
case("{{ 1 / 0 }}")
case("{{ 1 // 0 }}")
case("{{ 1 < 'a' }}")
case("{{ missing + 1 }}")
case("{{ -'x' }}")
case("{{ [1, 2, 3][1:2:0] }}")
case("{{ {'a': 1}['a'] }} {{ {'a': {'b': [1, {'c': 'deep'}]}}['a']['b'][1]['c'] }}")
case("{{ [[1, 2], [3]]|length }} {{ ([1] + [2, 3])|length }}")
case("{{ {'items': 1}.items is callable }}|{{ {'x': 1}['items'] is callable }}|{{ {'items': 1}['items'] }}")
# --- string / dict / list methods ---------------------------------------------------------------
case("{{ 'Hello'.startswith('He') }} {{ 'Hello'.endswith('lo') }} {{ 'Hello'.startswith(('x', 'H')) }} {{ 'Hello'.endswith('x') }}")
case("[{{ '  x  '.strip() }}] [{{ '  x  '.lstrip() }}] [{{ '  x  '.rstrip() }}] [{{ 'xxaxx'.strip('x') }}] [{{ '\\n\\tx\\u3000'.strip() }}]")
case("{{ 'a,b,,c'.split(',') }} {{ '  a  b \\n c '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'a,b,c'.rsplit(',', 1) }} {{ ''.split() }} {{ ''.split(',') }}")
case("{{ 'MiXeD'.lower() }} {{ 'MiXeD'.upper() }} {{ 'hello world'.title() }} {{ \"they're bill's\".title() }} {{ 'hELLO'.capitalize() }} {{ 'Ab'.swapcase() }}")
case("{{ 'aaa'.replace('a', 'b') }} {{ 'aaa'.replace('a', 'b', 2) }} {{ 'abc'.find('c') }} {{ 'abc'.find('z') }} {{ 'abcabc'.count('bc') }} {{ 'héllo'.index('l') }}")
case("{{ '-'.join(['a', 'b']) }} {{ 'a\\nb\\r\\nc'.splitlines() }} {{ 'key=val=x'.partition('=') }} {{ 'a.b.c'.rpartition('.') }}")
case("{{ 'x'.center(5, '*') }} {{ 'x'.ljust(3, '.') }} {{ 'x'.rjust(3) }} {{ '42'.zfill(5) }} {{ '-4'.zfill(4) }} {{ 'pre_x'.removeprefix('pre_') }} {{ 'x.txt'.removesuffix('.txt') }}")
case("{{ 'abc'.isalpha() }} {{ '123'.isdigit() }} {{ 'a1'.isalnum() }} {{ ' '.isspace() }} {{ 'ABC'.isupper() }} {{ 'abc'.islower() }} {{ ''.isalpha() }}")
case("{{ '{} and {}'.format('a', 'b') }} {{ '{1}{0}'.format('x', 'y') }} {{ '{name}!'.format(name='n') }} {{ '{{literal}} {}'.format(1) }} {{ '{:>5}|{:<4}|{:^5}|{:.2f}|{:05d}'.format('r', 'l', 'c', 3.14159, 42) }}")
case("{{ '%s is %d years' % ('Tom', 30) }} {{ '%.2f' % 3.14159 }} {{ '%5s|%-5s|' % ('a', 'b') }} {{ '%(a)s-%(b)s' % {'a': 1, 'b': 2} }} {{ '%r' % 'q' }} {{ '100%%' % () }}")
case("{{ d.keys()|list }} {{ d.values()|list }} {{ d.items()|list }} {{ d.get('a') }} {{ d.get('zz') }} {{ d.get('zz', 'dflt') }} {{ d.copy() }}", d={"a": 1, "b": [2]})
case("{{ [1, 2, 1].count(1) }} {{ [1, 2, 3].index(2) }} {{ (1, 2).index(2) }}")
case("{{ x.append(1) }}", x=[])
case("{{ x.pop }}|", x=[1])
case("{{ d.update({'a': 1}) }}", d={})
case("{% set ns = namespace(l=[1]) %}{{ ns.l.append(2) }}")
# --- globals ------------------------------------------------------------------------------------
case("{{ raise_exception('custom failure: ' ~ 42) }}")
case("before{% if true %}{{ raise_exception('inside if') }}{% endif %}after")
case("{{ dict(a=1, b=2) }} {{ dict({'x': 1}, y=2) }} {{ dict([('k', 'v')]) }}")
case("{{ range(3)|list }} {{ range(1, 4)|list }} {{ range(0, 10, 4)|list }} {{ range(3, 0, -1)|list }} {{ range(0)|list }}")
case("{{ range(100001)|length }}")
case("{% set j = joiner('|') %}{% for x in [1, 2, 3] %}{{ j() }}{{ x }}{% endfor %}")
case("{% set c = cycler('a', 'b') %}{{ c.next() }}{{ c.next() }}{{ c.next() }}")
case("{{ undefined_fn() }}")
case("{{ 'str'() }}")
# --- realistic chat-template idioms ---------------------------------------------------------------
case("{%- for m in messages -%}{%- if m.role == 'system' -%}<<SYS>>{{ m.content }}<</SYS>>{%- else -%}[{{ m.role|upper }}] {{ m.content|trim }}{% endif %}\n{% endfor -%}{%- if add_generation_prompt %}[ASSISTANT]{% endif %}",
     messages=[{"role": "system", "content": "be nice"}, {"role": "user", "content": " hi "}], add_generation_prompt=True)
case("{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{{ message['content'] }}{% endfor %}",
     bos_token="<s>", messages=[{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])
case("{%- if tools %}{{- '<tools>' }}{%- for tool in tools %}{{- '\\n' }}{{- tool | tojson }}{%- endfor %}{{- '\\n</tools>' }}{%- endif %}",
     tools=[{"type": "function", "function": {"name": "f", "parameters": {"x": 1.0}}}])
case("{%- set ns = namespace(last_user=-1) -%}{%- for m in messages -%}{%- if m.role == 'user' -%}{%- set ns.last_user = loop.index0 -%}{%- endif -%}{%- endfor -%}{{ ns.last_user }}",
     messages=[{"role": "user"}, {"role": "assistant"}, {"role": "user"}, {"role": "assistant"}])
case("{%- for m in messages -%}{%- if m.content is string -%}{{ m.content }}{%- else -%}{%- for p in m.content -%}{%- if p.type == 'text' -%}{{ p.text }}{%- elif p.type == 'image' -%}<img>{%- endif -%}{%- endfor -%}{%- endif -%}|{%- endfor -%}",
     messages=[{"content": "s"}, {"content": [{"type": "text", "text": "t"}, {"type": "image"}]}])
case("{{ messages[0]['content'].split('</think>')[-1].lstrip('\\n') }}", messages=[{"content": "<think>x</think>\n\nanswer"}])
case("{%- set content = message.content if message.content is string else '' -%}{{ '<think>' in content }}|{{ content.split('<think>')[0]|trim }}", message={"content": "pre <think>r</think> post"})
case("{{ (messages|selectattr('role', 'equalto', 'system')|list|length) > 0 }}|{{ messages|map(attribute='role')|join(',') }}|{{ messages[-1].role }}",
     messages=[{"role": "system"}, {"role": "user"}])
case("{% set x = tool.function if tool.function is defined else tool %}{{ x.name }}", tool={"name": "direct"})
case("{{ tc.function.name }}", tc={"id": "no function"})
case("{{ (message.tool_calls or [])|length }} {{ message.tool_calls|default([], true)|length }}", message={"tool_calls": None})
case("{{ strftime_now('%Y')|length }}")



def main():
    tok = AutoTokenizer.from_pretrained(DATA)
    with open(os.path.join(DATA, "chat_template.jinja"), encoding="utf-8") as f:
        template = f.read()
    rows = make_chat(tok, template)
    os.makedirs(os.path.dirname(OUT_CHAT), exist_ok=True)
    with open(OUT_CHAT, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n")
    n_err = sum(1 for r in rows if "error" in r or "prep_error" in r)
    print(f"{OUT_CHAT}: {len(rows)} requests ({n_err} errors)")

    jrows = []
    for template_src, context in JINJA_CASES:
        row = {"template": template_src, "context": context}
        try:
            row["output"] = ctu._compile_jinja_template(template_src).render(**context)
        except Exception as e:  # noqa: BLE001
            row["error"] = str(e)
            row["error_type"] = type(e).__name__
        jrows.append(row)
    os.makedirs(os.path.dirname(OUT_JINJA), exist_ok=True)
    with open(OUT_JINJA, "w", encoding="utf-8") as f:
        for r in jrows:
            f.write(json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n")
    print(f"{OUT_JINJA}: {len(jrows)} cases ({sum('error' in r for r in jrows)} errors)")


if __name__ == "__main__":
    main()
