"""Pseudonymisation of one call, without a database: what the model is sent, what people and tools get back."""

from __future__ import annotations

import json

import pytest

from agents.config.schema import LLMProviderConfig, PrivacyConfig
from agents.llm.recorded import recorded_call
from agents.llm.registry import LLMTarget
from agents.llm.types import ConversationMessage, LLMRequest, TextChunk, ThinkingChunk, ToolCall, ToolCallChunk
from agents.privacy import policy
from agents.privacy.identifiers import find
from agents.privacy.pseudonyms import placeholders_in
from agents.privacy.veil import veil
from agents.prompts.fence import untrusted

NAMESPACE, POD, NODE, CLUSTER = "shop-prod", "checkout-7d9f-x2kq", "ip-10-0-1-5.ec2.internal", "eu-prod-1"
OWNER, HOST_IP, POD_IP, EMAIL, CUSTOMER = "checkout-7d9f", "10.0.1.5", "10.244.1.7", "ops@acme.example", "CUST-48213"
SEEDED = (NAMESPACE, POD, NODE, CLUSTER, OWNER, HOST_IP, POD_IP, EMAIL, CUSTOMER)
ALERT = json.dumps({"labels": {"alertname": "PodCrashLooping", "namespace": NAMESPACE, "pod": POD,
                               "cluster": CLUSTER}, "message": f"owner {EMAIL}, customer {CUSTOMER}"})
POD_JSON = json.dumps({"kind": "Pod", "apiVersion": "v1", "metadata": {
    "name": POD, "namespace": NAMESPACE, "ownerReferences": [{"kind": "ReplicaSet", "name": OWNER, "uid": "1"}]},
    "spec": {"nodeName": NODE}, "status": {"hostIP": HOST_IP, "podIP": POD_IP, "phase": "Running"}})


@pytest.fixture(autouse=True)
def _pseudonymising():
    policy.configure(PrivacyConfig(pseudonymise=True, patterns=[{"kind": "cust", "pattern": r"CUST-\d{5}"}]))
    policy.install(policy.MemoryStore())
    yield
    policy.configure(PrivacyConfig())
    policy.install(policy.MemoryStore())


def _request(session: str = "s1") -> LLMRequest:
    return LLMRequest(session_id=session, provider=LLMProviderConfig(type="scripted", script=[]), messages=[
        ConversationMessage(role="system", content="You investigate alerts."),
        ConversationMessage(role="user", content=untrusted(ALERT, what="the alert").text),
        ConversationMessage(role="assistant", tool_calls=[ToolCall(id="c1", name="k8s.pods_get",
                                                                   arguments={"namespace": NAMESPACE, "name": POD})]),
        ConversationMessage(role="tool", tool_call_id="c1", content=untrusted(POD_JSON, what="a tool result").text),
        ConversationMessage(role="user", content=f"Was {POD} on {NODE} rescheduled?"),
    ])


def _scripted(*turns: dict, pseudonymise: bool | None = None) -> LLMTarget:
    return LLMTarget.of("cloud", LLMProviderConfig(type="scripted", script=list(turns), chunk_size=3,
                                                   pseudonymise=pseudonymise))


def test_no_seeded_identifier_reaches_the_model():
    sent = veil(_request(), LLMProviderConfig(type="openai", model="m")).request(_request())
    body = json.dumps([m.model_dump() for m in sent.messages])
    assert [value for value in SEEDED if value in body] == []
    assert '"namespace": "<ns:1>", "pod": "<pod:1>"' in sent.messages[1].content
    assert "<node:1>" in body and "<cust:1>" in body and "<email:1>" in body


def test_a_provider_that_may_see_real_names_is_sent_them():
    assert veil(_request(), LLMProviderConfig(type="openai", model="m", pseudonymise=False)) is None
    policy.configure(PrivacyConfig(pseudonymise=False))
    assert veil(_request(), LLMProviderConfig(type="openai", model="m")) is None
    assert veil(_request(), LLMProviderConfig(type="openai", model="m", pseudonymise=True)) is not None


def test_placeholders_are_stable_across_calls_and_numbered_per_kind():
    first = veil(_request(), LLMProviderConfig(type="openai", model="m")).request(_request())
    later = _request()
    later.messages.append(ConversationMessage(role="user", content=untrusted(
        json.dumps({"kind": "Pod", "metadata": {"name": "checkout-7d9f-zz9p", "namespace": NAMESPACE}}),
        what="a tool result").text))
    again = veil(later, LLMProviderConfig(type="openai", model="m")).request(later)
    assert again.messages[1].content == first.messages[1].content
    assert "<pod:2>" in again.messages[-1].content and "<ns:1>" in again.messages[-1].content


def test_a_shorter_name_inside_a_longer_one_is_not_cut_out_of_it():
    pseudonyms = policy.session_pseudonyms("s2", ["namespace: shop", "pod: shop-db-0"])
    assert pseudonyms.replace("shop-db-0 in shop, db.shop.svc") == "<pod:1> in <ns:1>, db.<ns:1>.svc"


def test_the_reply_is_restored_for_people_and_the_record_keeps_what_the_model_saw():
    records = []
    call = recorded_call(_request(), _scripted(
        {"thinking": "<pod:1> restarts", "text": "<pod:1> on <node:1> lost its config; <pod:9> is unknown",
         "tool_calls": [{"name": "k8s.pods_log", "arguments": {"namespace": "<ns:1>", "name": "<pod:1>"}}]}),
        record=records.append)
    assert call.response.text == f"{POD} on {NODE} lost its config; <pod:9> is unknown"
    assert call.response.thinking == f"{POD} restarts"
    assert call.response.tool_calls[0].arguments == {"namespace": NAMESPACE, "name": POD}
    (record,) = records
    saw = json.dumps(record.conversation)
    assert [value for value in SEEDED if value in saw] == []
    assert record.conversation[-1]["content"].startswith("<pod:1> on <node:1>")
    assert record.thinking_content == "<pod:1> restarts"


def test_a_placeholder_split_across_chunks_is_restored_whole():
    pseudonyms = veil(_request(), LLMProviderConfig(type="openai", model="m"))
    pseudonyms.request(_request())
    out = [c for piece in ("Pod <po", "d:1", "> is down; x < y and <", "node:1>") for c in
           pseudonyms.restore(TextChunk(text=piece))]
    out += list(pseudonyms.flush())
    assert "".join(c.text for c in out) == f"Pod {POD} is down; x < y and {NODE}"
    assert [c.text for c in pseudonyms.restore(ThinkingChunk(text="<ns:1"))] == []
    assert [c.text for c in pseudonyms.restore(ThinkingChunk(text="> ok"))] == [f"{NAMESPACE} ok"]
    assert [c.text for c in pseudonyms.restore(ThinkingChunk(text="cut <ns:1"))] == ["cut "]
    assert [c.text for c in pseudonyms.flush()] == ["<ns:1"]  # never finished: no placeholder, shown as written


def test_a_placeholder_the_model_was_not_given_is_never_restored():
    pseudonyms = policy.session_pseudonyms("s3", ["pod: api-7f9c", "pod: db-0a1b"])
    pseudonyms.replace("only api-7f9c was shown")
    (chunk,) = list(veil_with(pseudonyms).restore(ToolCallChunk(call=ToolCall(
        id="x", name="k8s.pods_delete", arguments={"name": "<pod:2>", "also": ["<pod:1>"]}))))
    assert chunk.call.arguments == {"name": "<pod:2>", "also": ["api-7f9c"]}
    assert placeholders_in(chunk.call.arguments) == ["<pod:2>"]


def veil_with(pseudonyms):
    from agents.privacy.veil import Veil

    return Veil(pseudonyms)


def test_identifiers_are_found_in_prometheus_labels_and_kubernetes_json():
    found = set(find(untrusted(POD_JSON, what="x").text + "\ninstance=10.9.8.7:9100 hostname: web-01"))
    assert {("pod", POD), ("ns", NAMESPACE), ("workload", OWNER), ("node", NODE), ("ip", HOST_IP),
            ("ip", POD_IP), ("ip", "10.9.8.7"), ("host", "web-01")} <= found
    assert not [value for _, value in find("<pod:1> in <ns:2>") if "<" in value]
