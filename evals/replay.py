"""Exact replay: run a finished investigation again from its recordings and compare the timelines.

The session is captured as a scenario (its LLM answers become the reference script, its tool outputs the
fixtures) and run as a new session through the normal pipeline; then the two timelines are compared event
by event, per stage and agent: type, status, content, and the metadata that says what was called with which
arguments. A difference means a change to prompts, parser, controllers or tools handling altered what a past
investigation would do. Chat stages are follow-ups, not the investigation, and are left out.
"""

from __future__ import annotations

import json
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.config import load_config
from tarsy.config import set_config
from tarsy.errors import Conflict
from tarsy.models import AlertSession, TimelineEvent

from .capture import export_session, finished_session
from .runconfig import RunPlan, write_run_config
from .runner import in_process_worker, run
from .scenario import load_scenario

COMPARED_METADATA = ("tool_name", "server_name", "server", "tool", "arguments", "source", "is_error", "summarized",
                     "error_kind", "tool_call_id")
SHOWN_CHARS = 160


@dataclass
class Comparison:
    original: str
    replay: str
    events: int = 0
    differences: list[str] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return not self.differences


def _rename(value: Any, names: dict[str, str]) -> Any:
    """The replay ran on servers of its own: write their names as the original's."""
    text = json.dumps(value, ensure_ascii=False)
    for runtime, logical in names.items():
        text = text.replace(runtime, logical)
    return json.loads(text)


def _view(event: TimelineEvent) -> dict[str, Any]:
    return {"type": event.event_type, "status": event.status, "content": event.content,
            "metadata": {k: event.metadata[k] for k in COMPARED_METADATA if k in (event.metadata or {})}}


def timeline(session_id: Any, names: dict[str, str] | None = None) -> dict[str, list[dict[str, Any]]]:
    """Events grouped by `stage #i name / agent` (session-level events under `session`), in sequence order."""
    groups: dict[str, list[dict[str, Any]]] = {}
    events = (TimelineEvent.objects.filter(session_id=session_id).exclude(stage__kind="chat")
              .select_related("stage", "execution").order_by("stage__index", "execution__agent_index",
                                                              "sequence_number", "id"))
    for event in events:
        key = (f"stage #{event.stage.index} {event.stage.name} / {event.execution.agent_name}"
               if event.execution is not None and event.stage is not None else "session")
        groups.setdefault(key, []).append(_view(event))
    return _rename(groups, names or {})


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _around(a: Any, b: Any) -> tuple[str, str]:
    """Both values shown from a little before their first difference, so a long output shows what changed."""
    x, y = _text(a), _text(b)
    start = next((i for i, (p, q) in enumerate(zip(x, y, strict=False)) if p != q), min(len(x), len(y)))
    start = max(0, start - SHOWN_CHARS // 4)

    def cut(text: str) -> str:
        piece = text[start:start + SHOWN_CHARS]
        return repr(("…" if start else "") + piece + ("…" if start + SHOWN_CHARS < len(text) else ""))

    return cut(x), cut(y)


def _compare_events(group: str, old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[str]:
    found = []
    for index, (a, b) in enumerate(zip(old, new, strict=False), start=1):
        for field_name in ("type", "status", "content"):
            if a[field_name] != b[field_name]:
                was, now = _around(a[field_name], b[field_name])
                found.append(f"{group}, event {index} ({a['type']}): {field_name} was {was}, is {now}")
        for key in sorted(set(a["metadata"]) | set(b["metadata"])):
            if a["metadata"].get(key) != b["metadata"].get(key):
                was, now = _around(a["metadata"].get(key), b["metadata"].get(key))
                found.append(f"{group}, event {index} ({a['type']}): metadata.{key} was {was}, is {now}")
    if len(old) != len(new):
        extra = new[len(old):] if len(new) > len(old) else old[len(new):]
        kinds = ", ".join(e["type"] for e in extra[:5])
        found.append(f"{group}: {len(old)} events originally, {len(new)} in the replay "
                     f"({'extra' if len(new) > len(old) else 'missing'}: {kinds})")
    return found


def compare(original_id: Any, replay_id: Any, names: dict[str, str]) -> Comparison:
    """`names`: the replay's server names → the original's."""
    old, new = timeline(original_id), timeline(replay_id, names)
    result = Comparison(str(original_id), str(replay_id), events=sum(map(len, old.values())))
    for group in sorted(set(old) | set(new)):
        if group not in new or group not in old:
            result.differences.append(f"{group}: only in the {'original' if group in old else 'replay'}")
            continue
        result.differences += _compare_events(group, old[group], new[group])
    a, b = AlertSession.all_objects.get(id=original_id), AlertSession.all_objects.get(id=replay_id)
    if a.status != b.status:
        result.differences.append(f"session status was {a.status}, is {b.status}")
    if a.final_analysis != _rename(b.final_analysis, names):
        result.differences.append("the final analysis differs")
    return result


def prepare_replay(session_id: Any, directory: Path, *, base_dir: str | None) -> tuple[RunPlan, list[str]]:
    """Capture the session as a scenario under `directory` and write the replay's configuration there (workers
    that run the replay need it). Returns the plan and the capture's notes (what could not be recorded exactly)."""
    session = finished_session(session_id)
    scenario_dir = directory / "scenario" / f"replay-{str(session.id)[:8]}"
    notes = export_session(session.id, scenario_dir)
    return write_run_config(directory, [load_scenario(scenario_dir)], concurrency=1, base_dir=base_dir), notes


def replay(session_id: Any, plan: RunPlan, *, worker: bool, run_timeout: float | None = None) -> Comparison:
    """Run the prepared replay as a new session and compare its timeline with the original's."""
    config = load_config(plan.config_dir)
    set_config(config)
    with in_process_worker(1) if worker else nullcontext():
        (result,) = run(plan, concurrency=1, run_timeout=run_timeout or config.defaults.session_timeout + 60)
    if not result.session_id:
        raise Conflict(f"the replay was not accepted: {result.observation.error}")
    names = {runtime: logical for logical, runtime in plan.plans[0].servers.items()}
    return compare(session_id, result.session_id, names)
