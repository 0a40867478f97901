"""Model fields with no domain knowledge."""

from __future__ import annotations

from django.db import models


class RowsJSONField(models.JSONField):
    """A JSONField that keeps bulk inserts of its model as ``VALUES (...), (...)`` rows.

    On PostgreSQL, Django 5.2 turns a multi-row ``bulk_create`` into ``INSERT ... SELECT * FROM UNNEST(
    array, array, ...)`` unless a field has ``get_placeholder``. With Django's client-side binding,
    psycopg quotes every array element in Python; for the few rows an ingest or a decision writes (items,
    audit events) that cost more than the database spent on the insert. The column and migrations are a
    plain JSONField's.
    """

    def get_placeholder(self, value, compiler, connection) -> str:
        return "%s"

    def deconstruct(self):
        name, _, args, kwargs = super().deconstruct()
        return name, "django.db.models.JSONField", args, kwargs
