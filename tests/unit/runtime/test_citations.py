"""The citation grammar and the deterministic check, without a database."""

from __future__ import annotations

import json

from agents.citations import Evidence, cited_ids, evidence_shown, uncited_findings, verify_citations
from agents.context import ToolResult
from agents.llm.types import ToolCall
from agents.prompts.builder import format_observation, tool_response
from agents.prompts.stage_context import AgentInvestigation, format_history

ALERT = json.dumps({"namespace": "shop", "labels": {"team": "orders"}, "pods": ["web-1", "web-2"]})
EVIDENCE = [Evidence(id="E1", event_id=11, tool="k8s.pods_list"), Evidence(id="E2", event_id=12, tool="k8s.pods_log"),
            Evidence(id="E3", event_id=13, tool="k8s.events_list")]


def test_citation_forms_are_read_once_each_in_order():
    text = "Crash [E2]. OOM [E1, E3]; limits [E1][A:labels.team]. Not citations: E4, [X1], [E], (E5)."
    assert cited_ids(text) == ["E2", "E1", "E3", "A:labels.team"]


def test_cited_tool_results_and_alert_fields_are_valid_and_the_rest_uncited():
    result = verify_citations("web-1 crashes [E2][A:pods.0] in [A:namespace].", EVIDENCE, ALERT)
    assert [c["id"] for c in result["valid"]] == ["E2", "A:pods.0", "A:namespace"]
    assert result["valid"][0] == {"id": "E2", "kind": "tool_result", "event_id": 12, "tool": "k8s.pods_log",
                                  "is_error": False}
    assert result["invalid"] == []
    assert [c["id"] for c in result["uncited"]] == ["E1", "E3"]
    assert (result["cited_count"], result["evidence_count"]) == (3, 3)


def test_ids_that_are_no_evidence_of_the_session_or_no_alert_field_are_invalid():
    result = verify_citations("Disk full [E9]; node [A:labels.node]; pod [A:pods.7]; ok [E1].", EVIDENCE, ALERT)
    assert [(c["id"], c["reason"]) for c in result["invalid"]] == [
        ("E9", "not_in_session"), ("A:labels.node", "no_alert_field"), ("A:pods.7", "no_alert_field")]
    assert [c["id"] for c in result["valid"]] == ["E1"]


def test_a_text_alert_has_no_fields_and_an_analysis_without_citations_leaves_all_evidence_uncited():
    assert verify_citations("see [A:namespace]", [], "namespace: shop")["invalid"][0]["reason"] == "no_alert_field"
    result = verify_citations("The pod crashed.", EVIDENCE, ALERT)
    assert (result["valid"], result["invalid"], len(result["uncited"])) == ([], [], 3)


def test_every_prompt_shows_the_id_with_its_result():
    result = ToolResult(call=ToolCall(id="c1", name="k8s.pods_list", arguments={}), content="web-1 Running",
                        evidence_id="E4")
    observation = format_observation(result)
    assert observation.startswith("Observation: Evidence [E4] (cite it as [E4]). k8s.pods_list returned")
    assert tool_response(result) == observation.removeprefix("Observation: ")  # one shape for every strategy
    history = format_history(AgentInvestigation(name="A", status="completed", events=[
        {"event_type": "tool_result", "content": "web-1 Running",
         "metadata": {"server_name": "k8s", "tool_name": "pods_list", "evidence_id": "E4"}}]))
    assert "**Tool result** (k8s.pods_list), evidence [E4]:\nweb-1 Running" in history
    assert evidence_shown("\n".join([observation, tool_response(result), history])) == ["E4"]


ANALYSIS = """## Summary
The payments API is down because the database pod was evicted from node-3 yesterday.

**Root cause:** disk pressure on node-3 evicted the database pod at 02:14 UTC [E2].

- node-3 reports DiskPressure=True since 02:10 UTC according to its conditions [E1]
- The eviction event names orders-db-0 and the reason is low ephemeral storage
  > quoted from the event, which belongs to the item above
- Impact: checkout fails.
```
kubectl get pods --all-namespaces --field-selector=status.phase!=Running -o wide
```
_This analysis comes from a model and may be wrong; check the evidence before acting on it._

### Recommended actions
1. Free disk space on node-3 and move the database to a node with more local storage.
"""


def test_findings_without_a_citation_are_listed_and_advice_notes_and_code_are_not_findings():
    assert [f["text"] for f in uncited_findings(ANALYSIS)] == [
        "The payments API is down because the database pod was evicted from node-3 yesterday.",
        "The eviction event names orders-db-0 and the reason is low ephemeral storage\n"
        "> quoted from the event, which belongs to the item above",
    ]
    assert verify_citations(ANALYSIS, EVIDENCE, ALERT)["uncited_findings"] == uncited_findings(ANALYSIS)
    assert uncited_findings("The pod restarts because its liveness probe times out every ten seconds [E1].") == []
