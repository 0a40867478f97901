"""Login and logout with single sign-on beside (or instead of) local passwords."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from mozilla_django_oidc import views as oidc_views

from inbox.sso import config


class SSOAuthenticate(oidc_views.OIDCAuthenticationRequestView):
    """Start the code flow (``/oidc/authenticate/``); 404 while SSO is off."""

    get_settings = staticmethod(config.oidc_setting)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super(oidc_views.OIDCAuthenticationRequestView, self).__init__(*args, **kwargs)

    def get(self, request: HttpRequest) -> HttpResponse:
        if not config.sso_enabled():
            raise Http404("Single sign-on is not configured.")
        self.OIDC_OP_AUTH_ENDPOINT = config.oidc_setting("OIDC_OP_AUTHORIZATION_ENDPOINT")
        self.OIDC_RP_CLIENT_ID = config.oidc_setting("OIDC_RP_CLIENT_ID")
        return super().get(request)


class SSOCallback(oidc_views.OIDCAuthenticationCallbackView):
    get_settings = staticmethod(config.oidc_setting)

    def get(self, request: HttpRequest) -> HttpResponse:
        if not config.sso_enabled():
            raise Http404("Single sign-on is not configured.")
        return super().get(request)


def _context() -> dict[str, Any]:
    return {"sso_enabled": config.sso_enabled(), "sso_name": settings.OIDC_PROVIDER_NAME}


class LoginView(auth_views.LoginView):
    """The login page: the password form (unless ``INBOX_LOCAL_LOGIN=0``) and the SSO button (when
    ``OIDC_ISSUER`` is set)."""

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        return {**super().get_context_data(**kwargs), **_context(), "sso_failed": "sso" in self.request.GET}

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if settings.INBOX_LOCAL_LOGIN:
            return super().dispatch(request, *args, **kwargs)
        if request.user.is_authenticated and request.method == "GET":
            return HttpResponseRedirect(self.get_success_url())
        status = 403 if request.method == "POST" else 200
        context = {
            **_context(),
            "next": request.GET.get("next", ""),
            "password_refused": request.method == "POST",
            "sso_failed": "sso" in request.GET,
        }
        return render(request, "sso/login.html", context, status=status)


class LogoutView(auth_views.LogoutView):
    """Log out here, and — for an SSO session — at the provider too (RP-initiated logout) when it offers it."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        id_token = request.session.get("oidc_id_token")
        response = super().post(request, *args, **kwargs)
        if not id_token or not config.sso_enabled():
            return response
        try:
            end_session = config.discovery().get("end_session_endpoint")
        except Exception:
            return response
        if not end_session:
            return response
        query = urlencode(
            {
                "id_token_hint": id_token,
                "client_id": settings.OIDC_RP_CLIENT_ID,
                "post_logout_redirect_uri": request.build_absolute_uri(reverse("login")),
            }
        )
        return HttpResponseRedirect(f"{end_session}?{query}")
