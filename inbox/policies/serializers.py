"""The policy API's shape (camelCase, like the rest of the API's own fields): one serializer reads a
request's fields (agent and team by slug and name) and writes a policy with its stats."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Group
from rest_framework import serializers

from agents.models import Agent
from inbox.policies.models import Policy


class PolicySerializer(serializers.ModelSerializer):
    agent = serializers.SlugRelatedField(
        slug_field="slug", queryset=Agent.objects.all(), allow_null=True, required=False, help_text="Agent slug."
    )
    team = serializers.SlugRelatedField(
        slug_field="name", queryset=Group.objects.all(), allow_null=True, required=False, help_text="Team name."
    )
    toolName = serializers.CharField(source="tool_name", max_length=255, allow_blank=True, required=False)
    matchSchema = serializers.JSONField(
        source="match_schema", allow_null=True, required=False, help_text="JSON Schema the subject must satisfy."
    )
    routeTeam = serializers.SlugRelatedField(
        source="route_team", slug_field="name", queryset=Group.objects.all(), allow_null=True, required=False
    )
    countsAsApprover = serializers.BooleanField(source="counts_as_approver", required=False)
    actor = serializers.CharField(source="actor_label", read_only=True)
    createdAt = serializers.DateTimeField(source="created_at", read_only=True)
    updatedAt = serializers.DateTimeField(source="updated_at", read_only=True)
    url = serializers.SerializerMethodField()

    class Meta:
        model = Policy
        fields = [
            "id",
            "name",
            "description",
            "agent",
            "team",
            "position",
            "enabled",
            "reason",
            "toolName",
            "subject",
            "matchSchema",
            "action",
            "approvals",
            "routeTeam",
            "countsAsApprover",
            "mode",
            "version",
            "actor",
            "createdAt",
            "updatedAt",
            "url",
        ]
        read_only_fields = ["id", "version"]
        extra_kwargs: dict[str, dict[str, Any]] = {
            "name": {"validators": []}
        }  # uniqueness is the service's rule, reported like the others

    def get_url(self, policy: Policy) -> str:
        request = self.context.get("request")
        path = policy.get_absolute_url()
        return request.build_absolute_uri(path) if request else path

    def service_fields(self) -> dict[str, Any]:
        """The validated fields under their model names, for ``policy_create`` / ``policy_update``."""
        return dict(self.validated_data)


def first_error(errors: dict) -> tuple[str, str]:
    """(field, message) of a serializer's first error, for the API's error body."""
    field, messages = next(iter(errors.items()))
    message = messages[0] if isinstance(messages, list) and messages else messages
    if isinstance(message, dict):
        inner, message = first_error(message)
        field = f"{field}.{inner}"
    return field, str(message)
