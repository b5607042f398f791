"""Any vendor through LangChain chat models: OpenAI, Anthropic, Google (Gemini API or Vertex AI), xAI.

Used by the react and synthesis strategies. LangChain gives one streaming
interface over the vendors; this module maps our messages and tools into it
and its chunks back to ours. Retries are ours (the SDKs' are switched off).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import uuid
from collections.abc import Iterable, Iterator
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from agents.config.schema import LLMProviderConfig

from .retry import ProviderError, RetryPolicy, classify_exception, generate_with_retries
from .tool_names import ToolNameMap
from .types import (
    Chunk,
    ConversationMessage,
    LLMRequest,
    ProviderStateChunk,
    TextChunk,
    ThinkingChunk,
    ToolCall,
    ToolCallChunk,
    UsageChunk,
)

logger = logging.getLogger(__name__)

DEFAULT_API_KEY_ENV = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "google": "GOOGLE_API_KEY",
    "vertexai": "GOOGLE_API_KEY",
    "xai": "XAI_API_KEY",
}
# xAI serves an OpenAI-compatible API; langchain-xai is not installed, so ChatOpenAI talks to it.
XAI_BASE_URL = "https://api.x.ai/v1"
ANTHROPIC_MAX_TOKENS = 16384  # Anthropic requires max_tokens; large enough for a full analysis
HTTP_TIMEOUT_S = 600.0  # bounds a worker thread on a dead connection; the request deadline is enforced separately
# The OpenAI SDK refuses to start without a key; a self-hosted server ignores what it gets, so it gets this.
SELF_HOSTED_API_KEY = "no-key"
STATE_KEY = "langchain"  # our namespace inside ConversationMessage.provider_state
# LangChain integrations keep vendor state (e.g. Gemini thought signatures) in additional_kwargs under
# "__"-prefixed keys; they are persisted with the message and replayed on the next request.
_PRIVATE_PREFIX = "__"


# ---- model construction --------------------------------------------------------------


def build_chat_model(cfg: LLMProviderConfig, api_key: str) -> BaseChatModel:
    """The LangChain chat model for a provider config, with SDK retries off and base_url honoured."""
    base_url = cfg.base_url or None
    common: dict[str, Any] = {"model": cfg.model, "max_retries": 0}
    if cfg.temperature is not None:
        common["temperature"] = cfg.temperature
    if cfg.type in ("openai", "xai"):
        from langchain_openai import ChatOpenAI

        if cfg.type == "xai":
            base_url = base_url or XAI_BASE_URL
        # stream_usage: without it a custom base_url streams no token counts.
        return ChatOpenAI(api_key=api_key, base_url=base_url, stream_usage=True, timeout=HTTP_TIMEOUT_S, **common)
    if cfg.type == "anthropic":
        from langchain_anthropic import ChatAnthropic

        return ChatAnthropic(
            api_key=api_key,
            base_url=base_url,
            max_tokens=ANTHROPIC_MAX_TOKENS,
            stream_usage=True,
            default_request_timeout=HTTP_TIMEOUT_S,
            **common,
        )
    if cfg.type in ("google", "vertexai"):
        from langchain_google_genai import ChatGoogleGenerativeAI

        options: dict[str, Any] = {"include_thoughts": True, "timeout": HTTP_TIMEOUT_S, "base_url": base_url}
        if cfg.type == "vertexai":
            options["vertexai"] = True
        if api_key:
            options["google_api_key"] = api_key
        return ChatGoogleGenerativeAI(**options, **common)
    raise ProviderError(f"provider type {cfg.type!r} is not served by the LangChain backend", "bad_config")


def _with_max_tokens(model: BaseChatModel, max_tokens: int | None) -> BaseChatModel:
    if max_tokens is None:
        return model
    field = "max_output_tokens" if "max_output_tokens" in type(model).model_fields else "max_tokens"
    return model.model_copy(update={field: max_tokens})


# ---- our messages → LangChain ----------------------------------------------------------


def _assistant(message: ConversationMessage, names: ToolNameMap) -> AIMessage:
    state = (message.provider_state or {}).get(STATE_KEY, {})
    tool_calls = [
        {"name": names.wire(call.name), "args": call.arguments, "id": call.id, "type": "tool_call"}
        for call in message.tool_calls
    ]
    return AIMessage(
        content=message.content, tool_calls=tool_calls, additional_kwargs=dict(state.get("additional_kwargs", {}))
    )


def to_langchain(messages: Iterable[ConversationMessage], names: ToolNameMap) -> list[BaseMessage]:
    converted: list[BaseMessage] = []
    call_names: dict[str, str] = {}  # Gemini needs the function name on each result
    for message in messages:
        call_names.update({call.id: call.name for call in message.tool_calls})
        if message.role == "system":
            converted.append(SystemMessage(content=message.content))
        elif message.role == "user":
            converted.append(HumanMessage(content=message.content))
        elif message.role == "assistant":
            converted.append(_assistant(message, names))
        else:
            name = message.tool_name or call_names.get(message.tool_call_id or "")
            converted.append(
                ToolMessage(
                    content=message.content,
                    tool_call_id=message.tool_call_id or "",
                    name=names.wire(name) if name else None,
                )
            )
    return converted


def tool_specs(request: LLMRequest, names: ToolNameMap) -> list[dict[str, Any]]:
    """Our ToolDefinitions as OpenAI-style function specs, which every LangChain integration accepts."""
    return [
        {
            "type": "function",
            "function": {"name": names.wire(t.name), "description": t.description, "parameters": t.parameters},
        }
        for t in request.tools
    ]


# ---- LangChain stream → our chunks -------------------------------------------------------


def _blocks(chunk: AIMessageChunk) -> list[dict[str, Any]]:
    try:
        return list(chunk.content_blocks)
    except (ValueError, KeyError, TypeError, NotImplementedError):  # an integration's unusual content shape
        return [{"type": "text", "text": chunk.text}]


def _private_state(message: AIMessageChunk) -> dict[str, Any]:
    kept = {k: v for k, v in message.additional_kwargs.items() if k.startswith(_PRIVATE_PREFIX)}
    try:
        json.dumps(kept)
    except (TypeError, ValueError):
        return {}  # not storable as JSON; the vendor will do without it
    return kept


def read_stream(stream: Iterable[AIMessageChunk], names: ToolNameMap) -> Iterator[Chunk]:
    """Text and thinking as they stream; tool calls once complete (arguments arrive in fragments)."""
    aggregate: AIMessageChunk | None = None
    for chunk in stream:
        aggregate = chunk if aggregate is None else aggregate + chunk
        for block in _blocks(chunk):
            if block.get("type") == "text" and block.get("text"):
                yield TextChunk(text=block["text"])
            elif block.get("type") == "reasoning" and block.get("reasoning"):
                yield ThinkingChunk(text=block["reasoning"])
    if aggregate is None:
        return
    if aggregate.invalid_tool_calls:
        bad = aggregate.invalid_tool_calls[0]
        raise ProviderError(
            f"the model sent unparseable arguments for tool {bad.get('name')!r}", "invalid_tool_call", True
        )
    for call in aggregate.tool_calls:
        yield ToolCallChunk(
            call=ToolCall(
                id=call.get("id") or f"call_{uuid.uuid4().hex[:16]}",
                name=names.canonical(call["name"]),
                arguments=dict(call.get("args") or {}),
            )
        )
    yield from _usage(aggregate)
    private = _private_state(aggregate)
    if private:
        yield ProviderStateChunk(state={STATE_KEY: {"additional_kwargs": private}})


def _usage(message: AIMessageChunk) -> Iterator[UsageChunk]:
    usage = message.usage_metadata
    if not usage:
        return
    thinking = int((usage.get("output_token_details") or {}).get("reasoning", 0) or 0)
    inputs, outputs = int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))
    # LangChain counts reasoning inside output_tokens; ours keeps them apart, as Gemini reports them.
    yield UsageChunk(
        input_tokens=inputs,
        output_tokens=max(outputs - thinking, 0),
        thinking_tokens=thinking,
        total_tokens=int(usage.get("total_tokens", inputs + outputs)),
        # LangChain reports cache reads inside input_tokens for every vendor (Anthropic's included).
        cached_tokens=int((usage.get("input_token_details") or {}).get("cache_read", 0) or 0),
    )


# ---- the provider --------------------------------------------------------------------


class LangChainProvider:
    """One LangChain chat model per provider instance (clients pool connections)."""

    def __init__(self, provider: LLMProviderConfig, *, name: str = "", retry_policy: RetryPolicy | None = None) -> None:
        self.name = name or provider.type
        self._cfg = provider
        self._policy = retry_policy
        self._model: BaseChatModel | None = None
        self._lock = threading.Lock()

    def generate(self, request: LLMRequest) -> Iterator[Chunk]:
        names = ToolNameMap(request.tools)
        try:
            model: Any = _with_max_tokens(self._get_model(), request.max_output_tokens)
            if request.tools:
                model = model.bind_tools(tool_specs(request, names))
            messages = to_langchain(request.messages, names)
        except ProviderError as exc:
            yield exc.as_chunk()
            return
        except Exception as exc:  # the SDK rejected our configuration; retrying cannot help
            yield ProviderError(f"cannot prepare the LLM request: {type(exc).__name__}: {exc}", "bad_config").as_chunk()
            return

        def start() -> Iterator[Chunk]:
            return read_stream(model.stream(messages), names)

        yield from generate_with_retries(
            start,
            deadline=request.deadline,
            classify=self._classify,
            policy=self._policy,
            label=f"{self.name}/{self._cfg.model}",
        )

    def _get_model(self) -> BaseChatModel:
        with self._lock:
            if self._model is None:
                self._model = build_chat_model(self._cfg, self._api_key())
            return self._model

    def _classify(self, exc: BaseException) -> ProviderError:
        """As every SDK error, plus the server's address when it could not be reached: with a self-hosted model
        that is the first thing to check (is it running, is the URL right)."""
        error = classify_exception(exc)
        if error.code == "connection" and self._cfg.base_url:
            error.message = f"cannot reach the LLM server at {self._cfg.base_url} ({error.message})"
        return error

    def _api_key(self) -> str:
        if self._cfg.self_hosted:
            return SELF_HOSTED_API_KEY
        env = self._cfg.api_key_env or DEFAULT_API_KEY_ENV.get(self._cfg.type, "")
        key = os.environ.get(env, "") if env else ""
        if not key and self._cfg.type != "vertexai":  # Vertex AI may use application default credentials
            raise ProviderError(
                f"API key environment variable {env} is not set for LLM provider {self.name!r}", "missing_api_key"
            )
        return key
