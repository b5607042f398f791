"""Recorded tool outputs (`tools.yaml`) and how a tool call is matched to one.

The fixture server answers calls with them and the scorer checks required tool calls with the same matcher,
so "this call matches" means one thing everywhere. Tools and their parameters are those of the real MCP servers
(`fixture_tools`: Kubernetes and Prometheus); arguments are compared after the tool's defaults are filled in, as
the server sees them.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError, model_validator

from .fixture_tools import ACTION_TOOLS, TOOLS, TOOLSET_OF

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: scenario files are large

GAP_MARKER = "[fixture gap]"  # in the error text of an unmatched call; the scorer finds gaps by it


class ScenarioError(ValueError):
    """A scenario file is invalid; `problems` holds one `file: where: reason` line each."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))


@cache
def parameters(tool: str) -> dict[str, inspect.Parameter]:
    """The parameters of a known tool, with evaluated annotations; {} for a tool we do not know."""
    fn: Callable[..., str] | None = TOOLS.get(tool)
    return dict(inspect.signature(fn, eval_str=True).parameters) if fn else {}


def with_defaults(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments as the server sees them: every parameter left out takes its default."""
    filled = {name: p.default for name, p in parameters(tool).items() if p.default is not inspect.Parameter.empty}
    return {**filled, **arguments}


def split_name(name: str) -> tuple[str, str]:
    server, dot, tool = name.partition(".")
    if not dot or not server or not tool:
        raise ValueError(f"{name!r} is not a `server.tool` name")
    return server, tool


# ---- argument matchers ----------------------------------------------------------------------------


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def value_matches(spec: Any, actual: Any) -> bool:
    """A literal is compared for equality; `{regex: ...}` must match the whole value (non-strings as JSON)."""
    if isinstance(spec, dict) and set(spec) == {"regex"}:
        return re.fullmatch(spec["regex"], _as_text(actual), re.S) is not None
    return spec == actual


def arguments_match(tool: str, spec: dict[str, Any], arguments: dict[str, Any], *, exact: bool = False) -> bool:
    """Every argument in `spec` matches; with `exact`, no other argument differs from the tool's default."""
    actual = with_defaults(tool, arguments)
    if not all(name in actual and value_matches(value, actual[name]) for name, value in spec.items()):
        return False
    if not exact:
        return True
    defaults = with_defaults(tool, {})
    return all(name in spec or defaults.get(name, _MISSING) == value for name, value in actual.items())


_MISSING = object()


def check_arguments(tool: str, spec: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Validate a spec against the tool's parameters: known names, compiling regexes, literals of the right
    type (coerced, so `tail: "50"` means 50). Returns the coerced spec and the problems."""
    params = parameters(tool)
    coerced: dict[str, Any] = {}
    problems: list[str] = []
    for name, value in spec.items():
        if params and name not in params:
            problems.append(f"unknown argument {name!r} of {tool} (known: {', '.join(params)})")
            continue
        if isinstance(value, dict) and set(value) == {"regex"}:
            try:
                re.compile(str(value["regex"]))
            except re.error as exc:
                problems.append(f"argument {name!r}: invalid regex: {exc}")
            coerced[name] = {"regex": str(value["regex"])}
            continue
        annotation = params[name].annotation if name in params else Any
        try:
            coerced[name] = TypeAdapter(annotation).validate_python(value) if annotation is not Any else value
        except ValidationError as exc:
            problems.append(f"argument {name!r}: {exc.errors()[0]['msg']}")
    return coerced, problems


# ---- tools.yaml ---------------------------------------------------------------------------------


class AfterAction(BaseModel):
    """The action call (an action tool of the same server, its arguments matched as a subset) after which a
    fixture holds: the state the cluster shows once that action ran."""

    model_config = ConfigDict(extra="forbid")

    tool: str
    args: dict[str, Any] = {}


class Fixture(BaseModel):
    """One recorded output: the arguments it answers and what the tool returned (`result`) or failed with;
    with `after_action`, only once that action ran in this run (list such variants before the plain one)."""

    model_config = ConfigDict(extra="forbid")

    args: dict[str, Any] = {}
    after_action: AfterAction | None = None
    match: Literal["subset", "exact"] = "subset"
    result: str | None = None
    error: str | None = None

    @model_validator(mode="after")
    def _one_outcome(self) -> Fixture:
        if (self.result is None) == (self.error is None):
            raise ValueError("give exactly one of `result` (the output) or `error` (the tool's error message)")
        return self


ToolFixtures = dict[str, list[Fixture]]  # `server.tool` → fixtures, in file order


def parse_tools(data: Any, filename: str = "tools.yaml") -> ToolFixtures:
    """Validate the mapping of `server.tool` to a list of fixtures; raise ScenarioError with every problem."""
    if not isinstance(data, dict) or not data:
        raise ScenarioError([f"{filename}: (root): expected a mapping of `server.tool` to lists of fixtures"])
    fixtures: ToolFixtures = {}
    problems: list[str] = []
    for key, entries in data.items():
        try:
            _, tool = split_name(str(key))
        except ValueError as exc:
            problems.append(f"{filename}: {key}: {exc}")
            continue
        if tool not in TOOLS:
            problems.append(f"{filename}: {key}: unknown tool {tool!r} (the fixture servers offer "
                            f"{', '.join(TOOLS)})")
            continue
        if not isinstance(entries, list):  # an empty list declares the server: every call to it is a gap
            problems.append(f"{filename}: {key}: expected a list of fixtures")
            continue
        fixtures[key] = []
        for index, entry in enumerate(entries):
            where = f"{filename}: {key}.{index}"
            try:
                fixture = Fixture.model_validate(entry)
            except ValidationError as exc:
                problems += [f"{where}: {'.'.join(map(str, e['loc'])) or '(fixture)'}: {e['msg']}"
                             for e in exc.errors()]
                continue
            args, arg_problems = check_arguments(tool, fixture.args)
            problems += [f"{where}: {p}" for p in arg_problems]
            after, after_problems = _after_action(fixture.after_action, str(key))
            problems += [f"{where}: after_action: {p}" for p in after_problems]
            fixtures[key].append(fixture.model_copy(update={"args": args, "after_action": after}))
    problems += _mixed_servers(fixtures, filename)
    if problems:
        raise ScenarioError(problems)
    return fixtures


def _after_action(after: AfterAction | None, key: str) -> tuple[AfterAction | None, list[str]]:
    """An action tool of the fixture's own server, with arguments its schema knows."""
    if after is None:
        return None, []
    server, _, tool = after.tool.partition(".")
    if server != key.partition(".")[0] or tool not in ACTION_TOOLS:
        return after, [f"{after.tool!r} is not an action tool of {key.partition('.')[0]} "
                       f"({', '.join(ACTION_TOOLS)})"]
    args, problems = check_arguments(tool, after.args)
    return after.model_copy(update={"args": args}), problems


def _mixed_servers(fixtures: ToolFixtures, filename: str) -> list[str]:
    """One server offers one tool set: a server keyed with Kubernetes and Prometheus tools is a typo."""
    kinds: dict[str, set[str]] = {}
    for key in fixtures:
        server, _, tool = key.partition(".")
        kinds.setdefault(server, set()).add(TOOLSET_OF[tool])
    return [f"{filename}: {server}: mixes the tools of {' and '.join(sorted(k))} servers; give each its own name"
            for server, k in kinds.items() if len(k) > 1]


def toolset(fixtures: ToolFixtures, server: str) -> str:
    """The kind of server `server` records (its tools'); Kubernetes when the file declares none of its tools."""
    kinds = {TOOLSET_OF[key.partition(".")[2]] for key in fixtures if key.partition(".")[0] == server}
    return kinds.pop() if len(kinds) == 1 else "kubernetes"


def load_tools(path: Path) -> ToolFixtures:
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=LOADER)
    except (OSError, yaml.YAMLError) as exc:
        raise ScenarioError([f"{path.name}: (file): {exc}".replace("\n", " ")]) from exc
    return parse_tools(data, path.name)


ActionCall = tuple[str, dict[str, Any]]  # an action tool call that ran: `server.tool`, its arguments


def find_fixture(fixtures: ToolFixtures, name: str, arguments: dict[str, Any],
                 actions: list[ActionCall] | None = None) -> Fixture | None:
    """The first fixture of `server.tool` (file order) whose arguments match the call, and whose `after_action`,
    if any, is among the `actions` that ran."""
    tool = name.partition(".")[2]
    for fixture in fixtures.get(name, []):
        if fixture.after_action is not None and not any(
                done == fixture.after_action.tool and arguments_match(done.partition(".")[2], fixture.after_action.args,
                                                                      args)
                for done, args in actions or []):
            continue
        if arguments_match(tool, fixture.args, arguments, exact=fixture.match == "exact"):
            return fixture
    return None


# ---- the actions that ran in a run (the fixture servers' shared state) ---------------------------------


def actions_read(path: Path | None) -> list[ActionCall]:
    """The action calls recorded in a state file (JSON lines), oldest first; none when there is no file."""
    if path is None or not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    return [(entry["tool"], entry["arguments"]) for entry in map(json.loads, filter(None, lines))]


def action_record(path: Path, name: str, arguments: dict[str, Any]) -> None:
    """Append an action call that ran; a read after it (by any fixture server of the run) sees the new state."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps({"tool": name, "arguments": arguments}) + "\n")


def gap_message(name: str, arguments: dict[str, Any]) -> str:
    tool = name.partition(".")[2]
    defaults = with_defaults(tool, {})
    given = {k: v for k, v in arguments.items() if defaults.get(k, _MISSING) != v}
    return f"{GAP_MARKER} no recorded output of {name} matches the arguments {json.dumps(given, sort_keys=True)}"
