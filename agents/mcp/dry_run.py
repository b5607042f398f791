"""Whether an action tool's configured dry run can be trusted to change nothing (README "Approved actions").

The MCP SDK passes arguments a tool's input schema does not declare straight to the server, and many servers
ignore unknown keys: a dry run asked for with a misnamed argument (`dry_run` where the tool's parameter is
`dryRun`) is the real change, made before anyone approved it. So a dry run runs only with an argument the tool's
schema declares, with a value its type admits; otherwise the tool has no dry run (`unsupported`) and is proposed
without one. Checked where a server's tools are listed (the MCP executor) and by `check_config`.
"""

from __future__ import annotations

from typing import Any

from agents.config.schema import DryRunConfig, MCPServerConfig
from agents.llm.types import ToolDefinition

_JSON_TYPES: dict[type, tuple[str, ...]] = {bool: ("boolean",), int: ("integer", "number"), str: ("string",)}


def dry_run_problem(how: DryRunConfig, definition: ToolDefinition) -> str | None:
    """Why `how` is no dry run of this tool (its argument undeclared, or its value of a type the parameter refuses);
    None when the schema declares it."""
    properties = (definition.parameters or {}).get("properties") or {}
    if how.argument not in properties:
        declared = ", ".join(sorted(properties)) or "none"
        return (f"dry_run argument {how.argument!r} is not a parameter of {definition.name} (its parameters: "
                f"{declared}); the server would ignore it and make the real change, so the tool has no dry run")
    if not _admits(properties[how.argument], how.value):
        return (f"dry_run value {how.value!r} is not accepted by the parameter {how.argument!r} of "
                f"{definition.name}; the tool has no dry run")
    return None


def dry_run_problems(server: str, cfg: MCPServerConfig, tools: list[ToolDefinition]) -> dict[str, str]:
    """Each configured dry run of this server's listed tools that cannot be trusted, by bare tool name, with why; a
    configured tool the server does not list is reported too."""
    listed = {t.name.split(".", 1)[1]: t for t in tools}
    problems: dict[str, str] = {}
    for tool, how in cfg.dry_run.items():
        definition = listed.get(tool)
        problem = (f"dry_run names {server}.{tool}, which the server does not list" if definition is None
                   else dry_run_problem(how, definition))
        if problem is not None:
            problems[tool] = problem
    return problems


def _admits(schema: Any, value: str | bool | int) -> bool:
    """A JSON-schema parameter would accept the value: its `type`, `enum`/`const`, or any branch of anyOf/oneOf.
    A parameter without type information admits anything."""
    if not isinstance(schema, dict):
        return True
    branches = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(branches, list) and branches:
        return any(_admits(branch, value) for branch in branches)
    if "const" in schema and schema["const"] != value:
        return False
    if isinstance(schema.get("enum"), list) and value not in schema["enum"]:
        return False
    declared = schema.get("type")
    if declared is None:
        return True
    types = declared if isinstance(declared, list) else [declared]
    return any(t in types for t in _JSON_TYPES[type(value)])
