"""Shapes of investigation memories and of their corrections."""

from __future__ import annotations

from rest_framework import serializers

from agents.memory.reflection import MAX_MEMORY_CHARS
from agents.memory.scope import LABEL_KEYS
from tarsy.models import Memory, MemoryChange, MemoryKind, MemoryState


class MemorySerializer(serializers.ModelSerializer):
    session_id = serializers.UUIDField(allow_null=True, read_only=True)

    class Meta:
        model = Memory
        fields = ["id", "kind", "text", "alert_type", "chain_id", "labels", "session_id", "source_sessions",
                  "evidence_ids", "confidence", "state", "retired_reason", "review_reason", "embedding_model",
                  "created_at", "confirmed_at", "updated_at", "last_used_at", "use_count"]


class MemoryChangeSerializer(serializers.ModelSerializer):
    """One recorded change: who, when, why, and the changed fields before and after."""

    class Meta:
        model = MemoryChange
        fields = ["id", "action", "actor", "reason", "before", "after", "at"]


class MemoryDetailSerializer(MemorySerializer):
    """A memory with its record of changes, newest first."""

    changes = MemoryChangeSerializer(many=True, read_only=True)

    class Meta(MemorySerializer.Meta):
        fields = [*MemorySerializer.Meta.fields, "changes"]


class MemoryQuerySerializer(serializers.Serializer):
    """The list's filters: `search` matches every word of the text (case-insensitive)."""

    search = serializers.CharField(required=False, allow_blank=True, max_length=500)
    kind = serializers.ChoiceField(choices=MemoryKind.choices, required=False)
    state = serializers.ChoiceField(choices=MemoryState.choices, required=False)
    alert_type = serializers.CharField(required=False, max_length=200)
    session = serializers.UUIDField(required=False)


class MemoryPatchSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=MemoryKind.choices, required=False)
    text = serializers.CharField(required=False, max_length=MAX_MEMORY_CHARS)
    confidence = serializers.FloatField(required=False, min_value=0, max_value=1)
    labels = serializers.DictField(child=serializers.CharField(max_length=200), required=False)
    state = serializers.ChoiceField(choices=MemoryState.choices, required=False,
                                    help_text="Only the current state: retire and reactivate are their own steps")

    def validate_labels(self, value):
        unknown = sorted(set(value) - set(LABEL_KEYS))
        if unknown:
            raise serializers.ValidationError(f"unknown label(s) {', '.join(unknown)}; one of {', '.join(LABEL_KEYS)}")
        return value


class MemoryRetireSerializer(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True, max_length=500)


class MemoryReactivateSerializer(serializers.Serializer):
    """Bringing a retired memory back is a decision someone explains."""

    reason = serializers.CharField(max_length=500)
