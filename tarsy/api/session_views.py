"""Session endpoints: history list, active panel, detail, timeline, debug records, summary, cancel, delete, chat."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import generics, status
from rest_framework.response import Response

from tarsy.identity import request_author
from tarsy.selectors import sessions as selectors
from tarsy.selectors.events import event_cursor
from tarsy.selectors.filters import SessionFilter, search_deadline
from tarsy.services import chats as chat_service
from tarsy.services import sessions as session_service
from tarsy.streaming.publisher import session_channel

from .base import AUTH_ERRORS, JsonAPIView, errors
from .pagination import SessionPagination
from .serializers.chats import ChatAcceptedSerializer, ChatMessageInSerializer, ChatMessagesSerializer
from .serializers.interactions import InteractionsSerializer
from .serializers.sessions import (
    ActiveSessionsSerializer,
    FilterOptionsSerializer,
    SessionDetailSerializer,
    SessionListItemSerializer,
    SessionStatusSerializer,
    SessionSummarySerializer,
)
from .serializers.timeline import TimelineSerializer


class SessionListView(JsonAPIView, generics.ListAPIView):
    """Session history: filters, text search, ordering, pagination."""

    serializer_class = SessionListItemSerializer
    filterset_class = SessionFilter
    pagination_class = SessionPagination

    def get_queryset(self):
        return selectors.sessions_list()

    @extend_schema(responses={200: SessionListItemSerializer(many=True), **errors(400, 404, *AUTH_ERRORS)})
    def get(self, request, *args, **kwargs):
        with search_deadline():
            return super().get(request, *args, **kwargs)


class SessionActiveView(JsonAPIView):
    """Running sessions and the queue, in the order dispatch takes it (with queue positions)."""

    @extend_schema(responses={200: ActiveSessionsSerializer, **errors(*AUTH_ERRORS)})
    def get(self, request):
        return Response(ActiveSessionsSerializer(selectors.sessions_active(), context={"request": request}).data)


class SessionFilterOptionsView(JsonAPIView):
    """The values each session-list filter can take."""

    @extend_schema(responses={200: FilterOptionsSerializer, **errors(*AUTH_ERRORS)})
    def get(self, request):
        return Response(selectors.session_filter_options())


class SessionDetailView(JsonAPIView):
    @extend_schema(responses={200: SessionDetailSerializer, **errors(404, *AUTH_ERRORS)})
    def get(self, request, session_id):
        """A session with its alert, stages and executions, score, review and token totals."""
        cursor = event_cursor(session_channel(session_id))  # first: events after the read come again, none lost
        session = selectors.session_detail(session_id=session_id)
        context = {"request": request, "last_event_id": cursor,
                   "chat_available": chat_service.chat_available(session)}
        return Response(SessionDetailSerializer(session, context=context).data)

    @extend_schema(responses={204: None, **errors(404, 409, *AUTH_ERRORS)})
    def delete(self, request, session_id):
        """Delete a finished session (soft delete; a running one must be cancelled first, 409)."""
        session_service.session_soft_delete(session_id=session_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class SessionTimelineView(JsonAPIView):
    """A session's timeline events in order, with the event id to continue from over the WebSocket."""

    @extend_schema(responses={200: TimelineSerializer, **errors(404, *AUTH_ERRORS)})
    def get(self, request, session_id):
        session = session_service.session_get(session_id=session_id)
        cursor = event_cursor(session_channel(session.id))
        return Response(TimelineSerializer({"session_id": session.id, "last_event_id": cursor,
                                            "events": selectors.timeline_events(session)}).data)


class SessionInteractionsView(JsonAPIView):
    """LLM conversations and MCP calls for the debug (trace) view."""

    @extend_schema(responses={200: InteractionsSerializer, **errors(404, *AUTH_ERRORS)})
    def get(self, request, session_id):
        session = session_service.session_get(session_id=session_id)
        return Response(InteractionsSerializer({"session_id": session.id, **selectors.interactions(session)}).data)


class SessionSummaryView(JsonAPIView):
    """Counts of a session's stages, executions, LLM and MCP interactions, errors and chat, with its tokens."""

    @extend_schema(responses={200: SessionSummarySerializer, **errors(404, *AUTH_ERRORS)})
    def get(self, request, session_id):
        session = session_service.session_get(session_id=session_id)
        return Response(SessionSummarySerializer(selectors.session_summary(session)).data)


class SessionCancelView(JsonAPIView):
    """Cancel a session: a queued one at once, a running one at its next step; on a finished session, the chat
    reply in flight. 409 when there is nothing to cancel."""

    @extend_schema(request=None, responses={200: SessionStatusSerializer, **errors(404, 409, *AUTH_ERRORS)})
    def post(self, request, session_id):
        session = session_service.session_cancel(session_id=session_id)
        return Response({"session_id": str(session.id), "status": session.status})


class ChatMessagesView(JsonAPIView):
    """Follow-up questions on a finished session; one reply at a time (409 while one runs)."""

    @extend_schema(responses={200: ChatMessagesSerializer, **errors(404, *AUTH_ERRORS)})
    def get(self, request, session_id):
        session = session_service.session_get(session_id=session_id)
        chat = selectors.chat_messages(session) | {"chat_available": chat_service.chat_available(session)}
        return Response(ChatMessagesSerializer(chat).data)

    @extend_schema(request=ChatMessageInSerializer,
                   responses={202: ChatAcceptedSerializer, **errors(400, 404, 409, 415, *AUTH_ERRORS)})
    def post(self, request, session_id):
        body = ChatMessageInSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        message, stage = chat_service.chat_submit(session_id=session_id, content=body.validated_data["content"],
                                                  author=request_author(request))
        return Response({"session_id": str(stage.session_id), "message_id": str(message.id), "stage_id": stage.id,
                         "status": "submitted"}, status=status.HTTP_202_ACCEPTED)
