"""A real OpenID Connect provider on loopback for the SSO tests: django-oauth-toolkit in a Django project of
its own (tests/sso_provider), started as a separate process, and a client that walks its login pages as a
browser would (the inbox side is Django's test client, whose host is ``testserver``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.conftest import ROOT, free_port
from tests.sso_provider.run import CLIENT_ID, CLIENT_SECRET

RP = "http://testserver"


@dataclass
class Provider:
    url: str
    env: dict[str, str]
    process: subprocess.Popen
    log_path: Path

    @property
    def issuer(self) -> str:
        return f"{self.url}/o"

    def allow(self, *uris: str) -> None:
        """Register more redirect URIs with the provider (a live server's, on its own port)."""
        self._run("allow", *uris)

    def _run(self, *args: str) -> None:
        subprocess.run(
            [sys.executable, "-m", "tests.sso_provider.run", *args],
            cwd=ROOT,
            env=self.env,
            check=True,
            capture_output=True,
        )

    def user(self, username: str, *groups: str, password: str = "provider-pass") -> None:
        """Create or reset a user at the provider with exactly these groups."""
        subprocess.run(
            [
                sys.executable,
                "-m",
                "tests.sso_provider.run",
                "user",
                username,
                password,
                f"{username}@acme.example",
                *groups,
            ],
            cwd=ROOT,
            env=self.env,
            check=True,
            capture_output=True,
        )


@pytest.fixture(scope="session")
def oidc_provider(tmp_path_factory) -> Iterator[Provider]:
    home = tmp_path_factory.mktemp("sso-provider")
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    (home / "key.pem").write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    env = {
        **{name: value for name, value in os.environ.items() if name not in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL")},
        "SSO_PROVIDER_DB": str(home / "provider.sqlite3"),
        "SSO_PROVIDER_KEY": str(home / "key.pem"),
    }
    port = free_port()
    log_path = home / "provider.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.sso_provider.run",
                "serve",
                str(port),
                f"{RP}/oidc/callback/",
                f"{RP}/accounts/login/",
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    provider = Provider(f"http://127.0.0.1:{port}", env, process, log_path)
    deadline = time.monotonic() + 60
    while True:
        try:
            if requests.get(f"{provider.issuer}/.well-known/openid-configuration", timeout=2).status_code == 200:
                break
        except (requests.ConnectionError, requests.Timeout):
            # Not listening yet, or its first answer slower than 2 s on a loaded machine: ask again until the deadline.
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the OIDC provider did not start:\n{log_path.read_text()[-3000:]}")
        time.sleep(0.2)
    yield provider
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()


@pytest.fixture
def sso(db, settings, oidc_provider) -> Iterator[Provider]:
    """The inbox configured for the provider (as OIDC_ISSUER / OIDC_CLIENT_ID / OIDC_CLIENT_SECRET would)."""
    from inbox.sso.config import forget_discovery

    settings.OIDC_ISSUER = oidc_provider.issuer
    settings.OIDC_RP_CLIENT_ID = CLIENT_ID
    settings.OIDC_RP_CLIENT_SECRET = CLIENT_SECRET
    settings.OIDC_PROVIDER_NAME = "ACME"
    forget_discovery()
    yield oidc_provider
    forget_discovery()


class ProviderBrowser:
    """The person's browser at the provider: keeps the provider's cookies, follows redirects while they stay
    on the provider, and hands back the first redirect to the inbox."""

    def __init__(self, provider: Provider) -> None:
        self.provider = provider
        self.session = requests.Session()

    def follow(self, url: str, *, data: dict | None = None) -> requests.Response | str:
        response = (
            self.session.post(url, data=data, allow_redirects=False)
            if data
            else self.session.get(url, allow_redirects=False)
        )
        while response.is_redirect:
            location = requests.compat.urljoin(response.url, response.headers["Location"])
            if not location.startswith(self.provider.url):
                return location  # back to the inbox
            response = self.session.get(location, allow_redirects=False)
        return response

    def sign_in(self, url: str, username: str, password: str = "provider-pass") -> str:
        """Open the authorization URL; sign in on the provider's login page if it shows one; return the
        redirect back to the inbox (its callback URL, with code and state)."""
        answer = self.follow(url)
        if isinstance(answer, str):
            return answer
        assert "ACME identity provider" in answer.text, answer.text[:500]
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', answer.text).group(1)
        next_url = re.search(r'name="next" value="([^"]*)"', answer.text).group(1).replace("&amp;", "&")
        result = self.follow(
            answer.url,
            data={"csrfmiddlewaretoken": token, "username": username, "password": password, "next": next_url},
        )
        assert isinstance(result, str), f"the provider did not send us back: {getattr(result, 'text', '')[:500]}"
        return result


def inbox_path(url: str) -> str:
    parts = urlsplit(url)
    assert f"{parts.scheme}://{parts.netloc}" == RP, url
    return parts.path + (f"?{parts.query}" if parts.query else "")


def sso_login(client, provider: Provider, username: str, browser: ProviderBrowser | None = None):
    """Log ``client`` into the inbox through the provider as ``username``; returns the callback's response."""
    browser = browser or ProviderBrowser(provider)
    start = client.get("/oidc/authenticate/?next=/inbox/")
    assert start.status_code == 302, start
    callback = browser.sign_in(start["Location"], username)
    return client.get(inbox_path(callback))
