"""Giving back this thread's database connection before a slow call outside the database (an agent, a webhook)."""

from __future__ import annotations

from django.db import connections


def release_connections() -> None:
    """Close this thread's database connections: a pooled one goes back to its pool, a worker's own is closed,
    and the next query opens one again. Inside a transaction (a caller's atomic block, a test's) nothing is
    closed: the transaction needs its connection."""
    for connection in connections.all(initialized_only=True):
        if not connection.in_atomic_block:
            connection.close()
