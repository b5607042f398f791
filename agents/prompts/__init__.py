"""Prompt composition for every controller; the wording lives in templates/*.md."""

from agents.prompts.builder import (
    build_native_messages,
    build_react_messages,
    build_synthesis_messages,
    executive_summary_messages,
    forced_conclusion_prompt,
    format_observation,
    summarization_messages,
)

__all__ = [
    "build_native_messages",
    "build_react_messages",
    "build_synthesis_messages",
    "executive_summary_messages",
    "forced_conclusion_prompt",
    "format_observation",
    "summarization_messages",
]
