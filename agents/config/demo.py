"""The demo's extras: on the embedded default with the demo provider, memory, approved actions and automatic scoring
are on, so a newcomer sees every feature without an API key.

They stay off everywhere else (production, a real provider, any tarsy.yaml section that names them): the demo
provider reflects and scores by its rules, and acts only on the demo cluster, which is why they are safe here.
"""

from __future__ import annotations

import dataclasses
import sys

from agents.mcp.demo_cluster import ACTIONS_SERVER_NAME, SERVER_NAME
from agents.mcp.demo_cluster_writes import STATE_ENV, WRITE_TOOLS

from .builtins import DEFAULT_ALERT_TYPE
from .registry import TarsyConfig
from .schema import (
    ActionsConfig,
    AgentConfig,
    MCPServerConfig,
    MemoryConfig,
    ScoringConfig,
    StageAgentConfig,
    StageConfig,
    TransportConfig,
)

DEMO_PROVIDER = "demo"
REMEDIATION_AGENT = "RemediationAgent"
REMEDIATION_STAGE = "remediation"
VERIFY_INTERVAL_S = 1.0  # the demo cluster changes at once; a second between reads is plenty


def with_demo_features(config: TarsyConfig, *, state_file: str, approvers: list[str]) -> TarsyConfig:
    """`config` with the demo's extras where it runs the demo and leaves them unset; `state_file`: the demo cluster's
    journal (shared by its read-only and action servers); `approvers`: who decides actions (the local user)."""
    if config.default_provider != DEMO_PROVIDER:
        return config
    changes: dict = {}
    if not config.scoring.model_fields_set:
        changes["scoring"] = ScoringConfig(llm_provider=DEMO_PROVIDER)
    if not config.memory.model_fields_set:
        changes["memory"] = MemoryConfig(enabled=True)
    servers = dict(config.mcp_servers)
    if SERVER_NAME in servers and SERVER_NAME not in config.user_defined.get("mcp_servers", set()):
        servers[SERVER_NAME] = _with_journal(servers[SERVER_NAME], state_file)
    chain = config.chains.get(DEFAULT_ALERT_TYPE)
    investigator = config.agents.get("KubernetesAgent")
    if (not config.actions.model_fields_set and chain is not None and investigator is not None
            and SERVER_NAME in investigator.mcp_servers
            and DEFAULT_ALERT_TYPE not in config.user_defined.get("agent_chains", set())):
        changes["actions"] = ActionsConfig(enabled=True, approvers=approvers, verify_interval=VERIFY_INTERVAL_S)
        servers[ACTIONS_SERVER_NAME] = _actions_server(state_file)
        changes["agents"] = {**config.agents, REMEDIATION_AGENT: _remediation_agent()}
        stage = StageConfig(name=REMEDIATION_STAGE, type="action", agents=[StageAgentConfig(name=REMEDIATION_AGENT)])
        changes["chains"] = {**config.chains, DEFAULT_ALERT_TYPE: chain.model_copy(
            update={"stages": [*chain.stages, stage]})}
    changes["mcp_servers"] = servers
    return dataclasses.replace(config, **changes)


def _with_journal(server: MCPServerConfig, state_file: str) -> MCPServerConfig:
    transport = server.transport.model_copy(update={"env": {**server.transport.env, STATE_ENV: state_file}})
    return server.model_copy(update={"transport": transport})


def _actions_server(state_file: str) -> MCPServerConfig:
    return MCPServerConfig(
        transport=TransportConfig(type="stdio", command=sys.executable,
                                  args=["-m", "agents.mcp.demo_cluster", "--actions"], env={STATE_ENV: state_file}),
        instructions="The demonstration Kubernetes cluster, with write tools that need a person's approval.",
        data_masking={"enabled": True, "pattern_groups": ["kubernetes", "secrets"]},
        actions=True, action_tools=list(WRITE_TOOLS), target_arguments=["namespace", "name"],
    )


def _remediation_agent() -> AgentConfig:
    return AgentConfig(
        description="Proposes the fix the investigation points at, for a person to approve, and verifies it",
        type="action", mcp_servers=[ACTIONS_SERVER_NAME], iteration_strategy="native-thinking",
        custom_instructions=(
            "Read the previous stage's root cause. When one change of the cluster fixes it (a limit, a rollback, a "
            "restart, a scale), read the object's current state, then propose that change with the evidence and a "
            "read that shows it worked. When the cause is undetermined or no such change fixes it, propose nothing "
            "and say why. Conclude with the root cause and what was done."
        ),
    )
