"""Instruction-shaped text in data from outside (tool output, alerts): flagged for people, never obeyed.

The defence is how the prompts carry outside data: in a fence, under a note that it is data, not instructions
(`agents.prompts.builder`). This check adds visibility: text that reads like an attempt to steer the model is
marked on the timeline (`suspected_injection: true`) and named in the note the model gets with it. It is a
deterministic list of signals, matched on lower-cased text; a match proves nothing by itself — a runbook may
quote "ignore previous instructions" — so nothing is dropped or refused because of it.

Signals (name: what it matches):

- `ignore_instructions`: "ignore / disregard / forget / override … previous / prior / above / all / your …
  instructions / prompt / rules / directions / guidelines" within one sentence;
- `role_reassignment`: "you are now", "from now on you", "pretend to be / pretend you are";
- `system_prompt`: "system prompt", "system message", "developer message", "developer instructions";
- `chat_role_marker`: chat-template tokens (`<|im_start|>`, `<|system|>`, `[INST]`, `<<SYS>>`, `<system>`) and
  `System:` / `Assistant:` opening a line;
- `react_marker`: `Final Answer:`, `Action Input:` or `Observation:` opening a line — the ReAct format forged in
  data, so the reply parser or the model could take it for a step.
"""

from __future__ import annotations

import re

# Up to three words between the parts of a phrase ("ignore all of the previous instructions"). Every pattern starts
# with literal text, so `re` skips to candidates in C; word-sized gaps keep a run of candidates linear.
_WORDS = r"(?:[ \t]++[\w'-]++){0,3}?[ \t]++"
_LINE = r"\n[ \t]*+"  # a line start: the text is scanned with a newline in front
SIGNALS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("ignore_instructions", re.compile(
        rf"(?:ignore|disregard|forget|override){_WORDS}(?:previous|prior|above|earlier|preceding|all|any|your)"
        rf"{_WORDS}(?:instructions?|prompts?|rules|directions|guidelines)\b")),
    ("role_reassignment", re.compile(r"you(?: are|'re) now\b|from now on,? you\b|pretend (?:to be|you are)\b")),
    ("system_prompt", re.compile(r"(?:system|developer) (?:prompt|message|instructions?)\b")),
    ("chat_role_marker", re.compile(
        r"<\|(?:im_start|im_end|system|user|assistant|endoftext)\|>|\[/?inst\]|<</?sys>>|</?(?:system|assistant)>"
        rf"|{_LINE}(?:#{{1,6}}[ \t]*+)?(?:system|assistant)[ \t]*+:[ \t]")),
    ("react_marker", re.compile(rf"{_LINE}(?:final answer|action input|observation)[ \t]*+:")),
)


def injection_signals(text: str) -> list[str]:
    """The names of the signals `text` shows, in the order of `SIGNALS`; empty when it reads as plain data."""
    lowered = "\n" + text.lower()
    return [name for name, pattern in SIGNALS if pattern.search(lowered)]
