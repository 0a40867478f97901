"""Round trips through real AG-UI framework integrations (issue 14), each agent server a subprocess of
its framework's own venv (``.venv/frameworks/<name>``, built by ``make frameworks-venvs`` from
``requirements-frameworks-<name>.txt``): those packages pin versions the inbox's venv cannot take.

These tests run with ``make test-frameworks`` (which sets ``INBOX_FRAMEWORK_TESTS=1``); plain ``make test``
leaves them out. A framework whose venv is missing is skipped with the command that builds it (in CI a
skip is a failure).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from tests.agent_servers import AgentProcess
from tests.conftest import ROOT

collect_ignore_glob = [] if os.environ.get("INBOX_FRAMEWORK_TESTS") == "1" else ["test_*.py"]

VENVS = ROOT / ".venv" / "frameworks"
# No test may need the internet: the agents' packages are told to stay offline.
OFFLINE_ENV = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "OTEL_SDK_DISABLED": "true",
    "CREWAI_DISABLE_TELEMETRY": "true",
    "CREWAI_DISABLE_TRACKING": "true",
    "CREWAI_TRACING_ENABLED": "false",
    "HF_HUB_OFFLINE": "1",
    "GOOGLE_GENAI_USE_VERTEXAI": "false",
    "GOOGLE_API_KEY": "offline-test-key",
    "NO_PROXY": "*",
}


def framework_python(name: str) -> str:
    python = VENVS / name / "bin" / "python"
    if not python.exists():
        pytest.skip(f"{name}'s venv is missing: run `make frameworks-venvs FRAMEWORKS={name}`")
    return str(python)


def start_framework_server(name: str, module: str, tmp_path_factory) -> AgentProcess:
    server = AgentProcess(
        module=module,
        python=framework_python(name),
        env=OFFLINE_ENV,
        log_dir=tmp_path_factory.mktemp(name),
    )
    return server.start(timeout=300)  # crewai alone imports in ~25-60 s on a busy 2-core machine


@dataclass
class RoundTrip:
    """The inbox side of one round trip: start a run on the agent, decide its item, send the resume."""

    client: object
    slug: str

    def start(self, message: str, thread_id: str | None = None) -> dict:
        body = {"message": message} | ({"threadId": thread_id} if thread_id else {})
        response = self.client.post(
            f"/api/v1/agents/{self.slug}/runs", data=json.dumps(body), content_type="application/json"
        )
        assert response.status_code == 201, response.content
        return response.json()

    def decide(self, item_id: int, status: str, payload: dict | None = None) -> dict:
        body = {"status": status} | ({"payload": payload} if payload is not None else {})
        response = self.client.post(
            f"/api/v1/items/{item_id}/decision", data=json.dumps(body), content_type="application/json"
        )
        assert response.status_code in (200, 201), response.content
        return response.json()

    def resume(self, run_pk: int) -> str:
        from inbox.models import Resume
        from inbox.resumes.services import resume_dispatch

        return resume_dispatch(resume_id=Resume.objects.get(run_id=run_pk).pk)

    def conformance(self) -> dict[str, set[str]]:
        """The agent's conformance report as {behaviour: variants seen} (through the API)."""
        response = self.client.get(f"/api/v1/agents/{self.slug}/conformance")
        assert response.status_code == 200, response.content
        return {b["key"]: {seen["variant"] for seen in b["seen"]} for b in response.json()["behaviours"]}

    def run(self, run_pk: int) -> dict:
        response = self.client.get(f"/api/v1/runs/{run_pk}")
        assert response.status_code == 200
        return response.json()


@pytest.fixture
def round_trip(client, alice, make_agent) -> Callable[[AgentProcess, str], RoundTrip]:
    client.force_login(alice)

    def make(server: AgentProcess, slug: str) -> RoundTrip:
        server.reset()
        make_agent(slug, endpoint=server.url)
        return RoundTrip(client, slug)

    return make


def sent(server: AgentProcess, tool_call_id: str | None = None) -> list[dict]:
    """What the agent itself says it executed."""
    return [entry for entry in server.record()["sent"] if tool_call_id is None or entry["toolCallId"] == tool_call_id]


def last_input(server: AgentProcess) -> dict:
    return server.record()["seen"][-1]


__all__ = ["Iterator", "RoundTrip", "last_input", "sent", "start_framework_server"]
