"""The configuration an eval run uses, written as a configuration directory.

It is the deployment's own configuration (TARSY_CONFIG_DIR, or the built-ins) plus, for every scenario:

- one MCP server per logical server of its `tools.yaml`: the fixture server, with the masking, summarization
  and instructions of the server of that name in the deployment (or of the built-in server of its kind:
  `kubernetes-server`, or the Prometheus server). Each scenario's
  session selects its servers with the alert's `mcp` selection, so the rest of the configuration is untouched;
- a scripted provider playing its reference run, and a copy of its alert type's chain bound to that provider
  (TARSy picks providers per chain, so each reference run needs a chain of its own, `eval-reference-<scenario>`).

Every session is submitted with the scenario's own alert type, as a real alert would be, and runs on a chain named
by the runner (`session_submit(chain_id=...)`) where it needs its own: nothing of the scenario's name reaches the
model, whose prompt says `Alert type: kubernetes` as in production.

A scenario with `orchestrate: true` in its alert runs instead on a chain of its own whose one stage orchestrates:
the built-in orchestrator dispatches one agent per kind of fixture server (`KubernetesAgent` with the Kubernetes
server, `PrometheusAgent` with the Prometheus one), each configured with its servers in the stage, so the session
makes no `mcp` selection. Its chain is `eval-reference-<scenario>`, or `eval-orchestrated-<scenario>` in a
`--provider` run.

An action scenario (`actions:` in `expect.yaml`) also runs on a chain of its own: its alert type's investigation with
the scenario's server read-only, then an action stage whose `Remediator` (`type: action`) gets the same fixtures
from a second server in write mode (`actions: true`, the action tools allow-listed). Both share a state file of
the action calls that ran (`state_file`), so reads after an approved action answer with the `after_action`
fixtures. Actions are enabled for the run, with the runner's identity `APPROVER` as the approver; the session makes
no `mcp` selection (it would replace the action agent's server). Its chain is `eval-reference-<scenario>`, or
`eval-action-<scenario>` in a `--provider` run.

A scenario with memory fixtures (`memories.yaml`) also selects the built-in `tarsy` MCP server, and memory is
enabled for the run: no chain reflects, and only the reference chains of such scenarios inject memories.

With `--provider NAME` every chain of the deployment is bound to NAME instead, and scenarios run on the chain
of their alert type (orchestrated and action scenarios on their own). The content depends only on the scenarios,
the provider and the concurrency, so external workers started with `TARSY_CONFIG_DIR=<dir>` serve any later run
with the same options.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from agents.config import TarsyConfig, load_config
from agents.config.builtins import prometheus_server
from agents.config.loader import PROVIDERS_FILE, TARSY_FILE
from agents.config.schema import ChainConfig, StageAgentConfig, StageConfig

from .fixture_tools import ACTION_TOOLS
from .fixtures import ScenarioError, toolset
from .scenario import MEMORY_SERVER, Scenario

REFERENCE = "reference"  # the provider name that means "each scenario's own reference run"
REFERENCE_PREFIX = "eval-reference-"  # chain and provider names of reference runs
ORCHESTRATED_PREFIX = "eval-orchestrated-"  # chains of orchestrated scenarios in a --provider run
ACTION_PREFIX = "eval-action-"  # chains of action scenarios in a --provider run
ACTION_AGENT = "Remediator"  # the action agent of an action scenario's second stage (its reference script's key)
APPROVER = "eval-approver"  # the identity the runner approves and rejects proposals as
WRITE_SUFFIX = "-write"  # the logical name of a scenario server's write-mode twin
ACTION_SETTINGS = {"enabled": True, "verify_attempts": 2,  # fixtures change at once: a second read only confirms
                   "verify_interval": "1s"}
REMEDIATOR = {
    "type": "action",
    "description": "Proposes the one action that repairs what the investigation found, or none.",
    "custom_instructions": "The investigation of this alert is above. Propose an action only when its evidence, or "
                           "your own reads, show what to change and that the change repairs it; otherwise conclude "
                           "without acting and say why. Your final answer states the root cause and what was done.",
}
SUB_AGENTS = {"kubernetes": "KubernetesAgent", "prometheus": "PrometheusAgent"}  # kind of server → its agent
TEMPLATE_SERVER = "kubernetes-server"  # settings of a Kubernetes fixture server whose name is not configured
REPO_ROOT = Path(__file__).resolve().parent.parent
IDLE_EXIT_S = 60  # a fixture server without calls this long exits (memory); the pool restarts it if needed


@dataclass(frozen=True)
class ScenarioPlan:
    """How one scenario is submitted in this run."""

    scenario: Scenario
    alert_type: str  # what this run submits: the scenario's own, as a real alert has
    chain_id: str | None  # the chain it runs on; None: the chain of its alert type
    reference_chain_id: str  # the chain of its reference run (a copy bound to its script)
    servers: dict[str, str]  # logical server name → this run's server name
    write_servers: dict[str, str] = field(default_factory=dict)  # logical → its write-mode twin (action scenarios)

    @property
    def mcp_selection(self) -> dict[str, Any] | None:
        """Its fixture servers, and the built-in memory server when the scenario remembers a prior incident; None
        when orchestrated or acting (its stages give each agent its servers)."""
        if self.scenario.alert.orchestrate or self.scenario.acts:
            return None
        names = [*self.servers.values(), *([MEMORY_SERVER] if self.scenario.memories else [])]
        return {"servers": [{"name": name} for name in names]}


@dataclass(frozen=True)
class RunPlan:
    config_dir: Path
    provider: str
    plans: list[ScenarioPlan]

    def as_reference(self) -> RunPlan:
        """The reference runs of the same scenarios: every configuration written here also holds them."""
        plans = [replace(p, chain_id=p.reference_chain_id) for p in self.plans]
        return RunPlan(config_dir=self.config_dir, provider=REFERENCE, plans=plans)


def runtime_server(logical: str, scenario: str) -> str:
    """A name of its own per scenario (servers are configured by name), stable across runs."""
    return f"{logical}-{hashlib.sha1(scenario.encode()).hexdigest()[:6]}"


def rewrite_servers(value: Any, names: dict[str, str]) -> Any:
    """Replace `logical.` tool-name prefixes with this run's server names in every string of a script."""
    if not names:
        return value
    pattern = re.compile(r"(?<![\w.-])(" + "|".join(map(re.escape, sorted(names, key=len, reverse=True)))
                         + r")\.(?=\w)")
    if isinstance(value, str):
        return pattern.sub(lambda m: names[m.group(1)] + ".", value)
    if isinstance(value, list):
        return [rewrite_servers(v, names) for v in value]
    if isinstance(value, dict):
        return {k: rewrite_servers(v, names) for k, v in value.items()}
    return value


def bound_chain(chain: ChainConfig, provider: str, alert_types: list[str] | None = None, *,
                memory: dict[str, bool] | None = None) -> dict[str, Any]:
    """The chain as config data with every LLM call it makes bound to `provider`; `memory`, when given, replaces
    its memory switches."""
    data = chain.model_dump(mode="json", exclude_none=True)
    if memory is not None:
        data["memory"] = memory
    if alert_types is not None:
        data["alert_types"] = alert_types
    data["llm_provider"] = data["executive_summary_provider"] = provider
    data["chat"]["llm_provider"] = provider
    for stage in data["stages"]:
        stage["llm_provider"] = provider
        for agent in stage["agents"]:
            agent["llm_provider"] = provider
        if "synthesis" in stage:
            stage["synthesis"]["llm_provider"] = provider
    return data


def orchestrated_chain(chain: ChainConfig, scenario: Scenario, names: dict[str, str]) -> ChainConfig:
    """`chain` with one stage instead of its own: the built-in orchestrator over one agent per kind of fixture server,
    each with the scenario's servers of that kind (and the memory server when the scenario remembers)."""
    kinds: dict[str, list[str]] = {}
    for logical, runtime in names.items():
        kinds.setdefault(toolset(scenario.tools, logical), []).append(runtime)
    memory = [MEMORY_SERVER] if scenario.memories else []
    agents = [StageAgentConfig(name=SUB_AGENTS[kind], mcp_servers=[*servers, *memory])
              for kind, servers in kinds.items()]
    return chain.model_copy(update={"stages": [StageConfig(name="investigate", orchestrate=True, agents=agents)]})


def state_file(scenario: Scenario) -> Path:
    """The file of the action calls that ran in a run of `scenario`, shared by its read and write servers. Keyed by
    the scenario's folder, not by the configuration directory, so the runner and workers started on another copy
    of the same configuration agree on it; the runner clears it before each run of the scenario and never runs
    two at once."""
    digest = hashlib.sha1(str(scenario.path).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / "tarsy-eval-actions" / f"{scenario.name}-{digest}.jsonl"


def action_chain(chain: ChainConfig, read: list[str], write: list[str]) -> ChainConfig:
    """`chain`'s investigation with the scenario's servers read-only, then an action stage: the `Remediator` with
    their write-mode twins."""
    stages = [stage.model_copy(update={"agents": [a.model_copy(update={"mcp_servers": read}) for a in stage.agents]})
              for stage in chain.stages]
    remediate = StageConfig(name="remediate", type="action", agents=[StageAgentConfig(name=ACTION_AGENT,
                                                                                      mcp_servers=write)])
    return chain.model_copy(update={"stages": [*stages, remediate]})


def _reference_script(scenario: Scenario, names: dict[str, str], write: dict[str, str]) -> Any:
    """The script with its tool names rewritten to this run's servers: the `Remediator`'s to the write twins."""
    script = scenario.reference
    if not write or not isinstance(script, dict):
        return rewrite_servers(script, names)
    return {key: rewrite_servers(turns, write if key == ACTION_AGENT else names) for key, turns in script.items()}


def _memory(remembering: bool, recall: bool) -> dict[str, bool] | None:
    """A run with memory fixtures never reflects (it must not learn from itself: runs stay deterministic) and
    injects memories only where `recall` (the reference chain of a scenario that declares them); other runs leave
    the chains' memory switches as configured."""
    return {"recall": recall, "reflect": False} if remembering else None


def _server(base: TarsyConfig, logical: str, scenario: Scenario, *, write: bool = False) -> dict[str, Any]:
    template = base.mcp_servers.get(logical) or (prometheus_server() if toolset(scenario.tools, logical) == "prometheus"
                                                 else base.mcp_servers[TEMPLATE_SERVER])
    data = template.model_dump(mode="json", exclude_none=True)
    data["transport"] = {
        "type": "stdio", "command": sys.executable, "timeout": template.transport.timeout,
        "args": ["-m", "evals.fixture_server", "--tools", str(scenario.tools_file), "--server", logical,
                 "--idle-exit", str(IDLE_EXIT_S)],
        "env": {"PYTHONPATH": str(REPO_ROOT)},
    }
    if scenario.acts:
        data["transport"]["args"] += ["--state", str(state_file(scenario)), *(["--write"] if write else [])]
    if write:
        data.update(actions=True, action_tools=list(ACTION_TOOLS))
    data.pop("dry_run", None)  # a fixture server has no dry-run mode: a preview would run the action
    return data


def _raw(path: Path) -> dict[str, Any]:
    """A base file as written ({{.VAR}} left for the loader, so no secret is copied into the run's files)."""
    if not path.exists():
        return {}
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else {}


def _base_files(base_dir: Path | None, directory: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    if base_dir is None:
        return {}, {}
    tarsy, providers = _raw(base_dir / TARSY_FILE), _raw(base_dir / PROVIDERS_FILE)
    for provider in (providers.get("llm_providers") or {}).values():
        script = provider.get("script_file") if isinstance(provider, dict) else None
        if script and not Path(script).is_absolute():
            provider["script_file"] = str((base_dir / script).resolve())
    if (base_dir / ".env").exists():
        shutil.copy2(base_dir / ".env", directory / ".env")
    return tarsy, providers


def write_run_config(directory: Path, scenarios: list[Scenario], *, provider: str = REFERENCE, concurrency: int = 4,
                     base_dir: str | Path | None = None) -> RunPlan:
    """Write tarsy.yaml, llm-providers.yaml and the reference scripts into `directory`; raise ScenarioError when a
    scenario cannot run on this configuration and ConfigError when the result is invalid."""
    base_path = Path(base_dir).resolve() if base_dir else None
    base = load_config(base_path)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "scripts").mkdir(exist_ok=True)
    tarsy, providers_file = _base_files(base_path, directory)
    servers = tarsy.setdefault("mcp_servers", {})
    chains = tarsy.setdefault("agent_chains", {})
    providers = providers_file.setdefault("llm_providers", {})
    if provider != REFERENCE and provider not in base.llm_providers:
        raise ScenarioError([f"--provider {provider}: unknown LLM provider (known: {REFERENCE}, "
                             f"{', '.join(sorted(base.llm_providers))})"])
    plans, problems = [], []
    remembering = any(s.memories for s in scenarios)
    for scenario in scenarios:
        alert_type = scenario.alert.alert_type or base.defaults.alert_type
        chain_id = base.chain_for_alert_type(alert_type)
        if chain_id is None:
            problems.append(f"{scenario.name}/alert.yaml: alert_type: no chain handles {alert_type!r} "
                            f"(known: {', '.join(sorted(base.alert_types()))})")
            continue
        names = {logical: runtime_server(logical, scenario.name) for logical in scenario.servers}
        write = {logical: runtime_server(logical + WRITE_SUFFIX, scenario.name)
                 for logical in (scenario.servers if scenario.acts else [])}
        for logical, runtime in names.items():
            servers[runtime] = _server(base, logical, scenario)
        for logical, runtime in write.items():
            servers[runtime] = _server(base, logical, scenario, write=True)
        chain = base.chain(chain_id)
        if scenario.alert.orchestrate:
            chain = orchestrated_chain(chain, scenario, names)
        if scenario.acts:
            chain = action_chain(chain, list(names.values()), list(write.values()))
        reference = REFERENCE_PREFIX + scenario.name
        script = directory / "scripts" / f"{scenario.name}.yaml"
        script.write_text(yaml.safe_dump(_reference_script(scenario, names, write), sort_keys=False,
                                         allow_unicode=True, width=1000))
        providers[reference] = {"type": "scripted", "script_file": f"scripts/{script.name}"}
        chains[reference] = bound_chain(chain, reference, [], memory=_memory(remembering, bool(scenario.memories)))
        submitted: str | None = reference if provider == REFERENCE else None
        own = ORCHESTRATED_PREFIX if scenario.alert.orchestrate else ACTION_PREFIX if scenario.acts else ""
        if own and provider != REFERENCE:
            submitted = own + scenario.name
            chains[submitted] = bound_chain(chain, provider, [], memory=_memory(remembering, False))
        plans.append(ScenarioPlan(scenario, alert_type, submitted, reference, names, write))
    if problems:
        raise ScenarioError(problems)
    if provider != REFERENCE:
        tarsy.setdefault("defaults", {})["llm_provider"] = provider
        for chain_id, chain in base.chains.items():
            if not chain_id.startswith(REFERENCE_PREFIX):
                chains[chain_id] = bound_chain(chain, provider, memory=_memory(remembering, False))
    tarsy.setdefault("queue", {})["max_concurrent_sessions"] = concurrency
    if remembering:
        tarsy.setdefault("memory", {})["enabled"] = True  # chains recall only where _memory says so
    if any(s.acts for s in scenarios):
        actions = tarsy.setdefault("actions", {})
        actions.update(ACTION_SETTINGS, approvers=[*actions.get("approvers", []), APPROVER])
        tarsy.setdefault("agents", {}).setdefault(ACTION_AGENT, REMEDIATOR)
    _dump(directory / TARSY_FILE, tarsy)
    _dump(directory / PROVIDERS_FILE, providers_file)
    load_config(directory)  # the run must not start on a configuration a worker would refuse
    return RunPlan(config_dir=directory.resolve(), provider=provider, plans=plans)


def _dump(path: Path, data: dict[str, Any]) -> None:
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=1000))
