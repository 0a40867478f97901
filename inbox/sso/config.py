"""OpenID Connect configuration: the provider's endpoints come from its discovery document
(``<OIDC_ISSUER>/.well-known/openid-configuration``), fetched on first use and kept; everything else from
settings. mozilla-django-oidc reads its settings through ``oidc_setting``."""

from __future__ import annotations

import threading
from typing import Any

import requests
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from mozilla_django_oidc.utils import import_from_settings

# mozilla-django-oidc setting → discovery document key.
DISCOVERED = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
}
_lock = threading.Lock()
_documents: dict[str, dict[str, Any]] = {}


def sso_enabled() -> bool:
    return bool(getattr(settings, "OIDC_ISSUER", ""))


def issuer() -> str:
    return settings.OIDC_ISSUER.rstrip("/")


def discovery() -> dict[str, Any]:
    """The provider's discovery document (cached per issuer for the life of the process)."""
    if not sso_enabled():
        raise ImproperlyConfigured("Single sign-on is off: OIDC_ISSUER is not set.")
    key = issuer()
    with _lock:
        if key not in _documents:
            response = requests.get(f"{key}/.well-known/openid-configuration", timeout=settings.OIDC_TIMEOUT)
            response.raise_for_status()
            document = response.json()
            if document.get("issuer", "").rstrip("/") != key:
                raise ImproperlyConfigured(
                    f"The provider at {key} names itself {document.get('issuer')!r}: OIDC_ISSUER must match it."
                )
            _documents[key] = document
        return _documents[key]


def forget_discovery() -> None:
    with _lock:
        _documents.clear()


def oidc_setting(name: str, *default: Any) -> Any:
    if name in DISCOVERED:
        return discovery()[DISCOVERED[name]]
    return import_from_settings(name, *default)
