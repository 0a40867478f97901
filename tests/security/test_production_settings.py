"""Production-safe settings: the documented environment passes `check --deploy`, an unset DEBUG means no debug
page, and the API docs render with nothing from outside the machine."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]
# Never reach another machine from a test: the database and Redis stay the test run's own.
NOT_IN_TESTS = {"DATABASE_URL", "REDIS_URL"}


def documented_production_env() -> dict[str, str]:
    env = {}
    for line in (ROOT / "docs" / "production.env").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, value = line.partition("=")
            if name not in NOT_IN_TESTS:
                env[name] = value
    return env


def base_env() -> dict[str, str]:
    dropped = {"DEBUG", "DJANGO_SETTINGS_MODULE", "DJANGO_ALLOW_ASYNC_UNSAFE"}  # the last one is the test run's
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env["DJANGO_SETTINGS_MODULE"] = "config.settings"
    return env


def test_check_deploy_is_clean_with_the_documented_production_environment():
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=base_env() | documented_production_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_without_those_variables_check_deploy_names_what_is_missing():
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=base_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "SECURE_HSTS_SECONDS" in result.stderr + result.stdout


def test_an_unset_debug_shows_no_debug_page(tmp_path):
    """A real server started with no DEBUG in its environment answers an unknown URL with a plain 404."""
    port = free_port()
    env = base_env() | {"DATABASE_URL": "postgres://inbox:s3cret-password@127.0.0.1:1/nothing"}
    server = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "config.asgi:application", "--host", "127.0.0.1", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/no-such-page/", timeout=5)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or server.poll() is not None:
                    pytest.fail("the server did not start: " + server.stderr.read().decode()[-2000:])
                time.sleep(0.2)
        assert response.status_code == 404
        assert "URLconf" not in response.text and "s3cret-password" not in response.text
        # A page that needs the (unreachable) database answers 503 without showing settings either.
        failing = httpx.get(f"http://127.0.0.1:{port}/inbox/", cookies={"sessionid": "x" * 32}, timeout=30)
        assert failing.status_code == 503
        assert "s3cret-password" not in failing.text and "Traceback" not in failing.text
    finally:
        server.terminate()
        server.wait(timeout=20)


@pytest.mark.browser
def test_the_api_docs_render_with_nothing_from_outside(login, alice, live_asgi):
    page = login(alice)
    outside: list[str] = []

    def only_loopback(route) -> None:
        if route.request.url.startswith(live_asgi):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    page.context.route("**/*", only_loopback)
    page.goto("/api/docs/")
    page.wait_for_selector(".swagger-ui .info .title")
    assert "Approval Inbox API" in page.inner_text(".swagger-ui .info .title")
    assert page.locator(".opblock").count() > 5
    assert outside == []
