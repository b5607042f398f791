"""Fixtures for the masking defect-class tests: maskers for the groups that are on by default."""

from __future__ import annotations

import pytest

from agents.config.schema import MaskingConfig
from agents.mcp.masking import DataMasker

# What masks text when nobody chose otherwise: the alert default (`security`), the built-in Kubernetes
# server (`kubernetes`), the `secrets` group, and an empty selection (DEFAULT_PATTERN_GROUPS).
DEFAULT_GROUPS = [["security"], ["kubernetes"], ["secrets"], []]


def masker(*groups: str) -> DataMasker:
    return DataMasker.from_config(MaskingConfig(pattern_groups=list(groups)))


@pytest.fixture(params=DEFAULT_GROUPS, ids=lambda groups: "+".join(groups) or "default")
def default_masker(request) -> DataMasker:
    """Each group that masks by default, in turn."""
    return masker(*request.param)
