"""Gemini through the google-genai SDK: native thinking, function calling, native tools.

Used by the native-thinking strategies. Thought signatures are returned as a
ProviderStateChunk and replayed from the stored assistant message, never kept
in memory, because the next iteration may run in another worker process.
"""

from __future__ import annotations

import base64
import logging
import os
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from typing import Any

from google import genai
from google.genai import types

from agents.config.schema import LLMProviderConfig, NativeTools

from .retry import ProviderError, RetryPolicy, classify_exception, generate_with_retries
from .tool_names import ToolNameMap
from .types import (
    Chunk,
    CodeExecutionChunk,
    ConversationMessage,
    GroundingChunk,
    GroundingSource,
    LLMRequest,
    ProviderStateChunk,
    TextChunk,
    ThinkingChunk,
    ToolCall,
    ToolCallChunk,
    UsageChunk,
)

logger = logging.getLogger(__name__)

# Budgets the earlier TARSy versions ran with in production; unknown models get the flash budget.
THINKING_BUDGETS = (("gemini-2.5-pro", 32768), ("gemini-2.5-flash", 24576))
DEFAULT_THINKING_BUDGET = 24576
STATE_KEY = "google"  # our namespace inside ConversationMessage.provider_state
DEFAULT_API_KEY_ENV = {"google": "GOOGLE_API_KEY", "vertexai": "GOOGLE_API_KEY"}
# The SDK's own HTTP timeout ends a worker thread stuck on a dead stream soon after we gave up on it.
HTTP_TIMEOUT_GRACE_S = 5.0
HTTP_TIMEOUT_DEFAULT_S = 600.0  # without a deadline: still never hang forever


def thinking_config(model: str) -> types.ThinkingConfig:
    """Thinking by model family: Gemini 3 takes a level, 2.5 models a token budget."""
    name = model.lower().rsplit("/", 1)[-1]
    if name.startswith("gemini-3"):
        return types.ThinkingConfig(thinking_level=types.ThinkingLevel.HIGH, include_thoughts=True)
    budget = next((b for prefix, b in THINKING_BUDGETS if name.startswith(prefix)), DEFAULT_THINKING_BUDGET)
    return types.ThinkingConfig(thinking_budget=budget, include_thoughts=True)


# ---- our messages → Gemini contents ------------------------------------------------


def _b64decode(value: Any) -> bytes | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return base64.b64decode(value)
    except ValueError:
        return None


def _model_parts(message: ConversationMessage, names: ToolNameMap) -> list[types.Part]:
    """An assistant message as Gemini model parts, with its thought signatures put back in place."""
    state = (message.provider_state or {}).get(STATE_KEY, {})
    signatures = state.get("function_call_signatures", {})
    parts: list[types.Part] = []
    if message.content:
        parts.append(types.Part(text=message.content, thought_signature=_b64decode(state.get("text_signature"))))
    for call in message.tool_calls:
        parts.append(
            types.Part(
                function_call=types.FunctionCall(name=names.wire(call.name), args=call.arguments),
                thought_signature=_b64decode(signatures.get(call.id)),
            )
        )
    return parts or [types.Part(text="")]  # Gemini rejects a content without parts


def to_contents(messages: Iterable[ConversationMessage], names: ToolNameMap) -> tuple[str | None, list[types.Content]]:
    """System messages become the system instruction; consecutive tool results one user content."""
    system: list[str] = []
    contents: list[types.Content] = []
    responses: list[types.Part] = []
    call_names: dict[str, str] = {}

    def flush() -> None:
        if responses:
            contents.append(types.Content(role="user", parts=list(responses)))
            responses.clear()

    for message in messages:
        if message.role == "system":
            system.append(message.content)
        elif message.role == "tool":
            name = message.tool_name or call_names.get(message.tool_call_id or "", "")
            response = types.FunctionResponse(name=names.wire(name), response={"output": message.content})
            responses.append(types.Part(function_response=response))
        else:
            flush()
            if message.role == "user":
                contents.append(types.Content(role="user", parts=[types.Part(text=message.content)]))
            else:
                call_names.update({call.id: call.name for call in message.tool_calls})
                contents.append(types.Content(role="model", parts=_model_parts(message, names)))
    flush()
    return ("\n\n".join(system) if system else None), contents


# ---- Gemini stream → our chunks ------------------------------------------------------


class _StreamReader:
    """Maps one response stream; metadata that arrives cumulatively is emitted once at the end."""

    def __init__(self, names: ToolNameMap) -> None:
        self._names = names
        self._call_signatures: dict[str, str] = {}
        self._text_signature = ""
        self._usage: types.GenerateContentResponseUsageMetadata | None = None
        self._grounding: types.GroundingMetadata | None = None
        self._url_context: types.UrlContextMetadata | None = None

    def read(self, stream: Iterable[types.GenerateContentResponse]) -> Iterator[Chunk]:
        for response in stream:
            yield from self._response(response)
        yield from self._final()

    def _response(self, response: types.GenerateContentResponse) -> Iterator[Chunk]:
        self._usage = response.usage_metadata or self._usage
        for candidate in (response.candidates or [])[:1]:
            self._grounding = candidate.grounding_metadata or self._grounding
            self._url_context = candidate.url_context_metadata or self._url_context
            for part in (candidate.content.parts if candidate.content else None) or []:
                yield from self._part(part)

    def _part(self, part: types.Part) -> Iterator[Chunk]:
        signature = base64.b64encode(part.thought_signature).decode() if part.thought_signature else ""
        if part.function_call:
            call = part.function_call
            tool_call = ToolCall(
                id=call.id or f"call_{uuid.uuid4().hex[:16]}",
                name=self._names.canonical(call.name or ""),
                arguments=dict(call.args or {}),
            )
            if signature:
                self._call_signatures[tool_call.id] = signature
            yield ToolCallChunk(call=tool_call)
            return
        if signature:
            self._text_signature = signature
        if part.executable_code:
            yield CodeExecutionChunk(code=part.executable_code.code or "")
        elif part.code_execution_result:
            outcome = part.code_execution_result.outcome
            yield CodeExecutionChunk(
                result=part.code_execution_result.output or "", outcome=str(getattr(outcome, "value", outcome or ""))
            )
        elif part.text:
            yield ThinkingChunk(text=part.text) if part.thought else TextChunk(text=part.text)

    def _final(self) -> Iterator[Chunk]:
        if self._grounding:
            sources = [
                GroundingSource(uri=chunk.web.uri, title=chunk.web.title or "")
                for chunk in self._grounding.grounding_chunks or []
                if chunk.web and chunk.web.uri
            ]
            queries = list(self._grounding.web_search_queries or [])
            if sources or queries:
                yield GroundingChunk(kind="google_search", queries=queries, sources=sources)
        if self._url_context and self._url_context.url_metadata:
            urls = [GroundingSource(uri=m.retrieved_url) for m in self._url_context.url_metadata if m.retrieved_url]
            if urls:
                yield GroundingChunk(kind="url_context", sources=urls)
        if self._usage:
            usage = self._usage
            inputs, outputs = usage.prompt_token_count or 0, usage.candidates_token_count or 0
            thinking = usage.thoughts_token_count or 0
            yield UsageChunk(
                input_tokens=inputs,
                output_tokens=outputs,
                thinking_tokens=thinking,
                total_tokens=usage.total_token_count or inputs + outputs + thinking,
                cached_tokens=usage.cached_content_token_count or 0,
            )
        state: dict[str, Any] = {}
        if self._call_signatures:
            state["function_call_signatures"] = dict(self._call_signatures)
        if self._text_signature:
            state["text_signature"] = self._text_signature
        if state:
            yield ProviderStateChunk(state={STATE_KEY: state})


# ---- the provider -----------------------------------------------------------------


def _function_declarations(request: LLMRequest, names: ToolNameMap) -> list[types.Tool]:
    if not request.tools:
        return []
    declarations = [
        types.FunctionDeclaration(
            name=names.wire(t.name), description=t.description, parameters_json_schema=t.parameters
        )
        for t in request.tools
    ]
    return [types.Tool(function_declarations=declarations)]


class GoogleNativeProvider:
    """Gemini via google-genai; one SDK client per provider instance (it pools connections)."""

    def __init__(self, provider: LLMProviderConfig, *, name: str = "", retry_policy: RetryPolicy | None = None) -> None:
        self.name = name or provider.type
        self._cfg = provider
        self._policy = retry_policy
        self._client: genai.Client | None = None
        self._lock = threading.Lock()

    def generate(self, request: LLMRequest) -> Iterator[Chunk]:
        names = ToolNameMap(request.tools)
        try:
            client = self._get_client()
            system, contents = to_contents(request.messages, names)
        except ProviderError as exc:
            yield exc.as_chunk()
            return
        except Exception as exc:  # the SDK rejected our configuration; retrying cannot help
            yield ProviderError(f"cannot prepare the LLM request: {type(exc).__name__}: {exc}", "bad_config").as_chunk()
            return

        def start() -> Iterator[Chunk]:
            config = self._config(request, names, system)
            stream = client.models.generate_content_stream(model=self._cfg.model, contents=contents, config=config)
            return _StreamReader(names).read(stream)

        yield from generate_with_retries(
            start,
            deadline=request.deadline,
            classify=classify_exception,
            policy=self._policy,
            label=f"{self.name}/{self._cfg.model}",
        )

    def _get_client(self) -> genai.Client:
        with self._lock:
            if self._client is None:
                self._client = self._build_client()
            return self._client

    def _build_client(self) -> genai.Client:
        cfg = self._cfg
        env = cfg.api_key_env or DEFAULT_API_KEY_ENV.get(cfg.type, "GOOGLE_API_KEY")
        api_key = os.environ.get(env, "")
        http_options = types.HttpOptions(base_url=cfg.base_url) if cfg.base_url else None
        if cfg.type == "vertexai" and not (cfg.api_key_env and api_key):
            # Vertex AI authenticates with application default credentials unless an express-mode key is configured.
            return genai.Client(vertexai=True, http_options=http_options)
        if not api_key:
            raise ProviderError(
                f"API key environment variable {env} is not set for LLM provider {self.name!r}", "missing_api_key"
            )
        return genai.Client(vertexai=cfg.type == "vertexai" or None, api_key=api_key, http_options=http_options)

    def _config(self, request: LLMRequest, names: ToolNameMap, system: str | None) -> types.GenerateContentConfig:
        timeout_s = HTTP_TIMEOUT_DEFAULT_S
        if request.deadline is not None:
            timeout_s = max(1.0, request.deadline - time.time()) + HTTP_TIMEOUT_GRACE_S
        tools = _function_declarations(request, names) + self._native_tools(request)
        return types.GenerateContentConfig(
            system_instruction=system,
            tools=tools or None,
            thinking_config=thinking_config(self._cfg.model),
            max_output_tokens=request.max_output_tokens,
            temperature=self._cfg.temperature,
            # our retry loop owns retries; the SDK must not add its own
            http_options=types.HttpOptions(timeout=int(timeout_s * 1000), retry_options=None),
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        )

    def _native_tools(self, request: LLMRequest) -> list[types.Tool]:
        wanted = (request.native_tools or NativeTools()).merged_over(self._cfg.native_tools)
        enabled = [key for key, on in wanted.model_dump().items() if on]
        if not enabled:
            return []
        if request.tools:
            # Gemini cannot combine function calling with its server-side tools in one request.
            logger.warning("%s: MCP tools present, native tools %s suppressed", self.name, ", ".join(enabled))
            return []
        tools = []
        if wanted.google_search:
            tools.append(types.Tool(google_search=types.GoogleSearch()))
        if wanted.code_execution:
            tools.append(types.Tool(code_execution=types.ToolCodeExecution()))
        if wanted.url_context:
            tools.append(types.Tool(url_context=types.UrlContext()))
        return tools
