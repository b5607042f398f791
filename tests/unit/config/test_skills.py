"""Skills: SKILL.md parsing, the catalog's validation messages, which skills an agent gets, and its prompt."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from agents.config import ConfigError, load_config
from agents.config.skills import MAX_BODY_CHARS, MAX_DESCRIPTION_CHARS, parse_skill
from agents.context import resolve_agent
from agents.prompts.builder import build_react_messages, build_synthesis_messages

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "deploy" / "config"
CRASHLOOP = "---\nname: crashloop\ndescription: Pods that restart.\n---\n\n# Crash loops\n\nRead the previous logs.\n"


def _skill(directory: Path, folder: str, text: str) -> None:
    (directory / "skills" / folder).mkdir(parents=True, exist_ok=True)
    (directory / "skills" / folder / "SKILL.md").write_text(text)


def _config_dir(tmp_path: Path, agents: dict | None = None, skills: dict[str, str] | None = None) -> Path:
    (tmp_path / "tarsy.yaml").write_text(yaml.safe_dump({"agents": agents or {}}))
    for folder, text in (skills or {}).items():
        _skill(tmp_path, folder, text)
    return tmp_path


def _problems(directory: Path) -> list[str]:
    with pytest.raises(ConfigError) as err:
        load_config(directory, env={})
    return err.value.problems


def test_a_skill_file_is_front_matter_then_markdown_body():
    problems: list[str] = []
    skill = parse_skill("\ufeff---\nname: crashloop\ndescription: >\n  Pods that\n  restart.\nlicense: x\n---\n"
                        "# Crash loops\n\n```\n---\n```\n", "skills/a/SKILL.md", problems)
    assert problems == []
    assert (skill.name, skill.description, skill.source) == ("crashloop", "Pods that restart.", "skills/a/SKILL.md")
    assert skill.body == "# Crash loops\n\n```\n---\n```"


@pytest.mark.parametrize("text,problem", [
    ("# no front matter\n", "skills/a/SKILL.md: (front matter): missing: the file must start with a `---` line"),
    ("---\nname: x\ndescription: y\n", "skills/a/SKILL.md: (front matter): missing"),
    ("---\nname: [unclosed\n---\nbody\n", "skills/a/SKILL.md: (front matter): invalid YAML:"),
    ("---\n- a list\n---\nbody\n", "skills/a/SKILL.md: (front matter): expected `name:` and `description:`"),
    ("---\ndescription: y\n---\nbody\n", "skills/a/SKILL.md: name: required"),
    ("---\nname: x\n---\nbody\n", "skills/a/SKILL.md: description: required"),
    ("---\nname: x\ndescription: 3\n---\nbody\n", "skills/a/SKILL.md: description: expected text, got int"),
    ("---\nname: Crash Loop\ndescription: y\n---\nbody\n", "skills/a/SKILL.md: name: invalid skill name 'Crash Loop'"),
    ("---\nname: x\ndescription: y\n---\n\n", "skills/a/SKILL.md: (body): empty"),
    (f"---\nname: x\ndescription: y\n---\n{'a' * (MAX_BODY_CHARS + 1)}",
     f"skills/a/SKILL.md: (body): {MAX_BODY_CHARS + 1} characters, over the limit of {MAX_BODY_CHARS}"),
    (f"---\nname: x\ndescription: {'d' * (MAX_DESCRIPTION_CHARS + 1)}\n---\nbody",
     f"skills/a/SKILL.md: description: {MAX_DESCRIPTION_CHARS + 1} characters, over the limit"),
])
def test_a_faulty_skill_file_is_reported_by_file_and_key(text, problem):
    problems: list[str] = []
    assert parse_skill(text, "skills/a/SKILL.md", problems) is None
    assert any(p.startswith(problem) for p in problems), problems


def test_catalog_problems_name_each_file_and_come_with_the_other_config_problems(tmp_path):
    directory = _config_dir(tmp_path, agents={"A": {"required_skills": ["ghost"], "skills": ["crashloop", "nope"],
                                                    "max_iterations": 0}},
                            skills={"one": CRASHLOOP, "two": CRASHLOOP, "empty": "---\nname: e\n---\n"})
    (tmp_path / "skills" / "no-file").mkdir()
    problems = _problems(directory)
    assert "skills/two/SKILL.md: name: skill 'crashloop' is already defined by skills/one/SKILL.md" in problems
    assert "skills/empty/SKILL.md: description: required" in problems
    assert any(p.startswith("skills/no-file/SKILL.md: (file): missing") for p in problems)
    assert "tarsy.yaml: agents.A.required_skills.0: unknown skill 'ghost' (known: crashloop)" in problems
    assert "tarsy.yaml: agents.A.skills.1: unknown skill 'nope' (known: crashloop)" in problems
    assert any(p.startswith("tarsy.yaml: agents.A.max_iterations:") for p in problems)


def test_check_config_names_the_faulty_skill_file(tmp_path):
    directory = _config_dir(tmp_path, skills={"broken": "name: x\n"})
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "TARSY_CONFIG_DIR")}
    result = subprocess.run([sys.executable, "manage.py", "check_config", "--config-dir", str(directory)],
                            cwd=ROOT, capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode == 1
    assert "skills/broken/SKILL.md: (front matter): missing" in result.stderr, result.stderr


SKILLS = {
    "a": "---\nname: alpha\ndescription: First.\n---\nAlpha steps.\n",
    "b": "---\nname: beta\ndescription: Second.\n---\nBeta steps.\n",
    "c": "---\nname: gamma\ndescription: Third.\n---\nGamma steps.\n",
}


@pytest.mark.parametrize("agent,required,loadable", [
    ({}, [], ["alpha", "beta", "gamma"]),  # default: the whole catalog, on demand
    ({"skills": "all", "required_skills": ["beta"]}, ["beta"], ["alpha", "gamma"]),
    ({"skills": ["gamma", "alpha"]}, [], ["gamma", "alpha"]),
    ({"skills": [], "required_skills": ["alpha"]}, ["alpha"], []),
])
def test_an_agent_gets_its_required_skills_and_may_load_the_rest_of_its_catalog(tmp_path, agent, required, loadable):
    config = load_config(_config_dir(tmp_path, agents={"A": agent}, skills=SKILLS), env={})
    resolved = resolve_agent(config, agent_name="A")
    assert [s.name for s in resolved.required_skills] == required
    assert [s.name for s in resolved.loadable_skills] == loadable


def test_required_bodies_and_the_catalog_are_in_the_system_prompt(tmp_path):
    config = load_config(_config_dir(tmp_path, agents={"A": {"required_skills": ["alpha"],
                                                             "custom_instructions": "Be brief."}},
                                     skills=SKILLS), env={})
    system = build_react_messages(config=resolve_agent(config, agent_name="A"), tools=[], alert_type="t",
                                  alert_data="d", runbook="", previous_stage_context="")[0].content
    assert "## Skills\n" in system and "## Skill: alpha\n" in system and "```text\nAlpha steps.\n```" in system
    assert system.index("Be brief.") < system.index("## Skill: alpha")
    assert "## Skills you can load" in system
    assert "- beta: Second.\n- gamma: Third." in system and "Beta steps." not in system
    assert "- alpha:" not in system


def test_without_skills_the_prompt_has_no_skill_section(tmp_path):
    config = load_config(_config_dir(tmp_path, agents={"A": {}}), env={})
    system = build_react_messages(config=resolve_agent(config, agent_name="A"), tools=[], alert_type="t",
                                  alert_data="d", runbook="", previous_stage_context="")[0].content
    assert "Skill" not in system


def test_a_synthesis_agent_keeps_its_required_skills_but_has_nothing_to_load(tmp_path):
    config = load_config(_config_dir(tmp_path, agents={"S": {"iteration_strategy": "synthesis",
                                                             "required_skills": ["alpha"]}}, skills=SKILLS), env={})
    resolved = resolve_agent(config, agent_name="S")
    system = build_synthesis_messages(config=resolved, alert_type="t", alert_data="d", runbook="",
                                      parallel_results="r")[0].content
    assert resolved.loadable_skills == () and "Alpha steps." in system and "Skills you can load" not in system


def test_the_shipped_example_agent_requires_a_shipped_skill():
    config = load_config(EXAMPLES, env={"GOOGLE_API_KEY": "x"}, allow_examples=True)
    assert {"kubernetes-crashloop", "postgres-lock-contention"} <= set(config.skills)
    resolved = resolve_agent(config, agent_name="KubernetesAgent")
    assert [s.name for s in resolved.required_skills] == ["kubernetes-crashloop"]
    assert "postgres-lock-contention" in [s.name for s in resolved.loadable_skills]
