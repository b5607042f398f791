"""What an eval run shows: a progress bar while it runs, a table per scenario, totals and the JSON report.

The JSON report has one line per run and, as its last line, the totals: `scenarios`, `passed`, `failed`,
`fixture_gaps`, `pass_rate`, `tokens` (then `runs`, `repeat`, `pass@k` and `pass^k` when repeat > 1,
`provider`, `wall_time_s`, `database`, and with --judge `judge`, `judged`, `judge_agreement`). Each run's
`problems` are `{reason, check}`: the reason is one of the scorer's (`missing_finding`, `blamed_red_herring`, …)
or `fixture_gap`. pass@k: share of scenarios with at least one passing run of k; pass^k: share with all k
passing — what a team on call can count on. A run of an action scenario adds `actions`: each proposal's tool,
arguments and how it ended.
"""

from __future__ import annotations

import io
import json
import shutil
import sys
from collections import defaultdict
from statistics import mean
from typing import Any, Literal

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from .judge import agreement
from .runner import RunResult

TABLE_WIDTH = 160  # when stdout is not a terminal (CI logs), rich would otherwise wrap at 80 columns
MARK = {"pass": "pass", "fail": "FAIL", "gap": "GAP"}


class ProgressBar:
    """Runs done / total, with pass, fail and gap counts, on stderr."""

    def __init__(self, total: int, label: str) -> None:
        self._progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                                  TextColumn("{task.fields[counts]}"), TimeElapsedColumn(),
                                  console=Console(file=sys.stderr))
        self._task = self._progress.add_task(label, total=total, counts="")
        self._counts: dict[str, int] = defaultdict(int)

    def __enter__(self) -> ProgressBar:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def advance(self, result: RunResult) -> None:
        self._counts[result.score.outcome] += 1
        counts = "  ".join(f"{k} {self._counts[k]}" for k in ("pass", "fail", "gap") if self._counts[k])
        self._progress.update(self._task, advance=1, counts=counts)


def problems(result: RunResult) -> list[dict[str, str]]:
    """Why a run did not pass, most telling first, each with its reason."""
    out = [{"reason": "fixture_gap", "check": f"gap: {g}"} for g in result.score.gaps]
    out += [{"reason": c.reason, "check": f"{c.kind}: {c.name}" + (f" ({c.detail})" if c.detail else "")}
            for c in result.score.failed]
    return out


def _problem_text(result: RunResult) -> str:
    return "; ".join(f"{p['reason']}: {p['check']}" for p in problems(result))


def run_record(result: RunResult) -> dict[str, Any]:
    obs = result.observation
    return {
        "scenario": result.scenario, "attempt": result.attempt, "session_id": result.session_id,
        "outcome": result.score.outcome, "status": obs.status, "problems": problems(result),
        "iterations": obs.iterations, "tool_calls": len(obs.calls), "tokens": obs.tokens,
        "wall_s": round(result.wall_s, 2),
        **({"actions": [{"tool": f"{a.server}.{a.tool}", "arguments": a.arguments, "ended": a.ended}
                        for a in obs.proposals]} if result.plan.scenario.acts else {}),
        **({"judge": result.judgement.record()} if result.judgement else {}),
    }


def summary(results: list[RunResult], *, scenarios: int, repeat: int, provider: str,
            wall_s: float, database: str = "", judge: str = "") -> dict[str, Any]:
    outcomes = [r.score.outcome for r in results]
    runs = len(results)
    data: dict[str, Any] = {
        "scenarios": scenarios,
        "passed": outcomes.count("pass"),
        "failed": outcomes.count("fail"),
        "fixture_gaps": outcomes.count("gap"),
        "pass_rate": round(outcomes.count("pass") / runs, 4) if runs else 0.0,
        "tokens": sum(r.observation.tokens for r in results),
        "runs": runs,
        "repeat": repeat,
    }
    if repeat > 1:
        by_scenario = _by_scenario(results)
        data["pass@k"] = round(mean(any(r.score.outcome == "pass" for r in rs) for rs in by_scenario.values()), 4)
        data["pass^k"] = round(mean(all(r.score.outcome == "pass" for r in rs) for rs in by_scenario.values()), 4)
    data["provider"] = provider
    data["wall_time_s"] = round(wall_s, 1)
    if database:
        data["database"] = database
    if judge:
        data["judge"] = judge
        data.update(agreement([(r.score.outcome == "pass", r.judgement) for r in results if r.score.outcome != "gap"]))
    return data


def _by_scenario(results: list[RunResult]) -> dict[str, list[RunResult]]:
    grouped: dict[str, list[RunResult]] = defaultdict(list)
    for result in sorted(results, key=lambda r: (r.scenario, r.attempt)):
        grouped[result.scenario].append(result)
    return grouped


def table(results: list[RunResult], totals: dict[str, Any], *, terminal: bool) -> str:
    """The per-scenario table and the totals line, rendered as text."""
    grid = Table(title=f"Eval: {totals['provider']}", title_justify="left", show_lines=False)
    columns: tuple[tuple[str, Literal["left", "right"]], ...] = (
        ("scenario", "left"), ("result", "left"), ("iter", "right"), ("tools", "right"), ("tokens", "right"),
        ("time s", "right"), ("problems", "left"))
    for column, justify in columns:
        grid.add_column(column, justify=justify, overflow="fold")
    for name, runs in _by_scenario(results).items():
        marks = " ".join(MARK[r.score.outcome] for r in runs)
        failing = next((r for r in runs if r.score.outcome != "pass"), None)
        grid.add_row(name, marks, f"{mean(r.observation.iterations for r in runs):.0f}",
                     f"{mean(len(r.observation.calls) for r in runs):.0f}",
                     f"{mean(r.observation.tokens for r in runs):,.0f}", f"{mean(r.wall_s for r in runs):.1f}",
                     _problem_text(failing)[:400] if failing else "")
    line = (f"{totals['runs']} runs of {totals['scenarios']} scenarios: {totals['passed']} passed, "
            f"{totals['failed']} failed, {totals['fixture_gaps']} fixture gaps — pass rate "
            f"{totals['pass_rate']:.1%}")
    if "pass@k" in totals:
        line += f", pass@{totals['repeat']} {totals['pass@k']:.1%}, pass^{totals['repeat']} {totals['pass^k']:.1%}"
    line += f"; {totals['tokens']:,} tokens; {totals['wall_time_s']} s"
    if totals.get("judge"):
        share = totals["judge_agreement"]
        line += (f"; judge {totals['judge']} agrees on {share:.1%} of {totals['judged']} runs" if share is not None
                 else f"; judge {totals['judge']} gave no verdict")
    if totals.get("database"):
        line += f"; database {totals['database']}"
    buffer = io.StringIO()
    width = shutil.get_terminal_size((TABLE_WIDTH, 24)).columns if terminal else TABLE_WIDTH
    console = Console(file=buffer, width=width, force_terminal=terminal, highlight=False)
    console.print(grid)
    console.print(line, highlight=False)
    return buffer.getvalue()


def json_lines(results: list[RunResult], totals: dict[str, Any]) -> str:
    ordered = sorted(results, key=lambda r: (r.scenario, r.attempt))
    return "".join(json.dumps(run_record(r)) + "\n" for r in ordered) + json.dumps(totals) + "\n"
