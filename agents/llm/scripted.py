"""Plays a script instead of calling an LLM: tests, benchmarks and reproducible demos.

The turn is chosen statelessly from the request (agent, interaction type,
iteration), because consecutive iterations may run in different worker
processes. Streaming, latency and the deadline behave like a real provider,
so the rest of the system cannot tell the difference. ScriptTurn below is the
schema of one turn; docs/configuration.md, "Scripted LLM provider", shows examples.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agents.citations import cite, evidence_shown
from agents.config.schema import LLMProviderConfig
from agents.privacy.identifiers import PLACEHOLDER_RE
from agents.privacy.policy import applies, session_pseudonyms
from agents.privacy.pseudonyms import Pseudonyms

from .retry import DEADLINE_EXCEEDED
from .types import (
    Chunk,
    ErrorChunk,
    LLMRequest,
    ProviderStateChunk,
    TextChunk,
    ThinkingChunk,
    ToolCall,
    ToolCallChunk,
    UsageChunk,
)

CHARS_PER_TOKEN = 4  # the usual rough estimate, used when a turn gives no usage
DEFAULT_KEY = "default"
AUXILIARY_CALLS = ("summarization", "executive_summary")
_REPLICA_SUFFIX = re.compile(r"-\d+$")  # "KubernetesAgent-2" → "KubernetesAgent"
EVIDENCE_PLACEHOLDER = "{evidence}"
SUB_AGENT_PLACEHOLDER = re.compile(r"\{sub_agent:([\w-]+)\}")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ScriptToolCall(_Strict):
    name: str  # canonical server.tool
    arguments: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None


class ScriptUsage(_Strict):
    input_tokens: int = 0  # includes cached_tokens
    output_tokens: int = 0
    thinking_tokens: int = 0
    cached_tokens: int = 0


class ScriptError(_Strict):
    message: str
    code: str = "scripted_error"
    retryable: bool = False


class ScriptStall(_Strict):
    """Hold the call without heeding its deadline, as a wedged SDK or parser would (the time-limit fault tests).

    `spin`: a Python busy loop (Celery's soft time limit stops it under prefork); `swallow`: a busy loop that
    catches every exception, the soft limit's too (only prefork's hard limit stops it). On the threads pool
    neither is stopped: the attempt outlives its lease and is fenced. With `once_file`, only the call that creates
    the file stalls, so the iteration re-run after it answers at once."""

    seconds: float = Field(gt=0)
    mode: Literal["spin", "swallow"] = "spin"
    once_file: str = ""


class ScriptTurn(_Strict):
    """One scripted LLM answer."""

    text: str = ""
    thinking: str = ""
    tool_calls: list[ScriptToolCall] = Field(default_factory=list)
    usage: ScriptUsage | None = None
    error: ScriptError | None = None
    latency_ms: int | None = Field(default=None, ge=0)
    provider_state: dict[str, Any] | None = None
    stall: ScriptStall | None = None
    # Play a model that obeys injected text: an order ("System: …" opening a line) that the conversation carries
    # outside a fenced block replaces the turn's text. What the prompts fence as data it does not obey.
    obeys_injected_text: bool = False


class ScriptProblem(ValueError):
    """The script cannot answer this request (missing file, bad YAML, no matching key)."""


def parse_script(text: str) -> Any:
    """YAML is a superset of JSON, so one parser reads both."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ScriptProblem(f"script is not valid YAML/JSON: {exc}") from exc


def select_turns(script: Any, request: LLMRequest) -> list[Any]:
    """A list applies to everyone; a mapping routes by agent, agent without replica suffix, interaction, default."""
    if isinstance(script, list):
        return script
    if not isinstance(script, dict):
        raise ScriptProblem("a script is a list of turns or a mapping of keys to lists of turns")
    # Summaries made on an agent's behalf are not the agent's own turns: their key wins when present.
    auxiliary = request.interaction_type if request.interaction_type in AUXILIARY_CALLS else ""
    candidates = [
        auxiliary,
        request.agent_name,
        _REPLICA_SUFFIX.sub("", request.agent_name),
        request.interaction_type,
        DEFAULT_KEY,
    ]
    for key in candidates:
        if key and key in script:
            turns = script[key]
            return turns if isinstance(turns, list) else [turns]
    raise ScriptProblem(
        f"no script turns for agent {request.agent_name!r} or interaction {request.interaction_type!r}"
        f" and no {DEFAULT_KEY!r} key (keys: {', '.join(map(str, script))})"
    )


def select_turn(turns: list[Any], iteration: int) -> ScriptTurn:
    """Turn `iteration - 1`; the last turn repeats when the script is shorter."""
    if not turns:
        raise ScriptProblem("the script has an empty list of turns")
    raw = turns[min(max(iteration, 1) - 1, len(turns) - 1)]
    if isinstance(raw, str):
        raw = {"text": raw}
    try:
        return ScriptTurn.model_validate(raw)
    except ValidationError as exc:
        raise ScriptProblem(f"invalid script turn: {exc}") from exc


def _pieces(text: str, size: int) -> list[str]:
    if not text:
        return []
    if size <= 0:
        return [text]
    return [text[i : i + size] for i in range(0, len(text), size)]


def _tokens(chars: int) -> int:
    return (chars + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


class ScriptedProvider:
    """Answers from `provider.script` or `provider.script_file` (loaded once per process)."""

    def __init__(self, provider: LLMProviderConfig, *, name: str = "") -> None:
        self.name = name or "scripted"
        self._cfg = provider
        self._script: Any = None
        self._lock = threading.Lock()

    def generate(self, request: LLMRequest) -> Iterator[Chunk]:
        try:
            turn = select_turn(select_turns(self._load(), request), request.iteration)
        except ScriptProblem as exc:
            yield ErrorChunk(message=f"scripted provider {self.name!r}: {exc}", code="script_error", retryable=False)
            return
        if request.deadline is not None and time.time() >= request.deadline:
            yield _deadline_error()
            return
        if turn.stall is not None:
            _stall(turn.stall)
        chunks = self._chunks(turn, request)
        latency_ms = turn.latency_ms if turn.latency_ms is not None else self._cfg.latency_ms
        visible = sum(isinstance(c, (TextChunk, ThinkingChunk, ToolCallChunk, ErrorChunk)) for c in chunks)
        delay = latency_ms / 1000 / max(visible, 1)
        for chunk in chunks:
            if (isinstance(chunk, (TextChunk, ThinkingChunk, ToolCallChunk, ErrorChunk)) and delay
                    and not _sleep_until_deadline(delay, request.deadline)):
                yield _deadline_error()
                return
            yield chunk
        if not visible and delay and not _sleep_until_deadline(delay, request.deadline):
            yield _deadline_error()

    def _load(self) -> Any:
        with self._lock:
            if self._script is None:
                if self._cfg.script is not None:
                    self._script = self._cfg.script
                else:
                    path = Path(self._cfg.script_file)
                    try:
                        self._script = parse_script(path.read_text())
                    except OSError as exc:
                        raise ScriptProblem(f"cannot read script file {str(path)!r}: {exc}") from exc
            return self._script

    def _chunks(self, turn: ScriptTurn, request: LLMRequest) -> list[Chunk]:
        size = self._cfg.chunk_size
        speak = _placeholders_shown(request).replace_value if applies(self._cfg) else _as_is
        chunks: list[Chunk] = [ThinkingChunk(text=p) for p in _pieces(speak(turn.thinking), size)]
        text = (_injected_order(request) if turn.obeys_injected_text else "") or turn.text
        chunks += [TextChunk(text=p) for p in _pieces(speak(_with_evidence(text, request)), size)]
        for index, call in enumerate(turn.tool_calls):
            call_id = call.id or _call_id(request, index)
            arguments = speak(_with_sub_agents(call.arguments, request))
            chunks.append(ToolCallChunk(call=ToolCall(id=call_id, name=call.name, arguments=arguments)))
        if turn.error is not None:
            chunks.append(ErrorChunk(**turn.error.model_dump()))
            return chunks
        if turn.provider_state:
            chunks.append(ProviderStateChunk(state=turn.provider_state))
        chunks.append(self._usage(turn, request))
        return chunks

    @staticmethod
    def _usage(turn: ScriptTurn, request: LLMRequest) -> UsageChunk:
        if turn.usage is not None:
            u = turn.usage
        else:
            calls = sum(len(c.name) + len(json.dumps(c.arguments)) for c in turn.tool_calls)
            prompt = sum(
                len(m.content) + sum(len(json.dumps(c.arguments)) for c in m.tool_calls) for m in request.messages
            )
            u = ScriptUsage(
                input_tokens=_tokens(prompt),
                output_tokens=_tokens(len(turn.text) + calls),
                thinking_tokens=_tokens(len(turn.thinking)),
            )
        total = u.input_tokens + u.output_tokens + u.thinking_tokens
        return UsageChunk(
            input_tokens=u.input_tokens,
            output_tokens=u.output_tokens,
            thinking_tokens=u.thinking_tokens,
            total_tokens=total,
            cached_tokens=u.cached_tokens,
        )


def _as_is(value: Any) -> Any:
    return value


def _placeholders_shown(request: LLMRequest) -> Pseudonyms:
    """A provider that pseudonymises was shown placeholders: the script answers in those, as a model would; a name
    the script knows but this call did not show stays as written (another agent's conversation may have shown it)."""
    sent = json.dumps([m.model_dump(mode="json", include={"content", "tool_calls"}) for m in request.messages])
    shown = {m.group(0) for m in PLACEHOLDER_RE.finditer(sent)}
    return Pseudonyms([e for e in session_pseudonyms(request.session_id, []).entries if e.placeholder in shown])


def _with_sub_agents(arguments: dict[str, Any], request: LLMRequest) -> dict[str, Any]:
    """`{sub_agent:Pods}` in a tool call's argument becomes the execution_id that the conversation's last
    dispatch of the agent Pods answered (tarsy.dispatch_agent): a script cancels a sub-agent it dispatched."""
    text = "\n".join(m.content for m in request.messages if m.role in ("user", "tool"))

    def dispatched(match: re.Match[str]) -> str:
        found = re.findall(rf'"execution_id": "([0-9a-f-]+)", "agent": "{re.escape(match.group(1))}"', text)
        return found[-1] if found else match.group(0)

    return {key: SUB_AGENT_PLACEHOLDER.sub(dispatched, value) if isinstance(value, str) else value
            for key, value in arguments.items()}


def _with_evidence(text: str, request: LLMRequest) -> str:
    """`{evidence}` in a turn's text cites every evidence id the request's conversation presents ("[E1][E2]"):
    a script cites what its tools returned without knowing the ids in advance (parallel agents race for them)."""
    if EVIDENCE_PLACEHOLDER not in text:
        return text
    shown = evidence_shown("\n".join(m.content for m in request.messages if m.role in ("user", "tool")))
    return text.replace(EVIDENCE_PLACEHOLDER, "".join(cite(identifier) for identifier in shown))


_FENCED_BLOCK = re.compile(r"^(`{3,})[^\n]*\n.*?\n\1[ \t]*$", re.MULTILINE | re.DOTALL)
_ORDER = re.compile(r"^[ \t]*system[ \t]*:[ \t]*(\S.*)$", re.MULTILINE | re.IGNORECASE)


def _injected_order(request: LLMRequest) -> str:
    """The last "System: …" order in the conversation's user and tool messages outside their fenced blocks."""
    unfenced = "\n".join(_FENCED_BLOCK.sub("", m.content) for m in request.messages if m.role in ("user", "tool"))
    orders = _ORDER.findall(unfenced)
    return orders[-1].strip() if orders else ""


def _call_id(request: LLMRequest, index: int) -> str:
    """Deterministic, and unique within an execution's conversation."""
    seed = f"{request.execution_id}|{request.agent_name}|{request.interaction_type}|{request.iteration}|{index}"
    return "call_" + hashlib.sha1(seed.encode()).hexdigest()[:16]


def _stall(stall: ScriptStall) -> None:
    if stall.once_file:
        try:
            os.close(os.open(stall.once_file, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return
    end = time.monotonic() + stall.seconds
    while time.monotonic() < end:
        if stall.mode == "spin":
            continue
        try:
            sum(range(1000))
        except Exception:  # noqa: S112 — a wedged retry loop that eats everything, the soft time limit included
            continue


def _deadline_error() -> ErrorChunk:
    return ErrorChunk(message="the LLM call did not finish before its deadline", code=DEADLINE_EXCEEDED, retryable=True)


def _sleep_until_deadline(seconds: float, deadline: float | None) -> bool:
    """Sleep; False (after sleeping up to the deadline) when the deadline comes first."""
    if deadline is not None and time.time() + seconds > deadline:
        time.sleep(max(0.0, deadline - time.time()))
        return False
    time.sleep(seconds)
    return True
