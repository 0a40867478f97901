"""SQL helpers with no domain knowledge: set-based UPDATE ... RETURNING on PostgreSQL and SQLite, and inserting
several tables' rows in one round trip on PostgreSQL."""

from __future__ import annotations

import functools
import hashlib
import json
import re
import weakref
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, cast

from django.db import DEFAULT_DB_ALIAS, DatabaseError, connection, connections, models
from django.db.models import Field, ForeignObject, Lookup, Model, QuerySet
from django.db.models.expressions import RawSQL
from django.utils import timezone
from psycopg import errors as pg_errors
from psycopg import pq
from psycopg.adapt import PyFormat, Transformer

Row = tuple[Any, ...]


def id_set(ids: Iterable[int]) -> RawSQL:
    """A subquery yielding the given ids from one bound parameter, for ``pk__in=``: a plain list would
    bind one parameter per id, which SQLite refuses beyond 32,766."""
    ids = [int(pk) for pk in ids]
    if connection.vendor == "postgresql":
        return RawSQL("SELECT unnest(%s::bigint[])", [ids])
    return RawSQL("SELECT value FROM json_each(%s)", [json.dumps(ids)])


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
    inner_sql, inner_params = qs.order_by().values("pk").query.sql_with_params()
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
    """``UPDATE <table> SET <values> WHERE pk IN (<qs>) AND <guard> RETURNING <returning>``: one statement.

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


def reserve_ids_sql(model: type[Model], count: int) -> tuple[str, list[Any]]:
    """An SQL expression (PostgreSQL) that takes ``count`` ids from the sequence of ``model``'s primary key, as
    an array: a write path that knows its rows' ids before it inserts them can send every row of several tables
    in one ``insert_all``, where ids assigned by the database would need a round trip per table. Ids a rolled
    back transaction took are skipped, as any insert's would be."""
    meta = model._meta
    return (
        "ARRAY(SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s))",
        [meta.db_table, meta.pk.column, count],
    )


def insert_all(*batches: Sequence[Model], commit: bool = False) -> None:
    """Insert unsaved model instances, each batch of one model, as ``INSERT ... VALUES`` statements sent in one
    round trip. Each field goes through its own ``pre_save`` and ``get_db_prep_save``, as in ``bulk_create``;
    a primary key is written when the batch's instances have one (``reserve_ids_sql``), else the database
    assigns it (and it is not read back). The instances are marked as saved. PostgreSQL only.

    What it saves over one ``bulk_create`` per table is Django's per-call query compilation and a round trip
    per table (an ingest's four inserts cost more CPU in the ORM than in PostgreSQL). The values are quoted by
    psycopg's own adapters (``Transformer.as_literal``, what its client-side binding does) straight into the
    statement: handing psycopg a long query with 200 placeholders would have it parse the query for them on
    every call (it caches that only for short queries). A plain value of one of Django's own field classes
    (see ``_PLAIN_FIELDS``) skips ``pre_save`` and ``get_db_prep_save``, which hand it back unchanged: they were
    a third of the statement's Python.

    ``commit=True``: these inserts are the last writes of the transaction, which commits in the same round
    trip (``COMMIT`` ends the statement list). Only the outermost ``atomic`` block may end its transaction so:
    inside a savepoint, or outside any block, the flag is ignored. The block's own commit then finds the
    transaction over and psycopg sends nothing (``Connection.commit`` is a no-op on an idle connection), and
    Django runs the ``on_commit`` hooks as usual. If the ``COMMIT`` fails (a deferred constraint), the error
    is raised here, inside the block, which rolls back as it would have."""
    real = connections[DEFAULT_DB_ALIAS]  # not the proxy: every field's prep reads connection.ops
    with real.cursor() as cursor:
        literal = Transformer(cursor.cursor.connection).as_literal
        statements = [_insert_sql(batch, real, literal) for batch in batches if batch]
        if statements:
            if commit and ends_transaction(real):
                statements.append("COMMIT")
            cursor.execute("; ".join(statements))
    _mark_saved(batches)


def _mark_saved(batches: Sequence[Sequence[Model]]) -> None:
    for batch in batches:
        for obj in batch:
            obj._state.adding, obj._state.db = False, DEFAULT_DB_ALIAS


_UNSET = object()


class SqlValue:
    """A value of a row that ``insert_unless_exists`` writes as SQL computed by the statement itself: the id of
    its first row, or an id it takes from a sequence. Set it on an instance where the value goes (a primary or
    foreign key, or its text in a ``CharField``); once the statement has run, the instance holds the value."""

    __slots__ = ("sql", "key", "index", "as_text")

    def __init__(self, sql: str, key: str, index: int | None = None, *, as_text: bool = False) -> None:
        self.sql, self.key, self.index, self.as_text = sql.encode(), key, index, as_text

    def text(self) -> SqlValue:
        """The same value as text (an ``object_id`` column that names a row of any table)."""
        return SqlValue(self.sql.decode() + "::text", self.key, self.index, as_text=True)

    def resolve(self, computed: dict[str, Any]) -> Any:
        value = computed[self.key] if self.index is None else computed[self.key][self.index]
        return str(value) if self.as_text else value

    def __repr__(self) -> str:
        return f"SqlValue({self.sql.decode()!r})"


class Reserved:
    """``count`` ids of ``model``'s primary key taken by ``insert_unless_exists`` from its sequence: ``ids[i]``
    is the i-th as a ``SqlValue``. Ids a statement took but did not use (the row existed) are skipped, as any
    rolled back insert's would be."""

    def __init__(self, name: str, model: type[Model], count: int) -> None:
        if not name.isidentifier() or not name.islower():
            raise ValueError(f"{name!r} names a column of the statement: lower-case letters, digits and _")
        self.name, self.model, self.count = name, model, int(count)
        self.ids = [SqlValue(f"ids.{name}[{i + 1}]", name, i) for i in range(count)]


def insert_unless_exists(
    first: Model, unique: Sequence[str], *batches: Sequence[Model], reserve: Sequence[Reserved] = ()
) -> bool:
    """Insert ``first`` unless a row with the same ``unique`` fields exists and, only if it was inserted, the
    ``batches`` (as ``insert_all`` would), in one statement: a data-modifying ``WITH``, which PostgreSQL runs
    as one transaction of its own when no transaction is open. Returns whether the rows were written; if not,
    nothing was (and ``first``'s row was not locked either: the caller takes its slower path).

    The statement computes the ids the rows point at: ``first.pk`` must be ``first_pk(type(first))`` (a foreign
    key built from ``first`` then carries it), and each ``Reserved`` takes ids from its model's sequence
    (``Reserved.ids``). After the statement every ``SqlValue`` on ``first`` and on the batches' instances is
    replaced by its value, and the instances are marked as saved. PostgreSQL only; ``first``'s table must have
    a unique constraint on ``unique``.

    Outside a transaction the statement is prepared once per connection and shape (the tables, their row counts
    and where the computed values go) and run with its values bound as parameters (``_BoundExecute``): parsing,
    analysing and planning the ``WITH`` was ~40% of what PostgreSQL spent on an ingest, and no value is written
    into SQL text, quoted by psycopg and parsed again by the server. A connection that lost the statement (a
    proxy that pools sessions, ``DISCARD``) gets the plain statement, as do large shapes and a connection
    holding ``MAX_PREPARED`` statements already.

    It saves an ingest on a new thread the round trips of ``BEGIN`` and of the thread's own upsert: one round
    trip writes the thread, the run, its items and their audit rows."""
    real = connections[DEFAULT_DB_ALIAS]
    written = [batch for batch in batches if batch]
    with real.cursor() as cursor:
        connection_ = cursor.cursor.connection
        literal = Transformer(connection_).as_literal
        prepared = _prepared.setdefault(connection_, set())
        preparing = not real.in_atomic_block and _OFF not in prepared
        params = _Params() if preparing else None
        statement = _gated_insert(first, unique, written, reserve, real, literal, params)
        row = _NOT_PREPARED
        # A large shape is not prepared: its plan would hold megabytes of the server's memory per connection.
        if params is not None and len(params.values) <= MAX_PREPARED_PARAMS:
            row = _execute_prepared(real, cursor, statement, params, prepared)
        if row is _NOT_PREPARED:
            if params is not None:  # written with $n: write it again with the literals in place
                statement = _gated_insert(first, unique, written, reserve, real, literal, None)
            cursor.execute(statement)
            row = cursor.fetchone()
    if row is None:
        return False
    computed: dict[str, Any] = {"first": row[0], **{r.name: row[1 + n] for n, r in enumerate(reserve)}}
    for obj in [first, *(obj for batch in written for obj in batch)]:
        values = obj.__dict__
        for name, value in values.items():
            if type(value) is SqlValue:
                values[name] = value.resolve(computed)
    _mark_saved([[first], *written])
    return True


# Prepared statements per connection (``insert_unless_exists``): one per shape, at most MAX_PREPARED, each of at
# most MAX_PREPARED_PARAMS values. PostgreSQL keeps each one's plan in the session: ~0.35 MB for a run with 3
# items (~160 values), ~0.8 MB with 25, ~2.3 MB with 100. The bounds keep what an agent can make a pooled
# connection hold to a few MB, whatever shapes it posts; larger shapes are sent as plain statements.
MAX_PREPARED = 8
MAX_PREPARED_PARAMS = 400
_prepared: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()
_NOT_PREPARED: Any = object()
_OFF = ""  # in a connection's set: it does not keep prepared statements (see _execute_prepared)


def _gated_insert(
    first: Model,
    unique: Sequence[str],
    written: list[Sequence[Model]],
    reserve: Sequence[Reserved],
    real: Any,
    literal: Any,
    params: _Params | None,
) -> str:
    """``insert_unless_exists``'s statement: with ``params``, its text with ``$n`` for each literal (which
    ``params`` collects); without, the literals in place and each ``NULL`` typed."""
    quote = real.ops.quote_name
    meta = first._meta
    head, plan = _insert_head(type(first), with_pk=False)
    columns = ", ".join(quote(_column(meta.get_field(name))) for name in unique)
    parts = [
        f"gate AS ({head}{_row(first, plan, real, literal, params=params).decode()} ON CONFLICT ({columns}) "
        f"DO NOTHING RETURNING {quote(_column(meta.pk))})"
    ]
    if reserve:
        parts.append(
            "ids AS (SELECT "
            + ", ".join(
                f"ARRAY(SELECT nextval(pg_get_serial_sequence({_text(literal, r.model._meta.db_table)}, "
                f"{_text(literal, _column(r.model._meta.pk))})) FROM generate_series(1, {r.count})) AS {r.name}"
                for r in reserve
            )
            + ")"
        )
    # Each batch's rows join first's row (none when it existed: nothing is written) and the ids, which their
    # values name as columns (LATERAL): a scalar subquery per value cost PostgreSQL more to plan.
    sources = "gate" + (", ids" if reserve else "")
    for number, batch in enumerate(written):
        insert = _insert_sql(batch, real, literal, select=f"SELECT v.* FROM {sources}, LATERAL", params=params)
        parts.append(f"w{number} AS ({insert}) AS v)")
    outputs = ", ".join(["gate.*"] + [f"ids.{r.name}" for r in reserve])
    return f"WITH {', '.join(parts)} SELECT {outputs} FROM {sources}"


def _execute_prepared(real: Any, cursor: Any, statement: str, params: _Params, prepared: set[str]) -> Any:
    """Run ``statement`` (with ``$n`` parameters) with ``params.values`` bound, preparing it on this connection
    first if it is not yet. Its first row, or ``_NOT_PREPARED``: the caller then runs the plain statement.

    The name is a hash of the text and types, so a statement the server already holds under it is this one (after an
    error this process lost track); one it lost (``DISCARD ALL``) is prepared again. A connection where that
    does not settle it (a proxy that hands each statement to another session) stops preparing."""
    types = b", ".join(params.types)
    name = "inbox_" + hashlib.blake2b(types + b" " + statement.encode(), digest_size=8).hexdigest()
    if name not in prepared and len(prepared) >= MAX_PREPARED:
        return _NOT_PREPARED  # the connection holds as many as it may: the plain statement
    for _attempt in range(2):
        try:
            if name not in prepared:
                cursor.execute(f"PREPARE {name} ({types.decode()}) AS {statement}")
                prepared.add(name)
            with _bound_cursor(real, cursor.cursor.connection) as bound:
                bound.execute(f"EXECUTE {name}", params.values)
                return bound.fetchone()
        except DatabaseError as exc:
            state = getattr(exc.__cause__, "sqlstate", None)
            if state == "42P05":  # duplicate_prepared_statement: the server holds it
                prepared.add(name)
            elif state == "26000":  # invalid_sql_statement_name: the server lost it
                prepared.discard(name)
            else:
                raise
    prepared.add(_OFF)
    return _NOT_PREPARED


def first_pk(model: type[Model]) -> SqlValue:
    """The primary key of the row ``insert_unless_exists`` inserts first, as the statement computes it."""
    return SqlValue(f"gate.{connection.ops.quote_name(_column(model._meta.pk))}", "first")


def _column(field: Any) -> str:
    return str(field.column)


def _text(literal: Any, value: str) -> str:
    return literal(value).decode()


def ends_transaction(real: Any) -> bool:
    """Whether a statement sent now may commit the transaction: the connection is in the outermost ``atomic``
    block (no savepoint under it, none marked for rollback), which commits when it exits."""
    return real.in_atomic_block and not real.savepoint_ids and real.commit_on_exit and not real.needs_rollback


def _insert_sql(
    batch: Sequence[Model],
    real: Any,
    literal: Any,
    *,
    plain: bool = True,
    select: str = "",
    params: _Params | None = None,
) -> str:
    """One batch's ``INSERT``. ``plain=False`` sends every value through its field's preparation (tests compare
    the two). With ``select`` (``SELECT v.* FROM <sources>, LATERAL``) it is left open as ``INSERT ... <select>
    (VALUES ...`` for the caller to end (``) AS v``); its ``NULL``s are typed, since a ``VALUES`` list outside an
    ``INSERT`` takes its columns' types from its values."""
    head, plan = _insert_head(type(batch[0]), with_pk=batch[0].pk is not None)
    rows = b", ".join(
        _row(obj, plan, real, literal, plain=plain, typed=bool(select), params=params) for obj in batch
    ).decode()
    if select:
        return f"{head.removesuffix('VALUES ')}{select} (VALUES {rows}"
    return head + rows


def _row(
    obj: Model,
    plan: list[tuple[Field, str, type | None, bytes]],
    real: Any,
    literal: Any,
    *,
    plain: bool = True,
    typed: bool = False,
    params: _Params | None = None,
) -> bytes:
    """One row's ``(v1, v2, ...)``: each value as a literal (``typed``: a ``NULL`` with its column's type), a
    ``SqlValue`` as its SQL, or with ``params`` each value as the next ``$n`` of a prepared statement (``params``
    collects the value and its column's type)."""
    values = []
    for field, attname, plain_type, cast_type in plan:
        value: Any = obj.__dict__.get(attname, _UNSET)
        if type(value) is SqlValue:
            values.append(value.sql)
            continue
        if not (
            plain
            and plain_type is not None
            and value is not _UNSET
            and (
                value is None
                or (
                    type(value) is plain_type
                    and (plain_type is not datetime or cast(datetime, value).tzinfo is not None)
                )
                or (plain_type is str and isinstance(value, str))  # a TextChoices member: CharField keeps it
            )
        ):
            value = field.get_db_prep_save(field.pre_save(obj, True), real)
        if params is not None:  # the next $n (inline: a call per value showed in the profile)
            params.values.append(value)
            params.types.append(cast_type)
            values.append(b"$%d" % len(params.values))
        elif value is None:
            values.append(b"NULL::" + cast_type if typed else b"NULL")
        else:
            values.append(literal(value))
    return b"(" + b", ".join(values) + b")"


class _Params:
    """The values bound to a prepared statement's parameters and their columns' types, collected while its
    text is written with ``$n`` in their place."""

    __slots__ = ("values", "types")

    def __init__(self) -> None:
        self.values: list[Any] = []
        self.types: list[bytes] = []


class _BoundExecute:
    """The database cursor Django's cursor wrapper drives for a statement prepared on the connection: ``execute``
    runs it with the values bound as parameters (libpq's ``PQexecPrepared``, in text form, each value dumped by
    psycopg's own adapters), so none is quoted into SQL, and PostgreSQL reads each with its column type's input
    function, as it reads a literal. Through the wrapper, ``connection.execute_wrapper`` sees the ``EXECUTE``,
    the debug log lists it and errors become Django's. PostgreSQL SQL ``EXECUTE`` takes no bound parameters, and
    psycopg only prepares statements itself past a use count (off under Django)."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        self.row: Row | None = None
        self._query: Any = None  # what Django's debug log reads as the last query (the PostgreSQL backend)

    def execute(self, sql: str, params: Sequence[Any]) -> None:
        """Run ``EXECUTE <name>`` (``sql``) with ``params`` bound."""
        name = sql.removeprefix("EXECUTE ")
        self._query = _LastQuery(f"{sql} ({len(params)} values bound)".encode())
        transformer = Transformer(self.connection)
        dumped = transformer.dump_sequence(params, [PyFormat.TEXT] * len(params))
        result = self.connection.pgconn.exec_prepared(name.encode(), dumped)
        if result.status != pq.ExecStatus.TUPLES_OK:
            encoding = self.connection.info.encoding
            if self.connection.pgconn.status == pq.ConnStatus.BAD:  # as psycopg's own cursors report it
                raise pg_errors.OperationalError(f"the connection was lost: {result.get_error_message(encoding)}")
            raise pg_errors.error_from_result(result, encoding=encoding)
        transformer.set_pgresult(result)
        self.row = transformer.load_row(0, tuple) if result.ntuples else None

    def fetchone(self) -> Row | None:
        return self.row

    def close(self) -> None:
        pass


class _LastQuery:
    __slots__ = ("query",)

    def __init__(self, query: bytes) -> None:
        self.query = query


def _bound_cursor(real: Any, connection_: Any) -> Any:
    """A Django cursor over ``_BoundExecute`` (with the debug log when the connection keeps one)."""
    raw = _BoundExecute(connection_)
    return real.make_debug_cursor(raw) if real.queries_logged else real.make_cursor(raw)


# Django's field classes (exactly these, not subclasses) whose pre_save and get_db_prep_save return a value of
# this type unchanged on PostgreSQL: text as text, an int as an int, a bool as a bool, an aware datetime as
# itself (USE_TZ; a naive one is converted, with a warning, by the field's own path).
_PLAIN_FIELDS: dict[type[Field], type] = {
    **{cls: str for cls in (models.CharField, models.TextField)},
    **{
        cls: int
        for cls in (
            models.AutoField,
            models.BigAutoField,
            models.SmallAutoField,
            models.IntegerField,
            models.BigIntegerField,
            models.SmallIntegerField,
            models.PositiveIntegerField,
            models.PositiveBigIntegerField,
            models.PositiveSmallIntegerField,
        )
    },
    models.BooleanField: bool,
    models.DateTimeField: datetime,
}


def _base_type(field: Field) -> bytes:
    """The column's type without its modifier (``varchar``, not ``varchar(255)``): a value too long for the column
    is then refused by the insert, as a literal would be, where a parameter typed ``varchar(255)`` is not checked."""
    return re.sub(r"\(\d+(,\s*\d+)?\)", "", str(field.cast_db_type(connection))).encode()


class _OnlyNull:
    """The plain type of a JSON field: its ``None`` is SQL ``NULL``, any other value goes through the field."""


def _plain_type(field: Field) -> type | None:
    """The type of value ``insert_all`` may write for ``field`` as it is, or None (always prepared). ``None`` is
    written as ``NULL`` for any field with a plain type."""
    if isinstance(field, models.DateTimeField) and (field.auto_now or field.auto_now_add):
        return None  # pre_save sets the value
    json_field = type(field)
    if (
        isinstance(field, models.JSONField)
        and json_field.get_db_prep_save is models.JSONField.get_db_prep_save
        and json_field.pre_save is Field.pre_save
    ):
        return _OnlyNull  # JSONField.get_db_prep_save hands None back: SQL NULL
    if isinstance(field, models.ForeignKey) and type(field) in (models.ForeignKey, models.OneToOneField):
        return _plain_type(field.target_field) if type(field.target_field) in _PLAIN_FIELDS else None
    return _PLAIN_FIELDS.get(type(field))


@functools.cache
def _insert_head(model: type[Model], *, with_pk: bool) -> tuple[str, list[tuple[Field, str, type | None, bytes]]]:
    """``model``'s ``INSERT INTO ... VALUES `` up to the rows, and the fields ``insert_all`` writes, each with
    its attribute, the type of value it may write as it is, and its column's type (for a typed ``NULL`` or a
    prepared statement's parameter)."""
    quote = connection.ops.quote_name
    fields = [field for field in model._meta.concrete_fields if with_pk or not field.primary_key]
    columns = ", ".join(quote(str(field.column)) for field in fields)
    plan = [(field, field.attname, _plain_type(field), _base_type(field)) for field in fields]
    return f"INSERT INTO {quote(model._meta.db_table)} ({columns}) VALUES ", plan
