"""Run the test OpenID Connect provider, or change its users: a separate process on its own SQLite file.

    python -m tests.sso_provider.run serve PORT REDIRECT_URI [REDIRECT_URI...]
    python -m tests.sso_provider.run user USERNAME PASSWORD EMAIL [GROUP...]   # create or reset, with exactly these groups
    python -m tests.sso_provider.run allow URI [URI...]   # also accept these redirect / post-logout URIs

Environment: SSO_PROVIDER_DB (SQLite path), SSO_PROVIDER_KEY (RSA private key, PEM). The OIDC client is
``inbox-client`` / ``inbox-secret`` (confidential, authorization code, RS256, no consent screen)."""

from __future__ import annotations

import os
import sys

CLIENT_ID = "inbox-client"
CLIENT_SECRET = "inbox-secret"


def _setup() -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.sso_provider.settings"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)


def serve(port: int, redirect_uris: list[str]) -> None:
    _setup()
    from django.core.servers.basehttp import WSGIServer, run
    from django.core.wsgi import get_wsgi_application
    from oauth2_provider.models import Application

    app, _ = Application.objects.get_or_create(
        client_id=CLIENT_ID,
        defaults={
            "name": "Approval Inbox",
            "client_type": Application.CLIENT_CONFIDENTIAL,
            "authorization_grant_type": Application.GRANT_AUTHORIZATION_CODE,
            "client_secret": CLIENT_SECRET,
            "algorithm": Application.RS256_ALGORITHM,
            "skip_authorization": True,
        },
    )
    app.redirect_uris = " ".join(redirect_uris)
    app.post_logout_redirect_uris = " ".join(redirect_uris)
    app.save(update_fields=["redirect_uris", "post_logout_redirect_uris"])
    print(f"provider ready on 127.0.0.1:{port}", flush=True)
    run("127.0.0.1", port, get_wsgi_application(), threading=True, server_cls=WSGIServer)


def user(username: str, password: str, email: str, groups: list[str]) -> None:
    _setup()
    from django.contrib.auth.models import Group, User

    account, _ = User.objects.get_or_create(username=username)
    account.email = email
    account.first_name = username.capitalize()
    account.set_password(password)
    account.save()
    account.groups.set([Group.objects.get_or_create(name=name)[0] for name in groups])


def allow(uris: list[str]) -> None:
    _setup()
    from oauth2_provider.models import Application

    app = Application.objects.get(client_id=CLIENT_ID)
    app.redirect_uris = " ".join(dict.fromkeys(app.redirect_uris.split() + uris))
    app.post_logout_redirect_uris = " ".join(dict.fromkeys(app.post_logout_redirect_uris.split() + uris))
    app.save(update_fields=["redirect_uris", "post_logout_redirect_uris"])


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    if command == "serve":
        serve(int(args[0]), args[1:])
    elif command == "allow":
        allow(args)
    elif command == "user":
        user(args[0], args[1], args[2], args[3:])
    else:
        raise SystemExit(__doc__)
