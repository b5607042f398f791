"""Controller steps on real rows: sessions through the pipeline services, the scripted LLM, a real MCP server.

The agents' `k8s` server is tests/fakes/mcp_servers/k8s_server.py over stdio, configured like any MCP server:
the context builder gives each step the real MCPToolExecutor over the process's MCP pool, so masking,
summarization and the events and records of every tool call are the ones users see, and
`tarsy.pipeline.iteration.iteration_run` runs steps exactly as a worker does.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agents.mcp.pool import get_pool, shutdown_pool
from controllers.base import StepOutcome
from tarsy.models import AgentExecution, AlertSession, LLMInteraction, Message, Stage, TimelineEvent
from tarsy.pipeline.dispatch import dispatch_pending
from tarsy.pipeline.iteration import iteration_run
from tarsy.selectors.conversations import llm_conversations
from tarsy.services.intake.alerts import session_submit
from tests.fakes.fake_gemini import FakeGemini
from tests.fakes.fake_openai import FakeOpenAI
from tests.fakes.mcp_servers.k8s_server import HOLD_ENV
from tests.support.configdir import scripted_provider, write_config

ALERT_TYPE = "ctrl-alert"
PARALLEL_ALERT_TYPE = "ctrl-parallel"
ALERT_DATA = "pod web-1 in namespace prod is in CrashLoopBackOff"
SERVER_INSTRUCTIONS = "Kubernetes cluster: prefer namespaced queries."
CUSTOM_INSTRUCTIONS = "You investigate the web tier."
MAX_STEPS = 12  # no test here needs more iterations; a runaway loop fails instead of hanging
K8S_SERVER_SCRIPT = Path(__file__).resolve().parents[2] / "fakes" / "mcp_servers" / "k8s_server.py"
# Far above every answer of the server except batch-0's logs (~3,000 tokens): only those are summarized.
SUMMARIZATION_THRESHOLD_TOKENS = 500
SUMMARY_MAX_TOKENS = 200


# ---- the MCP server ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class K8sServer:
    config: dict[str, Any]  # the `mcp_servers.k8s` entry every test's configuration holds
    hold: Path  # while this file exists, every tool call waits (a call kept in flight)


@pytest.fixture(scope="session")
def k8s_server(tmp_path_factory) -> K8sServer:
    """One server configuration for the whole run, so the process's MCP pool keeps one session, as a worker does."""
    hold = tmp_path_factory.mktemp("k8s") / "hold"
    config = {
        "transport": {"type": "stdio", "command": sys.executable, "args": [str(K8S_SERVER_SCRIPT)],
                      "env": {HOLD_ENV: str(hold)}},
        "instructions": SERVER_INSTRUCTIONS,
        "summarization": {"size_threshold_tokens": SUMMARIZATION_THRESHOLD_TOKENS,
                          "summary_max_token_limit": SUMMARY_MAX_TOKENS},
    }
    yield K8sServer(config=config, hold=hold)
    shutdown_pool()


# ---- LLM servers on the wire -------------------------------------------------------------------------------------

WIRE_KEYS = {"CTRL_TEST_GEMINI_KEY": "gemini-key", "CTRL_TEST_OPENAI_KEY": "openai-key"}


@pytest.fixture
def llm_servers(monkeypatch):
    """The fake Gemini and OpenAI servers (real SDKs talk to them), with their API keys in the environment."""
    for name, value in WIRE_KEYS.items():
        monkeypatch.setenv(name, value)
    gemini, openai = FakeGemini().start(), FakeOpenAI().start()
    yield gemini, openai
    gemini.stop()
    openai.stop()


def wire_providers(gemini: FakeGemini, openai: FakeOpenAI) -> dict[str, Any]:
    """Providers `gemini` (google-genai) and `gpt` (LangChain's OpenAI) pointed at the `llm_servers` fakes."""
    return {
        "gemini": {"type": "google", "model": "gemini-2.5-pro", "api_key_env": "CTRL_TEST_GEMINI_KEY",
                   "base_url": gemini.url},
        "gpt": {"type": "openai", "model": "gpt-test", "api_key_env": "CTRL_TEST_OPENAI_KEY",
                "base_url": f"{openai.url}/v1"},
    }


# ---- configuration -----------------------------------------------------------------------------------------------


@pytest.fixture
def configure(tmp_path, k8s_server):
    """Factory: activate a configuration whose agents answer from `script` (scripted provider)."""

    def make(script: Any, *, strategy: str = "react", max_iterations: int = 5, iteration_timeout: Any = 30,
             latency_ms: int = 0, chunk_size: int = 0, providers: dict[str, Any] | None = None,
             agents: dict[str, Any] | None = None, chains: dict[str, Any] | None = None,
             synthesis_strategy: str = "synthesis", mcp_servers: dict[str, Any] | None = None,
             settings: dict[str, Any] | None = None):
        """`mcp_servers` join k8s; `settings` are further top-level sections (e.g. `actions`)."""
        tarsy = {
            **(settings or {}),
            "defaults": {"llm_provider": "scripted", "iteration_strategy": strategy,
                         "max_iterations": max_iterations, "iteration_timeout": iteration_timeout},
            "mcp_servers": {"k8s": k8s_server.config, **(mcp_servers or {})},
            "agents": {
                "SreAgent": {"mcp_servers": ["k8s"], "custom_instructions": CUSTOM_INSTRUCTIONS},
                "DbAgent": {"mcp_servers": ["k8s"]},
                "ChatAgent": {"mcp_servers": ["k8s"]},
                **(agents or {}),
            },
            "agent_chains": {
                "ctrl": {"alert_types": [ALERT_TYPE], "stages": [{"name": "investigate",
                                                                  "agents": [{"name": "SreAgent"}]}]},
                "ctrl-parallel": {
                    "alert_types": [PARALLEL_ALERT_TYPE],
                    "stages": [{"name": "parallel", "agents": [{"name": "SreAgent"}, {"name": "DbAgent"}],
                                "synthesis": {"iteration_strategy": synthesis_strategy}}],
                },
                **(chains or {}),
            },
        }
        all_providers = {"scripted": scripted_provider(script, latency_ms, chunk_size), **(providers or {})}
        config = write_config(tmp_path / "config", tarsy=tarsy, providers=all_providers)
        # The session is up before the test runs, as in a worker that has served a step: a sub-second iteration
        # timeout must not have the server's ~1 s start-up inside its budget (a no-op while the session lives).
        get_pool().list_tools("k8s", config.mcp_servers["k8s"])
        return config

    return make


# ---- sessions and steps ------------------------------------------------------------------------------------------


def start_session(alert_type: str = ALERT_TYPE, data: str = ALERT_DATA) -> AlertSession:
    """Submit an alert and claim it the way a worker does: the first stage and its executions exist."""
    session = session_submit(data=data, alert_type=alert_type)
    assert dispatch_pending() == [str(session.id)]
    session.refresh_from_db()
    return session


def executions(session: AlertSession, stage_index: int = 0) -> list[AgentExecution]:
    stage = Stage.objects.get(session=session, index=stage_index)
    return list(stage.executions.order_by("agent_index"))


def only_execution(session: AlertSession) -> AgentExecution:
    (execution,) = executions(session)
    return execution


def run_next(execution_id: Any) -> StepOutcome:
    """Run the execution's next iteration as the worker task does (its follow-up task is never consumed here)."""
    execution = AgentExecution.objects.get(id=execution_id)
    outcome = iteration_run(execution.id, execution.iterations_completed + 1)
    assert outcome is not None, "the iteration was not claimed"
    return outcome


def run_to_end(execution_id: Any) -> list[StepOutcome]:
    outcomes = []
    for _ in range(MAX_STEPS):
        outcomes.append(run_next(execution_id))
        if outcomes[-1].is_terminal:
            return outcomes
    raise AssertionError(f"execution did not finish in {MAX_STEPS} iterations")


# ---- what users see ----------------------------------------------------------------------------------------------


def timeline(execution_id: Any) -> list[TimelineEvent]:
    """The execution's events in order; their sequence numbers must be unique and gap-free."""
    events = list(TimelineEvent.objects.filter(execution_id=execution_id).order_by("sequence_number"))
    assert [e.sequence_number for e in events] == list(range(1, len(events) + 1))
    return events


def event_types(execution_id: Any) -> list[str]:
    return [e.event_type for e in timeline(execution_id)]


def messages(execution_id: Any) -> list[Message]:
    rows = list(Message.objects.filter(execution_id=execution_id).order_by("sequence_number"))
    assert [m.sequence_number for m in rows] == list(range(1, len(rows) + 1))
    return rows


def roles(execution_id: Any) -> list[str]:
    return [m.role for m in messages(execution_id)]


def interactions(execution_id: Any) -> list[LLMInteraction]:
    """The execution's LLM records as they were sent (long texts put back, as every reader of them does)."""
    return llm_conversations(list(LLMInteraction.objects.filter(execution_id=execution_id).order_by("iteration", "id")))


def sent_roles(interaction: LLMInteraction) -> list[str]:
    return [m["role"] for m in interaction.conversation]


def react_action(thought: str, tool: str, arguments: str) -> str:
    return f"Thought: {thought}\nAction: {tool}\nAction Input: {arguments}"
