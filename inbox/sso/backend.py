"""The OpenID Connect authentication backend: mozilla-django-oidc's code flow, with the endpoints from the
provider's discovery document, the ID token's issuer and audience checked, and users keyed by (issuer, sub)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import SuspiciousOperation
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from inbox.sso import config
from inbox.sso.services import sso_login
from inbox.teams.backends import signed_in


class InboxOIDCBackend(OIDCAuthenticationBackend):
    get_settings = staticmethod(config.oidc_setting)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Nothing is looked up here: Django builds every backend for each password login too, and those must
        # not depend on the provider being reachable. Endpoints are read on use (properties below).
        self.UserModel = get_user_model()

    OIDC_OP_TOKEN_ENDPOINT = property(lambda self: config.oidc_setting("OIDC_OP_TOKEN_ENDPOINT"))
    OIDC_OP_USER_ENDPOINT = property(lambda self: config.oidc_setting("OIDC_OP_USER_ENDPOINT"))
    OIDC_OP_JWKS_ENDPOINT = property(lambda self: config.oidc_setting("OIDC_OP_JWKS_ENDPOINT"))
    OIDC_RP_CLIENT_ID = property(lambda self: config.oidc_setting("OIDC_RP_CLIENT_ID"))
    OIDC_RP_CLIENT_SECRET = property(lambda self: config.oidc_setting("OIDC_RP_CLIENT_SECRET"))
    OIDC_RP_SIGN_ALGO = property(lambda self: config.oidc_setting("OIDC_RP_SIGN_ALGO", "RS256"))
    OIDC_RP_IDP_SIGN_KEY = property(lambda self: config.oidc_setting("OIDC_RP_IDP_SIGN_KEY", None))

    def authenticate(self, request, **kwargs: Any):
        if not config.sso_enabled():
            return None
        return super().authenticate(request, **kwargs)

    def verify_token(self, token: str, **kwargs: Any) -> dict:
        payload = super().verify_token(token, **kwargs)
        if str(payload.get("iss", "")).rstrip("/") != config.issuer():
            raise SuspiciousOperation("The ID token was issued by another provider.")
        audience = payload.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if self.OIDC_RP_CLIENT_ID not in audiences:
            raise SuspiciousOperation("The ID token is not meant for this client.")
        return payload

    def get_or_create_user(self, access_token: str, id_token: str, payload: dict):
        userinfo = self.get_userinfo(access_token, id_token, payload)
        if str(userinfo.get("sub", payload["sub"])) != str(payload["sub"]):
            raise SuspiciousOperation("The userinfo answer is about another subject.")
        return sso_login(issuer=config.issuer(), claims={**payload, **userinfo})

    def get_user(self, user_id: Any):
        try:
            return signed_in(self.UserModel.objects.all()).get(pk=user_id)
        except self.UserModel.DoesNotExist:
            return None
