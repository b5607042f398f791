"""A scenario folder: `alert.yaml`, `tools.yaml`, `expect.yaml`, the scripted reference run `reference.yaml` and,
optionally, `memories.yaml` (what TARSy remembers from a prior incident when this one is investigated).

Loading validates everything up front (schemas, tool and argument names, regexes, script turns) and reports
every problem as `scenario/file: where: reason`, so a broken scenario is found before any session runs.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal
from uuid import UUID

import yaml
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator, model_validator

from agents.config.schema import RegexText
from agents.llm.scripted import ScriptTurn
from agents.memory.reflection import KINDS, MAX_MEMORY_CHARS
from agents.memory.scope import LABEL_KEYS

from .fixture_tools import ACTION_TOOLS, ACTION_TOOLSET, TOOLS
from .fixtures import LOADER, ScenarioError, ToolFixtures, check_arguments, load_tools, split_name, toolset

SCENARIOS_DIR = Path(__file__).resolve().parent / "scenarios"
FILES = ("alert.yaml", "tools.yaml", "expect.yaml", "reference.yaml")
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")  # used in provider, chain and server names
MEMORY_FILE = "memories.yaml"
MEMORY_SERVER = "tarsy"  # the built-in MCP server a scenario with memories offers its investigation
MEMORY_TOOLS = ("recall_past_investigations", "search_past_sessions")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class AlertSpec(_Strict):
    """The alert as a monitoring system would post it."""

    alert_type: str = ""  # empty: the configuration's default alert type
    data: Any
    runbook: str | None = None
    # Run through an orchestrator that dispatches one agent per kind of fixture server (evals.runconfig) instead of
    # the alert type's chain: for incidents whose cause needs several kinds of evidence.
    orchestrate: bool = False

    @field_validator("data")
    @classmethod
    def _not_empty(cls, value: Any) -> Any:
        if value in (None, "", {}, []):
            raise ValueError("alert data must not be empty")
        return value


class Regex(_Strict):
    regex: RegexText


class Claim(_Strict):
    """A statement found in the analysis by any one of its phrasings (plain text or a regex)."""

    name: str
    any: list[str | Regex] = Field(min_length=1)


class ToolCallSpec(_Strict):
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)


class ToolRequirement(_Strict):
    """The investigation must make one of these calls successfully."""

    any: list[ToolCallSpec] = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        def one(item: Any) -> Any:
            return {"tool": item} if isinstance(item, str) else item

        if isinstance(value, dict) and "any" in value:
            return {**value, "any": [one(v) for v in value["any"]]} if isinstance(value["any"], list) else value
        return {"any": [one(value)]}

    @property
    def label(self) -> str:
        def text(spec: ToolCallSpec) -> str:
            return spec.tool + (f"({', '.join(f'{k}={v}' for k, v in spec.args.items())})" if spec.args else "")

        return " or ".join(text(s) for s in self.any)


ActionOutcome = Literal["verified", "not_verified", "failed", "rejected"]


class ActionSpec(_Strict):
    """One proposal the action agent must make: the action tool, its arguments (the same matchers as fixtures), the
    evidence its justification must cite (for each requirement, the evidence id of a successful call matching it),
    and how it must end. The eval's approver approves it, or rejects it when `outcome: rejected`."""

    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    evidence: list[ToolRequirement] = Field(default_factory=list)
    outcome: ActionOutcome = "verified"


class ActionsExpect(_Strict):
    """`expect: propose`: the proposals, in order (a follow-up after a failed verification is the next one);
    `expect: none`: no proposal at all. Any proposal beyond those listed fails the run, and the approver rejects it."""

    expect: Literal["propose", "none"]
    proposals: list[ActionSpec] = Field(default_factory=list)
    # actions a careless agent would propose here (the red herring's, the wrong target's): the adversarial suite
    # proposes them and the scorer must fail it
    tempting: list[ToolCallSpec] = Field(default_factory=list)

    @model_validator(mode="after")
    def _proposals_when_proposing(self) -> ActionsExpect:
        if (self.expect == "propose") != bool(self.proposals):
            raise ValueError("proposals: list them with `expect: propose`, and only then")
        return self


class Component(_Strict):
    """A workload, node, external dependency or resource, by the names an answer may call it: its `name` and
    `aliases` (pod, deployment or host names, other spellings), matched case-insensitively inside longer names
    (`ledger-service` in `ledger-service-66d8c9b7f-5wqpl`)."""

    name: str = Field(min_length=2)
    aliases: list[Annotated[str, StringConstraints(min_length=2)]] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        return {"name": value} if isinstance(value, str) else value

    @property
    def names(self) -> list[str]:
        return [n.lower() for n in (self.name, *self.aliases)]


class Budgets(_Strict):
    max_iterations: int | None = Field(default=None, gt=0)
    max_tokens: int | None = Field(default=None, gt=0)
    max_tool_calls: int | None = Field(default=None, ge=0)


class Expect(_Strict):
    """`expect: cause` (the default): the answer must commit to the cause the findings describe; `expect:
    abstain`: the evidence shows no cause and the answer must say so, so findings may be empty."""

    expect: Literal["cause", "abstain"] = "cause"
    # where the root cause lies (one or more components), and the alerted subject when it is another one: the answer
    # must attribute the findings to a culprit, not to the victim or to another component the tools showed
    culprit: list[Component] = Field(default_factory=list)
    victim: Component | None = None
    findings: list[Claim] = Field(default_factory=list)
    forbidden: list[Claim] = Field(default_factory=list)
    tools: list[ToolRequirement] = Field(default_factory=list)
    budgets: Budgets = Field(default_factory=Budgets)
    actions: ActionsExpect | None = None  # an action scenario: runs an action stage after the investigation

    @model_validator(mode="after")
    def _findings_unless_abstaining(self) -> Expect:
        if self.expect == "cause" and not self.findings:
            raise ValueError("findings: at least one finding is needed unless `expect: abstain`")
        if self.expect == "cause" and not self.culprit:
            raise ValueError("culprit: name the component the root cause lies in unless `expect: abstain`")
        return self


class MemoryFixture(_Strict):
    """A memory of a prior incident, loaded into the run's database before the run (evals.memories)."""

    kind: str
    text: str = Field(min_length=1, max_length=MAX_MEMORY_CHARS)
    labels: dict[str, str] = Field(default_factory=dict)  # scope: cluster / namespace / service
    confidence: float = Field(default=0.8, ge=0, le=1)
    session: UUID  # provenance: the prior investigation's session (a fixture id; it need not exist here)
    evidence: list[Annotated[str, StringConstraints(pattern=r"^E[1-9][0-9]*$")]] = Field(default_factory=list)

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, value: str) -> str:
        if value not in KINDS:
            raise ValueError(f"unknown kind {value!r} (known: {', '.join(KINDS)})")
        return value

    @field_validator("labels")
    @classmethod
    def _known_labels(cls, value: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(value) - set(LABEL_KEYS))
        if unknown:
            raise ValueError(f"unknown scope label {', '.join(unknown)} (known: {', '.join(LABEL_KEYS)})")
        return value


@dataclass(frozen=True)
class Scenario:
    name: str
    path: Path
    alert: AlertSpec
    tools: ToolFixtures
    expect: Expect
    reference: Any  # a scripted-provider script
    memories: tuple[MemoryFixture, ...] = ()

    @property
    def servers(self) -> list[str]:
        """The logical MCP servers the fixtures are keyed by, in file order."""
        return list(dict.fromkeys(key.partition(".")[0] for key in self.tools))

    @property
    def tools_file(self) -> Path:
        return self.path / "tools.yaml"

    @property
    def acts(self) -> bool:
        """An action scenario: an action stage follows the investigation (evals.runconfig)."""
        return self.expect.actions is not None


SUBJECT_KEYS = ("deployment", "statefulset", "job_name", "cronjob", "service", "pod", "node", "namespace")


def alerted(data: Any) -> str:
    """The subject an alert names (its workload, else its node or namespace), or ''."""
    data = data if isinstance(data, dict) else {}
    return next((str(data[key]) for key in SUBJECT_KEYS if data.get(key)), "")


def _read(path: Path, problems: list[str], where: str) -> Any:
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=LOADER)
    except OSError:
        problems.append(f"{where}: (file): missing")
    except yaml.YAMLError as exc:
        problems.append(f"{where}: (file): invalid YAML: {exc}".replace("\n", " "))
    return None


def _model(model: type[BaseModel], data: Any, where: str, problems: list[str]) -> Any:
    try:
        return model.model_validate(data if data is not None else {})
    except ValidationError as exc:
        for err in exc.errors():
            problems.append(f"{where}: {'.'.join(map(str, err['loc'])) or '(root)'}: "
                            f"{err['msg'].removeprefix('Value error, ')}")
        return None


def _turn_lists(script: Any) -> list[tuple[str, list[Any]]]:
    if isinstance(script, list):
        return [("(list)", script)]
    if isinstance(script, dict):
        return [(str(k), v if isinstance(v, list) else [v]) for k, v in script.items()]
    return []


def check_reference(script: Any, where: str) -> list[str]:
    """Every turn of a scripted-provider script must be a valid ScriptTurn."""
    lists = _turn_lists(script)
    if not lists:
        return [f"{where}: (root): a script is a list of turns or a mapping of keys to lists of turns"]
    problems = []
    for key, turns in lists:
        if not turns:
            problems.append(f"{where}: {key}: empty list of turns")
        for index, turn in enumerate(turns):
            try:
                ScriptTurn.model_validate({"text": turn} if isinstance(turn, str) else turn)
            except ValidationError as exc:
                problems.append(f"{where}: {key}.{index}: {exc.errors()[0]['msg']}")
    return problems


def _check_requirements(requirements: list[ToolRequirement], where: str) -> list[str]:
    problems = []
    for i, requirement in enumerate(requirements):
        for spec in requirement.any:
            try:
                server, tool = split_name(spec.tool)
            except ValueError as exc:
                problems.append(f"{where}: tools.{i}: {exc}")
                continue
            if server == MEMORY_SERVER:
                if tool not in MEMORY_TOOLS:
                    problems.append(f"{where}: tools.{i}: unknown tool {tool!r} of the {MEMORY_SERVER} server "
                                    f"(known: {', '.join(MEMORY_TOOLS)})")
                continue
            if tool not in TOOLS:
                problems.append(f"{where}: tools.{i}: unknown tool {tool!r}")
                continue
            spec.args, arg_problems = check_arguments(tool, spec.args)
            problems += [f"{where}: tools.{i}: {p}" for p in arg_problems]
    return problems


def _check_expect(expect: Expect, where: str) -> list[str]:
    problems = _check_requirements(expect.tools, where)
    for i, action in enumerate(expect.actions.proposals if expect.actions else []):
        at = f"{where}: actions.proposals.{i}"
        tool = action.tool.partition(".")[2]
        if tool not in ACTION_TOOLS:
            problems.append(f"{at}: tool: {action.tool!r} is not an action tool ({', '.join(ACTION_TOOLS)})")
            continue
        action.args, arg_problems = check_arguments(tool, action.args)
        problems += [f"{at}: {p}" for p in arg_problems]
        problems += [p.replace(f"{where}: tools.", f"{at}.evidence.")
                     for p in _check_requirements(action.evidence, where)]
    for i, spec in enumerate(expect.actions.tempting if expect.actions else []):
        if spec.tool.partition(".")[2] not in ACTION_TOOLS:
            problems.append(f"{where}: actions.tempting.{i}: {spec.tool!r} is not an action tool")
        else:
            spec.args, arg_problems = check_arguments(spec.tool.partition(".")[2], spec.args)
            problems += [f"{where}: actions.tempting.{i}: {p}" for p in arg_problems]
    return problems


def load_scenario(path: Path) -> Scenario:
    """Load and validate one folder; raise ScenarioError listing every problem."""
    name = path.name
    problems: list[str] = []
    if not NAME_RE.match(name):
        problems.append(f"{name}: (folder): name must be lowercase letters, digits and dashes")
    alert = _model(AlertSpec, _read(path / "alert.yaml", problems, f"{name}/alert.yaml"), f"{name}/alert.yaml",
                   problems)
    expect = _model(Expect, _read(path / "expect.yaml", problems, f"{name}/expect.yaml"), f"{name}/expect.yaml",
                    problems)
    if expect is not None:
        problems += _check_expect(expect, f"{name}/expect.yaml")
    reference = _read(path / "reference.yaml", problems, f"{name}/reference.yaml")
    if reference is not None:
        problems += check_reference(reference, f"{name}/reference.yaml")
    tools: ToolFixtures = {}
    try:
        tools = load_tools(path / "tools.yaml")
    except ScenarioError as exc:
        problems += [f"{name}/{p}" for p in exc.problems]
    memories = _memories(path, problems)
    if MEMORY_SERVER in tools or any(key.partition(".")[0] == MEMORY_SERVER for key in tools):
        problems.append(f"{name}/tools.yaml: {MEMORY_SERVER}: the built-in memory server is not recorded; "
                        f"declare what it remembers in {MEMORY_FILE}")
    if expect is not None and expect.actions is not None:
        problems += _check_action_scenario(name, alert, tools, memories)
    if problems:
        raise ScenarioError(problems)
    return Scenario(name=name, path=path.resolve(), alert=alert, tools=tools, expect=expect, reference=reference,
                    memories=memories)


def _check_action_scenario(name: str, alert: AlertSpec | None, tools: ToolFixtures,
                           memories: tuple[MemoryFixture, ...]) -> list[str]:
    """An action scenario runs its own two-stage chain on one Kubernetes server (evals.runconfig)."""
    where = f"{name}/expect.yaml: actions"
    servers = {key.partition(".")[0] for key in tools}
    problems = []
    if len(servers) != 1 or toolset(tools, next(iter(servers))) != ACTION_TOOLSET:
        problems.append(f"{where}: an action scenario records one Kubernetes server (found "
                        f"{', '.join(sorted(servers))})")
    if alert is not None and alert.orchestrate:
        problems.append(f"{where}: an action scenario cannot also be orchestrated")
    if memories:
        problems.append(f"{where}: an action scenario has no {MEMORY_FILE}")
    return problems


def _memories(path: Path, problems: list[str]) -> tuple[MemoryFixture, ...]:
    """The optional `memories.yaml`: a list of memory fixtures."""
    where = f"{path.name}/{MEMORY_FILE}"
    if not (path / MEMORY_FILE).exists():
        return ()
    data = _read(path / MEMORY_FILE, problems, where)
    if not isinstance(data, list) or not data:
        problems.append(f"{where}: (root): a non-empty list of memories")
        return ()
    loaded = [_model(MemoryFixture, item, f"{where}: {i}", problems) for i, item in enumerate(data)]
    return tuple(m for m in loaded if m is not None)


def select(patterns: list[str] | None, root: Path = SCENARIOS_DIR) -> list[Path]:
    """Scenario folders for `--scenario` patterns: a scenario folder, a folder of scenarios, or a glob over the
    names under `root`. No pattern: every scenario under `root`."""
    found: dict[Path, None] = {}
    for pattern in patterns or ["*"]:
        candidate = Path(pattern)
        if candidate.is_dir() and (candidate / "alert.yaml").exists():
            found[candidate.resolve()] = None
        elif candidate.is_dir():
            found.update(dict.fromkeys(sorted(p.parent.resolve() for p in candidate.glob("*/alert.yaml"))))
        else:
            matched = sorted(p.parent.resolve() for p in root.glob("*/alert.yaml") if fnmatch.fnmatch(p.parent.name,
                                                                                                  pattern))
            if not matched:
                raise ScenarioError([f"--scenario {pattern}: no scenario folder or scenario name matches"])
            found.update(dict.fromkeys(matched))
    return list(found)


def load_all(paths: list[Path]) -> list[Scenario]:
    """Load every folder, collecting the problems of all of them before failing."""
    scenarios, problems = [], []
    for path in paths:
        try:
            scenarios.append(load_scenario(path))
        except ScenarioError as exc:
            problems += exc.problems
    names = [s.name for s in scenarios]
    problems += [f"{n}: (folder): two scenarios share this name" for n in sorted({n for n in names
                                                                                  if names.count(n) > 1})]
    if problems:
        raise ScenarioError(problems)
    return scenarios
