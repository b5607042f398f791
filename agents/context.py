"""What a controller step receives: resolved config, dependencies, the recorder and the liveness.

Controllers never import Django. The `tarsy` app implements `Recorder` (rows,
events) and `Liveness` (heartbeat, stop check) and builds the `ExecutionContext`
for each step; tests may build one around any implementation of the protocols.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from agents.config.registry import TarsyConfig
from agents.config.schema import LLMProviderConfig, NativeTools
from agents.config.skills import Skill
from agents.llm.base import Provider
from agents.llm.registry import LLMTarget, backend_for
from agents.llm.types import ConversationMessage, ToolCall, ToolDefinition, Usage

# ---- resolved configuration --------------------------------------------------


@dataclass(frozen=True)
class ResolvedAgentConfig:
    """Everything one execution needs from the config hierarchy, already merged."""

    agent_name: str  # config name (KubernetesAgent)
    iteration_strategy: str
    llm_provider_name: str
    llm_provider: LLMProviderConfig
    llm_backend: str
    max_iterations: int
    iteration_timeout: float
    mcp_servers: tuple[str, ...]
    tool_filter: dict[str, tuple[str, ...]] = field(default_factory=dict)  # server -> allowed tools
    custom_instructions: str = ""
    server_instructions: tuple[tuple[str, str], ...] = ()  # (server, instructions) in order
    native_tools: NativeTools = field(default_factory=NativeTools)
    # Providers that take over, in order, when this one fails (see `fallback_route`); and the ones left out
    # because they would lose a native tool the agent needs, with the reason.
    fallback_providers: tuple[tuple[str, LLMProviderConfig], ...] = ()
    skipped_fallbacks: tuple[tuple[str, str], ...] = ()
    configured_provider_name: str = ""  # the provider configured for the agent; differs once a fallback took over
    required_skills: tuple[Skill, ...] = ()  # bodies in the system prompt
    loadable_skills: tuple[Skill, ...] = ()  # listed in the system prompt, loaded with tarsy.load_skill
    is_action: bool = False  # a `type: action` agent: proposes its servers' action tools (tarsy.pipeline.actions)


def fallback_route(
    config: TarsyConfig, *, configured: str, current: str, fallbacks: list[str], native: NativeTools, strategy: str,
) -> tuple[tuple[tuple[str, LLMProviderConfig], ...], tuple[tuple[str, str], ...]]:
    """The providers after `current` in [configured, *fallbacks], and those skipped because they would lose a
    Gemini native tool the agent asks for (ReAct never asks for them)."""
    route = list(dict.fromkeys([configured, *fallbacks]))
    after = route[route.index(current) + 1:] if current in route else [n for n in route if n != current]
    needed = [name for name, on in native.model_dump().items() if on] if strategy != "react" else []
    kept: list[tuple[str, LLMProviderConfig]] = []
    skipped: list[tuple[str, str]] = []
    for name in after:
        provider = config.llm_providers[name]
        if needed and backend_for(provider) != "google-native":
            skipped.append((name, f"it cannot run the native tools {', '.join(needed)}"))
        else:
            kept.append((name, provider))
    return tuple(kept), tuple(skipped)


def _first(*values: Any) -> Any:
    for value in values:
        if value is not None:
            return value
    return None


def resolve_agent(
    config: TarsyConfig,
    *,
    agent_name: str,
    chain_id: str | None = None,
    stage_index: int | None = None,
    stage_agent_index: int | None = None,
    strategy_override: str | None = None,
    provider_override: str | None = None,
    mcp_selection: dict[str, Any] | None = None,
) -> ResolvedAgentConfig:
    """Hierarchy: defaults → agent → chain → stage → stage-agent (later wins); then the alert's `mcp` selection."""
    agent = config.agents[agent_name]
    chain = config.chains[chain_id] if chain_id else None
    stage = chain.stages[stage_index] if chain and stage_index is not None else None
    stage_agent = stage.agents[stage_agent_index] if stage and stage_agent_index is not None else None
    levels = [config.defaults, agent, chain, stage, stage_agent]

    def pick(attr: str) -> Any:
        return _first(*(getattr(lvl, attr, None) for lvl in reversed(levels) if lvl is not None))

    strategy = strategy_override or pick("iteration_strategy")
    configured = pick("llm_provider") or config.default_provider
    provider_name = provider_override or configured
    provider = config.llm_providers[provider_name]
    servers = list(_first(getattr(stage_agent, "mcp_servers", None), getattr(chain, "mcp_servers", None),
                          agent.mcp_servers) or [])
    tool_filter: dict[str, tuple[str, ...]] = {}
    native = agent.native_tools.merged_over(provider.native_tools)
    if mcp_selection:
        selected = mcp_selection.get("servers") or []
        if selected:
            servers = [entry["name"] for entry in selected]
            tool_filter = {e["name"]: tuple(e["tools"]) for e in selected if e.get("tools")}
        if mcp_selection.get("native_tools"):
            native = NativeTools(**mcp_selection["native_tools"]).merged_over(native)
    required_skills, loadable_skills = config.agent_skills(agent_name)
    if strategy in ("synthesis", "synthesis-native-thinking"):
        servers, loadable_skills = [], ()  # tool-less: nothing to load skills with
    fallbacks, skipped = fallback_route(config, configured=configured, current=provider_name,
                                        fallbacks=pick("fallback_providers") or [], native=native, strategy=strategy)
    return ResolvedAgentConfig(
        agent_name=agent_name,
        iteration_strategy=strategy,
        llm_provider_name=provider_name,
        llm_provider=provider,
        llm_backend=backend_for(provider),
        max_iterations=pick("max_iterations"),
        iteration_timeout=pick("iteration_timeout"),
        mcp_servers=tuple(servers),
        tool_filter=tool_filter,
        custom_instructions=agent.custom_instructions,
        server_instructions=tuple(
            (s, config.mcp_servers[s].instructions) for s in servers if s in config.mcp_servers
        ),
        native_tools=native,
        fallback_providers=fallbacks,
        skipped_fallbacks=skipped,
        configured_provider_name=configured,
        required_skills=required_skills,
        loadable_skills=loadable_skills,
        is_action=agent.type == "action",
    )


# ---- protocols implemented elsewhere -------------------------------------------


@dataclass
class ToolResult:
    """Outcome of one tool call, already masked; `content` is what enters the conversation."""

    call: ToolCall
    content: str
    is_error: bool = False
    summarized: bool = False
    evidence_id: str = ""  # E<n>: shown to the model next to the content, cited by the analysis
    suspected_injection: bool = False  # the output reads like instructions (agents.prompts.injection)
    guidance: bool = False  # operator-written guidance (a loaded skill), given as such rather than as data


class ToolExecutor(Protocol):
    def list_tools(self) -> list[ToolDefinition]: ...

    def execute(self, call: ToolCall) -> ToolResult: ...


@dataclass
class IterationState:
    """Per-execution counters persisted on AgentExecution between steps."""

    iteration: int  # the iteration this step performs (1-based)
    max_iterations: int
    consecutive_timeouts: int = 0
    last_interaction_failed: bool = False
    budget_reached: str | None = None  # why the investigation must conclude now (its budget is used up)


@dataclass
class LLMInteractionRecord:
    interaction_type: str  # iteration / forced_conclusion / synthesis / summarization / executive_summary / chat
    provider: str
    model: str
    conversation: list[dict[str, Any]]  # messages sent + the reply (EP-0014)
    thinking_content: str = ""
    usage: Usage = field(default_factory=Usage)
    duration_ms: int = 0
    success: bool = True
    error_message: str = ""


@dataclass
class MCPInteractionRecord:
    server: str
    tool: str
    arguments: dict[str, Any]
    result: str  # masked
    raw_size: int = 0
    summarized: bool = False
    duration_ms: int = 0
    success: bool = True
    error_message: str = ""
    available_tools: list[str] = field(default_factory=list)


class Recorder(Protocol):
    """Durable, progressive writes of one execution's iteration.

    Every write is tagged with the execution and the current iteration so a
    re-run of an interrupted iteration can discard what the first attempt left.
    Writes may be batched until `flush` or the next `start_event`.
    """

    def conversation(self) -> list[ConversationMessage]: ...

    def add_messages(self, messages: list[ConversationMessage]) -> None: ...

    def start_event(self, event_type: str, metadata: dict[str, Any] | None = None, content: str = "") -> int:
        """An event shown at once (a tool call about to run); returns its handle for `stream_event` and
        `complete_event`."""
        ...

    def stream_open(self, event_type: str, metadata: dict[str, Any] | None = None) -> int:
        """An event an LLM reply streams into: shown with its first chunks, so a reply that arrives whole costs no
        write of its own (it is written complete with the rest); returns its handle like `start_event`."""
        ...

    def stream_event(self, event_id: int, delta: str, kind: str = "text") -> None: ...

    def complete_event(
        self, event_id: int, content: str, status: str = "completed", metadata: dict[str, Any] | None = None,
        event_type: str | None = None,
    ) -> None:
        """`event_type` re-types a streamed event once its role is known (e.g. llm_response → final_analysis)."""
        ...

    def add_event(self, event_type: str, content: str, metadata: dict[str, Any] | None = None,
                  status: str = "completed") -> None: ...

    def flush(self) -> None:
        """Make everything recorded so far visible; called before anything slow (an LLM or tool call)."""
        ...

    def llm_call_started(self, interaction_type: str, provider: str, model: str) -> None:
        """An LLM call is about to start: its row is written with the next `flush` (before the call), so a call
        whose process dies still leaves one. The next `record_llm_interaction` completes it."""
        ...

    def record_llm_interaction(self, record: LLMInteractionRecord) -> None: ...

    def evidence_id(self) -> str:
        """A new evidence id (E<n>, unique within the session) for a tool result about to be recorded."""
        ...

    def record_mcp_interaction(self, record: MCPInteractionRecord) -> None: ...


class Liveness(Protocol):
    """A running step's link to the outside: asked at every boundary (between chunks, between tool calls), it
    says whether the step must stop; its heartbeat is kept fresh meanwhile, until the step's runner ends it."""

    def stop_reason(self) -> str | None:
        """'cancelled' or 'timed_out' when the session must stop at the next boundary, else None."""
        ...

    def end(self) -> None:
        """The step is over (its runner's call, not a controller's): its heartbeat stops."""
        ...


@dataclass
class ChatContext:
    investigation: str  # formatted timeline of the investigation
    history: list[tuple[str, str]]  # earlier (question, answer) pairs
    question: str


@dataclass
class ExecutionContext:
    session_id: str
    execution_id: str
    agent_name: str  # display name (KubernetesAgent, KubernetesAgent-2)
    stage_name: str
    config: ResolvedAgentConfig
    state: IterationState
    alert_type: str
    alert_data: str  # masked
    runbook: str
    previous_stage_context: str
    llm: Provider
    tools: ToolExecutor
    recorder: Recorder
    liveness: Liveness
    deadline: float  # time.time() epoch: the step's own deadline (iteration timeout or session timeout)
    chat: ChatContext | None = None
    parallel_results: str = ""  # formatted investigations of a parallel stage (synthesis)
    memories: str = ""  # the recalled-memories section of the first prompt (agents.memory.prompt)
    task: str = ""  # a sub-agent's assignment from its orchestrator (masked; tarsy.pipeline.sub_agents)
    fallbacks: tuple[LLMTarget, ...] = ()  # providers that take over, in order, when `llm` fails
    # Persists that the execution continues on a fallback (True: drop the stored provider state of the old family).
    provider_switched: Callable[[LLMTarget, bool], None] | None = None
    # The provider answering instead of the configured one (None: the configured one); the step's events name it.
    fallback_provider: str | None = None
