"""A run that opens a new thread is stored by one statement (``inbox.core.sql.insert_unless_exists``): no
``BEGIN``, no upsert of its own, the thread, run, items, search and audit rows in one round trip. It must store
exactly what the transactional path stores, fall back to that path when the thread exists, and write nothing
when it falls back. PostgreSQL only (SQLite keeps the transactional path)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.conf import settings
from django.db import DataError, connection, connections
from django.test import Client
from django.test.utils import CaptureQueriesContext

from inbox.conformance.recorder import forget_written
from inbox.core import sql
from inbox.core.sql import Reserved, SqlValue, first_pk, insert_unless_exists
from inbox.ingest import services
from inbox.models import AuditEvent, InboxItem, ItemSearchText, Run, Thread
from tests.conftest import spec_example
from tests.helpers.statements import statements_sent

# PostgreSQL only: on SQLite the module collects nothing (a skip would fail CI, which runs both backends).
ON_POSTGRESQL = settings.DATABASES["default"]["ENGINE"].endswith("postgresql")
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _no_prepared_statements() -> Iterator[None]:
    """Each test starts with a connection that holds no prepared statement, and this process knowing none."""

    def forget() -> None:
        sql._prepared.clear()
        with connection.cursor() as cursor:
            cursor.execute("DEALLOCATE ALL")

    forget()
    yield
    forget()


def one_statement(sent: list[str]) -> bool:
    """The write was the prepared statement: ``EXECUTE`` alone, or ``PREPARE`` the first time on a connection."""
    if sent and sent[0].startswith("PREPARE inbox_"):
        sent = sent[1:]
    return len(sent) == 1 and sent[0].startswith("EXECUTE inbox_")


def body_on(thread_id: str, run_id: str, *, expires_at: str | None = None) -> dict:
    body = spec_example("parallel_interrupts")
    body["threadId"], body["runId"] = thread_id, run_id
    for interrupt in body["outcome"]["interrupts"]:
        if expires_at is not None:
            interrupt["expiresAt"] = expires_at
        interrupt["metadata"] = None  # a column of NULLs only: the statement's VALUES must type them
    return body


def stored(run_pk: int, thread_id: str) -> dict[str, Any]:
    """Everything the ingest wrote for one run, without ids and times and with its thread id as ``<thread>``, as
    another connection reads it."""
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute(
                "SELECT to_jsonb(r) - 'id' - 'thread_id' - 'created_at' - 'notified_at' - 'run_id' - 'content_hash' "
                "FROM inbox_run r WHERE id = %s",
                [run_pk],
            )
            run = json.loads(cursor.fetchone()[0])  # Django reads jsonb as text; its fields decode it
            cursor.execute(
                "SELECT to_jsonb(i) - 'id' - 'run_id' - 'thread_id' - 'created_at' - 'expires_at' - 'raw' "
                "FROM inbox_inboxitem i WHERE run_id = %s ORDER BY position",
                [run_pk],
            )
            items = [json.loads(row[0]) for row in cursor.fetchall()]
            cursor.execute(
                "SELECT s.text, s.tool_call_id, s.agent_id FROM inbox_itemsearchtext s JOIN inbox_inboxitem i "
                "ON i.id = s.item_id WHERE i.run_id = %s ORDER BY i.position",
                [run_pk],
            )
            search = [list(row) for row in cursor.fetchall()]
            cursor.execute(
                "SELECT a.verb, a.object_type, a.data - 'runId' - 'threadId' - 'expiresAt', a.agent_id, "
                "a.thread_id = (SELECT thread_id FROM inbox_run WHERE id = %s), "
                "a.object_id = %s::text OR a.object_id IN (SELECT id::text FROM inbox_inboxitem WHERE run_id = %s) "
                "FROM inbox_auditevent a WHERE a.object_id = %s::text AND a.object_type = 'run' "
                "OR a.object_type = 'inboxitem' AND a.object_id IN (SELECT id::text FROM inbox_inboxitem "
                "WHERE run_id = %s) ORDER BY a.verb, a.object_id",
                [run_pk, run_pk, run_pk, run_pk, run_pk],
            )
            audit = [[verb, kind, json.loads(data), *rest] for verb, kind, data, *rest in cursor.fetchall()]
    finally:
        other.close()
    for item in items:
        item["response_schema_text"] = json.loads(item["response_schema_text"] or "null")
    return json.loads(
        json.dumps({"run": run, "items": items, "search": search, "audit": audit}).replace(thread_id, "<thread>")
    )


def warm(agent, ingest) -> None:
    """Post one run so that the agent's conformance observations are written (they take the transactional path),
    and one more, which prepares the statement on this connection."""
    assert ingest(agent, body_on("bench-warm", "r-warm")).status_code == 201
    assert ingest(agent, body_on("bench-warm-2", "r-warm")).status_code == 201


def test_a_run_on_a_new_thread_is_one_statement_and_stores_what_the_transaction_stores(
    agent, ingest, monkeypatch
) -> None:
    warm(agent, ingest)
    with statements_sent() as sent:
        fast = ingest(agent, body_on("bench-fast", "r-1"))
    assert fast.status_code == 201, fast.content
    assert sent[0].startswith('SELECT "agents_agenttoken"')  # the token, then the write
    assert one_statement(sent[1:])

    monkeypatch.setattr(services, "_may_write_at_once", lambda **kwargs: False)
    with statements_sent() as sent:
        slow = ingest(agent, body_on("bench-slow", "r-1"))
    assert slow.status_code == 201, slow.content
    assert not one_statement(sent[1:])

    assert stored(fast.json()["id"], "bench-fast") == stored(slow.json()["id"], "bench-slow")
    run = Run.objects.get(pk=fast.json()["id"])
    assert run.thread.thread_id == "bench-fast" and run.thread.agent_id == agent.agent.pk
    items = list(run.items.order_by("position"))
    assert [item.pk for item in items] == [entry["id"] for entry in fast.json()["items"]]
    assert all(item.thread_id == run.thread_id and item.status == InboxItem.Status.OPEN for item in items)
    assert ItemSearchText.objects.filter(item__in=items).count() == 3
    assert AuditEvent.objects.filter(verb="run.ingested", object_id=str(run.pk), thread=run.thread).exists()


def test_hostile_text_is_stored_as_sent(agent, ingest) -> None:
    warm(agent, ingest)
    thread_id = "t-'; DROP TABLE inbox_run; --\\ %s $$ \u00e9\u4e2d\U0001f600"
    body = body_on(thread_id, "r-'\\%(x)s")
    body["outcome"]["interrupts"][0]["message"] = "O'Brien \\n \\' %s %% $1 \u202e"
    with statements_sent() as sent:
        response = ingest(agent, body)
    assert response.status_code == 201, response.content
    assert one_statement(sent[1:])
    assert not any("Brien" in text or "DROP" in text for text in sent)  # values are bound, not written into SQL
    run = Run.objects.get(pk=response.json()["id"])
    assert (run.thread.thread_id, run.run_id) == (thread_id, "r-'\\%(x)s")
    assert run.items.get(position=0).message == body["outcome"]["interrupts"][0]["message"]
    assert Run.objects.count() == 3


def test_the_page_lists_what_one_statement_stored(agent, ingest, staff) -> None:
    warm(agent, ingest)
    response = ingest(agent, body_on("bench-listed", "r-1"))
    assert response.status_code == 201
    client = Client()
    client.force_login(staff)
    page = client.get(response.json()["items"][0]["url"])
    assert page.status_code == 200
    assert "bench-listed" in page.content.decode()


def test_an_existing_thread_takes_the_transaction_and_the_statement_wrote_nothing(agent, ingest) -> None:
    warm(agent, ingest)
    first = ingest(agent, [*success_events("bench-again", "r-1")])
    assert first.status_code == 201, first.content
    audit_before = AuditEvent.objects.count()
    services.forget_known_threads()  # as another process, which has not stored on this thread
    with statements_sent() as sent:
        second = ingest(agent, body_on("bench-again", "r-2"))
    assert second.status_code == 201, second.content
    assert sent[1].startswith("EXECUTE inbox_")  # tried first, wrote nothing: the thread exists
    assert any(text.startswith('INSERT INTO "inbox_thread"') and "DO UPDATE" in text for text in sent[2:])
    assert Thread.objects.filter(thread_id="bench-again").count() == 1
    run = Run.objects.get(pk=second.json()["id"])
    assert run.thread_id == Run.objects.get(pk=first.json()["id"]).thread_id
    assert run.items.count() == 3
    assert AuditEvent.objects.count() == audit_before + 4  # the run and its three items, once


def test_a_further_run_on_a_thread_this_process_stored_on_goes_straight_to_the_transaction(agent, ingest) -> None:
    warm(agent, ingest)
    assert ingest(agent, [*success_events("bench-known", "r-1")]).status_code == 201
    with statements_sent() as sent:
        second = ingest(agent, body_on("bench-known", "r-2"))
    assert second.status_code == 201, second.content
    assert not any(text.startswith(("EXECUTE", "PREPARE", "WITH gate")) for text in sent)  # not tried as new
    assert any(text.startswith('INSERT INTO "inbox_thread"') and "DO UPDATE" in text for text in sent)
    assert Run.objects.get(pk=second.json()["id"]).items.count() == 3
    Thread.objects.filter(thread_id="bench-known").delete()  # deleted since: the transaction's upsert makes it again
    third = ingest(agent, body_on("bench-known", "r-3"))
    assert third.status_code == 201, third.content
    assert Thread.objects.get(thread_id="bench-known").runs.get().items.count() == 3


def success_events(thread_id: str, run_id: str) -> list[dict]:
    return [
        {"type": "RUN_STARTED", "threadId": thread_id, "runId": run_id},
        {"type": "RUN_FINISHED", "threadId": thread_id, "runId": run_id, "outcome": {"type": "success"}},
    ]


def test_a_run_with_observations_to_write_takes_the_transaction(agent, ingest) -> None:
    forget_written()
    with statements_sent() as sent:
        response = ingest(agent, body_on("bench-observed", "r-1"))
    assert response.status_code == 201
    assert not one_statement(sent[1:])
    assert agent.agent.conformance.filter(example_run_id=response.json()["id"]).exists()


def test_the_same_new_run_posted_at_once_is_stored_once(agent, ingest, live_server) -> None:
    import httpx

    warm(agent, ingest)
    body = json.dumps(body_on("bench-race", "r-1"))
    headers = {"Authorization": agent.auth["HTTP_AUTHORIZATION"], "Content-Type": "application/json"}

    def post(_: int) -> int:
        return httpx.post(f"{live_server.url}/api/v1/runs", content=body, headers=headers, timeout=30).status_code

    with ThreadPoolExecutor(6) as pool:
        statuses = sorted(pool.map(post, range(6)))
    assert statuses == [200] * 5 + [201]
    assert Thread.objects.filter(thread_id="bench-race").count() == 1
    assert InboxItem.objects.filter(thread__thread_id="bench-race").count() == 3
    assert AuditEvent.objects.filter(verb="run.ingested", data__threadId="bench-race").count() == 1


def test_insert_unless_exists_resolves_what_the_statement_computed(agent) -> None:
    thread = Thread(agent=agent.agent, thread_id="direct")
    thread.pk = first_pk(Thread)
    runs = Reserved("runs", Run, 1)
    run = Run(pk=runs.ids[0], agent=agent.agent, thread=thread, run_id="r", source="ingest", outcome="success")
    event = AuditEvent(
        actor_type="system", actor_label="t", verb="v", object_type="run", object_id=runs.ids[0].text(), thread=thread
    )
    assert insert_unless_exists(thread, ["agent", "thread_id"], [run], [event], reserve=[runs])
    assert not any(type(value) is SqlValue for obj in (thread, run, event) for value in obj.__dict__.values())
    assert Run.objects.get(pk=run.pk).thread_id == thread.pk == Thread.objects.get(thread_id="direct").pk
    assert AuditEvent.objects.get(pk__isnull=False, verb="v").object_id == str(run.pk)
    assert not run._state.adding

    again = Thread(agent=agent.agent, thread_id="direct")
    again.pk = first_pk(Thread)
    runs = Reserved("runs", Run, 1)
    other = Run(pk=runs.ids[0], agent=agent.agent, thread=again, run_id="r2", source="ingest", outcome="success")
    assert not insert_unless_exists(again, ["agent", "thread_id"], [other], reserve=[runs])
    assert Run.objects.count() == 1 and Thread.objects.count() == 1


def test_the_statement_is_prepared_once_per_connection(agent, ingest) -> None:
    warm(agent, ingest)
    with statements_sent() as sent:
        assert ingest(agent, body_on("bench-p1", "r-1")).status_code == 201
        assert ingest(agent, body_on("bench-p2", "r-1")).status_code == 201
    writes = [text for text in sent if not text.startswith('SELECT "agents_agenttoken"')]
    assert len(writes) == 2 and all(text.startswith("EXECUTE inbox_") for text in writes)
    one_item = body_on("bench-p3", "r-1")
    del one_item["outcome"]["interrupts"][1:]
    with statements_sent() as sent:
        assert ingest(agent, one_item).status_code == 201  # another shape: another statement
    assert sent[1].startswith("PREPARE inbox_") and sent[2].startswith("EXECUTE inbox_")


def test_the_debug_log_lists_the_execute_with_its_count_of_bound_values(agent, ingest) -> None:
    warm(agent, ingest)
    with CaptureQueriesContext(connection) as captured:
        assert ingest(agent, body_on("bench-logged", "r-1")).status_code == 201
    executes = [query["sql"] for query in captured.captured_queries if query["sql"].startswith("EXECUTE")]
    assert len(executes) == 1 and re.fullmatch(r"EXECUTE inbox_[0-9a-f]{16} \(\d+ values bound\)", executes[0])


def test_a_statement_the_server_lost_is_prepared_again(agent, ingest) -> None:
    warm(agent, ingest)
    with connection.cursor() as cursor:
        cursor.execute("DEALLOCATE ALL")  # what DISCARD ALL or a reconnect does
    with statements_sent() as sent:
        response = ingest(agent, body_on("bench-lost", "r-1"))
    assert response.status_code == 201, response.content
    assert [text.split(" ", 1)[0] for text in sent[1:]] == ["EXECUTE", "PREPARE", "EXECUTE"]
    assert InboxItem.objects.filter(thread__thread_id="bench-lost").count() == 3


def test_a_statement_the_process_forgot_is_used_as_the_server_holds_it(agent, ingest) -> None:
    warm(agent, ingest)
    sql._prepared.clear()
    with statements_sent() as sent:
        response = ingest(agent, body_on("bench-forgot", "r-1"))
    assert response.status_code == 201, response.content
    assert [text.split(" ", 1)[0] for text in sent[1:]] == ["PREPARE", "EXECUTE"]  # the PREPARE failed: it exists
    assert InboxItem.objects.filter(thread__thread_id="bench-forgot").count() == 3


def test_a_connection_that_keeps_losing_statements_stops_preparing(agent, ingest) -> None:
    """As behind a proxy that hands each statement to another server session."""
    warm(agent, ingest)

    def forgetful(execute, sql_text, params, many, context):
        if sql_text.startswith("EXECUTE inbox_"):
            context["connection"].connection.execute("DEALLOCATE ALL")  # psycopg's own cursor: not recorded
        return execute(sql_text, params, many, context)

    with connection.execute_wrapper(forgetful), statements_sent() as sent:
        response = ingest(agent, body_on("bench-proxy", "r-1"))
        again = ingest(agent, body_on("bench-proxy-2", "r-1"))
    assert response.status_code == 201 and again.status_code == 201
    verbs = [text.split(" ", 1)[0] for text in sent if not text.startswith('SELECT "agents_agenttoken"')]
    assert verbs == ["EXECUTE", "PREPARE", "EXECUTE", "WITH", "WITH"]  # twice lost, then plain statements
    assert InboxItem.objects.filter(thread__thread_id__startswith="bench-proxy").count() == 6


def test_a_large_run_and_a_full_connection_are_sent_as_plain_statements(agent, ingest, monkeypatch) -> None:
    """Each prepared plan stays in the server session: an agent must not make a pooled connection hold many or
    large ones."""
    warm(agent, ingest)
    large = body_on("bench-large", "r-1")
    interrupt = large["outcome"]["interrupts"][0]
    large["outcome"]["interrupts"] = [dict(interrupt, id=f"i-{n}") for n in range(20)]
    with statements_sent() as sent:
        assert ingest(agent, large).status_code == 201
    assert sent[1].startswith("WITH gate") and len(sent) == 2
    assert InboxItem.objects.filter(thread__thread_id="bench-large").count() == 20

    monkeypatch.setattr(sql, "MAX_PREPARED", 1)  # warm() prepared the three-item shape: the connection is full
    one_item = body_on("bench-one", "r-1")
    del one_item["outcome"]["interrupts"][1:]
    with statements_sent() as sent:
        assert ingest(agent, one_item).status_code == 201
    assert sent[1].startswith("WITH gate") and len(sent) == 2
    with statements_sent() as sent:
        assert ingest(agent, body_on("bench-three", "r-1")).status_code == 201
    assert one_statement(sent[1:])  # the shape it holds is still used


def test_a_connection_lost_at_the_statement_is_a_503_and_the_retry_stores_the_run_once(agent, ingest) -> None:
    warm(agent, ingest)
    backend = connection.connection.info.backend_pid

    def lose_the_connection(execute, sql_text, params, many, context):
        if sql_text.startswith("EXECUTE inbox_"):
            other = connections.create_connection("default")
            try:
                with other.cursor() as cursor:
                    cursor.execute("SELECT pg_terminate_backend(%s, 5000)", [backend])
            finally:
                other.close()
        return execute(sql_text, params, many, context)

    with connection.execute_wrapper(lose_the_connection):
        response = ingest(agent, body_on("bench-cut", "r-1"))
    assert response.status_code == 503, response.content
    assert response.json()["component"] == "database"
    connection.close_if_unusable_or_obsolete()  # what the end of a request does (not under the test client)
    assert not Thread.objects.filter(thread_id="bench-cut").exists()
    again = ingest(agent, body_on("bench-cut", "r-1"))  # a new connection: the statement is prepared on it
    assert again.status_code == 201, again.content
    assert InboxItem.objects.filter(thread__thread_id="bench-cut").count() == 3


@pytest.mark.parametrize("prepared", [True, False])
def test_a_value_too_long_for_its_column_is_refused_as_a_literal_would_be(agent, prepared) -> None:
    connection.ensure_connection()
    if not prepared:
        sql._prepared.setdefault(connection.connection, set()).add(sql._OFF)
    thread = Thread(agent=agent.agent, thread_id="x" * 256)  # varchar(255)
    thread.pk = first_pk(Thread)
    with pytest.raises(DataError):
        insert_unless_exists(thread, ["agent", "thread_id"])
    assert not Thread.objects.exists()


if not ON_POSTGRESQL:  # nothing to collect: see ON_POSTGRESQL
    for _name in [name for name in globals() if name.startswith("test_")]:
        del globals()[_name]
