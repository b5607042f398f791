"""An interrupted attempt's LLM and MCP calls when its iteration runs again: kept, marked superseded, counted in
spend, left out of the conversation and the analysis evidence."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import transaction
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from agents.context import LLMInteractionRecord, MCPInteractionRecord
from agents.llm.types import ConversationMessage, Usage
from evals.runner import observe
from tarsy.models import AgentExecution, AlertSession, LLMInteraction, MCPInteraction, Message, SessionCounters, Stage
from tarsy.services import executions, interactions, messages, quality, spend
from tests.support.configdir import write_config

pytestmark = [pytest.mark.services, pytest.mark.django_db]

PRICED = {"type": "scripted", "script": [{"text": "x"}], "pricing": {
    "input_per_mtok": "2", "output_per_mtok": "8", "cached_input_per_mtok": "1", "as_of": "2026-11-01"}}


@pytest.fixture
def execution(tmp_path) -> AgentExecution:
    write_config(tmp_path, tarsy={"defaults": {"llm_provider": "priced"}}, providers={"priced": PRICED})
    session = AlertSession.objects.create(alert_data="pod web-1", alert_type="kubernetes", chain_id="kubernetes",
                                          status="in_progress")
    SessionCounters.objects.create(session=session)  # as intake makes it with the session
    stage = Stage.objects.create(session=session, name="analysis", index=0, status="active")
    return AgentExecution.objects.create(stage=stage, session=session, agent_name="KubernetesAgent",
                                         iteration_strategy="react", status="active", current_iteration=1)


def _llm(execution: AgentExecution, *, provider: str = "priced", interaction_type: str = "iteration",
         input_tokens: int = 1000, output_tokens: int = 100) -> LLMInteraction:
    record = LLMInteractionRecord(
        interaction_type=interaction_type, provider=provider, model="m",
        conversation=[{"role": "assistant", "content": "Thought: look at the pod."}],
        usage=Usage(input_tokens=input_tokens, output_tokens=output_tokens,
                    total_tokens=input_tokens + output_tokens))
    row = interactions.llm_interaction_row(session_id=execution.session_id, execution_id=execution.id, iteration=1,
                                           record=record)
    row.save(force_insert=True)
    return row


def _mcp(execution: AgentExecution) -> MCPInteraction:
    row = interactions.mcp_interaction_row(session_id=execution.session_id, execution_id=execution.id, iteration=1,
                                           record=MCPInteractionRecord(server="k8s", tool="pods_list",
                                                                       arguments={}, result="3 pods"))
    row.save(force_insert=True)
    return row


def _supersede(execution: AgentExecution) -> None:
    with transaction.atomic():
        executions.iteration_discard(execution_id=execution.id, iteration=1)


def test_superseded_calls_stay_and_their_tokens_and_cost_reach_the_totals_once(execution):
    _llm(execution)  # 1000 × 2 / 1e6 + 100 × 8 / 1e6 = 0.0028
    _llm(execution, provider="gone", input_tokens=50, output_tokens=5)  # no price: counted as unpriced
    _mcp(execution)
    _supersede(execution)
    _supersede(execution)  # the iteration interrupted again: nothing is counted twice

    assert list(LLMInteraction.objects.values_list("superseded", flat=True)) == [True, True]
    assert list(MCPInteraction.objects.values_list("superseded", flat=True)) == [True]
    for row in (SessionCounters.objects.get(session_id=execution.session_id),
                AgentExecution.objects.get(id=execution.id)):
        assert (row.input_tokens, row.output_tokens, row.total_tokens) == (1050, 105, 1155)
        assert (row.cost_usd, row.unpriced_calls) == (Decimal("0.0028"), 1)
    today = timezone.now().date()
    (chain,) = spend.spend_grouped(group_by="chain", since=today, until=today)
    assert (chain["cost_usd"], chain["calls"], chain["total_tokens"]) == (Decimal("0.0028"), 2, 1155)
    assert spend.session_tool_calls(session_id=execution.session_id) == 1  # the tool call did happen


def test_an_attempt_that_made_no_calls_changes_no_totals(execution):
    _supersede(execution)
    assert SessionCounters.objects.get(session_id=execution.session_id).total_tokens == 0
    assert AgentExecution.objects.get(id=execution.id).cost_usd == 0


def test_superseded_calls_are_left_out_of_the_conversation_and_the_analysis_evidence(execution):
    Message.objects.bulk_create(messages.message_rows(
        session_id=execution.session_id, execution_id=execution.id, iteration=1, start=1,
        messages=[ConversationMessage(role="assistant", content="Thought: look at the pod.")]))
    _llm(execution, interaction_type="forced_conclusion")
    _mcp(execution)
    assert quality.session_evidence(session_id=execution.session_id).tool_calls == 1
    _supersede(execution)

    assert messages.messages_with_next_sequence(execution_id=execution.id) == ([], 1)
    evidence = quality.session_evidence(session_id=execution.session_id)
    assert (evidence.tool_calls, evidence.failed_tool_calls, evidence.budget_exhausted) == (0, 0, False)


def test_an_eval_run_is_observed_without_the_superseded_attempt(execution):
    _llm(execution)
    _mcp(execution)
    _supersede(execution)
    _llm(execution)  # the attempt that ran again, without a tool call

    observed = observe(str(execution.session_id), {})
    assert (observed.iterations, observed.calls, observed.tokens) == (1, [], 1100)  # the spent tokens stay


def test_the_trace_page_and_the_api_show_superseded_calls(execution):
    _llm(execution)
    _mcp(execution)
    _supersede(execution)
    _llm(execution)  # the attempt that ran again

    body = APIClient(REMOTE_ADDR="127.0.0.1").get(f"/api/v1/sessions/{execution.session_id}/interactions").json()
    assert [c["superseded"] for c in body["llm_interactions"]] == [True, False]
    assert [c["superseded"] for c in body["mcp_interactions"]] == [True]
    html = Client(REMOTE_ADDR="127.0.0.1").get(f"/sessions/{execution.session_id}/trace").content.decode()
    assert html.count('<span class="badge superseded"') == 2
