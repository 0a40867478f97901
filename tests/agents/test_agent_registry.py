"""The agent registry: agent_create / agent_token commands, hashed tokens, endpoint validation."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from agents.models import Agent, AgentToken, hash_token


def run(*args: str) -> list[str]:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue().strip().splitlines()


def test_agent_create_prints_a_working_token_as_its_last_line_and_stores_only_its_hash(db, client):
    lines = run("agent_create", "billing", "--endpoint", "http://127.0.0.1:9001/agent")
    token = lines[-1]

    agent = Agent.objects.get(slug="billing")
    assert agent.endpoint_url == "http://127.0.0.1:9001/agent"
    stored = AgentToken.objects.get(agent=agent)
    assert stored.token_hash == hash_token(token) and token not in stored.token_hash
    assert not AgentToken.objects.filter(token_hash=token).exists()
    response = client.post(
        "/api/v1/runs",
        data='{"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}',
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 201


@pytest.mark.parametrize("endpoint", ["ftp://127.0.0.1/agent", "file:///etc/passwd", "javascript:alert(1)", "nope"])
def test_agent_create_refuses_an_endpoint_that_is_not_http(db, endpoint):
    with pytest.raises(CommandError, match="http or https"):
        run("agent_create", "bad", "--endpoint", endpoint)
    assert not Agent.objects.exists()


def test_the_model_refuses_a_non_http_endpoint(db):
    with pytest.raises(ValidationError):
        Agent(slug="x", name="x", endpoint_url="gopher://127.0.0.1/").full_clean()


def test_agent_create_refuses_a_taken_slug(db):
    run("agent_create", "dup")
    with pytest.raises(CommandError, match="exists"):
        run("agent_create", "dup")


def test_rotating_revokes_old_tokens_and_prints_a_new_one(db):
    old = run("agent_create", "rot")[-1]
    new = run("agent_token", "rot", "--rotate")[-1]

    assert old != new
    tokens = {t.token_hash: t for t in AgentToken.objects.all()}
    assert tokens[hash_token(old)].revoked_at is not None
    assert tokens[hash_token(new)].revoked_at is None


def test_revoking_by_prefix_leaves_other_tokens_alive(db):
    first = run("agent_create", "rev")[-1]
    second = run("agent_token", "rev")[-1]
    run("agent_token", "rev", "--revoke", first[:12])

    assert AgentToken.objects.get(token_hash=hash_token(first)).revoked_at is not None
    assert AgentToken.objects.get(token_hash=hash_token(second)).revoked_at is None


def test_agent_token_rotate_and_revoke_are_audited(db):
    from inbox.models import AuditEvent

    first = run("agent_create", "aud")[-1]
    created = AuditEvent.objects.filter(agent__slug="aud").order_by("id")
    assert [event.verb for event in created] == ["agent.created", "agent.token_issued"]
    assert created[1].data == {"prefix": first[:12]} and created[1].actor_label == "agent_create"

    new = run("agent_token", "aud", "--rotate")[-1]
    rotated = AuditEvent.objects.get(verb="agent.tokens_rotated", agent__slug="aud")
    assert rotated.actor_type == "system" and rotated.actor_label == "agent_token"
    assert rotated.data == {"prefix": new[:12], "revoked": [first[:12]]}

    run("agent_token", "aud", "--revoke", new[:12])
    revoked = AuditEvent.objects.get(verb="agent.token_revoked", agent__slug="aud")
    assert revoked.data == {"prefix": new[:12]}
    assert AgentToken.objects.get(token_hash=hash_token(new)).revoked_at is not None


def test_a_failed_revoke_writes_no_audit_event(db):
    from inbox.models import AuditEvent

    run("agent_create", "none")
    with pytest.raises(CommandError, match="No live token"):
        run("agent_token", "none", "--revoke", "agi_nomatch")
    assert not AuditEvent.objects.filter(verb__contains="revoked").exists()


def test_the_agents_package_imports_nothing_from_inbox():
    """agents is the lower layer: the inbox subscribes to its signals, never the other way round."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "agents"
    offenders = []
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            offenders += [f"{path.relative_to(root.parent)}: {name}" for name in names if name.split(".")[0] == "inbox"]
    assert offenders == []
