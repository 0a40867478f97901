"""Helpers of the audit tests."""

from __future__ import annotations

from django.db import connection


def behind_the_back(sql: str, params: list | tuple = ()) -> None:
    """Run ``sql`` as someone with the database's password would: past the append-only triggers on PostgreSQL."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL session_replication_role = replica")
        cursor.execute(sql, params)
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL session_replication_role = origin")
