"""Who may dispatch sub-agents, which ones, and within which limits: an agent's `sub_agents` and `orchestrator`
settings, an `orchestrate` stage's implicit orchestrator, or a chat reply speaking for the session's orchestrator."""

from __future__ import annotations

from agents.config.builtins import IMPLICIT_ORCHESTRATOR
from agents.config.schema import AgentConfig, OrchestratorConfig
from tarsy.config import get_config
from tarsy.models import AgentExecution, StageKind


def orchestrator_config(execution: AgentExecution) -> AgentConfig | None:
    """The agent config of an execution that may dispatch sub-agents, else None: an investigation stage's agent
    with `sub_agents` (or the implicit orchestrator of an `orchestrate` stage), or a chat reply (chat_orchestrator)."""
    config = get_config()
    agent = config.agents.get(execution.agent_config_name)
    stage = execution.stage
    if agent is None:
        return None
    if stage.kind == StageKind.CHAT:
        return chat_orchestrator(execution.session.chain_id, agent) if execution.parent_execution_id is None \
            else (agent if agent.sub_agents else None)
    if stage.kind != StageKind.INVESTIGATION:
        return None
    chain = config.chains.get(execution.session.chain_id)
    stage_cfg = chain.stages[stage.chain_stage_index] if chain and stage.chain_stage_index is not None \
        and stage.chain_stage_index < len(chain.stages) else None
    if stage_cfg is not None and stage_cfg.orchestrate and execution.agent_config_name == IMPLICIT_ORCHESTRATOR \
            and execution.parent_execution_id is None:
        return agent.model_copy(update={"sub_agents": [a.name for a in stage_cfg.agents],
                                        "orchestrator": stage_cfg.orchestrator or agent.orchestrator})
    return agent if agent.sub_agents else None


def chat_orchestrator(chain_id: str, chat_agent: AgentConfig) -> AgentConfig | None:
    """A chat reply dispatches what the chain's chat agent lists in `sub_agents`; a chat agent listing none
    dispatches what the session's orchestrator could (the first stage agent with `sub_agents`, or an
    `orchestrate` stage's agents), with its guardrails: a follow-up question may need the same specialists."""
    if chat_agent.sub_agents:
        return chat_agent
    config = get_config()
    chain = config.chains.get(chain_id)
    for stage_cfg in chain.stages if chain else []:
        implicit = config.agents.get(IMPLICIT_ORCHESTRATOR)
        if stage_cfg.orchestrate and implicit is not None:
            return chat_agent.model_copy(update={"sub_agents": [a.name for a in stage_cfg.agents],
                                                 "orchestrator": stage_cfg.orchestrator or implicit.orchestrator})
        for ref in stage_cfg.agents:
            agent = config.agents.get(ref.name)
            if agent is not None and agent.sub_agents:
                return chat_agent.model_copy(update={"sub_agents": agent.sub_agents,
                                                     "orchestrator": agent.orchestrator})
    return None


def may_dispatch(agent_config_name: str) -> bool:
    """Whether executions of this agent may have sub-agents (it lists some, is the implicit orchestrator, or
    answers chats, which may dispatch for the session's orchestrator)."""
    config = get_config()
    agent = config.agents.get(agent_config_name)
    return agent_config_name == IMPLICIT_ORCHESTRATOR or bool(agent and agent.sub_agents) or any(
        chain.chat.enabled and chain.chat.agent == agent_config_name for chain in config.chains.values())


def orchestrator_limits(parent: AgentExecution) -> OrchestratorConfig:
    """The guardrails of an orchestrator's sub-agents (the defaults when it may not dispatch)."""
    agent = orchestrator_config(parent)
    return agent.orchestrator if agent is not None else OrchestratorConfig()
