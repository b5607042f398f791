"""The parts of a step's context that every iteration of an execution shares are built once per execution and
process, and built anew whenever what they are built from changes (a provider switch, a replaced configuration);
what changes between iterations is read fresh."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tarsy.pipeline.agent_setup import agent_setup
from tarsy.pipeline.finish import session_finish
from tarsy.pipeline.iteration import iteration_begin
from tarsy.services import executions as execution_service
from tarsy.services.chats import chat_submit
from tests.support.configdir import scripted_provider

from .conftest import executions, interactions, only_execution, react_action, run_next, run_to_end, start_session

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(60)]

PODS = react_action("Check the pods.", "k8s.get_pods", '{"namespace": "prod"}')
ANSWER = "Thought: Clear now.\nFinal Answer: web-1 crashes."


def test_the_agent_setup_is_built_once_and_anew_after_a_provider_switch_or_a_new_configuration(configure):
    def activate():
        configure({"SreAgent": [PODS, PODS, ANSWER]}, providers={"backup": scripted_provider({"SreAgent": [ANSWER]})})

    activate()
    execution = only_execution(start_session())
    run_next(execution.id)

    first = agent_setup(iteration_begin(execution.id, 2).execution)
    assert agent_setup(iteration_begin_again(execution.id, 2)) is first  # the next iteration, any claim
    assert first.resolved.llm_provider_name == "scripted" and first.fallback_provider is None

    execution_service.execution_provider_switch(execution_id=execution.id, provider="backup", backend="scripted",
                                                drop_provider_state=False)
    switched = agent_setup(iteration_begin_again(execution.id, 2))
    assert switched.resolved.llm_provider_name == "backup" and switched.fallback_provider == "backup"

    activate()  # the configuration is replaced (same files, a new object)
    assert agent_setup(iteration_begin_again(execution.id, 2)) is not switched


def iteration_begin_again(execution_id, iteration: int):
    """Claim the iteration again as a redelivered task would once the lease ran out."""
    from tarsy.models import AgentExecution

    AgentExecution.objects.filter(id=execution_id).update(lease_expires_at=None)
    return iteration_begin(execution_id, iteration).execution


def test_a_chat_reads_the_investigation_for_its_first_step_only(configure):
    configure({
        "SreAgent": [ANSWER],
        "executive_summary": ["web-1 is down."],
        "ChatAgent": [react_action("Confirm with the events.", "k8s.get_events", '{"namespace": "prod"}'),
                      "Thought: The events confirm it.\nFinal Answer: Yes."],
    })
    session = start_session()
    (investigation,) = executions(session, 0)
    run_to_end(investigation.id)
    session_finish(session_id=session.id)
    _, stage = chat_submit(session_id=session.id, content="Is the configmap really the cause?", author="alice")
    (chat,) = stage.executions.all()

    with CaptureQueriesContext(connection) as first:
        run_next(chat.id)
    with CaptureQueriesContext(connection) as second:
        run_next(chat.id)

    def reads_stages(queries):  # the session's stages and its earlier answers, in order (not the stage's close)
        return [q for q in queries if q["sql"].startswith("SELECT") and 'FROM "tarsy_stage"' in q["sql"]
                and 'ORDER BY "tarsy_stage"."index"' in q["sql"]]

    assert reads_stages(first) and not reads_stages(second)
    assert [i.interaction_type for i in interactions(chat.id)] == ["chat", "chat"]  # both steps know it is a chat
