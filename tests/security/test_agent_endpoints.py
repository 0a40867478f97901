"""Agent endpoints cannot point inside (``agents/endpoints.py``): refused when saved (agent page, admin, commands)
and again when a request is sent, after DNS resolution, with the production default of
``INBOX_AGENT_ALLOWED_NETWORKS`` (nothing allowed). The suite itself allows loopback for its agents
(``tests/conftest.py``), so each test here that needs the default sets it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings

from agents.models import Agent
from inbox.models import ApiToken
from tests.agent_servers import Reply
from tests.helpers.starts import start_run

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION = override_settings(INBOX_AGENT_ALLOWED_NETWORKS=[])

INTERNAL = [
    "http://127.0.0.1:5432/",
    "http://169.254.169.254/latest/meta-data/",
    "http://[::1]:6379/",
    "http://localhost:8001/",  # a name that resolves to loopback
    "http://10.1.2.3/agent",
    "http://192.168.0.10/agent",
    "http://172.16.0.1/agent",
    "http://100.100.100.200/latest/meta-data/",  # shared address space (a cloud's metadata)
    "http://[fe80::1]/",
    "http://[fd00:ec2::254]/",
    "http://0.0.0.0:8000/",
    "http://[::ffff:127.0.0.1]:8000/",
    "http://2130706433/",  # 127.0.0.1 as one decimal number
    "https://bot:pw@93.184.215.14/run",  # a user part, on a public address
]


def settings_form(agent: Agent, endpoint: str) -> dict:
    return {
        "default_ttl": "1d",
        "approvals_required": "1",
        "teams": [team.pk for team in agent.teams.all()],
        "endpoint_url": endpoint,
        "auth_header_name": "Authorization",
        "auth_header_value": "",
    }


@PRODUCTION
@pytest.mark.parametrize("endpoint", INTERNAL)
def test_the_agent_page_refuses_an_internal_endpoint_naming_the_field(client, staff, agent, endpoint):
    client.force_login(staff)
    response = client.post("/agents/mailer/settings/", settings_form(agent.agent, endpoint))
    assert response.status_code == 400
    form = response.context["settings_form"]
    assert "endpoint_url" in form.errors, form.errors
    assert Agent.objects.get(pk=agent.agent.pk).endpoint_url == "http://127.0.0.1:9/agent"


@PRODUCTION
@pytest.mark.parametrize("endpoint", ["http://127.0.0.1:5432/", "http://169.254.169.254/", "http://u:p@[::1]:6379/"])
def test_the_admin_refuses_an_internal_endpoint(client, staff, agent, endpoint):
    from tests.inbox.test_admin import agent_form_data

    client.force_login(staff)
    response = client.post(
        f"/admin/agents/agent/{agent.agent.pk}/change/", agent_form_data(agent.agent, endpoint_url=endpoint)
    )
    assert response.status_code == 200 and "endpoint_url" in response.context["adminform"].form.errors
    assert Agent.objects.get(pk=agent.agent.pk).endpoint_url == "http://127.0.0.1:9/agent"


@PRODUCTION
@pytest.mark.parametrize("endpoint", ["http://127.0.0.1:5432/", "http://localhost:8001/", "http://u:p@10.0.0.1/"])
def test_the_commands_refuse_an_internal_endpoint(db, endpoint):
    with pytest.raises(CommandError, match="endpoint"):
        call_command("agent_create", "sneaky", "--endpoint", endpoint)
    with pytest.raises(CommandError, match="refused"):
        call_command("demo_setup", "--endpoint", endpoint)
    assert not Agent.objects.exists()


@PRODUCTION
def test_a_public_endpoint_and_a_name_that_does_not_resolve_yet_are_saved(client, staff, agent):
    client.force_login(staff)
    for endpoint in ("https://93.184.215.14/agent", "https://agents.invalid/run"):
        assert client.post("/agents/mailer/settings/", settings_form(agent.agent, endpoint)).status_code == 302
        assert Agent.objects.get(pk=agent.agent.pk).endpoint_url == endpoint


@override_settings(INBOX_AGENT_ALLOWED_NETWORKS=["127.0.0.0/8"])
def test_a_named_network_is_allowed(client, staff, agent):
    client.force_login(staff)
    assert (
        client.post("/agents/mailer/settings/", settings_form(agent.agent, "http://127.0.0.1:8001/")).status_code == 302
    )
    assert client.post("/agents/mailer/settings/", settings_form(agent.agent, "http://[::1]:8001/")).status_code == 400


def test_the_default_allows_loopback_only_in_the_embedded_default():
    def allowed(**env: str) -> list:
        environ = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "INBOX_AGENT_ALLOWED_NETWORKS")}
        code = "import json; from config import settings; print(json.dumps(settings.INBOX_AGENT_ALLOWED_NETWORKS))"
        out = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, env={**environ, **env}, capture_output=True, text=True, check=True
        )
        return json.loads(out.stdout.strip().splitlines()[-1])

    assert allowed() == ["127.0.0.0/8", "::1/128"]  # make run: the demo agent on 127.0.0.1
    assert allowed(DATABASE_URL="postgres://inbox@127.0.0.1:5432/inbox") == []  # production


# --- at send time -------------------------------------------------------------------------------------------


def start(client, slug: str, key: str):
    return start_run(client, slug, {"message": "hello"}, HTTP_AUTHORIZATION=f"Token {key}")


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_an_endpoint_stored_before_the_check_is_refused_when_sent(client, make_agent, alice, scripted, host):
    server = scripted(Reply(sse=[]))
    port = server.url.rsplit(":", 1)[1].strip("/")
    make_agent("inside", endpoint=f"http://{host}:{port}/")  # written straight to the database
    _, key = ApiToken.issue(alice)
    with PRODUCTION:
        response = start(client, "inside", key)
    assert response.status_code == 502
    assert "loopback" in response.json()["detail"]
    assert server.received == []  # nothing reached the listener


def test_a_send_resolves_the_name_once_and_connects_to_the_checked_address(
    client, make_agent, alice, scripted, monkeypatch
):
    finished = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}
    server = scripted(Reply(sse=[{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}, finished]))
    port = server.url.rsplit(":", 1)[1].strip("/")
    make_agent("named", endpoint=f"http://localhost:{port}/")
    _, key = ApiToken.issue(alice)
    lookups: list[str] = []
    real = socket.getaddrinfo

    def counting(host, *args, **kwargs):
        lookups.append(host)
        return [info for info in real(host, *args, **kwargs) if info[0] == socket.AF_INET]

    monkeypatch.setattr(socket, "getaddrinfo", counting)
    response = start(client, "named", key)
    assert len(server.received) == 1, response.content
    assert lookups.count("localhost") == 1  # no second resolution that could answer differently
    assert server.headers[0]["Host"] == f"localhost:{port}"


def test_a_non_staff_approver_never_reads_the_remote_reply(client, make_agent, alice, scripted):
    server = scripted(Reply(status=500, body=b"-ERR secret internal banner " + b"x" * 400, content_type="text/plain"))
    make_agent("loud", endpoint=server.url)
    _, key = ApiToken.issue(alice)
    response = start(client, "loud", key)
    assert response.status_code == 502
    assert "secret internal banner" not in response.content.decode()
    assert "HTTP 500" in response.json()["detail"]


# --- team webhooks: the same rule, as staff set their URLs too -------------------------------------------------


@PRODUCTION
@pytest.mark.parametrize("url", ["http://127.0.0.1:6379/", "http://169.254.169.254/latest/", "http://u:p@10.0.0.1/"])
def test_the_admin_refuses_an_internal_webhook_url(client, staff, team, url):
    from inbox.models import TeamWebhook

    client.force_login(staff)
    response = client.post(
        "/admin/inbox/teamwebhook/add/", {"team": team.pk, "url": url, "secret": "s3cret", "enabled": "on"}
    )
    assert response.status_code == 200 and "url" in response.context["adminform"].form.errors
    assert not TeamWebhook.objects.exists()


def test_a_webhook_stored_before_the_check_is_refused_when_sent_and_nothing_is_received(team):
    """A loopback listener stands for the internal service; with the production default it receives nothing, the
    delivery is not retried, and the failure is in the audit log with the reason."""
    from inbox.models import AuditEvent, TeamWebhook
    from inbox.teams.tasks import deliver_webhook
    from tests.inbox.test_notifications import Receiver

    listener = Receiver([200]).start()
    try:
        webhook = TeamWebhook.objects.create(team=team, url=listener.url, secret="s3cret")
        with PRODUCTION:
            assert deliver_webhook.apply(args=[webhook.pk, "{}"]).get() == "refused"
        assert listener.bodies == []
        failure = AuditEvent.objects.get(verb="webhook.failed")
        assert "loopback address" in failure.data["error"]
        # Allowed (as the suite allows loopback), the same webhook is delivered to the address it resolved.
        assert deliver_webhook.apply(args=[webhook.pk, "{}"]).get() == "delivered"
        assert listener.bodies == [b"{}"]
        assert listener.headers[0]["Host"] == listener.url.split("/")[2]
    finally:
        listener.server.shutdown()
