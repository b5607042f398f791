"""Built-in providers, MCP servers, agents and chains.

They exist without any config file so `make run` investigates out of the box;
a YAML entry with the same name replaces the built-in one.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from .schema import (
    AgentConfig,
    ChainConfig,
    LLMProviderConfig,
    MCPServerConfig,
    StageAgentConfig,
    StageConfig,
    TransportConfig,
)

KUBERNETES_MCP_VERSION = "0.0.54"  # pinned: newer releases renamed tools the prompts mention
PROMETHEUS_MCP_IMAGE = "ghcr.io/pab1it0/prometheus-mcp-server:1.5.3"  # pinned like the Kubernetes server
PROMETHEUS_ENV = ("PROMETHEUS_URL", "PROMETHEUS_TOKEN", "PROMETHEUS_USERNAME", "PROMETHEUS_PASSWORD", "ORG_ID")

# Provider chosen when `defaults.llm_provider` is empty: the first whose key is set, else demo.
_KEYED_DEFAULTS = (
    ("google-default", "GOOGLE_API_KEY"),
    ("openai-default", "OPENAI_API_KEY"),
    ("anthropic-default", "ANTHROPIC_API_KEY"),
    ("xai-default", "XAI_API_KEY"),
)

DEFAULT_ALERT_TYPE = "kubernetes"
METRICS_ALERT_TYPE = "metrics"  # alerts on a time series (latency, saturation, error rate): need the metrics first
TRIAGE_ALERT_TYPE = "triage"  # alerts whose cause may lie in the cluster or in the metrics: an orchestrator decides


DEMO_PACE_ENV = "TARSY_DEMO_PACE_MS"  # how long one demo reply takes to stream; `manage.py serve` sets a default


def demo_pace_ms(env: Mapping[str, str] | None = None) -> int:
    """The demo provider's pace: 0 (tests, scripts) unless the environment names one."""
    value = (os.environ if env is None else env).get(DEMO_PACE_ENV, "").strip()
    if not value:
        return 0
    if not value.isdigit():
        raise ValueError(f"{DEMO_PACE_ENV} must be a whole number of milliseconds, got {value!r}")
    return int(value)


def builtin_providers() -> dict[str, LLMProviderConfig]:
    return {
        "google-default": LLMProviderConfig(type="google", model="gemini-2.5-pro", api_key_env="GOOGLE_API_KEY"),
        "openai-default": LLMProviderConfig(type="openai", model="gpt-4o", api_key_env="OPENAI_API_KEY"),
        "anthropic-default": LLMProviderConfig(
            type="anthropic", model="claude-sonnet-4-5", api_key_env="ANTHROPIC_API_KEY"
        ),
        "xai-default": LLMProviderConfig(type="xai", model="grok-4", api_key_env="XAI_API_KEY"),
        "demo": LLMProviderConfig(type="demo", latency_ms=demo_pace_ms()),
    }


def default_provider_name(env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    for name, key in _KEYED_DEFAULTS:
        if env.get(key):
            return name
    return "demo"


def prometheus_server() -> MCPServerConfig:
    """prometheus-mcp-server in a container; it reads PROMETHEUS_URL (and credentials) from the environment."""
    args = ["run", "-i", "--rm", *(arg for name in PROMETHEUS_ENV for arg in ("-e", name)), PROMETHEUS_MCP_IMAGE]
    return MCPServerConfig(
        transport=TransportConfig(type="stdio", command="docker", args=args, env_passthrough=list(PROMETHEUS_ENV)),
        instructions=(
            "For Prometheus: query the alert's own expression first, then break it down by the labels that "
            "localise it (pod, instance, route, upstream); use range queries to see when a series changed."
        ),
        data_masking={"enabled": True, "pattern_groups": ["secrets"]},
    )


# What the built-in `tarsy` server needs to open TARSy's database and configuration (tarsy.settings.base: the
# server names its own settings, not those of the web or worker process that starts it).
# TARSY_DATABASE_NAME: the database a process switched to after start (an eval's own database, evals.database).
TARSY_SERVER_ENV = ("DATABASE_URL", "REDIS_URL", "SECRET_KEY", "TARSY_DATA_DIR", "TARSY_CONFIG_DIR",
                    "TARSY_DATABASE_NAME", "PYTHONPATH")


def builtin_mcp_servers(env: Mapping[str, str] | None = None) -> dict[str, MCPServerConfig]:
    """Prometheus only where PROMETHEUS_URL names one: without it the server cannot start and would show as down."""
    env = os.environ if env is None else env
    return ({"prometheus-server": prometheus_server()} if env.get("PROMETHEUS_URL") else {}) | {
        "kubernetes-server": MCPServerConfig(
            transport=TransportConfig(
                type="stdio",
                command="npx",
                args=["-y", f"kubernetes-mcp-server@{KUBERNETES_MCP_VERSION}", "--read-only", "--disable-destructive"],
            ),
            instructions=(
                "For Kubernetes operations: be careful with cluster-scoped listings in large clusters; "
                "prefer namespaced queries; when a pod is failing, look at its events and its previous "
                "container logs before concluding."
            ),
            data_masking={"enabled": True, "pattern_groups": ["kubernetes"]},
        ),
        # TARSy's own memory (tarsy.mcp_server): started only for agents that list it; it reads the database
        # TARSy runs on, so it gets the settings that name it.
        "tarsy": MCPServerConfig(
            transport=TransportConfig(type="stdio", command=sys.executable, args=["-m", "tarsy.mcp_server"],
                                      env_passthrough=list(TARSY_SERVER_ENV)),
            instructions=("TARSy's memory of past investigations: recall what earlier ones learned and find past "
                          "sessions; verify what you recall before relying on it, and cite memories by id."),
            data_masking={"enabled": True, "pattern_groups": ["security"]},
        ),
        "demo-metrics": MCPServerConfig(
            transport=TransportConfig(type="stdio", command=sys.executable, args=["-m", "agents.mcp.demo_metrics"]),
            instructions=(
                "A demonstration Prometheus scraping the demo cluster (kube-state-metrics and cAdvisor series). "
                "Query the alert's pod by namespace and pod labels."
            ),
            data_masking={"enabled": True, "pattern_groups": ["secrets"]},
        ),
        "demo-kubernetes": MCPServerConfig(
            transport=TransportConfig(type="stdio", command=sys.executable, args=["-m", "agents.mcp.demo_cluster"]),
            instructions=(
                "A demonstration Kubernetes cluster. Use namespaced queries; inspect a failing pod's events "
                "and logs before concluding."
            ),
            data_masking={"enabled": True, "pattern_groups": ["kubernetes", "secrets"]},
        ),
    }


def _kubernetes_server_name(env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    return "kubernetes-server" if env.get("KUBECONFIG") else "demo-kubernetes"


def _metrics_server_names(env: Mapping[str, str]) -> list[str]:
    """The real Prometheus where PROMETHEUS_URL names one; the demo's beside the demo cluster (never beside a real
    cluster: its metrics would describe pods that cluster does not have)."""
    if env.get("PROMETHEUS_URL"):
        return ["prometheus-server"]
    return [] if env.get("KUBECONFIG") else ["demo-metrics"]


IMPLICIT_ORCHESTRATOR = "Orchestrator"
TRIAGE_ORCHESTRATOR = "TriageAgent"


def builtin_agents(env: Mapping[str, str] | None = None) -> dict[str, AgentConfig]:
    env = os.environ if env is None else env
    return {
        "KubernetesAgent": AgentConfig(
            description="Investigates Kubernetes alerts with cluster tools",
            mcp_servers=[_kubernetes_server_name(env)],
            custom_instructions=(
                "You investigate Kubernetes alerts. Find the failing workload, read its status, events "
                "and logs, and explain the root cause with the evidence you found."
            ),
        ),
        "PrometheusAgent": AgentConfig(
            description="Investigates metric alerts with Prometheus and cluster tools",
            mcp_servers=[_kubernetes_server_name(env), *_metrics_server_names(env)],
            custom_instructions=(
                "You investigate alerts raised on metrics (latency, error rate, saturation, growth). Query the "
                "alert's series and break it down by label to find where it comes from, look at what the "
                "component depends on, and confirm in the cluster (usage, events, logs). Name the cause the "
                "metrics show; when they show none, say the cause is undetermined and what would tell."
            ),
        ),
        "ChatAgent": AgentConfig(
            description="Answers follow-up questions about a finished investigation",
            mcp_servers=[_kubernetes_server_name(env)],
            custom_instructions=(
                "Answer the engineer's follow-up question about the investigation. Use tools only when "
                "the investigation does not already contain the answer."
            ),
        ),
        # The implicit orchestrator of a stage with `orchestrate: true`: its sub-agents are the stage's agents.
        IMPLICIT_ORCHESTRATOR: AgentConfig(
            description="Plans an investigation and dispatches the stage's agents as sub-agents",
            custom_instructions=(
                "You lead the investigation. Decide which agents to dispatch with dispatch_agent and what each "
                "should find out; dispatch independent questions together. Their results arrive as messages: read "
                "them, dispatch follow-ups where the evidence points, and conclude with one root-cause analysis "
                "that cites the evidence ids the agents' results carry."
            ),
        ),
        # The `triage` chain's orchestrator: native function calls, so one reply dispatches both sub-agents.
        TRIAGE_ORCHESTRATOR: AgentConfig(
            description="Triages an alert by dispatching the Kubernetes and metrics agents, then concludes",
            iteration_strategy="native-thinking",
            sub_agents=["KubernetesAgent", "PrometheusAgent"],
            custom_instructions=(
                "You triage the alert. Dispatch KubernetesAgent to find what fails in the cluster and why, and "
                "PrometheusAgent to find what the metrics show (restarts, memory against the limit, CPU "
                "throttling), together, each with the alert's namespace and workload in its task. Read their "
                "results, dispatch a follow-up only where they disagree or leave the cause open, and conclude with "
                "one root-cause analysis that cites the evidence ids from both."
            ),
        ),
        "SynthesisAgent": AgentConfig(
            description="Combines the findings of parallel agents into one analysis",
            iteration_strategy="synthesis",
            custom_instructions=(
                "Compare the parallel investigations, reconcile disagreements by weighing their evidence, "
                "and write one root-cause analysis."
            ),
        ),
    }


def builtin_chains() -> dict[str, ChainConfig]:
    return {
        "kubernetes": ChainConfig(
            alert_types=[DEFAULT_ALERT_TYPE],
            description="Single-stage Kubernetes investigation",
            stages=[StageConfig(name="analysis", agents=[StageAgentConfig(name="KubernetesAgent")])],
        ),
        "metrics": ChainConfig(
            alert_types=[METRICS_ALERT_TYPE],
            description="Single-stage investigation of a metric alert",
            stages=[StageConfig(name="analysis", agents=[StageAgentConfig(name="PrometheusAgent")])],
        ),
        "triage": ChainConfig(
            alert_types=[TRIAGE_ALERT_TYPE],
            description="An orchestrator dispatches the Kubernetes and metrics agents as the evidence requires",
            stages=[StageConfig(name="triage", agents=[StageAgentConfig(name=TRIAGE_ORCHESTRATOR)])],
        ),
    }
