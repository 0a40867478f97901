"""Sends over https check the agent's (or the team webhook's) certificate. One certificate context serves every send
of a process (``agents.endpoints.tls_context``: building one per send cost 22 ms of CPU a resume); it refuses a
certificate no trusted root signed, at the first send and at every one after, before any request is made. The
server here is a real HTTPS server on loopback with a self-signed certificate."""

from __future__ import annotations

import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.client import AgentCallError, run_agent
from agents.models import Agent
from inbox.models import Notice, TeamWebhook
from inbox.teams.notifications import announce_runs
from inbox.teams.tasks import send_notices
from tests.agent_servers import Reply, ScriptedServer
from tests.agents.test_agent_reply_bounds import RUN_INPUT
from tests.inbox.test_notifications import SECRET, ingest_items, runs_of


def _self_signed_context(directory: Path) -> ssl.SSLContext:
    key, cert = directory / "key.pem", directory / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"]
        + ["-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return context


@pytest.fixture
def self_signed(tmp_path) -> Iterator[ScriptedServer]:
    """An agent on https://127.0.0.1 that would answer a finished run, its certificate signed by itself."""
    started = {"type": "RUN_STARTED", "threadId": "t-1", "runId": "r-1"}
    finished = {"type": "RUN_FINISHED", "threadId": "t-1", "runId": "r-1"}
    server = ScriptedServer([Reply(sse=[started, finished])], tls=_self_signed_context(tmp_path)).start()
    yield server
    server.stop()


def test_an_agent_whose_certificate_no_trusted_root_signed_is_refused_at_every_send(self_signed):
    agent = Agent(slug="self-signed", name="Self-signed", endpoint_url=self_signed.url)
    for _ in range(3):  # the context built for the first send refuses the later ones too
        with pytest.raises(AgentCallError) as caught:
            run_agent(agent=agent, run_input=RUN_INPUT)
        assert "CERTIFICATE_VERIFY_FAILED" in caught.value.message
        assert (caught.value.kind, caught.value.accepted, caught.value.retryable) == ("transport", False, True)
    assert self_signed.received == []


def test_a_team_webhook_whose_certificate_no_trusted_root_signed_is_not_sent_and_says_why(
    self_signed, agent, ingest, team
):
    TeamWebhook.objects.create(team=team, url=self_signed.url, secret=SECRET)
    announce_runs(runs_of(ingest_items(agent, ingest)))
    send_notices("webhook")
    notice = Notice.objects.get()
    assert notice.status == "retrying"
    assert "CERTIFICATE_VERIFY_FAILED" in notice.last_error
    assert self_signed.received == []
