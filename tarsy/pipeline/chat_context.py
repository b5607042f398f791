"""A chat execution's context: the session's investigation, the earlier questions and answers, and the question.

A chat runs on a finished session, one reply at a time, so all of it is fixed while the execution runs: built
once per execution and process (tarsy.pipeline.per_execution). Every iteration's context carries it, since it
also says that the step answers a chat.
"""

from __future__ import annotations

from agents.context import ChatContext
from agents.prompts.stage_context import format_investigation_for_chat
from tarsy.models import AgentExecution, Stage
from tarsy.services import chats, stages

from .first_prompt import investigation
from .per_execution import PerExecution

_contexts: PerExecution[ChatContext] = PerExecution()


def chat_context_for(execution: AgentExecution) -> ChatContext:
    return _contexts.get(execution.id, lambda: chat_context(execution.stage))


def chat_context(stage: Stage) -> ChatContext:
    investigation_text = format_investigation_for_chat(
        [(s.name, [investigation(e) for e in s.executions.all()])
         for s in stages.stages_of_session(session_id=stage.session_id)]
    )
    message = stage.chat_message
    history = chats.chat_history(session_id=stage.session_id, before_message_id=message.id if message else None)
    return ChatContext(investigation=investigation_text, history=history, question=message.content if message else "")
