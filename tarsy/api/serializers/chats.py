"""Follow-up chat on a finished session: the question body, its acceptance and the conversation so far."""

from __future__ import annotations

from rest_framework import serializers


class ChatMessageInSerializer(serializers.Serializer):
    content = serializers.CharField(allow_blank=False, trim_whitespace=True,
                                    help_text="The question, at most 100 000 characters")


class ChatAcceptedSerializer(serializers.Serializer):
    session_id = serializers.UUIDField()
    message_id = serializers.UUIDField()
    stage_id = serializers.IntegerField()
    status = serializers.CharField()


class ChatMessageSerializer(serializers.Serializer):
    id = serializers.CharField()
    role = serializers.ChoiceField(choices=["user", "assistant"])
    content = serializers.CharField(allow_blank=True)
    author = serializers.CharField(allow_blank=True)
    status = serializers.CharField()
    stage_id = serializers.IntegerField(allow_null=True)
    created_at = serializers.DateTimeField(allow_null=True)


class ChatMessagesSerializer(serializers.Serializer):
    session_id = serializers.UUIDField()
    chat_available = serializers.BooleanField()
    reply_running = serializers.BooleanField()
    messages = ChatMessageSerializer(many=True)
