"""Provider-neutral LLM types: conversation messages, tool definitions, stream chunks.

The shapes follow the original Generate protocol (ConversationMessage,
ToolDefinition, TextDelta/ThinkingDelta/ToolCallDelta/…); they are pydantic
models so they serialise once, to the JSON stored in Message and
LLMInteraction rows. SDK types never leave the provider adapters.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from agents.config.schema import LLMProviderConfig, NativeTools

Role = Literal["system", "user", "assistant", "tool"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolCall(_Model):
    """A tool invocation requested by the model; `name` is canonical `server.tool`."""

    id: str
    name: str
    # A dict for structured calls; a ReAct Action Input that parsed as nothing better stays a raw string.
    arguments: dict[str, Any] | str = Field(default_factory=dict)


class ConversationMessage(_Model):
    role: Role
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    tool_name: str | None = None
    # Opaque, provider-owned data that must be replayed with this message on the next
    # request (e.g. Gemini thought signatures). Persisted on the Message row because the
    # next iteration may run in another worker process.
    provider_state: dict[str, Any] | None = None


class ToolDefinition(_Model):
    name: str  # canonical "server.tool"
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


# ---- stream chunks ---------------------------------------------------------


class TextChunk(_Model):
    type: Literal["text"] = "text"
    text: str


class ThinkingChunk(_Model):
    type: Literal["thinking"] = "thinking"
    text: str


class ToolCallChunk(_Model):
    type: Literal["tool_call"] = "tool_call"
    call: ToolCall


class CodeExecutionChunk(_Model):
    type: Literal["code_execution"] = "code_execution"
    code: str = ""
    result: str = ""
    outcome: str = ""


class GroundingSource(_Model):
    uri: str
    title: str = ""


class GroundingChunk(_Model):
    """Results of Gemini native tools: google_search (queries + sources) or url_context (urls)."""

    type: Literal["grounding"] = "grounding"
    kind: Literal["google_search", "url_context"]
    queries: list[str] = Field(default_factory=list)
    sources: list[GroundingSource] = Field(default_factory=list)


class UsageChunk(_Model):
    type: Literal["usage"] = "usage"
    input_tokens: int = 0  # includes the cached ones
    output_tokens: int = 0
    thinking_tokens: int = 0
    total_tokens: int = 0
    cached_tokens: int = 0  # input tokens read from the provider's prompt cache (billed at a lower rate)


class ProviderStateChunk(_Model):
    """Opaque state to store with the assistant message (see ConversationMessage.provider_state)."""

    type: Literal["provider_state"] = "provider_state"
    state: dict[str, Any]


class ErrorChunk(_Model):
    type: Literal["error"] = "error"
    message: str
    code: str = ""
    retryable: bool = False


Chunk = Annotated[
    Union[
        TextChunk,
        ThinkingChunk,
        ToolCallChunk,
        CodeExecutionChunk,
        GroundingChunk,
        UsageChunk,
        ProviderStateChunk,
        ErrorChunk,
    ],
    Field(discriminator="type"),
]
MESSAGES_ADAPTER: TypeAdapter[list[ConversationMessage]] = TypeAdapter(list[ConversationMessage])


class LLMRequest(_Model):
    """One LLM call. `deadline` is a `time.time()` epoch after which the provider aborts the stream."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    messages: list[ConversationMessage]
    tools: list[ToolDefinition] = Field(default_factory=list)
    provider: LLMProviderConfig
    provider_name: str = ""
    agent_name: str = ""
    execution_id: str = ""
    session_id: str = ""
    interaction_type: str = "iteration"
    iteration: int = 0  # the execution's iteration (1-based); scripted turns are chosen by it, statelessly
    native_tools: NativeTools | None = None  # per-alert override merged over the provider's
    max_output_tokens: int | None = None
    deadline: float | None = None


class Usage(_Model):
    input_tokens: int = 0  # includes cached_tokens
    output_tokens: int = 0
    thinking_tokens: int = 0
    total_tokens: int = 0
    cached_tokens: int = 0

    def add(self, other: Usage | UsageChunk) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            thinking_tokens=self.thinking_tokens + other.thinking_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
        )


class LLMResponse(_Model):
    """A whole reply aggregated from its chunks."""

    text: str = ""
    thinking: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    code_executions: list[CodeExecutionChunk] = Field(default_factory=list)
    groundings: list[GroundingChunk] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    provider_state: dict[str, Any] | None = None
    error: ErrorChunk | None = None

    def add(self, chunk: Any) -> None:
        """Fold one chunk into the response (used while streaming)."""
        if isinstance(chunk, TextChunk):
            self.text += chunk.text
        elif isinstance(chunk, ThinkingChunk):
            self.thinking += chunk.text
        elif isinstance(chunk, ToolCallChunk):
            self.tool_calls.append(chunk.call)
        elif isinstance(chunk, CodeExecutionChunk):
            self.code_executions.append(chunk)
        elif isinstance(chunk, GroundingChunk):
            self.groundings.append(chunk)
        elif isinstance(chunk, UsageChunk):
            self.usage = self.usage.add(chunk)
        elif isinstance(chunk, ProviderStateChunk):
            self.provider_state = {**(self.provider_state or {}), **chunk.state}
        elif isinstance(chunk, ErrorChunk):
            self.error = chunk

    @classmethod
    def collect(cls, chunks: Iterable[Any]) -> LLMResponse:
        response = cls()
        for chunk in chunks:
            response.add(chunk)
        return response

    def as_assistant_message(self) -> ConversationMessage:
        return ConversationMessage(
            role="assistant", content=self.text, tool_calls=list(self.tool_calls), provider_state=self.provider_state
        )
