"""Quotes of tool output in the demo's analysis end on a whole word: "… while awaiting headers", never
"… while a"."""

from __future__ import annotations

import pytest

from agents.mcp import demo_cluster_data as data
from agents.quotes import quote

from .test_demo_reads_the_alert import _investigate, _root_cause

PROBE_TIMEOUT = "(Client.Timeout exceeded while awaiting headers)"


@pytest.mark.parametrize(("text", "limit", "expected"), [
    ("context deadline exceeded while awaiting headers", 100, "context deadline exceeded while awaiting headers"),
    ("context deadline exceeded while awaiting headers", 33, "context deadline exceeded while…"),
    ("deadline: exceeded", 12, "deadline…"),
    ("supercalifragilistic", 5, "super…"),
])
def test_quote_keeps_whole_words_and_says_when_it_cut(text, limit, expected):
    assert quote(text, limit) == expected


async def test_the_throttled_pods_probe_timeout_is_quoted_whole(open_cluster, demo_provider_config):
    alert = f"alertname: CPUThrottlingHigh\nnamespace: search\npod: {data.THROTTLED_POD}"
    async with open_cluster() as cluster:
        answer, _ = await _investigate(cluster, demo_provider_config, alert)
    assert PROBE_TIMEOUT in _root_cause(answer), answer
