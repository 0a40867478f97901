"""A real OpenID Connect provider for the single sign-on tests: django-oauth-toolkit in a small Django project
of its own, run in a separate process on loopback (tests/sso_provider/run.py). Not the inbox's settings."""

from __future__ import annotations

import os
from pathlib import Path

HERE = Path(__file__).resolve().parent
SECRET_KEY = "sso-provider-for-tests-only"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "oauth2_provider",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
ROOT_URLCONF = "tests.sso_provider.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [HERE / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.environ["SSO_PROVIDER_DB"]}}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
USE_TZ = True
LOGIN_URL = "/accounts/login/"
# The provider's session cookie must not overwrite the inbox's on the same host (127.0.0.1).
SESSION_COOKIE_NAME = "provider_sessionid"
CSRF_COOKIE_NAME = "provider_csrftoken"
OAUTH2_PROVIDER = {
    "OIDC_ENABLED": True,
    "OIDC_RSA_PRIVATE_KEY": Path(os.environ["SSO_PROVIDER_KEY"]).read_text(),
    "OIDC_RP_INITIATED_LOGOUT_ENABLED": True,
    "OIDC_RP_INITIATED_LOGOUT_ALWAYS_PROMPT": False,
    "PKCE_REQUIRED": True,
    "ALLOWED_REDIRECT_URI_SCHEMES": ["http", "https"],
    "OAUTH2_VALIDATOR_CLASS": "tests.sso_provider.validator.GroupsValidator",
    "SCOPES": {
        "openid": "OpenID Connect",
        "email": "Your email",
        "profile": "Your name",
        "groups": "Your groups",
    },
}
