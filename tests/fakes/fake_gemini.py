"""A local server speaking the Gemini REST wire protocol used by google-genai.

`POST /v1beta/models/{model}:streamGenerateContent?alt=sse` answers with SSE
`data: {GenerateContentResponse}` events; `:generateContent` with one JSON body.
Reply specs (plain dicts, so a script file can hold them):

    {"parts": [{"text": "hi"}, {"text": "hmm", "thought": True},
               {"functionCall": {"name": "k8s__get", "args": {}}, "thoughtSignature": "c2ln"}],
     "usage": {"promptTokenCount": 10, ...}, "grounding": {...}, "url_context": {...},
     "finish_reason": "STOP", "event_delay_s": 0.0}
    {"status": 429, "message": "quota", "error_status": "RESOURCE_EXHAUSTED"}
    {"parts": []}                                  # an empty answer
    {"parts": [...], "stall_after": 1}             # send one event, then hang
    {"events": [raw GenerateContentResponse dicts]}

`:embedContent` / `:batchEmbedContents` answer at once, without a queued reply, with the deterministic
`fake_embedding` of each text (tests/fakes/embedding.py).

Run standalone: `python -m tests.fakes.fake_gemini --port 8765 --script replies.yaml`.
"""

from __future__ import annotations

import re
from typing import Any

from .embedding import fake_embedding
from .sse_server import STALL_CAP_S, RecordedRequest, Reply, SSEFakeServer, run_cli

_PATH_RE = re.compile(
    r"^/(v1beta|v1|v1alpha)/models/(?P<model>[^/:]+):"
    r"(?P<method>streamGenerateContent|generateContent|embedContent|batchEmbedContents)$"
)
_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


def text(value: str, **extra: Any) -> dict[str, Any]:
    return {"parts": [{"text": value}], **extra}


def function_call(name: str, args: dict[str, Any] | None = None, signature: str = "") -> dict[str, Any]:
    part: dict[str, Any] = {"functionCall": {"name": name, "args": args or {}}}
    if signature:
        part["thoughtSignature"] = signature
    return part


def usage(prompt: int, candidates: int, thoughts: int = 0, cached: int = 0) -> dict[str, int]:
    """`cached`: the part of the prompt read from the context cache (Gemini counts it inside the prompt)."""
    return {
        "promptTokenCount": prompt,
        "candidatesTokenCount": candidates,
        "thoughtsTokenCount": thoughts,
        "totalTokenCount": prompt + candidates + thoughts,
        **({"cachedContentTokenCount": cached} if cached else {}),
    }


def error(status: int, message: str = "") -> dict[str, Any]:
    return {"status": status, "message": message or f"fake error {status}"}


class FakeGemini(SSEFakeServer):
    """Plays queued Gemini replies; `requests` holds every request body received."""

    def route(self, request: RecordedRequest) -> tuple[bool, bool]:
        match = _PATH_RE.match(request.path)
        if not match or request.method != "POST":
            return False, False
        return True, match.group("method") == "streamGenerateContent"

    def direct_reply(self, request: RecordedRequest) -> Reply | None:
        match = _PATH_RE.match(request.path)
        if not match or "Embed" not in match.group("method"):
            return None
        body = request.body if isinstance(request.body, dict) else {}
        items = body.get("requests") if match.group("method") == "batchEmbedContents" else [body]
        if not isinstance(items, list):
            return _error_reply(400, "fake_gemini: batchEmbedContents needs `requests`", "INVALID_ARGUMENT")
        vectors = []
        for item in items:
            parts = ((item or {}).get("content") or {}).get("parts") or []
            vectors.append({"values": fake_embedding(" ".join(str(p.get("text", "")) for p in parts))})
        if match.group("method") == "embedContent":
            return Reply(body={"embedding": vectors[0]})
        return Reply(body={"embeddings": vectors})

    def model_of(self, request: RecordedRequest) -> str:
        match = _PATH_RE.match(request.path)
        return match.group("model") if match else ""

    def build_reply(self, spec: dict[str, Any] | None, request: RecordedRequest, stream: bool) -> Reply:
        if spec is None:
            # Non-retryable, so a test that forgot to queue a reply fails fast and says why.
            return _error_reply(400, "fake_gemini: no reply queued", "FAILED_PRECONDITION")
        if "status" in spec and spec["status"] != 200:
            status = int(spec["status"])
            return _error_reply(status, spec.get("message", ""), spec.get("error_status", ""))
        events = list(spec["events"]) if "events" in spec else _events_from_parts(spec)
        common = {
            "stall_after": spec.get("stall_after"),
            "stall_s": float(spec.get("stall_s", STALL_CAP_S)),
            "event_delay_s": float(spec.get("event_delay_s", 0.0)),
        }
        if stream:
            return Reply(events=events, **common)
        return Reply(body=_merge_events(events))


def _error_reply(status: int, message: str, error_status: str) -> Reply:
    body = {
        "error": {
            "code": status,
            "message": message or f"fake error {status}",
            "status": error_status or _STATUS_NAMES.get(status, "UNKNOWN"),
        }
    }
    return Reply(status=status, body=body)


def _events_from_parts(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """One SSE event per part; finish reason, usage and grounding ride on the last event."""
    parts = spec.get("parts", [])
    events: list[dict[str, Any]] = [
        {"candidates": [{"content": {"role": "model", "parts": [part]}, "index": 0}]} for part in parts
    ]
    if not events:
        events = [{"candidates": [{"content": {"role": "model", "parts": []}, "index": 0}]}]
    last = events[-1]
    candidate = last["candidates"][0]
    candidate["finishReason"] = spec.get("finish_reason", "STOP")
    if "grounding" in spec:
        candidate["groundingMetadata"] = spec["grounding"]
    if "url_context" in spec:
        candidate["urlContextMetadata"] = spec["url_context"]
    last["usageMetadata"] = spec.get("usage", usage(1, 1))
    last["modelVersion"] = spec.get("model_version", "fake-gemini")
    return events


def _merge_events(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The non-streaming body: all parts in one candidate, the last event's metadata."""
    if not events:
        return {"candidates": []}
    parts: list[Any] = []
    for event in events:
        for candidate in event.get("candidates", [])[:1]:
            parts.extend(candidate.get("content", {}).get("parts", []))
    merged = {key: value for key, value in events[-1].items() if key != "candidates"}
    last_candidate = dict((events[-1].get("candidates") or [{}])[0])
    last_candidate["content"] = {"role": "model", "parts": parts}
    merged["candidates"] = [last_candidate]
    return merged


def start_fake_gemini(port: int = 0, repeat_last: bool = False) -> FakeGemini:
    server = FakeGemini(port=port, repeat_last=repeat_last)
    server.start()
    return server


if __name__ == "__main__":
    run_cli(lambda port: FakeGemini(port=port), "Fake Gemini API server")
