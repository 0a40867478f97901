"""SQL helpers with no domain knowledge: set-based UPDATE ... RETURNING on PostgreSQL and SQLite, a bound set of
ids, and the ``__anyof`` lookup."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from django.db import connection
from django.db.models import Field, ForeignObject, Lookup, Model, QuerySet
from django.db.models.expressions import RawSQL
from django.utils import timezone

Row = tuple[Any, ...]


def id_set(ids: Iterable[int]) -> RawSQL:
    """A subquery yielding the given ids from one bound parameter, for ``pk__in=``: a plain list would
    bind one parameter per id, which SQLite refuses beyond 32,766."""
    ids = [int(pk) for pk in ids]
    if connection.vendor == "postgresql":
        return RawSQL("SELECT unnest(%s::bigint[])", [ids])
    return RawSQL("SELECT value FROM json_each(%s)", [json.dumps(ids)])


def column_of(model: type[Model], name: str) -> str:
    """The database column of one of the model's concrete fields."""
    field = model._meta.get_field(name)
    if not isinstance(field, Field) or field.column is None:
        raise TypeError(f"{model.__name__}.{name} has no column of its own")
    return field.column


@Field.register_lookup
class AnyOf(Lookup):
    """``field__anyof=<queryset of one column>`` or ``field__anyof=[ids]``: the field's value is among them.

    On PostgreSQL a subquery reads ``= ANY(ARRAY(<subquery>))``: it runs once (an InitPlan) and the planner
    sees a plain list of values, so an index on the field serves the condition, OR-ed conditions combine
    their index scans, and MIN or ORDER BY … LIMIT can walk an index; the semi-join that ``__in`` makes
    hides all of that. A list is one array parameter, ``= ANY(%s)`` (an empty one matches nothing and, unlike
    ``__in=[]``, still compiles to SQL). Elsewhere both are a plain ``IN``."""

    lookup_name = "anyof"
    prepare_rhs = False

    def as_sql(self, compiler, connection) -> tuple[str, tuple[Any, ...]]:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        if isinstance(self.rhs, list | tuple):
            values = [int(value) for value in self.rhs]
            if connection.vendor == "postgresql":
                return f"{lhs} = ANY(%s::bigint[])", (*lhs_params, values)
            return f"{lhs} IN ({', '.join(['%s'] * len(values))})", (*lhs_params, *values)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        if not rhs.startswith("("):
            rhs = f"({rhs})"
        if connection.vendor == "postgresql":
            return f"{lhs} = ANY(ARRAY{rhs})", (*lhs_params, *rhs_params)
        return f"{lhs} IN {rhs}", (*lhs_params, *rhs_params)


ForeignObject.register_lookup(AnyOf)  # foreign keys keep lookups of their own


def _update_sql(
    qs: QuerySet, *, values: dict[str, Any], guard: dict[str, Any], returning: Sequence[str]
) -> tuple[str, list[Any]]:
    meta = qs.model._meta
    quote = connection.ops.quote_name
    # A sliced queryset keeps its order (its LIMIT picks by it), and a ``select_for_update(skip_locked=True)`` one
    # its lock clause: concurrent claims then take different rows (call inside a transaction).
    inner = qs if qs.query.is_sliced else qs.order_by()
    inner_sql, inner_params = inner.values("pk").query.sql_with_params()
    assignments, set_params = [], []
    for name, value in values.items():
        field = meta.get_field(name)
        assignments.append(f"{quote(field.column)} = %s")
        set_params.append(field.get_db_prep_save(value, connection))
    conditions, guard_params = [], []
    for name, value in guard.items():
        field = meta.get_field(name)
        if value is None:
            conditions.append(f" AND {quote(field.column)} IS NULL")
        else:
            conditions.append(f" AND {quote(field.column)} = %s")
            guard_params.append(field.get_db_prep_value(value, connection))
    columns = ", ".join(quote(meta.get_field(name).column) for name in returning)
    sql = (
        f"UPDATE {quote(meta.db_table)} SET {', '.join(assignments)} "
        f"WHERE {quote(meta.pk.column)} IN ({inner_sql}){''.join(conditions)} RETURNING {columns}"
    )
    return sql, [*set_params, *inner_params, *guard_params]


def update_returning(
    qs: QuerySet, *, values: dict[str, Any], guard: dict[str, Any], returning: Sequence[str]
) -> list[Row]:
    """``UPDATE <table> SET <values> WHERE pk IN (<qs>) AND <guard> RETURNING <returning>``: one statement (``qs`` may
    be sliced, ordered and locked with SKIP LOCKED: a batch claim).

    The guard is repeated on the outer row so that under concurrency (PostgreSQL re-checks it against the
    row's newest version) two writers never both take the same row. PostgreSQL and SQLite 3.35+ only.
    """
    sql, params = _update_sql(qs, values=values, guard=guard, returning=returning)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    if "expires_at" in returning and connection.vendor == "sqlite":
        # Raw SQLite hands datetimes back as text; convert them as the ORM would.
        index = list(returning).index("expires_at")
        rows = [(*row[:index], _sqlite_datetime(row[index]), *row[index + 1 :]) for row in rows]
    return rows


def _sqlite_datetime(value: Any) -> datetime | None:
    if value is None:
        return None
    parsed = value if isinstance(value, datetime) else datetime.fromisoformat(value)
    return parsed if timezone.is_aware(parsed) else parsed.replace(tzinfo=UTC)
