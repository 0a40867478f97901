"""Let pages' forms end at the SSO provider: logging out is a form whose redirect goes on to the provider's
end-session endpoint, and browsers hold that redirect to the page's CSP ``form-action``."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse


def provider_origin() -> str | None:
    issuer = getattr(settings, "OIDC_ISSUER", "")
    if not issuer:
        return None
    parts = urlsplit(issuer)
    return f"{parts.scheme}://{parts.netloc}"


class ProviderFormActionMiddleware:
    """Adds the provider's origin to ``form-action`` (read per request, so turning SSO on needs no CSP edit).
    Sits inside django-csp's middleware, which merges ``response._csp_update`` into the policy."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        origin = provider_origin()
        if origin:
            update = dict(getattr(response, "_csp_update", None) or {})
            update["form-action"] = [*update.get("form-action", []), origin]
            response._csp_update = update  # type: ignore[attr-defined]
        return response
