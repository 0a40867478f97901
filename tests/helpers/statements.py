"""The SQL statements a block of code sends through Django's cursors."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection


@contextmanager
def statements_sent() -> Iterator[list[str]]:
    """The statements sent through cursors while the block runs. Not CaptureQueriesContext: it also lists Django's
    own COMMIT, which psycopg does not send when the inserts already committed."""
    sent: list[str] = []

    def record(execute, sql_text, params, many, context):
        sent.append(sql_text)
        return execute(sql_text, params, many, context)

    with connection.execute_wrapper(record):
        yield sent
