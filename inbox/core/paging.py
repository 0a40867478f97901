"""Counting and listing on tables that grow without end: bounded counts and index skip-scans.

Domain-free: a page over a million rows must not count a million rows, nor read them all to list the few
distinct values of a column.
"""

from __future__ import annotations

from django.core.paginator import Paginator
from django.db import connections
from django.db.models import QuerySet
from django.utils.functional import cached_property


class AtLeast(int):
    """A count that stopped at its bound: behaves as the number, reads "10,000+"."""

    def __str__(self) -> str:
        return f"{int(self):,}+"


def bounded_count(queryset: QuerySet, bound: int) -> int:
    """The queryset's row count, or ``AtLeast(bound)`` when it has more: reads at most ``bound + 1`` rows."""
    n = queryset.order_by().values("pk")[: bound + 1].count()
    return AtLeast(bound) if n > bound else n


class BoundedPaginator(Paginator):
    """A paginator whose total stops at ``bound`` (its last page is the bound's)."""

    def __init__(self, object_list: QuerySet, per_page: int, *, bound: int) -> None:
        super().__init__(object_list, per_page)
        self.queryset = object_list
        self.bound = bound

    @cached_property
    def count(self) -> int:
        return bounded_count(self.queryset, self.bound)


def distinct_values(queryset: QuerySet, field: str, *, limit: int) -> list:
    """The distinct values of ``field`` among the queryset's rows, in order, by skipping through an index
    that starts with the field: one probe per distinct value, where ``DISTINCT`` reads every row."""
    if queryset.query.is_empty():
        return []
    connection = connections[queryset.db]
    column = connection.ops.quote_name(queryset.model._meta.get_field(field).column)
    values = queryset.order_by().values(field)
    first_sql, first_params = values.query.sql_with_params()
    next_sql, next_params = values.extra(where=[f"{column} > skip.value"]).query.sql_with_params()
    sql = (
        "WITH RECURSIVE skip(value) AS ("
        f"SELECT (SELECT MIN(candidate.{column}) FROM ({first_sql}) AS candidate) "
        f"UNION ALL SELECT (SELECT MIN(candidate.{column}) FROM ({next_sql}) AS candidate) "
        f"FROM skip WHERE skip.value IS NOT NULL) SELECT value FROM skip WHERE value IS NOT NULL LIMIT {int(limit)}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*first_params, *next_params])
        return [row[0] for row in cursor.fetchall()]
