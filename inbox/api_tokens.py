"""Approvers' API tokens: ``Authorization: Token <key>``, stored as SHA-256 only (like agent tokens)."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from agents.models import hash_token
from agents.throttles import failing
from inbox.models import ApiToken


class ApiTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Token"

    def authenticate(self, request):

        header = authentication.get_authorization_header(request).decode("latin-1")
        scheme, _, raw = header.partition(" ")
        if scheme.lower() != self.keyword.lower():
            return None  # not ours: session authentication may still apply
        raw = raw.strip()
        if not raw or " " in raw:
            raise failing(request, exceptions.AuthenticationFailed("Use 'Authorization: Token <key>'."))
        token = ApiToken.objects.select_related("user").filter(token_hash=hash_token(raw)).first()
        if token is None or token.revoked_at is not None:
            raise failing(request, exceptions.AuthenticationFailed("Invalid or revoked token."))
        if not token.user.is_active:
            raise failing(request, exceptions.AuthenticationFailed("User inactive or deleted."))
        now = timezone.now()
        if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return (token.user, token)

    def authenticate_header(self, request) -> str:
        return self.keyword


class ApiTokenScheme(OpenApiAuthenticationExtension):
    target_class = ApiTokenAuthentication
    name = "tokenAuth"

    def get_security_definition(self, auto_schema) -> dict:
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "`Token <key>`: an approver's API token (admin → API tokens, or `manage.py api_token`). "
            "Only its hash is stored; the key is shown once.",
        }
