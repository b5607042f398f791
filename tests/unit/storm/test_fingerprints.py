"""Fingerprints survive what changes between repeats of an alert and tell different alerts apart."""

from __future__ import annotations

import pytest

from agents.config.schema import ChainConfig
from tarsy.services.fingerprints import derive_fingerprint, derive_group_key, normalised

CRASH = {"alertname": "KubePodCrashLooping", "namespace": "payments", "pod": "payments-api-7d9f",
         "description": "Pod is restarting 5 times / 10 minutes", "startsAt": "2026-11-23T10:00:00Z",
         "restartCount": 5, "labels": {"app": "payments-api"}}


def _fp(data, key=(), alert_type="kubernetes"):
    return derive_fingerprint(alert_type=alert_type, data=data, key=list(key))


def test_repeat_with_new_timestamps_and_counters_has_the_same_fingerprint():
    repeat = {**CRASH, "description": "Pod is restarting 9 times / 10 minutes", "startsAt": "2026-11-23T10:05:12Z",
              "restartCount": 9}
    assert _fp(repeat) == _fp(CRASH)


def test_text_alert_repeats_match_despite_times_and_numbers():
    assert _fp("12:01:07 disk 91% full on db-1") == _fp("12:04:55 disk 93% full on db-1")


def test_numbers_that_are_not_counts_tell_alerts_apart():
    assert _fp("alert 1") != _fp("alert 2")
    assert _fp("HTTP 503 from checkout") != _fp("HTTP 404 from checkout")
    assert _fp("failed 3 times since 1763892000") == _fp("failed 4 times since 1763892301")


def test_different_pod_or_alert_type_is_a_different_alert():
    assert _fp({**CRASH, "pod": "payments-api-8x2k"}) != _fp(CRASH)
    assert _fp({"pod": "node-3"}) != _fp({"pod": "node-4"})  # digits inside a name are identity, not a counter
    assert _fp(CRASH, alert_type="other") != _fp(CRASH)


def test_configured_key_fields_decide_alone():
    key = ["alertname", "labels.app"]
    assert _fp({**CRASH, "pod": "payments-api-8x2k"}, key) == _fp(CRASH, key)
    assert _fp({**CRASH, "labels": {"app": "checkout"}}, key) != _fp(CRASH, key)


def test_key_without_any_of_its_fields_falls_back_to_the_data():
    assert _fp({"x": 1}, ["alertname"]) != _fp({"x": 2}, ["alertname"])


def test_time_and_counter_keys_are_dropped_and_names_kept():
    assert normalised({"endsAt": "x", "last_seen": 1, "format": "json", "stat": "p99"}) == {
        "format": "json", "stat": "p99"}


def test_group_key_needs_every_label():
    labels = ["namespace", "labels.app"]
    assert derive_group_key(data=CRASH, labels=labels) == "namespace=payments,labels.app=payments-api"
    assert derive_group_key(data={"namespace": "payments"}, labels=labels) == ""
    assert derive_group_key(data="text alert", labels=labels) == ""
    assert derive_group_key(data=CRASH, labels=[]) == ""


@pytest.mark.parametrize("value", [False, "off", "OFF"])
def test_dedup_and_correlation_can_be_switched_off_per_chain(value):
    chain = ChainConfig.model_validate({"stages": [{"name": "s", "agents": [{"name": "A"}]}],
                                        "dedup": value, "correlation": value})
    assert chain.dedup is None and chain.correlation is None


def test_dedup_defaults_on_with_a_15_minute_window():
    chain = ChainConfig.model_validate({"stages": [{"name": "s", "agents": [{"name": "A"}]}],
                                        "correlation": {"labels": ["namespace"], "window": "5m"}})
    assert (chain.dedup.window, chain.dedup.key) == (900.0, [])
    assert (chain.correlation.labels, chain.correlation.window) == (["namespace"], 300.0)
