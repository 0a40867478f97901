"""The ingest commits in the round trip of its last inserts (``insert_all(commit=True)``) when nothing else of
its transaction is left to write; a failing ``COMMIT`` rolls everything back and leaves the connection usable.
PostgreSQL only (SQLite keeps ``bulk_create``); the outermost-block rule is checked on every backend."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.db import connection, connections, transaction

from inbox.core import sql
from inbox.core.sql import ends_transaction
from inbox.models import AuditEvent, InboxItem, Run
from inbox.policies.services import policy_create
from tests.conftest import spec_example
from tests.helpers.statements import statements_sent
from tests.policies.runs import post_tool_run

ON_POSTGRESQL = settings.DATABASES["default"]["ENGINE"].endswith("postgresql")


@pytest.mark.django_db(transaction=True)
def test_only_the_outermost_atomic_block_may_end_its_transaction() -> None:
    assert not ends_transaction(connection)  # autocommit: every statement is its own transaction
    with transaction.atomic():
        assert ends_transaction(connection)
        with transaction.atomic():
            assert not ends_transaction(connection)  # a savepoint: the outer block's work is not ours to commit
        with transaction.atomic(savepoint=False):
            assert not ends_transaction(connection)
        assert ends_transaction(connection)
    assert not ends_transaction(connection)


def committed_items(run_pk: int) -> int:
    """The run's items as another connection sees them: only what was committed."""
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM inbox_inboxitem WHERE run_id = %s", [run_pk])
            return cursor.fetchone()[0]
    finally:
        other.close()


if ON_POSTGRESQL:

    @pytest.mark.django_db(transaction=True)
    def test_a_posted_run_commits_with_its_inserts(agent, ingest) -> None:
        with statements_sent() as sent:
            response = ingest(agent, spec_example("parallel_interrupts"))
        assert response.status_code == 201, response.content
        assert sent[-1].startswith('INSERT INTO "inbox_run"') and sent[-1].endswith("; COMMIT")
        assert committed_items(response.json()["id"]) == 3
        item_ids = [str(item["id"]) for item in response.json()["items"]]
        assert AuditEvent.objects.filter(verb="item.created", object_id__in=item_ids).count() == 3

    @pytest.mark.django_db(transaction=True)
    def test_with_policies_the_commit_waits_for_what_they_write(staff, agent, ingest) -> None:
        policy_create(
            user=staff,
            fields={
                "name": "All mail",
                "agent": agent.agent,
                "reason": "tool_call",
                "tool_name": "sendEmail",
                "action": "approve",
                "mode": "enforce",
            },
        )
        with statements_sent() as sent:
            run = post_tool_run(ingest, agent, "t-policy", "r-policy", ("sendEmail", {"to": "ann@ourco.com"}))
        assert not any(text.endswith("COMMIT") for text in sent)
        decided = run.items.get()
        assert decided.status == InboxItem.Status.RESOLVED and committed_items(run.pk) == 1

    @pytest.mark.django_db(transaction=True)
    def test_a_failing_commit_stores_nothing_and_the_next_post_goes_through(agent, ingest, monkeypatch) -> None:
        real_insert_all = sql.insert_all
        tried: list[bool] = []

        def dangling(run_batch, *batches, commit=False):
            tried.append(commit)
            run_batch[0].agent_id = 987_654_321  # no such agent: the deferred foreign key fails at COMMIT
            real_insert_all(run_batch, *batches, commit=commit)

        monkeypatch.setattr("inbox.ingest.services.insert_all", dangling)
        body = spec_example("parallel_interrupts")
        response = ingest(agent, body)
        assert response.status_code == 409, response.content
        assert tried == [True, True, True]  # each attempt committed with its inserts, and failed there
        assert not Run.objects.filter(run_id=body["runId"]).exists()
        assert not InboxItem.objects.exists() and not AuditEvent.objects.filter(verb="item.created").exists()

        monkeypatch.setattr("inbox.ingest.services.insert_all", real_insert_all)
        response = ingest(agent, body)
        assert response.status_code == 201, response.content
        assert committed_items(response.json()["id"]) == 3
