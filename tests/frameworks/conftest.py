"""Round trips through real AG-UI framework integrations (issue 14), each agent server a subprocess of
its framework's own venv (``.venv/frameworks/<name>``, built by ``make frameworks-venvs`` from
``requirements-frameworks-<name>.txt``): those packages pin versions the inbox's venv cannot take.

The TypeScript integrations (``tests/frameworks/servers/node/``) run on the Node binary that ``make
frameworks-node`` installs from the npm registry (the ``node`` package, pinned in that directory's
``package-lock.json``) with their packages, each server a ``.ts`` file Node runs as it is (type stripping).

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
from tests.helpers.starts import start_run

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
NODE_OFFLINE_ENV = {
    "COPILOTKIT_TELEMETRY_DISABLED": "true",
    "DO_NOT_TRACK": "1",
    "SCARF_ANALYTICS": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "NODE_NO_WARNINGS": "1",
}


def framework_python(name: str) -> str:
    python = VENVS / name / "bin" / "python"
    if not python.exists():
        pytest.skip(f"{name}'s venv is missing: run `make frameworks-venvs FRAMEWORKS={name}`")
    return str(python)


NODE_AGENTS = ROOT / "tests" / "frameworks" / "servers" / "node"


def start_node_server(name: str, tmp_path_factory) -> AgentProcess:
    """``tests/frameworks/servers/node/<name>.ts`` on the Node that ``make frameworks-node`` installed."""
    node = NODE_AGENTS / "node_modules" / ".bin" / "node"
    if not (NODE_AGENTS / "node_modules" / ".installed").exists():
        pytest.skip(f"Node and the TypeScript integrations are missing: run `make frameworks-node` ({name})")
    server = AgentProcess(
        command=[str(node), str(NODE_AGENTS / f"{name}.ts")],
        env=OFFLINE_ENV | NODE_OFFLINE_ENV,
        log_dir=tmp_path_factory.mktemp(name),
    )
    return server.start(timeout=120)


def start_framework_server(name: str, module: str, tmp_path_factory, env: dict[str, str] | None = None) -> AgentProcess:
    server = AgentProcess(
        module=module,
        python=framework_python(name),
        env=OFFLINE_ENV | (env or {}),
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
        response = start_run(self.client, self.slug, body)
        assert response.status_code == 201, response.json()
        return response.json()

    def decide(self, item_id: int, status: str, payload: object = None) -> dict:
        body = {"status": status} | ({"payload": payload} if payload is not None else {})
        response = self.client.post(
            f"/api/v1/items/{item_id}/decision", data=json.dumps(body), content_type="application/json"
        )
        assert response.status_code in (200, 201), response.content
        return response.json()

    def press(self, item_id: int, action: str) -> str:
        """Decide as a person does: the item page's Approve / Deny / Cancel button (``action``). Returns the
        page as it offered the button, which must be there."""
        from django.urls import reverse

        page = self.client.get(reverse("inbox:item", args=[item_id]))
        assert page.status_code == 200
        html = page.content.decode()
        assert f'data-action="{action}"' in html, f"the item page offers no {action} button"
        response = self.client.post(reverse("inbox:item_decide", args=[item_id]), {"action": action})
        assert response.status_code == 302, response.content.decode()[:2000]
        return html

    def answer(self, item_id: int, text: str) -> str:
        """Answer a question as a person does: its page's answer field and "Send this answer". Returns the page
        as it offered the field, which must be there (and no Approve)."""
        from django.urls import reverse

        html = self.client.get(reverse("inbox:item", args=[item_id])).content.decode()
        assert 'name="answer_text"' in html and 'data-action="text"' in html, "the item page offers no answer field"
        response = self.client.post(
            reverse("inbox:item_decide", args=[item_id]), {"action": "text", "answer_text": text}
        )
        assert response.status_code == 302, response.content.decode()[:2000]
        return html

    def bulk(self, item_ids: list[int], action: str) -> None:
        """Decide from the inbox list: select rows, then "Approve selected" / "Deny selected" (``action``)."""
        from django.urls import reverse

        response = self.client.post(reverse("inbox:bulk_decide"), {"ids": item_ids, "action": action})
        assert response.status_code == 302, response.content.decode()[:2000]
        summary = self.client.session.get("bulk_result") or {}
        assert "error" not in summary, summary

    def resume(self, run_pk: int) -> str:
        from inbox.models import Resume
        from inbox.resumes.services import resume_dispatch

        return resume_dispatch(resume_id=Resume.objects.get(run_id=run_pk).pk)

    def conformance(self) -> dict[str, set[str]]:
        """The agent's conformance report as {behaviour: variants seen} (through the API)."""
        response = self.client.get(f"/api/v1/agents/{self.slug}/conformance")
        assert response.status_code == 200, response.content
        return {b["key"]: {seen["variant"] for seen in b["seen"]} for b in response.json()["behaviours"]}

    def deviating(self) -> set[str]:
        """The behaviours the agent's conformance report marks "deviates"."""
        response = self.client.get(f"/api/v1/agents/{self.slug}/conformance")
        assert response.status_code == 200, response.content
        return {b["key"] for b in response.json()["behaviours"] if b["status"] == "deviates"}

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


def executed_label(server: AgentProcess, item) -> str:
    """The outcome label what the agent itself says it executed calls for: nothing ran → Denied (or Cancelled);
    the proposal's own arguments → Approved; other arguments → Approved with edits."""
    # An agent that does not see the call's id (Agent Framework) records it as "": each test starts a fresh record.
    executed = [entry for entry in sent(server) if entry["toolCallId"] in (item.linked_call_id, "")]
    if not executed:
        return "Cancelled" if item.status == "cancelled" else "Denied"
    return "Approved" if executed[-1]["args"] == item.proposed_args else "Approved with edits"


def assert_label_tells_what_ran(server: AgentProcess, item) -> None:
    """The item's outcome label, on the API and the page, matches what the agent executed."""
    item.refresh_from_db()
    expected = executed_label(server, item)
    assert item.outcome_label == expected, (item.outcome_label, expected, sent(server))


def last_input(server: AgentProcess) -> dict:
    return server.record()["seen"][-1]


__all__ = [
    "Iterator",
    "RoundTrip",
    "assert_label_tells_what_ran",
    "last_input",
    "sent",
    "start_framework_server",
    "start_node_server",
]
