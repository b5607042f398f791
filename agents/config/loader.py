"""Load, interpolate, validate and cross-check the configuration directory.

Every problem is reported as `file: key.path: reason`, all at once, so an
operator fixes a broken deployment in one pass.
"""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path
from typing import Any

import yaml
from dotenv import dotenv_values
from pydantic import BaseModel, ValidationError

from . import builtins
from .registry import TarsyConfig
from .schema import LLMProvidersFile, TarsyFile
from .skills import load_skills

TARSY_FILE = "tarsy.yaml"
PROVIDERS_FILE = "llm-providers.yaml"
_VAR_RE = re.compile(r"\{\{\s*\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


class ConfigError(Exception):
    """Invalid configuration; `problems` holds one `file: key.path: reason` line each."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("invalid configuration:\n" + "\n".join(f"  {p}" for p in problems))


def interpolate(text: str, env: dict[str, str], filename: str, problems: list[str]) -> str:
    """Replace `{{.VAR}}` from the environment; an unset variable is a problem, not an empty string."""

    lines = text.split("\n")
    for number, line in enumerate(lines, start=1):
        if line.lstrip().startswith("#"):
            continue  # comments may show {{.VAR}} examples

        def _sub(match: re.Match[str], number: int = number) -> str:
            name = match.group(1)
            if name not in env:
                problems.append(f"{filename}: line {number}: environment variable {name} is not set")
                return ""
            return env[name]

        lines[number - 1] = _VAR_RE.sub(_sub, line)
    return "\n".join(lines)


def _load_yaml(path: Path, env: dict[str, str], problems: list[str]) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as exc:
        problems.append(f"{path.name}: (file): cannot read: {exc}")
        return {}
    text = interpolate(raw, env, path.name, problems)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        problems.append(f"{path.name}: (file): invalid YAML: {exc}".replace("\n", " "))
        return {}
    if data is None:
        return {}
    if not isinstance(data, dict):
        problems.append(f"{path.name}: (root): expected a mapping, got {type(data).__name__}")
        return {}
    return data


PRUNE_ROUNDS = 10  # each round sets aside what the last one found wrong; a file needs few


def _validate(model: type[BaseModel], data: dict[str, Any], filename: str, problems: list[str]) -> Any:
    """The file's model. With problems, they are recorded and the model is built from what remains once the
    faulty keys are set aside (None when nothing does), so references are checked in the same pass: an unknown
    provider name is reported together with a bad duration, not after it is fixed."""
    remaining = copy.deepcopy(data)
    for round_ in range(PRUNE_ROUNDS):
        try:
            return model.model_validate(remaining)
        except ValidationError as exc:
            errors = exc.errors()
            if round_ == 0:
                problems.extend(f"{filename}: {'.'.join(str(p) for p in err['loc']) or '(root)'}: {_plain(err)}"
                                for err in errors)
            if not all(_set_aside(remaining, list(err["loc"])) for err in errors):
                return None
    return None


_KINDS = {str: "text", int: "a number", float: "a number", bool: "true/false", list: "a list", type(None): "nothing"}


def _plain(err: Any) -> str:
    """Pydantic's message, or a plain one where it speaks of Python types."""
    if err["type"] in ("model_type", "model_attributes_type", "dict_type"):
        return f"expected a mapping of `key: value` entries, got {_KINDS.get(type(err['input']), 'something else')}"
    return err["msg"].removeprefix("Value error, ")


def _set_aside(data: Any, loc: list[Any]) -> bool:
    """Remove the value at `loc` (or, for a missing key, the entry that lacks it); False when nothing is left to
    remove there."""
    parents: list[tuple[Any, Any]] = []
    node = data
    for part in loc:
        if isinstance(node, dict) and part in node or isinstance(node, list) and isinstance(part, int) \
                and 0 <= part < len(node):
            parents.append((node, part))
            node = node[part]
        else:
            break
    else:
        container, key = parents[-1] if parents else (None, None)
        if container is None:
            return False
        del container[key]
        return True
    if not parents:
        return False
    container, key = parents[-1]  # `loc` goes on past what exists: the entry lacks a required key
    del container[key]
    return True


def _pick(directory: Path, name: str, allow_examples: bool) -> Path:
    path = directory / name
    example = directory / f"{name}.example"
    return example if allow_examples and not path.exists() and example.exists() else path


def load_config(config_dir: str | os.PathLike[str] | None = None, env: dict[str, str] | None = None, *,
                allow_examples: bool = False) -> TarsyConfig:
    """Build the effective configuration: built-ins replaced by what the directory's files define.

    `allow_examples` (check_config only) reads `X.example` where `X` is missing, so the shipped examples
    can be validated in place."""
    env = dict(os.environ if env is None else env)
    problems: list[str] = []
    directory = Path(config_dir) if config_dir else None
    if directory is not None:
        if not directory.is_dir():
            raise ConfigError([f"{directory}: (dir): configuration directory does not exist"])
        dotenv = _pick(directory, ".env", allow_examples)
        if dotenv.exists():
            for key, value in dotenv_values(dotenv).items():
                if value is not None:
                    env.setdefault(key, value)
    tarsy_path = _pick(directory, TARSY_FILE, allow_examples) if directory else Path(TARSY_FILE)
    providers_path = _pick(directory, PROVIDERS_FILE, allow_examples) if directory else Path(PROVIDERS_FILE)
    tarsy_data = _load_yaml(tarsy_path, env, problems) if directory else {}
    providers_data = _load_yaml(providers_path, env, problems) if directory else {}
    skills = load_skills(directory, problems) if directory else {}
    tarsy_file = _validate(TarsyFile, tarsy_data, tarsy_path.name, problems)
    providers_file = _validate(LLMProvidersFile, providers_data, providers_path.name, problems)
    if tarsy_file is None or providers_file is None:
        raise ConfigError(problems)

    providers = builtins.builtin_providers() | providers_file.llm_providers
    for name, provider in providers.items():
        if provider.script_file and directory and not Path(provider.script_file).is_absolute():
            resolved = (directory / provider.script_file).resolve()
            if not resolved.is_file():
                problems.append(f"{providers_path.name}: llm_providers.{name}.script_file: file not found: {resolved}")
            providers[name] = provider.model_copy(update={"script_file": str(resolved)})
    config = TarsyConfig(
        defaults=tarsy_file.defaults,
        queue=tarsy_file.queue,
        system=tarsy_file.system,
        llm_providers=providers,
        mcp_servers=builtins.builtin_mcp_servers(env) | tarsy_file.mcp_servers,
        agents=builtins.builtin_agents(env) | tarsy_file.agents,
        chains=builtins.builtin_chains() | tarsy_file.agent_chains,
        default_provider=tarsy_file.defaults.llm_provider or builtins.default_provider_name(env),
        intake=tarsy_file.intake,
        config_dir=str(directory.resolve()) if directory else "",
        skills=skills,
        scoring=tarsy_file.scoring,
        memory=tarsy_file.memory,
        actions=tarsy_file.actions,
        privacy=tarsy_file.privacy,
        slack=tarsy_file.slack,
        checks=tarsy_file.checks,
        file_names={"tarsy": tarsy_path.name, "providers": providers_path.name},
        user_defined={
            "llm_providers": set(providers_file.llm_providers),
            "mcp_servers": set(tarsy_file.mcp_servers),
            "agents": set(tarsy_file.agents),
            "agent_chains": set(tarsy_file.agent_chains),
        },
    )
    problems.extend(p for p in config.cross_reference_problems() if p not in problems)
    if problems:
        raise ConfigError(problems)
    return config
