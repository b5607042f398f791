"""Pydantic schema of `tarsy.yaml` and `llm-providers.yaml` (DESIGN §10).

Unknown keys are errors (`extra="forbid"`): a typo in a config file must stop
startup rather than silently fall back to a default.
"""

from __future__ import annotations

import re
from datetime import date
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

IterationStrategy = Literal["react", "native-thinking", "synthesis", "synthesis-native-thinking"]
ProviderType = Literal["google", "openai", "anthropic", "xai", "vertexai", "demo", "scripted"]
LLMBackend = Literal["", "google-native", "langchain"]
SuccessPolicy = Literal["all", "any"]
SeverityName = Literal["critical", "high", "warning", "info"]

_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_duration(value: Any) -> float:
    """Accept `90`, `90s`, `15m`, `1h`, `500ms`; return seconds."""
    if isinstance(value, bool):
        raise ValueError("expected a duration like 90, 90s, 15m or 1h")
    if isinstance(value, (int, float)):
        seconds = float(value)
    else:
        match = _DURATION_RE.match(str(value))
        if not match:
            raise ValueError(f"invalid duration {value!r}: expected a number with an optional unit ms, s, m or h")
        seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    if seconds <= 0:
        raise ValueError("duration must be positive")
    return seconds


Duration = Annotated[float, BeforeValidator(parse_duration)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class NativeTools(_Strict):
    """Gemini server-side tools; None means 'not specified here' so lower levels can inherit."""

    google_search: bool | None = None
    code_execution: bool | None = None
    url_context: bool | None = None

    def merged_over(self, base: NativeTools) -> NativeTools:
        data = base.model_dump()
        data.update({k: v for k, v in self.model_dump().items() if v is not None})
        return NativeTools(**data)


Price = Annotated[Decimal, Field(ge=0, max_digits=12, decimal_places=6)]  # USD per million tokens


class ModelPricing(_Strict):
    """USD per million tokens of one model, and the date the prices were taken (they change)."""

    input_per_mtok: Price
    output_per_mtok: Price
    cached_input_per_mtok: Price  # cache reads; the cached part of the input is billed at this rate
    thinking_per_mtok: Price | None = None  # None: thinking is billed as output, as most vendors do
    as_of: date


class LLMProviderConfig(_Strict):
    type: ProviderType
    model: str = ""
    api_key_env: str = ""
    base_url: str = ""
    max_tool_result_tokens: int = Field(default=950_000, gt=0)
    native_tools: NativeTools = Field(default_factory=NativeTools)
    llm_backend: LLMBackend = ""
    temperature: float | None = None
    pricing: ModelPricing | None = None  # overrides the bundled snapshot for this provider's model
    # scripted provider only
    script_file: str = ""
    script: list[dict[str, Any]] | dict[str, Any] | None = None
    latency_ms: int = Field(default=0, ge=0)  # scripted and demo: how long one reply takes to stream
    chunk_size: int = Field(default=0, ge=0)
    # Identifiers replaced by placeholders before this provider sees any text; None: `privacy.pseudonymise`.
    # False lets a self-hosted model see real names while cloud providers do not.
    pseudonymise: bool | None = None

    @property
    def self_hosted(self) -> bool:
        """An OpenAI-compatible server of your own (Ollama, vLLM, LM Studio): `type: openai` with a `base_url` and
        no `api_key_env`. No key is read or sent (OPENAI_API_KEY never goes to a URL it was not named for), and
        no vendor price applies: its cost is unknown unless `pricing` is set."""
        return self.type == "openai" and bool(self.base_url) and not self.api_key_env

    @model_validator(mode="after")
    def _check_type_fields(self) -> LLMProviderConfig:
        if self.type not in ("demo", "scripted") and not self.model:
            raise ValueError(f"model is required for provider type {self.type!r}")
        if self.type == "scripted" and not self.script_file and self.script is None:
            raise ValueError("a scripted provider needs script_file or script")
        return self


class LLMProvidersFile(_Strict):
    llm_providers: dict[str, LLMProviderConfig] = Field(default_factory=dict)


def _known_masking_names(kind: Literal["group", "pattern"]) -> list[str]:
    # Imported here: the masking package builds on this schema, so it cannot be imported at module level.
    from agents.mcp.masking import known_groups, known_patterns

    return known_groups() if kind == "group" else known_patterns()


def _check_masking_names(names: list[str], kind: Literal["group", "pattern"]) -> list[str]:
    """An unknown name is a configuration error: masking must never silently do less than the file says."""
    known = _known_masking_names(kind)
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ValueError(f"unknown masking {kind}{'s' if len(unknown) > 1 else ''} "
                         f"{', '.join(repr(n) for n in unknown)} (known: {', '.join(known)})")
    return names


class MaskingConfig(_Strict):
    enabled: bool = True
    pattern_groups: list[str] = Field(default_factory=list)
    patterns: list[str] = Field(default_factory=list)
    custom_patterns: list[CustomPattern] = Field(default_factory=list)

    @field_validator("pattern_groups")
    @classmethod
    def _known_groups(cls, value: list[str]) -> list[str]:
        return _check_masking_names(value, "group")

    @field_validator("patterns")
    @classmethod
    def _known_patterns(cls, value: list[str]) -> list[str]:
        return _check_masking_names(value, "pattern")


def _compiles(value: str) -> str:
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"invalid regular expression: {exc}") from exc
    return value


# A regular expression kept as its text, refused at load time when Python's `re` cannot compile it.
RegexText = Annotated[str, AfterValidator(_compiles)]


class CustomPattern(_Strict):
    name: str
    pattern: RegexText
    replacement: str = "__MASKED_CUSTOM__"

    @model_validator(mode="after")
    def _replacement_fits(self) -> CustomPattern:
        """A back-reference to a group the pattern lacks would fail on every result: refuse it at load time."""
        try:
            re.compile(self.pattern).sub(self.replacement, "")  # parses the template without needing a match
        except re.error as exc:
            raise ValueError(f"invalid replacement {self.replacement!r}: {exc}") from exc
        return self


class AlertMaskingConfig(_Strict):
    enabled: bool = True
    pattern_group: str = "security"

    @field_validator("pattern_group")
    @classmethod
    def _known_group(cls, value: str) -> str:
        return _check_masking_names([value], "group")[0]


PseudonymKind = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,15}$")]


class PseudonymPattern(_Strict):
    """Text matching `pattern` (e.g. a customer id) becomes a `<kind:n>` placeholder like any found identifier."""

    kind: PseudonymKind
    pattern: RegexText


class PrivacyConfig(_Strict):
    """Reversible pseudonymisation of identifiers before a model sees them (docs/security.md, Pseudonymisation)."""

    pseudonymise: bool = False  # every provider's default; `llm_providers.<name>.pseudonymise` overrides it
    patterns: list[PseudonymPattern] = Field(default_factory=list)


class SummarizationConfig(_Strict):
    enabled: bool = True
    size_threshold_tokens: int = Field(default=5000, gt=0)
    summary_max_token_limit: int = Field(default=1000, gt=0)


STDIO_CALL_SLOTS = 4
NETWORK_CALL_SLOTS = 32


class TransportConfig(_Strict):
    type: Literal["stdio", "http", "sse"]
    command: str = ""
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    env_passthrough: list[str] = Field(default_factory=list)  # stdio: variables copied from TARSy's env when set
    url: str = ""
    headers: dict[str, str] = Field(default_factory=dict)
    bearer_token: str = ""
    verify_ssl: bool = True
    timeout: Duration = 30.0

    @model_validator(mode="after")
    def _check(self) -> TransportConfig:
        if self.type == "stdio" and not self.command:
            raise ValueError("stdio transport needs a command")
        if self.type in ("http", "sse") and not self.url.startswith(("http://", "https://")):
            raise ValueError(f"{self.type} transport needs an http(s) url")
        return self


class DryRunConfig(_Strict):
    """How an action tool previews its change without making it: the argument (and value) that asks the server for a
    dry run, as kubectl's `--dry-run=server` does. Only for tools whose server honours it: TARSy runs the tool with
    it when the tool is proposed, and shows the output to the approver (docs/investigations.md)."""

    argument: str = Field(min_length=1, max_length=100)  # e.g. dryRun
    value: str | bool | int = "server"  # e.g. server (kubectl), or true


class MCPServerConfig(_Strict):
    transport: TransportConfig
    instructions: str = ""
    data_masking: MaskingConfig = Field(default_factory=MaskingConfig)
    summarization: SummarizationConfig = Field(default_factory=SummarizationConfig)
    call_timeout: Duration = 60.0
    # Calls in flight to this server from one worker process; more wait for a slot within their call_timeout.
    # None: 4 for a stdio server (one local process answers them), 32 over HTTP/SSE.
    max_concurrent_calls: int | None = Field(default=None, gt=0)
    # A server that can change things: only the tools in `action_tools` do, and an action agent may only propose
    # them (docs/investigations.md); its other tools are reads. Only `type: action` agents may use it.
    actions: bool = False
    action_tools: list[str] = Field(default_factory=list)
    # Action tools that support a server-side dry run, by name: run once with it when proposed (never for real).
    dry_run: dict[str, DryRunConfig] = Field(default_factory=dict)
    # The arguments that name what an action acts on (e.g. [namespace, name]): with the server, the key of
    # actions.rate_limit. None: the whole call (tool and every argument).
    target_arguments: list[str] | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _actions_are_listed(self) -> MCPServerConfig:
        if self.actions and not self.action_tools:
            raise ValueError("actions: true needs action_tools, the allow-list of the tools that change things")
        if (self.action_tools or self.target_arguments) and not self.actions:
            raise ValueError("action_tools and target_arguments are only allowed with actions: true")
        unknown = sorted(set(self.dry_run) - set(self.action_tools))
        if unknown:
            raise ValueError(f"dry_run names tools that are not in action_tools: {', '.join(unknown)}")
        return self

    def dry_run_of(self, tool: str) -> DryRunConfig | None:
        """How an action tool runs as a dry run; None when it cannot."""
        return self.dry_run.get(tool) if self.is_action_tool(tool) else None

    def is_action_tool(self, tool: str) -> bool:
        """A tool that changes things: allow-listed on an `actions: true` server."""
        return self.actions and tool in self.action_tools

    def call_slots(self) -> int:
        if self.max_concurrent_calls is not None:
            return self.max_concurrent_calls
        return STDIO_CALL_SLOTS if self.transport.type == "stdio" else NETWORK_CALL_SLOTS


class OrchestratorConfig(_Strict):
    """Guardrails of an agent that dispatches sub-agents (`sub_agents`): how many at once and in all, how deep
    sub-agents may dispatch their own, how long each may run, and what share of the session's budget each may use."""

    max_concurrent: int = Field(default=5, gt=0)
    max_total: int = Field(default=10, gt=0)
    max_depth: int = Field(default=1, gt=0)  # 1: sub-agents cannot dispatch their own
    timeout: Duration = 600.0  # per sub-agent, from its start
    budget_share: float | None = Field(default=None, gt=0, le=1)  # of the session budget's tokens / cost
    on_limit: Literal["wait", "refuse"] = "wait"  # a dispatch beyond max_concurrent: queued, or refused


AgentType = Literal["investigation", "action"]


class AgentConfig(_Strict):
    description: str = ""
    type: AgentType = "investigation"  # action: may propose the action tools of its `actions: true` servers
    mcp_servers: list[str] = Field(default_factory=list)
    custom_instructions: str = ""
    iteration_strategy: IterationStrategy | None = None
    max_iterations: int | None = Field(default=None, gt=0)
    iteration_timeout: Duration | None = None
    llm_provider: str | None = None
    fallback_providers: list[str] | None = None  # tried in order when the provider fails (docs/configuration.md)
    native_tools: NativeTools = Field(default_factory=NativeTools)
    # Skills (agents.config.skills): the bodies of `required_skills` are in the system prompt; the others of
    # `skills` ("all" or absent: the whole catalog; []: none) are offered by name and loaded with tarsy.load_skill.
    required_skills: list[str] = Field(default_factory=list)
    skills: list[str] | Literal["all"] | None = None
    sub_agents: list[str] = Field(default_factory=list)  # agents it may dispatch (tarsy.pipeline.sub_agents)
    orchestrator: OrchestratorConfig = Field(default_factory=OrchestratorConfig)


class StageAgentConfig(_Strict):
    name: str
    llm_provider: str | None = None
    iteration_strategy: IterationStrategy | None = None
    max_iterations: int | None = Field(default=None, gt=0)
    iteration_timeout: Duration | None = None
    mcp_servers: list[str] | None = None


class SynthesisConfig(_Strict):
    agent: str = "SynthesisAgent"
    iteration_strategy: IterationStrategy = "synthesis"
    llm_provider: str | None = None


class StageConfig(_Strict):
    name: str
    type: AgentType = "investigation"  # action: its agents must be action agents (shown and audited as such)
    agents: list[StageAgentConfig] = Field(min_length=1)
    replicas: int = Field(default=1, ge=1, le=20)
    success_policy: SuccessPolicy | None = None
    max_iterations: int | None = Field(default=None, gt=0)
    iteration_timeout: Duration | None = None
    llm_provider: str | None = None
    iteration_strategy: IterationStrategy | None = None
    synthesis: SynthesisConfig | None = None
    # One orchestrator (the built-in `Orchestrator` agent) dispatches the stage's agents as sub-agents on demand,
    # instead of running them all in parallel; `orchestrator`: its guardrails.
    orchestrate: bool = False
    orchestrator: OrchestratorConfig | None = None

    @model_validator(mode="after")
    def _replicas_need_one_agent(self) -> StageConfig:
        if self.replicas > 1 and len(self.agents) > 1:
            raise ValueError("replicas can only be used with exactly one agent")
        if self.orchestrate and self.replicas > 1:
            raise ValueError("orchestrate dispatches the stage's agents: it cannot be combined with replicas")
        return self

    @property
    def is_parallel(self) -> bool:
        return not self.orchestrate and (self.replicas > 1 or len(self.agents) > 1)


class BudgetConfig(_Strict):
    """Limits on one investigation; reaching any forces its agents to conclude with what they have."""

    tokens: int | None = Field(default=None, gt=0)
    cost_usd: Decimal | None = Field(default=None, gt=0)
    tool_calls: int | None = Field(default=None, gt=0)
    wall_time: Duration | None = None

    def merged_over(self, base: BudgetConfig) -> BudgetConfig:
        """This level's limits, and the base's where this level sets none."""
        return BudgetConfig(**{**base.model_dump(exclude_none=True), **self.model_dump(exclude_none=True)})


class ChatConfig(_Strict):
    enabled: bool = True
    agent: str = "ChatAgent"
    iteration_strategy: IterationStrategy | None = None
    llm_provider: str | None = None
    max_iterations: int | None = Field(default=None, gt=0)


def _off_is_none(value: Any) -> Any:
    """`dedup: off` (YAML reads a bare off as false) or `"off"` switches a feature off."""
    return None if value is False or (isinstance(value, str) and value.strip().lower() == "off") else value


class DedupConfig(_Strict):
    """A repeat of an alert (same fingerprint) joins the session already on it instead of starting another."""

    window: Duration = 900.0  # a completed session still absorbs repeats for this long after it finished
    key: list[str] = Field(default_factory=list)  # data fields (dotted paths) forming the fingerprint; [] = all


class CorrelationConfig(_Strict):
    """Alerts sharing `labels` (or a sender's `group_key`) within `window` join the group's first session."""

    labels: list[str] = Field(default_factory=list)  # data fields (dotted paths); [] = only an explicit group_key
    window: Duration = 900.0


_TITLE_FIELD_RE = re.compile(r"\{([^{}]*)\}")
_TITLE_PATH_RE = re.compile(r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$")


def title_template_fields(template: str) -> list[str]:
    """The dotted data paths a session-title template names (`{labels.alertname} on {labels.instance}`);
    a ValueError saying what is wrong with a template that is not one."""
    fields = []
    for match in _TITLE_FIELD_RE.finditer(template):
        path = match.group(1).strip()
        if not _TITLE_PATH_RE.match(path):
            raise ValueError(f"invalid title_template field {{{match.group(1)}}}: expected a dotted path into the "
                             "alert data, e.g. {labels.alertname}")
        fields.append(path)
    if "{" in _TITLE_FIELD_RE.sub("", template) or "}" in _TITLE_FIELD_RE.sub("", template):
        raise ValueError(f"invalid title_template {template!r}: unbalanced braces")
    if template and not fields:
        raise ValueError(f"invalid title_template {template!r}: it names no alert field, e.g. {{labels.alertname}}")
    return fields


def _title_template(value: str) -> str:
    title_template_fields(value)
    return value


class ChainMemoryConfig(_Strict):
    """A chain's use of investigation memory (`memory: off` on the chain switches both off)."""

    recall: bool = True  # inject memories into its investigations' and chats' first prompts
    reflect: bool = True  # learn from its scored and reviewed sessions


class AutoDismissConfig(_Strict):
    """Completed sessions this calm need no human follow-up: resolved as `dismissed` by `system` instead of waiting
    in needs_review. With `min_score`, a session is dismissed when its automatic score lands (it needs scoring)."""

    max_severity: SeverityName  # this severity and below (critical > high > warning > info)
    min_score: int | None = Field(default=None, ge=0, le=100)  # None: dismissed at completion, score or not


class ChainTriageConfig(_Strict):
    auto_dismiss: AutoDismissConfig | None = None


class ChainConfig(_Strict):
    alert_types: list[str] = Field(default_factory=list)
    description: str = ""
    # The sessions' title from fields of the alert's data; "" or a field missing: the title TARSy derives itself.
    title_template: Annotated[str, AfterValidator(_title_template)] = ""
    llm_provider: str | None = None
    fallback_providers: list[str] | None = None
    iteration_strategy: IterationStrategy | None = None
    max_iterations: int | None = Field(default=None, gt=0)
    iteration_timeout: Duration | None = None
    mcp_servers: list[str] | None = None
    chat: ChatConfig = Field(default_factory=ChatConfig)
    executive_summary_provider: str | None = None
    dedup: Annotated[DedupConfig | None, BeforeValidator(_off_is_none)] = Field(default_factory=DedupConfig)
    correlation: Annotated[CorrelationConfig | None, BeforeValidator(_off_is_none)] = Field(
        default_factory=CorrelationConfig)
    budget: BudgetConfig | None = None  # over the defaults' budget, limit by limit
    memory: Annotated[ChainMemoryConfig | None, BeforeValidator(_off_is_none)] = Field(
        default_factory=ChainMemoryConfig)
    triage: ChainTriageConfig = Field(default_factory=ChainTriageConfig)
    stages: list[StageConfig] = Field(min_length=1)


class DefaultsConfig(_Strict):
    llm_provider: str = ""  # "" = built-in choice: a real provider when its key is set, else demo
    # Providers that take over, in order, when the provider fails after its retries or rejects its credentials.
    fallback_providers: list[str] = Field(default_factory=list)
    iteration_strategy: IterationStrategy = "react"
    max_iterations: int = Field(default=20, gt=0)
    iteration_timeout: Duration = 120.0
    session_timeout: Duration = 900.0
    success_policy: SuccessPolicy = "any"
    alert_type: str = "kubernetes"
    runbook: str = ""
    alert_masking: AlertMaskingConfig = Field(default_factory=AlertMaskingConfig)
    budget: BudgetConfig = Field(default_factory=BudgetConfig)


class QueueConfig(_Strict):
    max_concurrent_sessions: int = Field(default=5, gt=0)
    orphan_threshold: Duration = 300.0
    max_resumes: int = Field(default=3, ge=0)
    # A queued alert rises one severity level per `priority_aging` waited: an info alert waiting 3x this long
    # goes before a critical one that has just arrived, so a steady stream of criticals never starves it.
    priority_aging: Duration = 600.0
    severities: dict[str, SeverityName] = Field(default_factory=dict)  # alert type -> severity without one sent


class AuthConfig(_Strict):
    mode: Literal["none", "proxy", "token"] = "none"


class RunbooksConfig(_Strict):
    allowed_domains: list[str] = Field(default_factory=lambda: ["github.com", "raw.githubusercontent.com"])


class RetentionConfig(_Strict):
    session_retention_days: int = Field(default=365, gt=0)
    event_ttl: Duration = 3600.0


class SystemConfig(_Strict):
    auth: AuthConfig = Field(default_factory=AuthConfig)
    # The dashboard's address as people reach it (e.g. https://tarsy.example.com): session links sent to Slack,
    # PagerDuty and API clients are built from it. Empty: links are relative to the request's host.
    external_url: str = ""
    trusted_proxies: list[str] = Field(default_factory=list)
    allowed_ws_origins: list[str] = Field(default_factory=list)
    runbooks: RunbooksConfig = Field(default_factory=RunbooksConfig)
    retention: RetentionConfig = Field(default_factory=RetentionConfig)
    # Once today's (UTC) estimated spend reaches it, new investigations stay queued until tomorrow or a raise.
    daily_spend_limit_usd: Decimal | None = Field(default=None, ge=0)

    @field_validator("external_url")
    @classmethod
    def _absolute_base(cls, value: str) -> str:
        if not value:
            return value
        if not re.match(r"^https?://[^/?#\s]+(/[^?#\s]*)?$", value):
            raise ValueError("must be an absolute http(s) URL without query or fragment, e.g. https://tarsy.example.com")
        return value.rstrip("/")


# A vendor's severity word (label value, PagerDuty urgency or priority) → TARSy's; compared case-insensitively.
DEFAULT_SEVERITY_MAP: dict[str, str] = {
    "critical": "critical", "crit": "critical", "page": "critical", "fatal": "critical", "p1": "critical",
    "high": "high", "error": "high", "major": "high", "p2": "high",
    "warning": "warning", "warn": "warning", "medium": "warning", "minor": "warning", "p3": "warning",
    "info": "info", "informational": "info", "low": "info", "none": "info", "p4": "info", "p5": "info",
}


class IntakeRule(_Strict):
    """When every `match` label has exactly the given value, the alert gets these settings (first rule wins)."""

    match: dict[str, str] = Field(min_length=1)
    alert_type: str | None = None
    severity: SeverityName | None = None
    runbook: str | None = None


class IntakeSourceConfig(_Strict):
    """One webhook source. `secret_env` names the environment variable holding its shared secret (Alertmanager,
    Grafana: sent as `Authorization: Bearer <secret>`) or signing secret (PagerDuty: HMAC-SHA256)."""

    enabled: bool = True
    secret_env: str = ""
    severity_label: str = "severity"
    severity_map: dict[str, SeverityName] = Field(default_factory=dict)  # merged over DEFAULT_SEVERITY_MAP
    rules: list[IntakeRule] = Field(default_factory=list)

    def severity_for(self, value: str) -> str | None:
        word = value.strip().lower()
        return {**DEFAULT_SEVERITY_MAP, **{k.lower(): v for k, v in self.severity_map.items()}}.get(word)


class GroupedSourceConfig(IntakeSourceConfig):
    """Alertmanager and Grafana send alerts in groups: one session per alert (default) or per group."""

    session_per: Literal["alert", "group"] = "alert"


class PagerDutySourceConfig(IntakeSourceConfig):
    """PagerDuty incidents carry no labels; rules match `service`, `urgency`, `priority` and `team`.
    `max_event_age`: a signed event whose `occurred_at` is further from now is refused, and a signed event id
    seen before is acknowledged without acting on it again (a captured delivery cannot be replayed)."""

    severity_label: str = "urgency"
    max_event_age: Duration = Field(default=300.0, gt=0)


class IntakeConfig(_Strict):
    alertmanager: GroupedSourceConfig = Field(default_factory=GroupedSourceConfig)
    grafana: GroupedSourceConfig = Field(default_factory=GroupedSourceConfig)
    pagerduty: PagerDutySourceConfig = Field(default_factory=PagerDutySourceConfig)


class ScoringConfig(_Strict):
    """Automatic scoring of completed sessions; off while no `llm_provider` is named."""

    llm_provider: str = ""
    timeout: Duration = 120.0
    max_output_tokens: int = Field(default=1024, gt=0)

    @property
    def enabled(self) -> bool:
        return bool(self.llm_provider)


class MemoryConfig(_Strict):
    """Investigation memory (docs/memory.md). Off by default: with it on, every scored or reviewed session costs
    a reflection LLM call and every first prompt carries recalled memories, which changes what existing
    deployments and the demo send to their LLM."""

    enabled: bool = False
    llm_provider: str = ""  # the reflection's provider; "" = defaults.llm_provider
    embedding_provider: str = ""  # an llm_providers entry of type google or openai naming an embedding model
    max_injected: int = Field(default=5, ge=1, le=20)
    similarity_floor: float = Field(default=0.35, ge=0, le=1)  # cosine below this is no match
    half_life_days: float = Field(default=90.0, gt=0)  # a memory's weight halves with each half-life unconfirmed
    max_per_reflection: int = Field(default=5, ge=1, le=20)
    # Active memories per alert type ('' counts as one): past it the oldest, least-used are retired (with the
    # reason), so years of lessons cannot crowd out recent ones or slow recall and learning without bound.
    max_per_alert_type: int = Field(default=5000, ge=1)
    timeout: Duration = 120.0


_SLACK_CHANNEL_RE = re.compile(r"^[#]?[A-Za-z0-9._-]{1,80}$")


def _slack_channel(value: str) -> str:
    if not _SLACK_CHANNEL_RE.match(value):
        raise ValueError(f"invalid Slack channel {value!r}: a channel ID (C0123ABC) or name (#alerts)")
    return value


SlackChannel = Annotated[str, AfterValidator(_slack_channel)]


class SlackConfig(_Strict):
    """Slack threads for sessions. Secrets are named by environment variable, never written in the file."""

    enabled: bool = True
    channel: SlackChannel
    chain_channels: dict[str, SlackChannel] = Field(default_factory=dict)  # chain id → channel
    bot_token_env: str = "SLACK_BOT_TOKEN"
    signing_secret_env: str = "SLACK_SIGNING_SECRET"
    base_url: str = ""  # Web API base URL; "" = https://slack.com/api/ (proxies, test servers)
    update_interval: Duration = 10.0  # at most one in-place update of the message per interval while running
    timeout: Duration = 10.0  # per Web API call
    # Slack member ID → TARSy identity, for triage from Slack; unmapped members are matched by their Slack email.
    users: dict[str, str] = Field(default_factory=dict)
    # A member matching neither (a guest, a shared channel's member) may triage, decide and ask as `slack:<handle>`
    # only when true; by default nothing they ask is done.
    allow_unmapped: bool = False

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if value and not value.startswith(("http://", "https://")):
            raise ValueError("base_url must be an http(s) URL")
        return value

    def channel_for(self, chain_id: str) -> str:
        return self.chain_channels.get(chain_id, self.channel)


SCHEDULED_CHECK_ALERT_TYPE = "scheduled_check"  # the alert type of a check's sessions; no chain may claim it
_CHECK_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
_CRON_FIELDS = (("minute", 0, 59), ("hour", 0, 23), ("day of month", 1, 31), ("month", 1, 12),
                ("day of week", 0, 6))
_CRON_PART_RE = re.compile(r"^(?:\*|(\d+)(?:-(\d+))?)(?:/(\d+))?$")


def _cron_part(part: str, name: str, low: int, high: int) -> None:
    match = _CRON_PART_RE.match(part)
    if not match:
        raise ValueError(f"{name}: {part!r} is not *, a number, a range a-b, or one of those with /step")
    first, last, step = (int(g) if g is not None else None for g in match.groups())
    if step is not None and step <= 0:
        raise ValueError(f"{name}: step must be positive")
    for value in (first, last):
        if value is not None and not low <= value <= high:
            raise ValueError(f"{name}: {value} is outside {low}-{high}")
    if first is not None and last is not None and last < first:
        raise ValueError(f"{name}: range {first}-{last} runs backwards")


def cron_fields(value: str) -> tuple[str, str, str, str, str]:
    """The five fields of a cron expression (minute hour day-of-month month day-of-week), each `*`, numbers,
    ranges and steps, comma-separated; a ValueError saying what is wrong otherwise."""
    fields = str(value).split()
    if len(fields) != 5:
        raise ValueError(f"invalid cron {value!r}: expected 5 fields (minute hour day-of-month month day-of-week)")
    for field, (name, low, high) in zip(fields, _CRON_FIELDS, strict=True):
        for part in field.split(","):
            _cron_part(part, name, low, high)
    return fields[0], fields[1], fields[2], fields[3], fields[4]


def _cron(value: str) -> str:
    return " ".join(cron_fields(value))


class CheckConfig(_Strict):
    """A proactive check: on its cron schedule the chain investigates `instruction` as an alert of type
    `scheduled_check`; a run whose analysis ends `VERDICT: HEALTHY` closes quietly, any other opens the normal path."""

    name: str
    schedule: Annotated[str, AfterValidator(_cron)]
    chain: str
    instruction: str = Field(min_length=1, max_length=4000)
    enabled: bool = True

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _CHECK_NAME_RE.match(value):
            raise ValueError("name must be 1-100 letters, digits, '.', '_' or '-' (it is part of a URL)")
        return value


def _unique_check_names(checks: list[CheckConfig]) -> list[CheckConfig]:
    names = [c.name for c in checks]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"check names must be unique: {', '.join(repeated)} repeated")
    return checks


class ActionRateLimit(_Strict):
    """At most `max_per_target` actions on one target (a server's `target_arguments`) within `window`, counting
    those pending, approved, running or run; one more is refused to the agent."""

    max_per_target: int = Field(gt=0)
    window: Duration = Field(gt=0)


class ActionsConfig(_Strict):
    """Approved actions (docs/investigations.md): off by default, the kill switch for every proposal."""

    enabled: bool = False
    approvers: list[str] = Field(default_factory=list)  # user names or groups (proxy groups, token scopes)
    approval_ttl: Duration = Field(default=3600.0, gt=0)
    max_pending_per_session: int = Field(default=1, gt=0)
    verify_attempts: int = Field(default=5, ge=1, le=30)  # reads of the verification step before not_verified
    verify_interval: Duration = Field(default=2.0, ge=0)
    rate_limit: ActionRateLimit | None = None  # None: no limit per target


class TarsyFile(_Strict):
    defaults: DefaultsConfig = Field(default_factory=DefaultsConfig)
    queue: QueueConfig = Field(default_factory=QueueConfig)
    system: SystemConfig = Field(default_factory=SystemConfig)
    intake: IntakeConfig = Field(default_factory=IntakeConfig)
    scoring: ScoringConfig = Field(default_factory=ScoringConfig)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    actions: ActionsConfig = Field(default_factory=ActionsConfig)
    privacy: PrivacyConfig = Field(default_factory=PrivacyConfig)
    mcp_servers: dict[str, MCPServerConfig] = Field(default_factory=dict)
    agents: dict[str, AgentConfig] = Field(default_factory=dict)
    agent_chains: dict[str, ChainConfig] = Field(default_factory=dict)
    slack: SlackConfig | None = None
    checks: Annotated[list[CheckConfig], AfterValidator(_unique_check_names)] = Field(default_factory=list)


MaskingConfig.model_rebuild()
