"""Skills: operator-written know-how in `skills/<folder>/SKILL.md` of the configuration directory.

A SKILL.md opens with a YAML front matter block (`---` lines) holding `name` and `description`; the Markdown after
it is the body. An agent gets the bodies of its `required_skills` in its system prompt and may load any other skill
of its catalog (`skills`) with `tarsy.load_skill` (agents.mcp.skill_tool). Bodies are operator text, not outside
text, yet every required one travels in every request, so their size is bounded here, at load time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

SKILLS_DIR = "skills"
SKILL_FILE = "SKILL.md"
MAX_BODY_CHARS = 20_000  # a required skill is in every request of its agents: a few pages of steps, not a manual
MAX_DESCRIPTION_CHARS = 500  # each loadable skill's description is in every request's catalog
NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")  # lowercase words joined by hyphens, as Agent Skills names are
MAX_NAME_CHARS = 64
LOAD_SKILL_TOOL = "tarsy.load_skill"  # the built-in `tarsy` server's tool; native APIs get it as tarsy__load_skill
_FRONT_MATTER_RE = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*(?:\r?\n|\Z)", re.DOTALL | re.MULTILINE)


@dataclass(frozen=True)
class Skill:
    """One skill of the catalog; `source` is its file relative to the configuration directory (for messages)."""

    name: str
    description: str
    body: str
    source: str


def load_skills(config_dir: Path, problems: list[str]) -> dict[str, Skill]:
    """The catalog of `config_dir/skills` by name (empty when the folder is absent); every faulty file is a
    problem naming it."""
    root = config_dir / SKILLS_DIR
    if not root.is_dir():
        return {}
    skills: dict[str, Skill] = {}
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        skill = parse_skill_file(folder / SKILL_FILE, f"{SKILLS_DIR}/{folder.name}/{SKILL_FILE}", problems)
        if skill is None:
            continue
        if skill.name in skills:
            problems.append(f"{skill.source}: name: skill {skill.name!r} is already defined by "
                            f"{skills[skill.name].source}")
            continue
        skills[skill.name] = skill
    return skills


def parse_skill_file(path: Path, source: str, problems: list[str]) -> Skill | None:
    """The skill in `path`, or None with its problems recorded as `source: key: reason`."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        problems.append(f"{source}: (file): missing: each folder of {SKILLS_DIR}/ holds one skill in {SKILL_FILE}")
        return None
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(f"{source}: (file): cannot read: {exc}")
        return None
    return parse_skill(text, source, problems)


def parse_skill(text: str, source: str, problems: list[str]) -> Skill | None:
    """Split the front matter from the body and check both."""
    text = text.removeprefix("\ufeff")
    match = _FRONT_MATTER_RE.match(text)
    if match is None:
        problems.append(f"{source}: (front matter): missing: the file must start with a `---` line, then `name:` "
                        "and `description:`, then a closing `---` line")
        return None
    try:
        meta = yaml.safe_load(match.group(1))
    except yaml.YAMLError as exc:
        problems.append(f"{source}: (front matter): invalid YAML: {exc}".replace("\n", " "))
        return None
    if not isinstance(meta, dict):
        problems.append(f"{source}: (front matter): expected `name:` and `description:` entries")
        return None
    before = len(problems)
    name = _text_field(meta, "name", source, problems)
    description = _text_field(meta, "description", source, problems)
    body = text[match.end():].strip()
    if name and (len(name) > MAX_NAME_CHARS or not NAME_RE.match(name)):
        problems.append(f"{source}: name: invalid skill name {name!r}: lowercase letters and digits in words joined "
                        f"by hyphens, at most {MAX_NAME_CHARS} characters (e.g. kubernetes-crashloop)")
    if len(description) > MAX_DESCRIPTION_CHARS:
        problems.append(f"{source}: description: {len(description)} characters, over the limit of "
                        f"{MAX_DESCRIPTION_CHARS}")
    if not body:
        problems.append(f"{source}: (body): empty: the Markdown after the front matter is what the agent reads")
    elif len(body) > MAX_BODY_CHARS:
        problems.append(f"{source}: (body): {len(body)} characters, over the limit of {MAX_BODY_CHARS}: split the "
                        "skill or shorten it")
    if len(problems) > before:
        return None
    return Skill(name=name, description=description, body=body, source=source)


def _text_field(meta: dict, key: str, source: str, problems: list[str]) -> str:
    value = meta.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        problems.append(f"{source}: {key}: required")
        return ""
    if not isinstance(value, str):
        problems.append(f"{source}: {key}: expected text, got {type(value).__name__}")
        return ""
    return " ".join(value.split()) if key == "description" else value.strip()
