#!/usr/bin/env python3
"""`inkling serve` driven by the official `openai` Python client on 127.0.0.1.

Generates the tiny real-vocabulary model, starts the server on a free port with a test script
(scripted reasoning / tool-call outputs), then checks non-streaming and streaming chat, the
reasoning split, a tool-call round trip, the Responses API (responses.create / .stream), the
Anthropic Messages API with the official `anthropic` client (when installed), completions,
errors and 4 concurrent clients. With
--bench it then measures, in the same server run (--parallel 16), completion tokens/s summed over
1, 4 and 16 concurrent streaming clients and their mean time to first token. Exit 77 (skip) when
`openai` is missing.
"""
import http.client
import json
import os
import sys
import threading
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tiny_model  # noqa: E402
from tiny_model import ensure_tiny_model, server_test_args  # noqa: E402

try:
    import openai
except ImportError:
    print("SKIP: the openai module is not installed (pip install openai)")
    sys.exit(77)

SCRIPT = [  # first match wins: "sunny" (the tool result turn) before "weather"
    {"when": "sunny", "output": "<|content_thinking|>Summarize.<|end_message|><|message_model|>"
     "<|content_text|>It is sunny in Paris.<|end_message|><|content_model_end_sampling|>"},
    {"when": "weather", "output": "<|content_thinking|>Let me check.<|end_message|><|message_model|>"
     "get_weather<|content_invoke_tool_json|>{\"name\":\"get_weather\",\"args\":{\"city\":\"Paris\"}}"
     "<|end_message|><|content_model_end_sampling|>"},
]
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}]


def start_server(args, model, script_path, parallel):
    return tiny_model.start_server(args.inkling, model, "--parallel", str(parallel),
                                   "--test-script", script_path)


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok  ", what)


def server_metrics(port):
    """The unlabelled values of /metrics as a dict."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", "/metrics")
    out = {}
    for line in conn.getresponse().read().decode().splitlines():
        parts = line.split()
        if len(parts) == 2 and not line.startswith("#") and "{" not in parts[0]:
            out[parts[0]] = float(parts[1])
    return out


def throughput(port, n_clients, max_tokens=64):
    """n concurrent streaming completions (greedy, ignore_eos): completion tokens/s summed over
    the clients (tokens / wall time of the round), mean and max client-side time to first token,
    the server's own mean TTFT (/metrics, submit to first sampled token) and the token count.
    A plain http.client per thread: the openai client's per-chunk parsing would compete with
    the server for the CPU and inflate the numbers at 16 clients."""
    toks, ttfts = [0] * n_clients, [0.0] * n_clients
    barrier = threading.Barrier(n_clients + 1)

    def one(i):
        # A fresh prompt per round and client: no prefix reuse from an earlier round.
        body = json.dumps({"model": "x", "prompt": "Round %d: client %d writes a story"
                           % (n_clients, i), "max_tokens": max_tokens, "temperature": 0,
                           "stream": True, "ignore_eos": True,
                           "stream_options": {"include_usage": True}})
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        barrier.wait()
        t0 = time.time()
        conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        for raw in resp:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            if not ttfts[i] and '"text":""' not in line:
                ttfts[i] = time.time() - t0
            if '"usage":{' in line:
                toks[i] = json.loads(line[6:])["usage"]["completion_tokens"]

    m0 = server_metrics(port)
    th = [threading.Thread(target=one, args=(i,)) for i in range(n_clients)]
    for t in th:
        t.start()
    barrier.wait()
    t0 = time.time()
    for t in th:
        t.join()
    dt = time.time() - t0
    m1 = server_metrics(port)
    key = "inkling_time_to_first_token_seconds_"
    server_ttft = (m1[key + "sum"] - m0[key + "sum"]) / max(1, m1[key + "count"] - m0[key + "count"])
    return sum(toks) / dt, sum(ttfts) / n_clients, max(ttfts), server_ttft, sum(toks)


def main():
    ap = server_test_args()
    ap.add_argument("--bench", action="store_true", help="also measure 1 vs 4 vs 16 clients")
    args = ap.parse_args()
    if not os.path.exists(os.path.join(args.tokenizer_dir, "tokenizer.json")):
        print("SKIP: no tokenizer files at", args.tokenizer_dir)
        return 77
    model = ensure_tiny_model(args.maker, args.tokenizer_dir, args.work)
    script_path = os.path.join(args.work, "server_openai_script.json")
    with open(script_path, "w") as f:
        json.dump(SCRIPT, f)
    proc, port = start_server(args, model, script_path, parallel=16 if args.bench else 4)
    try:
        client = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % port, api_key="none",
                               max_retries=0, timeout=120)
        models = client.models.list()
        check(len(models.data) == 1, "models.list")

        r = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Hi"}],
                                           max_tokens=8)
        check(r.choices[0].finish_reason in ("length", "stop", "tool_calls"), "plain chat")
        check(r.usage.prompt_tokens > 0 and r.usage.completion_tokens > 0, "usage")

        # Responses API: a function call (reasoning item first), the round trip with a
        # function_call_output item, the streamed event order and the stream helper.
        rtools = [dict(type="function", **TOOLS[0]["function"])]
        rr = client.responses.create(model="m", input="What is the weather in Paris?",
                                     tools=rtools, reasoning={"effort": "high", "summary": "auto"},
                                     max_output_tokens=64)
        check([o.type for o in rr.output] == ["reasoning", "function_call"]
              and rr.output[0].summary[0].text == "Let me check."
              and json.loads(rr.output[1].arguments) == {"city": "Paris"}
              and rr.status == "completed", "responses.create: reasoning + function_call")
        call = rr.output[1]
        rr2 = client.responses.create(model="m", tools=rtools, max_output_tokens=64, input=[
            {"role": "user", "content": "What is the weather in Paris?"},
            {"type": "function_call", "call_id": call.call_id, "name": call.name,
             "arguments": call.arguments},
            {"type": "function_call_output", "call_id": call.call_id, "output": "sunny, 21C"}])
        check(rr2.output_text == "It is sunny in Paris." and rr2.usage.output_tokens > 0,
              "responses.create: function_call_output round trip")
        events = [e.type for e in client.responses.create(
            model="m", input="weather in Paris?", tools=rtools, stream=True,
            max_output_tokens=64)]
        collapsed = [t for i, t in enumerate(events) if i == 0 or t != events[i - 1]]
        check(collapsed == ["response.created", "response.in_progress",
                            "response.output_item.added", "response.reasoning_text.delta",
                            "response.reasoning_text.done", "response.output_item.done",
                            "response.output_item.added",
                            "response.function_call_arguments.delta",
                            "response.function_call_arguments.done",
                            "response.output_item.done", "response.completed"],
              "responses stream: event order")
        with client.responses.stream(model="m", input="sunny?", max_output_tokens=64) as st:
            text = "".join(e.delta for e in st if e.type == "response.output_text.delta")
            final = st.get_final_response()
        check(text == final.output_text == "It is sunny in Paris.", "responses.stream helper")
        try:
            client.responses.create(model="m", input="hi", previous_response_id="resp_1")
            check(False, "previous_response_id refused")
        except openai.BadRequestError as e:
            check(e.status_code == 400 and "stateless" in str(e), "previous_response_id: 400")

        # Anthropic Messages with the official `anthropic` client, when it is installed.
        try:
            import anthropic
        except ImportError:
            anthropic = None
            print("skip anthropic client checks: the anthropic module is not installed")
        if anthropic:
            ac = anthropic.Anthropic(base_url="http://127.0.0.1:%d" % port, api_key="none",
                                     max_retries=0, timeout=120)
            atools = [{"name": "get_weather", "description": "Weather for a city",
                       "input_schema": TOOLS[0]["function"]["parameters"]}]
            am = ac.messages.create(model="m", max_tokens=64, tools=atools,
                                    thinking={"type": "enabled", "budget_tokens": 32},
                                    messages=[{"role": "user", "content": "weather in Paris?"}])
            check([b.type for b in am.content] == ["thinking", "tool_use"]
                  and am.content[1].input == {"city": "Paris"} and am.stop_reason == "tool_use",
                  "anthropic messages.create: thinking + tool_use")
            am2 = ac.messages.create(model="m", max_tokens=64, tools=atools, messages=[
                {"role": "user", "content": "weather in Paris?"},
                {"role": "assistant", "content": [b.model_dump(exclude_none=True)
                                                  for b in am.content]},
                {"role": "user", "content": [{"type": "tool_result",
                                              "tool_use_id": am.content[1].id,
                                              "content": "sunny, 21C"}]}])
            check(am2.content[-1].text == "It is sunny in Paris.", "anthropic tool_result round trip")
            with ac.messages.stream(model="m", max_tokens=64, tools=atools, messages=[
                    {"role": "user", "content": "weather in Paris?"}]) as st:
                kinds = [e.type for e in st]
                final = st.get_final_message()
            check(kinds[0] == "message_start" and kinds[-1] == "message_stop"
                  and final.content[1].input == {"city": "Paris"}, "anthropic messages.stream")
            try:
                ac.messages.create(model="m", max_tokens=8,
                                   messages=[{"role": "system", "content": "x"}])
                check(False, "anthropic: bad role refused")
            except anthropic.BadRequestError as e:
                check(e.status_code == 400, "anthropic: bad role -> 400")

        # Tool call with reasoning, then the round trip with the tool result.
        msgs = [{"role": "user", "content": "What is the weather in Paris?"}]
        r = client.chat.completions.create(model="m", messages=msgs, tools=TOOLS)
        msg = r.choices[0].message
        check(r.choices[0].finish_reason == "tool_calls", "finish_reason tool_calls")
        check(msg.tool_calls and msg.tool_calls[0].function.name == "get_weather", "tool name")
        check(json.loads(msg.tool_calls[0].function.arguments) == {"city": "Paris"}, "tool args")
        check((msg.model_extra or {}).get("reasoning_content") == "Let me check.", "reasoning split")
        msgs.append({"role": "assistant", "content": None,
                     "reasoning_content": "Let me check.",
                     "tool_calls": [tc.model_dump() for tc in msg.tool_calls]})
        msgs.append({"role": "tool", "tool_call_id": msg.tool_calls[0].id, "content": "sunny"})
        r2 = client.chat.completions.create(model="m", messages=msgs, tools=TOOLS)
        check(r2.choices[0].message.content == "It is sunny in Paris.", "tool round trip answer")
        check(r2.usage.prompt_tokens_details.cached_tokens > 0, "round trip reuses the prefix")

        # Streaming: role first, reasoning and tool-call deltas, usage, no markers.
        stream = client.chat.completions.create(
            model="m", messages=msgs[:1], tools=TOOLS, stream=True,
            stream_options={"include_usage": True})
        roles, reasoning, names, args_text, finish, usage = [], "", [], "", None, None
        for chunk in stream:
            if chunk.usage:
                usage = chunk.usage
            if not chunk.choices:
                continue
            d = chunk.choices[0].delta
            if d.role:
                roles.append(d.role)
            reasoning += (d.model_extra or {}).get("reasoning_content") or ""
            check_no_marker = (d.content or "")
            assert "<|" not in check_no_marker
            for tc in d.tool_calls or []:
                if tc.function and tc.function.name:
                    names.append(tc.function.name)
                args_text += (tc.function.arguments or "") if tc.function else ""
            finish = chunk.choices[0].finish_reason or finish
        check(roles == ["assistant"], "stream: one role delta first")
        check(reasoning == "Let me check.", "stream: reasoning deltas")
        check(names == ["get_weather"] and json.loads(args_text) == {"city": "Paris"},
              "stream: tool call deltas")
        check(finish == "tool_calls" and usage and usage.completion_tokens > 0, "stream: finish+usage")

        c = client.completions.create(model="m", prompt="Once upon a time", max_tokens=5,
                                      temperature=0)
        check(c.choices[0].finish_reason == "length" and c.usage.completion_tokens == 5,
              "completions")

        try:
            client.chat.completions.create(model="m", messages=[{"role": "wizard", "content": "x"}])
            check(False, "bad role rejected")
        except openai.BadRequestError as e:
            check(e.status_code == 400 and "wizard" in str(e), "bad role -> 400")

        # 4 concurrent clients all complete.
        results = []

        def worker(i):
            rr = client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "client %d" % i}], max_tokens=16,
                temperature=0.7, seed=i)
            results.append(rr.choices[0].finish_reason)

        th = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
        for t in th:
            t.start()
        for t in th:
            t.join()
        check(len(results) == 4, "4 concurrent clients complete")

        if args.bench:
            throughput(port, 2, max_tokens=4)  # warm-up
            print("bench: clients | completion tok/s (sum) | mean TTFT s | max TTFT s | "
                  "server mean TTFT s | tokens")
            for n in (1, 4, 16):
                tps, ttft, ttft_max, server_ttft, total = throughput(port, n)
                check(total == n * 64, "bench: %d clients got all their tokens" % n)
                print("bench: %7d | %21.1f | %11.3f | %10.3f | %18.3f | %d"
                      % (n, tps, ttft, ttft_max, server_ttft, total))
    finally:
        proc.terminate()
        rc = proc.wait(timeout=30)
    check(rc == 0, "clean shutdown")
    return 0


if __name__ == "__main__":
    sys.exit(main())
