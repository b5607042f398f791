"""The effective configuration and its lookups: chains by alert type, agents, providers, servers."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .schema import (
    SCHEDULED_CHECK_ALERT_TYPE,
    ActionsConfig,
    AgentConfig,
    BudgetConfig,
    ChainConfig,
    CheckConfig,
    DefaultsConfig,
    IntakeConfig,
    LLMProviderConfig,
    MCPServerConfig,
    MemoryConfig,
    PrivacyConfig,
    QueueConfig,
    ScoringConfig,
    SlackConfig,
    SystemConfig,
)
from .skills import Skill

EMBEDDING_PROVIDER_TYPES = ("google", "openai")  # the SDKs TARSy calls for embeddings (agents.llm.embeddings)


def _unpriced(provider: LLMProviderConfig) -> bool:
    from agents.llm.pricing import price_for  # the pricing module builds on this package

    return price_for(provider) is None


@dataclass
class TarsyConfig:
    defaults: DefaultsConfig
    queue: QueueConfig
    system: SystemConfig
    llm_providers: dict[str, LLMProviderConfig]
    mcp_servers: dict[str, MCPServerConfig]
    agents: dict[str, AgentConfig]
    chains: dict[str, ChainConfig]
    default_provider: str
    intake: IntakeConfig = field(default_factory=IntakeConfig)
    config_dir: str = ""
    scoring: ScoringConfig = field(default_factory=ScoringConfig)
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    actions: ActionsConfig = field(default_factory=ActionsConfig)
    privacy: PrivacyConfig = field(default_factory=PrivacyConfig)
    slack: SlackConfig | None = None
    checks: list[CheckConfig] = field(default_factory=list)
    skills: dict[str, Skill] = field(default_factory=dict)  # the catalog of the directory's skills/, by name
    user_defined: dict[str, set[str]] = field(default_factory=dict)
    file_names: dict[str, str] = field(default_factory=lambda: {"tarsy": "tarsy.yaml",
                                                                 "providers": "llm-providers.yaml"})

    # ---- lookups -------------------------------------------------------
    def alert_types(self) -> dict[str, str]:
        """alert type → chain id (first chain that lists it wins, in file order)."""
        mapping: dict[str, str] = {}
        for chain_id, chain in self.chains.items():
            for alert_type in chain.alert_types:
                mapping.setdefault(alert_type, chain_id)
        return mapping

    def chain_for_alert_type(self, alert_type: str) -> str | None:
        return self.alert_types().get(alert_type)

    def chain(self, chain_id: str) -> ChainConfig:
        return self.chains[chain_id]

    def check(self, name: str) -> CheckConfig | None:
        return next((c for c in self.checks if c.name == name), None)

    def budget(self, chain_id: str) -> BudgetConfig:
        """The chain's budget over the defaults' (a chain no longer configured keeps the defaults')."""
        chain = self.chains.get(chain_id)
        base = self.defaults.budget
        return chain.budget.merged_over(base) if chain is not None and chain.budget is not None else base

    def provider(self, name: str | None) -> LLMProviderConfig:
        return self.llm_providers[name or self.default_provider]

    def agent_skills(self, agent_name: str) -> tuple[tuple[Skill, ...], tuple[Skill, ...]]:
        """The agent's (required, loadable) skills: the required ones in its prompt, the loadable ones the rest of
        its `skills` (the whole catalog when it names none), in the order named. Unknown names are config errors
        (`cross_reference_problems`), skipped here."""
        agent = self.agents[agent_name]
        required = tuple(self.skills[n] for n in dict.fromkeys(agent.required_skills) if n in self.skills)
        offered = agent.skills if isinstance(agent.skills, list) else list(self.skills)
        loadable = tuple(self.skills[n] for n in dict.fromkeys(offered)
                         if n in self.skills and n not in agent.required_skills)
        return required, loadable

    def mcp_servers_in_use(self) -> set[str]:
        """MCP servers some chain can call: named by a chain, a stage agent, or an agent a chain runs (in a stage,
        as synthesis, as chat). The others are never started nor health-checked: a built-in server nobody uses
        (kubernetes-server without a cluster) must not fail or fill the log."""
        used: set[str] = set()
        for chain in self.chains.values():
            used.update(chain.mcp_servers or [])
            agents = {chain.chat.agent} if chain.chat.enabled else set()
            for stage in chain.stages:
                agents.update(a.name for a in stage.agents)
                agents.update([stage.synthesis.agent] if stage.synthesis else [])
                for stage_agent in stage.agents:
                    used.update(stage_agent.mcp_servers or [])
            for name in self.with_sub_agents(agents):
                used.update(self.agents[name].mcp_servers if name in self.agents else [])
        return used & set(self.mcp_servers)

    def with_sub_agents(self, names: Iterable[str]) -> set[str]:
        """The agents and every agent they may dispatch, transitively."""
        seen: set[str] = set()
        todo = list(names)
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo.extend(self.agents[name].sub_agents if name in self.agents else [])
        return seen

    def _sub_agent_cycle(self, start: str) -> list[str] | None:
        """A path of `sub_agents` from `start` back to itself, if there is one."""
        stack: list[tuple[str, list[str]]] = [(start, [start])]
        seen: set[str] = set()
        while stack:
            name, path = stack.pop()
            for sub in self.agents[name].sub_agents if name in self.agents else []:
                if sub == start:
                    return [*path, sub]
                if sub not in seen:
                    seen.add(sub)
                    stack.append((sub, [*path, sub]))
        return None

    # ---- validation ----------------------------------------------------
    def _origin(self, section: str, name: str) -> str:
        file = self.file_names["providers" if section == "llm_providers" else "tarsy"]
        return file if name in self.user_defined.get(section, ()) else "(built-in)"

    def cross_reference_problems(self) -> list[str]:
        """Every reference from chains/agents to agents, providers and MCP servers must resolve."""
        problems: list[str] = []

        def need(kind: str, name: str | None, where: str, known: Iterable[str]) -> None:
            if name and name not in known:
                problems.append(f"{where}: unknown {kind} {name!r} (known: {', '.join(sorted(known))})")

        if self.default_provider not in self.llm_providers:
            problems.append(
                f"{self.file_names['tarsy']}: defaults.llm_provider: unknown llm provider {self.default_provider!r} "
                f"(known: {', '.join(sorted(self.llm_providers))})"
            )
        need("llm provider", self.scoring.llm_provider, f"{self.file_names['tarsy']}: scoring.llm_provider",
             self.llm_providers)
        need("llm provider", self.memory.llm_provider, f"{self.file_names['tarsy']}: memory.llm_provider",
             self.llm_providers)
        need("llm provider", self.memory.embedding_provider, f"{self.file_names['tarsy']}: memory.embedding_provider",
             self.llm_providers)
        embedder = self.llm_providers.get(self.memory.embedding_provider)
        if embedder is not None and embedder.type not in EMBEDDING_PROVIDER_TYPES:
            problems.append(f"{self.file_names['tarsy']}: memory.embedding_provider: provider "
                            f"{self.memory.embedding_provider!r} is of type {embedder.type!r}; embeddings need one "
                            f"of {', '.join(EMBEDDING_PROVIDER_TYPES)}")
        for i, fallback in enumerate(self.defaults.fallback_providers):
            need("llm provider", fallback, f"{self.file_names['tarsy']}: defaults.fallback_providers.{i}",
                 self.llm_providers)
        for name, agent in self.agents.items():
            where = f"{self._origin('agents', name)}: agents.{name}"
            need("llm provider", agent.llm_provider, f"{where}.llm_provider", self.llm_providers)
            for i, fallback in enumerate(agent.fallback_providers or []):
                need("llm provider", fallback, f"{where}.fallback_providers.{i}", self.llm_providers)
            for i, server in enumerate(agent.mcp_servers):
                need("MCP server", server, f"{where}.mcp_servers.{i}", self.mcp_servers)
            for i, sub in enumerate(agent.sub_agents):
                need("agent", sub, f"{where}.sub_agents.{i}", self.agents)
            cycle = self._sub_agent_cycle(name)
            if cycle:
                problems.append(f"{where}.sub_agents: agents dispatch each other in a cycle ({' -> '.join(cycle)})")
            for key in ("required_skills", "skills"):
                names = getattr(agent, key)
                for i, skill in enumerate(names if isinstance(names, list) else []):
                    if skill not in self.skills:
                        known = ", ".join(sorted(self.skills)) or "none: the skills/ folder holds no skill"
                        problems.append(f"{where}.{key}.{i}: unknown skill {skill!r} (known: {known})")
        seen_types: dict[str, str] = {}
        for chain_id, chain in self.chains.items():
            where = f"{self._origin('agent_chains', chain_id)}: agent_chains.{chain_id}"
            need("llm provider", chain.llm_provider, f"{where}.llm_provider", self.llm_providers)
            for i, fallback in enumerate(chain.fallback_providers or []):
                need("llm provider", fallback, f"{where}.fallback_providers.{i}", self.llm_providers)
            need("llm provider", chain.executive_summary_provider, f"{where}.executive_summary_provider",
                 self.llm_providers)
            for i, server in enumerate(chain.mcp_servers or []):
                need("MCP server", server, f"{where}.mcp_servers.{i}", self.mcp_servers)
            dismiss = chain.triage.auto_dismiss
            if dismiss is not None and dismiss.min_score is not None and not self.scoring.enabled:
                problems.append(f"{where}.triage.auto_dismiss.min_score: needs automatic scoring "
                                "(scoring.llm_provider); without it no session would ever be dismissed")
            if chain.chat.enabled:
                need("agent", chain.chat.agent, f"{where}.chat.agent", self.agents)
                need("llm provider", chain.chat.llm_provider, f"{where}.chat.llm_provider", self.llm_providers)
            for alert_type in chain.alert_types:
                if alert_type == SCHEDULED_CHECK_ALERT_TYPE:
                    problems.append(f"{where}.alert_types: {alert_type!r} is reserved for the sessions of `checks:`")
                if alert_type in seen_types and self._origin("agent_chains", chain_id) != "(built-in)":
                    problems.append(
                        f"{where}.alert_types: alert type {alert_type!r} is already handled by chain "
                        f"{seen_types[alert_type]!r}"
                    )
                seen_types.setdefault(alert_type, chain_id)
            for s, stage in enumerate(chain.stages):
                swhere = f"{where}.stages.{s}"
                need("llm provider", stage.llm_provider, f"{swhere}.llm_provider", self.llm_providers)
                for a, stage_agent in enumerate(stage.agents):
                    awhere = f"{swhere}.agents.{a}"
                    need("agent", stage_agent.name, f"{awhere}.name", self.agents)
                    need("llm provider", stage_agent.llm_provider, f"{awhere}.llm_provider", self.llm_providers)
                    for i, server in enumerate(stage_agent.mcp_servers or []):
                        need("MCP server", server, f"{awhere}.mcp_servers.{i}", self.mcp_servers)
                if stage.synthesis:
                    need("agent", stage.synthesis.agent, f"{swhere}.synthesis.agent", self.agents)
                    need("llm provider", stage.synthesis.llm_provider, f"{swhere}.synthesis.llm_provider",
                         self.llm_providers)
        problems += self._action_problems()
        for source in ("alertmanager", "grafana", "pagerduty"):
            for i, rule in enumerate(getattr(self.intake, source).rules):
                need("alert type", rule.alert_type, f"{self.file_names['tarsy']}: intake.{source}.rules.{i}.alert_type",
                     self.alert_types())
        for alert_type in self.queue.severities:
            need("alert type", alert_type, f"{self.file_names['tarsy']}: queue.severities", seen_types)
        for i, check in enumerate(self.checks):
            need("chain", check.chain, f"{self.file_names['tarsy']}: checks.{i}.chain", self.chains)
        if self.slack:
            for chain_id in self.slack.chain_channels:
                need("chain", chain_id, f"{self.file_names['tarsy']}: slack.chain_channels", self.chains)
        return problems

    def action_servers(self) -> set[str]:
        return {name for name, server in self.mcp_servers.items() if server.actions}

    def _action_problems(self) -> list[str]:
        """Action servers reach action agents only, wherever servers are listed (agent, chain, stage agent); an
        action stage runs action agents only."""
        problems: list[str] = []
        actions = self.action_servers()

        def is_action(agent_name: str) -> bool:
            agent = self.agents.get(agent_name)
            return agent is not None and agent.type == "action"

        def refuse(where: str, servers: Iterable[str], agent_name: str) -> None:
            for server in servers:
                if server in actions and not is_action(agent_name):
                    problems.append(f"{where}: action server {server!r} reaches agent {agent_name!r}, which is not "
                                    "of type action (only action agents may propose action tools)")

        for name, agent in self.agents.items():
            refuse(f"{self._origin('agents', name)}: agents.{name}.mcp_servers", agent.mcp_servers, name)
        for chain_id, chain in self.chains.items():
            where = f"{self._origin('agent_chains', chain_id)}: agent_chains.{chain_id}"
            for s, stage in enumerate(chain.stages):
                for a, stage_agent in enumerate(stage.agents):
                    refuse(f"{where}.mcp_servers", chain.mcp_servers or [], stage_agent.name)
                    refuse(f"{where}.stages.{s}.agents.{a}.mcp_servers", stage_agent.mcp_servers or [],
                           stage_agent.name)
                    if stage.type == "action" and not is_action(stage_agent.name):
                        problems.append(f"{where}.stages.{s}.agents.{a}: an action stage runs action agents only; "
                                        f"{stage_agent.name!r} is not of type action")
        return problems

    def warnings(self, env: Mapping[str, str] | None = None) -> list[str]:
        """Non-fatal problems worth showing an operator (missing API keys for referenced providers)."""
        env = os.environ if env is None else env
        out: list[str] = []
        used = {self.default_provider, *filter(None, [self.scoring.llm_provider, self.memory.llm_provider]),
                *self.defaults.fallback_providers}
        for chain in self.chains.values():
            used.update(filter(None, [chain.llm_provider, chain.chat.llm_provider, *(chain.fallback_providers or [])]))
            for stage in chain.stages:
                used.update(filter(None, [stage.llm_provider, *(a.llm_provider for a in stage.agents)]))
        for agent in self.agents.values():
            used.update(filter(None, [agent.llm_provider, *(agent.fallback_providers or [])]))
        for name in sorted(used):
            provider = self.llm_providers.get(name)
            if provider and provider.api_key_env and not env.get(provider.api_key_env):
                out.append(f"LLM provider {name!r}: environment variable {provider.api_key_env} is not set")
            if provider and provider.type != "scripted" and _unpriced(provider):
                out.append(f"LLM provider {name!r}: model {provider.model!r} has no price (its calls' cost shows as "
                           "unknown); set `pricing` on the provider")
        embedder = self.llm_providers.get(self.memory.embedding_provider) if self.memory.enabled else None
        if embedder and embedder.api_key_env and not env.get(embedder.api_key_env):
            out.append(f"Memory embedding provider {self.memory.embedding_provider!r}: environment variable "
                       f"{embedder.api_key_env} is not set (memories are recalled by keyword only)")
        for source in ("alertmanager", "grafana", "pagerduty"):
            secret_env = getattr(self.intake, source).secret_env
            if secret_env and not env.get(secret_env):
                out.append(f"Webhook intake {source!r}: environment variable {secret_env} is not set (its requests "
                           "are refused)")
        if self.slack and self.slack.enabled:
            for key in ("bot_token_env", "signing_secret_env"):
                name = getattr(self.slack, key)
                if not env.get(name):
                    out.append(f"Slack: environment variable {name} ({key}) is not set")
        if self.default_provider == "demo":
            out.append("No LLM API key configured: investigations use the built-in demo provider")
        return out
