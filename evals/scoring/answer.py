"""The parts of a final answer: its conclusion (summary and root-cause statement) apart from its evidence.

The product's prompts (agents/prompts/templates: react_format, native_format, synthesis_task, forced_conclusion_*)
ask for a summary, the root cause, its evidence, the impact and recommended next steps. A finding counts only
where the answer concludes: the summary and the root-cause statement with its explanation, up to the next
evidence, impact or actions section. Code blocks, block quotes, lines copied from tool output and the alert
echoed back are evidence, not conclusions, wherever they stand. Inline code stays: answers name settings and
quote a message inside their own sentence that way.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

ROOT_CAUSE = (r"(?:(?:most |the )?(?:likely|probable|suspected|primary)\s+)?root[- ]causes?(?:\s+analysis)?|"
              r"conclusions?|diagnosis|causes?")
SUMMARY = r"summary|tl;?dr|overview|executive summary"
OTHER = (r"evidence|supporting evidence|impact|recommended (?:actions|next steps|steps)|recommendations?|"
         r"(?:next|remediation) steps|actions?|remediation|mitigation|fix|timeline|findings|observations|details|"
         r"what (?:remains|is) unverified|unverified|open questions|verification|alert(?: details)?|logs?|"
         r"tool outputs?|investigation|data|context|references")
# a Markdown heading, a bold label ("**Root cause:**") or a plain label line ("Evidence:") opens a section
_LABEL = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]+(?P<h>[^\n]+?)[ \t]*#*[ \t]*$"
    r"|\*\*(?P<b>[^*\n]{1,60}?)\s*:?\s*\*\*\s*:?"
    rf"|(?P<p>{ROOT_CAUSE}|{SUMMARY}|{OTHER})[ \t]*:)",
    re.I | re.M)
_FENCE = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1[^\n]*$", re.M | re.S)
_QUOTE_LINE = re.compile(r"^[ \t]*>.*$", re.M)
_LIST_ITEM = re.compile(r"^[ \t]*(?:[-*+]|\d+[.)])[ \t]+", re.M)
MIN_COPIED = 16  # characters: a shorter line is a name or a word, not a pasted line
PASTED_MAX = 0.5  # of a conclusion: right answers quote up to ~0.2, pasted output scores near 1
LEAD_WORDS = 3  # words that may introduce a pasted line ("the log says")
_SEGMENT = re.compile(r";|\n|(?<=[.!?])\s+")
_CITATION = re.compile(r"\[(?:e\d+|a:[^\]]*)\]")


def normalize(text: str) -> str:
    """Case, Markdown emphasis and runs of whitespace do not matter."""
    return re.sub(r"\s+", " ", re.sub(r"[*`]", "", text)).strip().lower()


def _kind(title: str) -> str:
    title = re.sub(r"[*_:#]|\[.*?\]", "", title).strip().lower()
    if re.fullmatch(rf"(?:{ROOT_CAUSE})(?:\s*\(.*\))?", title):
        return "root"
    if re.fullmatch(SUMMARY, title):
        return "summary"
    if re.fullmatch(rf"(?:{OTHER})(?:\s.*)?", title):
        return "other"
    return ""  # a title of the answer's own: it continues the section it stands in


@dataclass
class Answer:
    conclusion: str  # summary and root-cause statement in the answer's own words, raw (not normalised)
    root: str  # the root-cause statement alone
    has_root: bool  # the answer states a root cause (a root-cause section, or "the root cause is ...")
    quoted: str  # what was set aside: quotes, copied output, evidence and other sections
    copied: float = 0.0  # share of the conclusion that is tool output pasted with a few words around it


def _sources(tool_results: list[str], alert: Any) -> set[str]:
    """Normalised lines of every tool result and of the alert (also as `key: value`)."""
    lines = {normalize(line) for result in tool_results for line in result.splitlines()}
    if isinstance(alert, str):
        try:
            alert = json.loads(alert)
        except ValueError:
            pass
    if isinstance(alert, dict):
        lines |= {normalize(f"{k}: {v}") for k, v in alert.items()} | {normalize(str(v)) for v in alert.values()}
    elif alert:
        lines |= {normalize(line) for line in str(alert).splitlines()}
    return {line for line in lines if len(line) >= MIN_COPIED}


def _copied(line: str, sources: set[str]) -> bool:
    text = normalize(_LIST_ITEM.sub("", line, count=1))
    return len(text) >= MIN_COPIED and any(text in source for source in sources)


def copied_share(conclusion: str, tool_results: list[str]) -> float:
    """The share of the conclusion (in characters) made of pasted tool output: segments (between `;`, line and
    sentence ends) that are a run of the output's words once evidence ids and up to LEAD_WORDS leading words
    ("pods_log says …") are set aside. Near 1 for output pasted with a few words around each line, low for an
    answer that quotes a message inside its own sentences."""
    output = " " + " ".join(_words(normalize("\n".join(tool_results)))) + " "
    segments = [(words, _pasted(words, output)) for words in map(_words, map(normalize, _SEGMENT.split(conclusion)))]
    counted = [(words, pasted) for words, pasted in segments if pasted or len(words) > LEAD_WORDS + 1]
    total = sum(len(" ".join(words)) for words, _ in counted)  # short segments ("pods_log says {") say nothing
    copied = sum(len(" ".join(words)) for words, pasted in counted if pasted)
    return copied / total if total else 0.0


def _words(text: str) -> list[str]:
    return [w for w in (token.strip(".,;:()[]{}\"'") for token in _CITATION.sub(" ", text).split()) if w]


def _pasted(words: list[str], output: str) -> bool:
    return any(len(words) - lead >= 2 and f" {' '.join(words[lead:])} " in output
               for lead in range(min(LEAD_WORDS, len(words)) + 1))


def parse(text: str, *, tool_results: Sequence[str] = (), alert: Any = "") -> Answer:
    """Split an answer into its conclusion and what it quotes."""
    set_aside: list[str] = []

    def aside(match: re.Match) -> str:
        set_aside.append(match.group(0))
        return "\n"

    text = _QUOTE_LINE.sub(aside, _FENCE.sub(aside, text))
    sources = _sources(list(tool_results), alert)
    kept: list[str] = []
    for line in text.splitlines():
        (set_aside if _copied(line, sources) else kept).append(line)
    text = "\n".join(kept)
    sections: list[tuple[str, str]] = []  # (kind, text)
    kind, label_end = "summary", 0
    for label in _LABEL.finditer(text):
        title = label.group("h") or label.group("b") or label.group("p")
        new = _kind(title)
        if not new:
            continue
        sections.append((kind, text[label_end:label.start()]))
        kind, label_end = new, label.end()
    sections.append((kind, text[label_end:]))
    root = "\n".join(body for k, body in sections if k == "root").strip()
    conclusion = "\n".join(body for k, body in sections if k in ("root", "summary")).strip()
    set_aside += [body for k, body in sections if k == "other"]
    has_root = bool(root) or re.search(r"\broot[- ]cause\b", conclusion, re.I) is not None
    if not root and has_root:
        root = conclusion
    return Answer(conclusion=conclusion, root=root, has_root=has_root, quoted="\n".join(set_aside),
                  copied=copied_share(conclusion, list(tool_results)))
