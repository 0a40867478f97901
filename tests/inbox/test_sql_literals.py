"""``insert_all`` writes a plain value of Django's own field classes as it is, without its field's
``pre_save`` and ``get_db_prep_save``: the statement must be the same, byte for byte, as the one every value's
own preparation gives. PostgreSQL only (SQLite keeps ``bulk_create``), so on SQLite this module holds no test."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from django.conf import settings
from django.db import connections
from psycopg.adapt import Transformer

from inbox.core import sql
from inbox.models import AuditEvent, InboxItem, Run, Thread
from tests.conftest import spec_example

ON_POSTGRESQL = settings.DATABASES["default"]["ENGINE"].endswith("postgresql")


def both_statements(batch) -> tuple[str, str]:
    real = connections["default"]
    with real.cursor() as cursor:
        literal = Transformer(cursor.cursor.connection).as_literal
        return sql._insert_sql(batch, real, literal), sql._insert_sql(batch, real, literal, plain=False)


if ON_POSTGRESQL:

    def test_an_ingests_rows_give_the_same_statement_either_way(agent, ingest, monkeypatch):
        seen: list[str] = []
        real_insert_all = sql.insert_all

        def compared(*batches, commit=False):
            for batch in batches:
                if batch:
                    fast, prepared = both_statements(batch)
                    assert fast == prepared, type(batch[0]).__name__
                    seen.append(type(batch[0]).__name__)
            real_insert_all(*batches, commit=commit)

        monkeypatch.setattr("inbox.ingest.services.insert_all", compared)
        response = ingest(agent, spec_example("parallel_interrupts"))
        assert response.status_code == 201, response.content
        assert seen == ["Run", "InboxItem", "ItemSearchText", "AuditEvent"]
        assert InboxItem.objects.filter(run__run_id=spec_example("parallel_interrupts")["runId"]).count() == 3

    def test_awkward_values_give_the_same_statement_either_way(agent):
        """Quotes, backslashes, non-ASCII text, an enum member, other time zones, a naive datetime, None, a
        bool and big ints: whatever the fast path takes as it is must come out as the field would write it."""
        thread = Thread.objects.create(agent=agent.agent, thread_id="t-awkward")
        paris = timezone(timedelta(hours=1))
        runs = [
            Run(
                pk=10**15 + n,
                agent=agent.agent,
                thread=thread,
                run_id=run_id,
                outcome=outcome,
                created_at=created_at,
                error_message=message,
                result=result,
            )
            for n, (run_id, outcome, created_at, message, result) in enumerate(
                [
                    ("r'1", Run.Outcome.INTERRUPT, datetime(2026, 1, 1, tzinfo=UTC), "back\\slash", {"a": "b'c"}),
                    ("r-é", "success", datetime(2026, 6, 1, 12, 30, tzinfo=paris), "line\nbreak ✓", None),
                    ("r-3", "error", datetime(1999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), "", [1, 2]),
                ]
            )
        ]
        fast, prepared = both_statements(runs)
        assert fast == prepared
        assert "'r''1'" in fast and "slash" in fast

        with pytest.warns(RuntimeWarning):  # the field's own path converts a naive datetime, with its warning
            naive = Run(
                pk=10**15 + 9, agent=agent.agent, thread=thread, run_id="r-naive", created_at=datetime(2026, 1, 1)
            )
            fast, prepared = both_statements([naive])
        assert fast == prepared
        events = [
            AuditEvent(
                actor_type="agent",
                actor_agent=agent.agent,
                actor_label="x'y",
                verb="v",
                object_type="run",
                object_id="1",
                agent=agent.agent,
                data={"n": 2**70},
            ),
            AuditEvent(
                actor_type="system",
                actor_user=None,
                actor_label="system",
                verb="v",
                object_type="item",
                object_id="2",
                data={},
            ),
        ]
        fast, prepared = both_statements(events)
        assert fast == prepared

    def test_a_field_class_of_our_own_goes_through_its_preparation():
        """Only Django's own classes are plain: a subclass (a custom field) may prepare values its own way."""
        from django.db import models

        class Shouting(models.CharField):
            def get_prep_value(self, value):
                return None if value is None else str(value).upper()

        field = Shouting(max_length=10)
        assert sql._plain_type(field) is None
        assert sql._plain_type(models.CharField(max_length=10)) is str
        assert sql._plain_type(models.DateTimeField(auto_now=True)) is None
        assert sql._plain_type(models.DateTimeField()) is datetime
        assert sql._plain_type(Run._meta.get_field("thread")) is int
