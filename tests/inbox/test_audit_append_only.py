"""AuditEvent is append-only in the database too (PostgreSQL): UPDATE and DELETE are refused, except
the ORM's SET_NULL when an agent or a user is deleted — the log rows survive that. Deleting a thread does not
touch the log at all: its events keep the thread's id (the column has no index, and nulling it read the whole log)."""

from __future__ import annotations

import copy

from django.contrib.auth.models import User
from django.db import DatabaseError, connection, transaction
from django.test.utils import CaptureQueriesContext

from inbox.audit.record import Actor, audit
from inbox.models import AuditEvent, Thread
from tests.conftest import spec_example
from tests.helpers.exports import read_json


def trigger_installed() -> bool:
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT count(*) FROM pg_trigger WHERE tgname = 'inbox_auditevent_append_only'")
        else:
            cursor.execute(
                "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'inbox_auditevent'"
            )
        return cursor.fetchone()[0] > 0


def test_the_trigger_exists_on_postgresql_only(db):
    # SQLite empties tables with DELETE between tests; the embedded default is not where the log is guarded.
    assert trigger_installed() == (connection.vendor == "postgresql")


def refused(write) -> bool:
    """Run ``write`` in a savepoint; True when the database refused it as an append-only violation."""
    try:
        with transaction.atomic():
            write()
    except DatabaseError as exc:
        assert "append-only" in str(exc)
        return True
    return False


def test_postgresql_refuses_to_update_an_audit_event(agent, ingest):
    # Only PostgreSQL enforces it; on SQLite the same writes go through (and this test says so).
    enforced = connection.vendor == "postgresql"
    ingest(agent, copy.deepcopy(spec_example("minimal_tool_approval")))
    event = AuditEvent.objects.get(verb="run.ingested")
    other = User.objects.create_user("other")
    changes = [
        {"verb": "rewritten"},
        {"data": {}},
        {"actor_label": "someone else"},
        {"agent": None, "verb": "x"},
        {"actor_user": other},
    ]  # re-pointing a reference is an update too
    for change in changes:
        assert refused(lambda change=change: AuditEvent.objects.filter(pk=event.pk).update(**change)) == enforced
    event.refresh_from_db()
    if enforced:
        assert event.verb == "run.ingested" and event.agent_id == agent.agent.pk and event.actor_user_id is None


def test_postgresql_refuses_to_delete_an_audit_event(agent, ingest):
    enforced = connection.vendor == "postgresql"
    ingest(agent, copy.deepcopy(spec_example("minimal_tool_approval")))
    count = AuditEvent.objects.count()

    def raw_delete() -> None:
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM inbox_auditevent")

    assert refused(lambda: AuditEvent.objects.all().delete()) == enforced
    assert refused(raw_delete) == enforced
    assert AuditEvent.objects.count() == (count if enforced else 0)


def test_deleting_an_agent_keeps_its_audit_events_with_the_reference_nulled(agent, ingest):
    ingest(agent, copy.deepcopy(spec_example("minimal_tool_approval")))
    ids = set(AuditEvent.objects.filter(agent=agent.agent).values_list("pk", flat=True))
    assert len(ids) == 2  # run.ingested, item.created

    thread_pk = Thread.objects.get(agent=agent.agent).pk

    agent.agent.delete()

    events = AuditEvent.objects.filter(pk__in=ids)
    assert events.count() == 2
    # The agent references are nulled (indexed); the thread's id is left as written (its thread went with the agent).
    assert set(events.values_list("agent_id", "actor_agent_id", "thread_id")) == {(None, None, thread_pk)}
    assert set(events.values_list("actor_label", flat=True)) == {"mailer"}  # who did it is still on record


def test_deleting_a_thread_leaves_the_log_untouched_and_the_page_says_the_thread_is_gone(agent, ingest, client, staff):
    ingest(agent, copy.deepcopy(spec_example("minimal_tool_approval")))
    thread = Thread.objects.get(agent=agent.agent)
    thread_pk = thread.pk
    written = list(AuditEvent.objects.filter(thread=thread).order_by("pk").values())
    assert [event["verb"] for event in written] == ["run.ingested", "item.created"]

    with CaptureQueriesContext(connection) as queries:
        thread.delete()

    assert not Thread.objects.filter(pk=thread_pk).exists()
    # Not one statement read or wrote the log: no scan of its unindexed thread column.
    assert [q["sql"] for q in queries.captured_queries if "inbox_auditevent" in q["sql"]] == []
    assert list(AuditEvent.objects.filter(pk__in=[e["id"] for e in written]).order_by("pk").values()) == written

    client.force_login(staff)
    page = client.get("/audit/")
    assert page.status_code == 200
    html = page.content.decode()
    assert f"thread #{thread_pk} (deleted)" in html
    assert f"/audit/threads/{thread_pk}/" not in html  # no link to a page that would 404
    rows = read_json(client.get("/audit/export/events.json"))
    assert {row["verb"]: row["thread_id"] for row in rows if row["verb"] in ("run.ingested", "item.created")} == {
        "run.ingested": None,
        "item.created": None,
    }


def test_deleting_a_user_keeps_their_audit_events_with_the_label(agent):
    user = User.objects.create_user("leaver")
    audit(actor=Actor.for_user(user), verb="agent.changed", obj=agent.agent)
    event = AuditEvent.objects.get(verb="agent.changed")

    user.delete()

    event.refresh_from_db()
    assert event.actor_user_id is None and event.actor_label == "leaver"
