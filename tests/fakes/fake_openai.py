"""A local server speaking the OpenAI chat-completions wire protocol.

`POST /v1/chat/completions` with `"stream": true` answers with SSE
`data: {chat.completion.chunk}` events ending `data: [DONE]`; without it, one
`chat.completion` JSON body. Reply specs (plain dicts, so a script file can hold them):

    {"text": "hello", "chunk_size": 4,
     "tool_calls": [{"id": "call_1", "name": "k8s__get_pods", "arguments": {"ns": "x"}}],
     "usage": {"prompt_tokens": 10, "completion_tokens": 5, "reasoning_tokens": 0, "cached_tokens": 0},
     "finish_reason": "stop", "event_delay_s": 0.0}
    {"status": 429, "message": "slow down"}
    {"text": "", "tool_calls": []}                 # an empty answer
    {"text": "partial", "stall_after": 1}          # send one event, then hang
    {"events": [raw chunk dicts]}

`POST /v1/embeddings` answers at once, without a queued reply, with `fake_embedding` of each input: a
deterministic vector (tests/fakes/embedding.py).

Run standalone: `python -m tests.fakes.fake_openai --port 8766 --script replies.json`.
"""

from __future__ import annotations

import base64
import json
import struct
from typing import Any

from .embedding import fake_embedding
from .sse_server import STALL_CAP_S, RecordedRequest, Reply, SSEFakeServer, run_cli

COMPLETIONS_PATHS = ("/v1/chat/completions", "/chat/completions")
EMBEDDINGS_PATHS = ("/v1/embeddings", "/embeddings")

_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_exceeded"}


def error(status: int, message: str = "") -> dict[str, Any]:
    return {"status": status, "message": message or f"fake error {status}"}


class FakeOpenAI(SSEFakeServer):
    """Plays queued chat-completion replies; `requests` holds every request body received."""

    def route(self, request: RecordedRequest) -> tuple[bool, bool]:
        if request.method == "POST" and request.path in EMBEDDINGS_PATHS:
            return True, False
        if request.method != "POST" or request.path not in COMPLETIONS_PATHS:
            return False, False
        body = request.body if isinstance(request.body, dict) else {}
        return True, bool(body.get("stream"))

    def build_reply(self, spec: dict[str, Any] | None, request: RecordedRequest, stream: bool) -> Reply:
        if spec is None:
            return _error_reply(400, "fake_openai: no reply queued")
        if "status" in spec and spec["status"] != 200:
            return _error_reply(int(spec["status"]), spec.get("message", ""))
        model = (request.body or {}).get("model", "fake-model")
        include_usage = bool(((request.body or {}).get("stream_options") or {}).get("include_usage"))
        if not stream:
            return Reply(body=_completion(spec, model))
        events = list(spec["events"]) if "events" in spec else _chunks(spec, model, include_usage)
        return Reply(
            events=events,
            done_marker="[DONE]",
            stall_after=spec.get("stall_after"),
            stall_s=float(spec.get("stall_s", STALL_CAP_S)),
            event_delay_s=float(spec.get("event_delay_s", 0.0)),
        )


    def direct_reply(self, request: RecordedRequest) -> Reply | None:
        if request.path not in EMBEDDINGS_PATHS:
            return None
        body = request.body if isinstance(request.body, dict) else {}
        inputs = body.get("input")
        inputs = [inputs] if isinstance(inputs, str) else inputs
        if not isinstance(inputs, list) or not all(isinstance(i, str) for i in inputs):
            return _error_reply(400, "fake_openai: embeddings need `input` as a string or a list of strings")
        as_base64 = body.get("encoding_format") == "base64"
        data = []
        for index, text in enumerate(inputs):
            vector = fake_embedding(text)
            encoded: Any = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode() if as_base64 \
                else vector
            data.append({"object": "embedding", "index": index, "embedding": encoded})
        tokens = sum(len(t) // 4 + 1 for t in inputs)
        return Reply(body={"object": "list", "data": data, "model": body.get("model", "fake-embedding"),
                           "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})


def _error_reply(status: int, message: str) -> Reply:
    kind = _ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return Reply(
        status=status, body={"error": {"message": message or f"fake error {status}", "type": kind, "code": kind}}
    )


def _arguments(call: dict[str, Any]) -> str:
    args = call.get("arguments", {})
    return args if isinstance(args, str) else json.dumps(args)


def _usage(spec: dict[str, Any]) -> dict[str, Any]:
    usage = spec.get("usage", {})
    prompt, completion = int(usage.get("prompt_tokens", 1)), int(usage.get("completion_tokens", 1))
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "completion_tokens_details": {"reasoning_tokens": int(usage.get("reasoning_tokens", 0))},
        "prompt_tokens_details": {"cached_tokens": int(usage.get("cached_tokens", 0))},
    }


def _chunk(model: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _chunks(spec: dict[str, Any], model: str, include_usage: bool) -> list[dict[str, Any]]:
    """Text in `chunk_size` pieces, then each tool call as a header delta plus argument fragments."""
    text, size = spec.get("text", ""), int(spec.get("chunk_size", 0)) or None
    events = [_chunk(model, {"role": "assistant", "content": ""})]
    for start in range(0, len(text), size or max(len(text), 1)):
        events.append(_chunk(model, {"content": text[start : start + (size or len(text))]}))
    for index, call in enumerate(spec.get("tool_calls", [])):
        head = {"index": index, "id": call.get("id", f"call_{index}"), "type": "function"}
        events.append(_chunk(model, {"tool_calls": [{**head, "function": {"name": call["name"], "arguments": ""}}]}))
        arguments = _arguments(call)
        step = size or max(len(arguments), 1)
        for start in range(0, len(arguments), step):
            piece = {"index": index, "function": {"arguments": arguments[start : start + step]}}
            events.append(_chunk(model, {"tool_calls": [piece]}))
    finish = spec.get("finish_reason") or ("tool_calls" if spec.get("tool_calls") else "stop")
    events.append(_chunk(model, {}, finish))
    if include_usage:
        events.append({**_chunk(model, {}), "choices": [], "usage": _usage(spec)})
    return events


def _completion(spec: dict[str, Any], model: str) -> dict[str, Any]:
    calls = [
        {
            "id": c.get("id", f"call_{i}"),
            "type": "function",
            "function": {"name": c["name"], "arguments": _arguments(c)},
        }
        for i, c in enumerate(spec.get("tool_calls", []))
    ]
    message: dict[str, Any] = {"role": "assistant", "content": spec.get("text", "")}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": _usage(spec),
    }


def start_fake_openai(port: int = 0, repeat_last: bool = False) -> FakeOpenAI:
    server = FakeOpenAI(port=port, repeat_last=repeat_last)
    server.start()
    return server


if __name__ == "__main__":
    run_cli(lambda port: FakeOpenAI(port=port), "Fake OpenAI chat-completions server")
