"""Orchestrators: agents with `sub_agents` dispatch other agents on demand and wait for them without a worker.

The tools `tarsy.dispatch_agent(agent, task)`, `tarsy.list_agents()` and `tarsy.cancel_agent(execution_id)`
(native functions `tarsy__dispatch_agent`, …) are answered in the worker, by `tools.SubAgentTools`, not by the
stdio `tarsy` MCP server: they act on the calling execution (its stage, depth, guardrails and the iteration they
belong to), which a shared server process does not know. Dispatches and cancels take effect when the iteration
completes, in its transaction (`decisions`): an attempt that is discarded and run again dispatches nothing twice.

A sub-agent is a regular execution (its own iteration tasks, timeline and records) linked by `parent_execution`.
When the orchestrator's iteration made only these calls, or it concludes while sub-agents still run, it parks
(`waiting`, no task in flight). A sub-agent's end wakes it, once, under its row lock; its next iteration starts
with the results of the sub-agents that ended as messages (`results`: masked, evidence ids kept, so the final
analysis can cite what the sub-agents found). The sweeper times sub-agents out at their deadline, which wakes the
orchestrator too; an orchestrator that ends cancels its sub-agents. Who may dispatch whom, within which limits,
is `orchestrators`'.
"""
