#!/usr/bin/env python3
"""Structured output of `inkling serve` driven by the official `openai` client.

The server runs the tiny random-weight model with the real 200k vocabulary (no test script): its
unconstrained output is noise, so every schema-valid answer here is the constraint's doing.
Checks response_format json_schema (validated with `jsonschema`) and json_object, the client's
`beta.chat.completions.parse` with a pydantic model, tool_choice "required" streamed and a named
tool choice (arguments valid against the tool's parameters), parallel_tool_calls false, n=3,
the developer role, and the 400s of bad schemas. Exit 77 (skip) when a module is missing.
"""
import json
import os
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tiny_model import ensure_tiny_model, server_test_args, start_server  # noqa: E402

try:
    import jsonschema
    import openai
    import pydantic
except ImportError as e:
    print("SKIP: %s" % e)
    sys.exit(77)

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 16},
        "age": {"type": "integer"},
        "email": {"type": "string", "pattern": "^[a-z]{1,8}@[a-z]{1,8}\\.(com|org)$"},
        "tags": {"type": "array", "items": {"enum": ["red", "green", "blue"]},
                 "minItems": 1, "maxItems": 3},
        "address": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/Address"}]},
    },
    "required": ["name", "age", "email", "tags", "address"],
    "additionalProperties": False,
    "$defs": {"Address": {"type": "object", "properties": {
        "city": {"type": "string", "maxLength": 12}, "zip": {"type": "string",
                                                              "pattern": "^[0-9]{5}$"}},
        "required": ["city", "zip"], "additionalProperties": False}},
}
TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "maxLength": 12},
            "unit": {"enum": ["C", "F"]}, "days": {"type": "integer"}},
            "required": ["city", "unit"], "additionalProperties": False}}},
    {"type": "function", "function": {
        "name": "get_time", "parameters": {"type": "object", "properties": {
            "tz": {"type": "string", "enum": ["UTC", "CET", "PST"]}},
            "required": ["tz"], "additionalProperties": False}}},
]


class Colour(pydantic.BaseModel):
    name: str = pydantic.Field(max_length=10)
    rgb: list[int] = pydantic.Field(min_length=3, max_length=3)
    warm: bool


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok  ", what)


def main():
    ap = server_test_args()
    args = ap.parse_args()
    if not os.path.exists(os.path.join(args.tokenizer_dir, "tokenizer.json")):
        print("SKIP: no tokenizer files at", args.tokenizer_dir)
        return 77
    model = ensure_tiny_model(args.maker, args.tokenizer_dir, args.work)
    proc, port = start_server(args.inkling, model, "--parallel", "3")
    try:
        client = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % port, api_key="none",
                               max_retries=0, timeout=120)
        user = [{"role": "developer", "content": "Answer in JSON."},
                {"role": "user", "content": "Describe a person."}]
        for seed in range(3):
            r = client.chat.completions.create(
                model="m", messages=user, max_tokens=160, seed=seed, temperature=1.0,
                response_format={"type": "json_schema", "json_schema": {
                    "name": "person", "schema": PERSON, "strict": True}})
            c = r.choices[0]
            jsonschema.validate(json.loads(c.message.content), PERSON)
            check(c.finish_reason == "stop", "json_schema seed %d: valid, finish stop" % seed)

        r = client.chat.completions.create(model="m", messages=user, max_tokens=64, seed=0,
                                           response_format={"type": "json_object"},
                                           extra_body={"reasoning_effort": "none"})
        check(isinstance(json.loads(r.choices[0].message.content), dict), "json_object")

        p = client.beta.chat.completions.parse(model="m", messages=user, max_tokens=96, seed=0,
                                               response_format=Colour,
                                               extra_body={"reasoning_effort": "none"})
        parsed = p.choices[0].message.parsed
        check(isinstance(parsed, Colour) and len(parsed.rgb) == 3, "parse() with pydantic")

        r = client.chat.completions.create(
            model="m", messages=user, max_tokens=96, n=3, seed=0,
            extra_body={"reasoning_effort": "none"},
            response_format={"type": "json_schema", "json_schema": {
                "name": "person", "schema": PERSON["$defs"]["Address"]}})
        check(sorted(c.index for c in r.choices) == [0, 1, 2], "n=3: three choices")
        for c in r.choices:
            jsonschema.validate(json.loads(c.message.content), PERSON["$defs"]["Address"])
        check(len({c.message.content for c in r.choices}) > 1, "n=3: choices differ (seeds)")

        # tool_choice required, streamed: deltas assemble into valid calls.
        stream = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "weather?"}], tools=TOOLS,
            tool_choice="required", max_tokens=120, stream=True, seed=0,
            # No reasoning block: free reasoning from the random model could use up max_tokens
            # before the constrained part starts (a "length" finish with no call).
            extra_body={"reasoning_effort": "none"})
        calls, finish = {}, None
        for chunk in stream:
            if not chunk.choices:
                continue
            for tc in chunk.choices[0].delta.tool_calls or []:
                e = calls.setdefault(tc.index, {"name": "", "args": ""})
                if tc.function and tc.function.name:
                    e["name"] = tc.function.name
                e["args"] += (tc.function.arguments or "") if tc.function else ""
            finish = chunk.choices[0].finish_reason or finish
        check(finish == "tool_calls" and calls, "required (streamed): finish tool_calls")
        schemas = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
        for e in calls.values():
            jsonschema.validate(json.loads(e["args"]), schemas[e["name"]])
        check(True, "required (streamed): %d call(s) valid against their schemas" % len(calls))

        r = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "time?"}], tools=TOOLS,
            tool_choice={"type": "function", "function": {"name": "get_time"}},
            parallel_tool_calls=False, max_tokens=80, seed=0,
            extra_body={"reasoning_effort": "none"})
        tcs = r.choices[0].message.tool_calls
        check(len(tcs) == 1 and tcs[0].function.name == "get_time", "named + single call")
        jsonschema.validate(json.loads(tcs[0].function.arguments), schemas["get_time"])

        m = client.models.retrieve(client.models.list().data[0].id)
        check(m.object == "model", "GET /v1/models/{id}")

        for bad, want in [({"type": "json_schema", "json_schema": {"name": "x", "strict": True,
                            "schema": {"type": "integer", "minimum": 3}}}, "minimum"),
                          ({"type": "json_schema", "json_schema": {"name": "x",
                            "schema": {"$ref": "#/$defs/Nope"}}}, "does not resolve")]:
            try:
                client.chat.completions.create(model="m", messages=user, response_format=bad)
                check(False, "bad schema rejected")
            except openai.BadRequestError as e:
                check(want in str(e), "bad schema -> 400 naming '%s'" % want)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
