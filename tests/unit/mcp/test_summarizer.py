"""ResultSummarizer with a scripted LLM: what it asks, what it records, how it fails."""

from __future__ import annotations

import time

import pytest

from agents.llm.recorded import LLMTarget
from agents.mcp.summarizer import ResultSummarizer, SummarizationError

from .conftest import PROVIDER, InMemoryRecorder, ScriptedLLM


def summarizer(recorder: InMemoryRecorder, llm: ScriptedLLM, deadline: float | None = None) -> ResultSummarizer:
    """A deadline ten minutes from the call (not from collection: a full run takes longer than that)."""
    return ResultSummarizer(target=LLMTarget(name="test", config=PROVIDER, adapter=llm), recorder=recorder,
                            investigation_so_far=lambda: "Node ip-10-0-1-5 reports DiskPressure.",
                            agent_name="KubernetesAgent", execution_id="exec-9", iteration=2,
                            deadline=deadline or time.time() + 600)


def test_the_summary_request_carries_the_result_and_the_investigation() -> None:
    recorder, llm = InMemoryRecorder(), ScriptedLLM(text="Disk is 97% full on /var/lib/docker.")
    deadline = time.time() + 600

    summary = summarizer(recorder, llm, deadline).summarize("k8s", "node_describe", "df output ...", max_tokens=250)

    assert summary == "Disk is 97% full on /var/lib/docker."
    (request,) = llm.requests
    assert (request.interaction_type, request.max_output_tokens, request.tools) == ("summarization", 250, [])
    assert (request.agent_name, request.execution_id, request.iteration, request.deadline) == ("KubernetesAgent",
                                                                                            "exec-9", 2, deadline)
    sent = "\n".join(m.content for m in request.messages)
    assert "df output ..." in sent and "DiskPressure" in sent and "k8s.node_describe" in sent
    (record,) = recorder.llm
    assert (record.interaction_type, record.provider, record.model, record.success) == ("summarization", "test",
                                                                                       "test-model", True)
    assert [m["role"] for m in record.conversation] == [m.role for m in request.messages] + ["assistant"]


@pytest.mark.parametrize("llm, reason", [(ScriptedLLM(error="503 from provider"), "503 from provider"),
                                         (ScriptedLLM(text="   "), "empty response")])
def test_an_error_chunk_or_an_empty_reply_raises_and_is_recorded(llm: ScriptedLLM, reason: str) -> None:
    recorder = InMemoryRecorder()

    with pytest.raises(SummarizationError, match=reason):
        summarizer(recorder, llm).summarize("k8s", "logs", "lots of logs", max_tokens=100)

    assert recorder.llm[0].success is False and reason in recorder.llm[0].error_message


def test_a_result_summarised_for_a_pseudonymising_provider_is_sent_under_the_sessions_placeholders() -> None:
    from agents.config.schema import PrivacyConfig
    from agents.privacy import policy

    policy.install(policy.MemoryStore())
    policy.configure(PrivacyConfig(pseudonymise=True))
    try:
        policy.session_pseudonyms("session-3", ["pod: web-7f9c"])  # known from the alert before the tool ran
        recorder, llm = InMemoryRecorder(), ScriptedLLM(text="<pod:1> restarts on <node:1>.")
        cfg = PROVIDER.model_copy(update={"pseudonymise": True})
        summary = ResultSummarizer(target=LLMTarget(name="test", config=cfg, adapter=llm), recorder=recorder,
                                   investigation_so_far=lambda: "node: ip-10-0-1-5", session_id="session-3",
                                   execution_id="exec-9").summarize("k8s", "logs", "web-7f9c OOMKilled", 250)
    finally:
        policy.configure(PrivacyConfig())
        policy.install(policy.MemoryStore())
    (request,) = llm.requests
    sent = "\n".join(m.content for m in request.messages)
    assert "web-7f9c" not in sent and "ip-10-0-1-5" not in sent and "<pod:1> OOMKilled" in sent
    assert summary == "web-7f9c restarts on ip-10-0-1-5."
