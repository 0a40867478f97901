"""Ingest authentication: ``Authorization: Bearer <agent token>``; only the token's hash is stored."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions, permissions
from rest_framework.request import Request

from agents.models import Agent, AgentToken, hash_token
from agents.throttles import failing


def request_agent(request: Request) -> Agent:
    """The agent a request authenticated as with ``AgentTokenAuthentication`` (views behind ``IsAgent``)."""
    if not isinstance(request.auth, Agent):
        raise exceptions.NotAuthenticated("Missing 'Authorization: Bearer <agent token>' header.")
    return request.auth


class IsAgent(permissions.BasePermission):
    """Views for agents only: the request authenticated with an agent token."""

    def has_permission(self, request: Request, view: object) -> bool:
        return isinstance(request.auth, Agent)


class AgentTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            raise exceptions.NotAuthenticated("Missing 'Authorization: Bearer <agent token>' header.")
        scheme, _, raw = header.partition(" ")
        if scheme.lower() != "bearer" or not raw.strip():
            raise exceptions.AuthenticationFailed("Use 'Authorization: Bearer <agent token>'.")
        token = AgentToken.objects.select_related("agent").filter(token_hash=hash_token(raw.strip())).first()
        if token is None:
            raise failing(request, exceptions.AuthenticationFailed("Unknown agent token."))
        if token.revoked_at is not None:
            raise failing(request, exceptions.AuthenticationFailed("This agent token was revoked."))
        if not token.agent.enabled:
            raise exceptions.PermissionDenied(f"Agent {token.agent.slug!r} is disabled.")
        now = timezone.now()
        if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
            AgentToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return (None, token.agent)

    def authenticate_header(self, request) -> str:
        return 'Bearer realm="agent ingest"'


class AgentTokenScheme(OpenApiAuthenticationExtension):
    """Describes the agent token in the OpenAPI document (a bearer scheme on the ingest endpoints)."""

    target_class = AgentTokenAuthentication
    name = "agentToken"

    def get_security_definition(self, auto_schema) -> dict:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An agent token from `manage.py agent_create` or `agent_token` (only its hash is stored).",
        }
