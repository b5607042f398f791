"""Iteration strategy → controller."""

from __future__ import annotations

from .base import Controller


def controller_for(strategy: str) -> Controller:
    if strategy == "react":
        from .react import ReActController

        return ReActController()
    if strategy == "native-thinking":
        from .native_thinking import NativeThinkingController

        return NativeThinkingController()
    if strategy in ("synthesis", "synthesis-native-thinking"):
        from .synthesis import SynthesisController

        return SynthesisController()
    raise ValueError(f"unknown iteration strategy {strategy!r}")
