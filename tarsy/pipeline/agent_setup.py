"""An execution's agent setup: its merged configuration and the LLM providers that serve it.

Every iteration of an execution gets the same setup until a fallback provider takes over (the execution's
`llm_provider` changes) or the configuration is replaced, so it is built once per execution and process
(tarsy.pipeline.per_execution), from the execution's row and the configuration only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agents.context import ResolvedAgentConfig, resolve_agent
from agents.llm.registry import LLMTarget
from tarsy.config import get_config
from tarsy.models import AgentExecution, StageKind
from tarsy.services.sub_agents import sub_agent_stage_entry

from .per_execution import PerExecution


@dataclass(frozen=True)
class AgentSetup:
    resolved: ResolvedAgentConfig
    target: LLMTarget  # the provider the execution calls first
    fallbacks: tuple[LLMTarget, ...]  # those that take over, in order, when it fails

    @property
    def fallback_provider(self) -> str | None:
        """The provider answering instead of the configured one (None: the configured one)."""
        name = self.resolved.llm_provider_name
        return name if name != self.resolved.configured_provider_name else None


_setups: PerExecution[AgentSetup] = PerExecution()


def agent_setup(execution: AgentExecution) -> AgentSetup:
    """The setup of `execution` (its stage and session loaded, as the claim gives them)."""
    return _setups.get((execution.id, execution.llm_provider), lambda: _build(execution))


def _build(execution: AgentExecution) -> AgentSetup:
    resolved = resolve_for_execution(execution)
    return AgentSetup(
        resolved=resolved, target=LLMTarget.of(resolved.llm_provider_name, resolved.llm_provider),
        fallbacks=tuple(LLMTarget.of(name, provider) for name, provider in resolved.fallback_providers))


def _stage_agent_index(execution: AgentExecution, chain_id: str) -> int | None:
    """Which of the stage's agents the execution is: replicas share the one; an implicit orchestrator is none."""
    if execution.stage.parallel_type == "replica":
        return 0
    chain = get_config().chains.get(chain_id)
    stage_index = execution.stage.chain_stage_index
    if chain and stage_index is not None and stage_index < len(chain.stages) and chain.stages[stage_index].orchestrate:
        return None
    return execution.agent_index


def resolve_for_execution(execution: AgentExecution) -> ResolvedAgentConfig:
    """The execution's agent configuration, merged from the chain, stage and agent levels and its overrides."""
    stage = execution.stage
    session = execution.session
    kwargs: dict[str, Any] = {"strategy_override": execution.iteration_strategy,
                              "provider_override": execution.llm_provider or None}
    if stage.kind == StageKind.INVESTIGATION and execution.parent_execution_id is None:
        kwargs.update(chain_id=session.chain_id, stage_index=stage.chain_stage_index,
                      stage_agent_index=_stage_agent_index(execution, session.chain_id))
    elif stage.kind == StageKind.INVESTIGATION:  # a sub-agent: its own config, or its orchestrate stage's entry
        kwargs.update(sub_agent_stage_entry(chain_id=session.chain_id, stage_index=stage.chain_stage_index,
                                            depth=execution.depth, agent=execution.agent_config_name))
    return resolve_agent(get_config(), agent_name=execution.agent_config_name, mcp_selection=session.mcp_selection,
                         **kwargs)
