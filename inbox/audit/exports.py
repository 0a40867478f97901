"""The audit log's filters and its streamed exports (CSV and JSON), signed (``inbox.audit.chain.sign``) so that a
copy can be checked offline with ``tools/verify_audit_export.py``.

Exports stream rows in keyset-paginated batches (``id > last`` … ``LIMIT n``): memory stays flat however
many rows match, and no database cursor stays open between two chunks sent to the client. Under ASGI the
response gets an async iterator (a sync one would be buffered whole by Django); under WSGI a sync one.
Every query starts from the team rule in ``inbox.access``.
"""

from __future__ import annotations

import csv
import hashlib
import hmac
import json
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import date, datetime, time, timedelta
from typing import Any, cast

from asgiref.sync import sync_to_async
from django import forms
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.handlers.asgi import ASGIRequest
from django.db.models import OuterRef, Q, QuerySet, Subquery
from django.http import HttpRequest, StreamingHttpResponse
from django.utils import timezone

from agents.models import Agent
from inbox.access import visible_agents, visible_audit_events, visible_decisions, visible_teams
from inbox.models import AuditChain, AuditEvent, AuditSeal, Decision, InboxItem

BATCH_SIZE = 2000


class AuditFilterForm(forms.Form):
    agent = forms.ChoiceField(required=False)
    team = forms.ChoiceField(required=False)
    actor = forms.CharField(required=False, max_length=200, help_text="Username, agent slug or 'system'.")
    verb = forms.CharField(required=False, max_length=64)
    since = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))

    def __init__(self, data: Any, *, user) -> None:
        super().__init__(data)
        self.user = user
        cast(forms.ChoiceField, self.fields["agent"]).choices = [("", "All agents")] + [
            (agent.slug, agent.name or agent.slug) for agent in visible_agents(user).order_by("name")
        ]
        cast(forms.ChoiceField, self.fields["team"]).choices = [("", "All teams")] + [
            (team.name, team.name) for team in visible_teams(user)
        ]

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        since, until = cleaned.get("since"), cleaned.get("until")
        if since and until and since > until:
            self.add_error("until", "The end date is before the start date.")
        if until and until >= date.max:  # the range ends at the next midnight, which does not exist
            self.add_error("until", f"The end date must be before {date.max.isoformat()}.")
        return cleaned

    def bounds(self) -> tuple[datetime | None, datetime | None]:
        """The date range as aware datetimes: [since 00:00, the day after until 00:00)."""
        tz = timezone.get_current_timezone()
        since, until = self.cleaned_data.get("since"), self.cleaned_data.get("until")
        start = datetime.combine(since, time.min, tzinfo=tz) if since else None
        end = datetime.combine(until + timedelta(days=1), time.min, tzinfo=tz) if until else None
        return start, end

    def first_error(self) -> tuple[str, str]:
        field, errors = next(iter(self.errors.items()))
        return field, str(errors[0])

    def events(self) -> QuerySet[AuditEvent]:
        return self._filtered(
            visible_audit_events(self.user),
            agent="agent__slug",
            team="agent__teams__name",
            actor=actor_filter,
            verb="verb",
        )

    def decisions(self) -> QuerySet[Decision]:
        """The same filters applied to decisions (the verb filter does not apply to them)."""
        decisions = self._filtered(
            visible_decisions(self.user), agent="item__agent__slug", actor="user__username__iexact"
        )
        team = self.cleaned_data.get("team")
        if team:  # a routed item's decisions are its routed team's, not its agent's teams'
            routed = Q(item__routed_team__name=team)
            decisions = decisions.filter(routed | Q(item__routed_team__isnull=True, item__agent__teams__name=team))
        return decisions

    def _filtered(
        self,
        queryset: QuerySet,
        *,
        agent: str,
        actor: str | Callable[[str], Q],
        team: str | None = None,
        verb: str | None = None,
    ) -> QuerySet:
        """Apply the form's filters, each through the lookup this model uses for it (a field lookup, or a
        function of the value that returns the condition)."""
        data = self.cleaned_data
        lookups = {"agent": agent, "team": team, "actor": actor, "verb": verb}
        for name, lookup in lookups.items():
            value = data.get(name)
            if not (lookup and value):
                continue
            value = value.strip() if name in ("actor", "verb") else value
            queryset = queryset.filter(lookup(value) if callable(lookup) else Q(**{lookup: value}))
        start, end = self.bounds()
        if start:
            queryset = queryset.filter(created_at__gte=start)
        if end:
            queryset = queryset.filter(created_at__lt=end)
        return queryset


def actor_filter(name: str) -> Q:
    """Events by the actor called ``name`` (case-insensitive): a username, an agent slug, or a system actor
    ("system", "expiry", a policy's label). A person's or an agent's events are found by who they are, through
    an index in the log's order (``audit_actor_user_newest``, ``audit_actor_agent_newest``), so a busy approver's
    events do not take reading the whole log; that also finds the events of a user renamed since. Any other
    name (a system actor, someone deleted or renamed away from it) is matched against the label each event
    recorded at the time."""
    users = list(get_user_model().objects.filter(username__iexact=name).values_list("pk", flat=True))
    agents = list(Agent.objects.filter(slug__iexact=name).values_list("pk", flat=True))
    if not users and not agents:
        return Q(actor_label__iexact=name)
    return Q(actor_user__in=users) | Q(actor_agent__in=agents)  # an empty side matches nothing and drops out


DECISION_FIELDS = {
    # column name: ORM path
    "decision_id": "pk",
    "decided_at": "created_at",
    "agent": "item__agent__slug",
    "thread_id": "item__thread__thread_id",
    "run_id": "item__run__run_id",
    "interrupt_id": "item__interrupt_id",
    "reason": "item__reason",
    "tool_call_id": "item__tool_call_id",
    "tool_call": "item__tool_call",
    "item_id": "item_id",
    "item_status": "item__status",
    "user": "user__username",
    "status": "status",
    "outcome": "outcome",
    "payload": "payload",
    "comment": "comment",
    "final": "final",
    "counts": "counts",
}


DECISION_COLUMNS = [
    "decision_id",
    "decided_at",
    "agent",
    "thread_id",
    "run_id",
    "interrupt_id",
    "reason",
    "tool_call_id",
    "tool_name",
    "item_id",
    "item_status",
    "user",
    "status",
    "outcome",
    "approved",
    "edited",
    "payload",
    "comment",
    "final",
    "counts",
]


EVENT_FIELDS = {
    "event_id": "pk",
    "created_at": "created_at",
    "actor_type": "actor_type",
    "actor": "actor_label",
    "verb": "verb",
    "object_type": "object_type",
    "object_id": "object_id",
    "agent": "agent__slug",
    "thread_id": "thread__thread_id",
    "data": "data",
    "seal_seq": "seal_seq",
    "seal_hash": "seal_hash",
}


EVENT_COLUMNS = list(EVENT_FIELDS)


def with_seals(events: QuerySet[AuditEvent]) -> QuerySet[AuditEvent]:
    """Each event's place in the hash chain (none yet for an event written in the last seconds)."""
    seal = AuditSeal.objects.filter(event_id=OuterRef("pk"))
    return events.annotate(seal_seq=Subquery(seal.values("seq")[:1]), seal_hash=Subquery(seal.values("hash")[:1]))


# ``approved`` of a decision by its stored outcome (judged by the item's schema when it was made); None: neither.
_APPROVED_BY_OUTCOME = {
    InboxItem.Outcome.APPROVED.value: True,
    InboxItem.Outcome.APPROVED_WITH_EDITS.value: True,
    InboxItem.Outcome.DENIED.value: False,
}


def decision_row(values: dict[str, Any]) -> dict[str, Any]:
    tool_call = values.pop("tool_call") or {}
    outcome = values["outcome"]
    return {
        **values,
        "decided_at": values["decided_at"].isoformat(),
        "tool_name": tool_call.get("name", "") if isinstance(tool_call, dict) else "",
        "approved": _APPROVED_BY_OUTCOME.get(outcome),
        "edited": outcome == InboxItem.Outcome.APPROVED_WITH_EDITS,
    }


def event_row(values: dict[str, Any]) -> dict[str, Any]:
    return {**values, "created_at": values["created_at"].isoformat()}


def _batches(queryset: QuerySet, fields: dict[str, str], *, after: int, size: int) -> list[dict[str, Any]]:
    rows = queryset.filter(pk__gt=after).order_by("pk").values_list(*fields.values())[:size]
    return [dict(zip(fields, row, strict=True)) for row in rows]


def iter_rows(
    queryset: QuerySet, fields: dict[str, str], make_row: Callable[[dict], dict], *, size: int | None = None
) -> Iterator[list[dict[str, Any]]]:
    """Batches of export rows, oldest first, one short query each."""
    size = size or BATCH_SIZE
    after = 0
    while True:
        batch = _batches(queryset, fields, after=after, size=size)
        if not batch:
            return
        after = batch[-1][next(iter(fields))]
        yield [make_row(values) for values in batch]


async def aiter_rows(
    queryset: QuerySet, fields: dict[str, str], make_row: Callable[[dict], dict], *, size: int | None = None
) -> AsyncIterator[list[dict[str, Any]]]:
    size = size or BATCH_SIZE
    after = 0
    fetch = sync_to_async(_batches)
    while True:
        batch = await fetch(queryset, fields, after=after, size=size)
        if not batch:
            return
        after = batch[-1][next(iter(fields))]
        yield [make_row(values) for values in batch]


class _Line:
    """csv.writer needs a file; this one hands back what was written."""

    def write(self, value: str) -> str:
        return value


def _csv_cell(value: Any) -> Any:
    if isinstance(value, dict | list):
        value = json.dumps(value, ensure_ascii=False, sort_keys=True)
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        # Agent-supplied text must not become a formula when the file is opened in a spreadsheet.
        value = "'" + value
    return value


def csv_chunks(columns: list[str], batches: Iterator[list[dict]]) -> Iterator[str]:
    writer = csv.writer(_Line())
    yield writer.writerow(columns)
    for batch in batches:
        yield "".join(writer.writerow([_csv_cell(row.get(column)) for column in columns]) for row in batch)


def json_chunks(columns: list[str], batches: Iterator[list[dict]]) -> Iterator[str]:
    """The rows of one JSON array, written element by element (the trailer closes it)."""
    yield "["
    first = True
    for batch in batches:
        parts = []
        for row in batch:
            parts.append(("\n" if first else ",\n") + json.dumps({c: row.get(c) for c in columns}, ensure_ascii=False))
            first = False
        yield "".join(parts)


async def _acsv_chunks(columns: list[str], batches: AsyncIterator[list[dict]]) -> AsyncIterator[str]:
    writer = csv.writer(_Line())
    yield writer.writerow(columns)
    async for batch in batches:
        yield "".join(writer.writerow([_csv_cell(row.get(column)) for column in columns]) for row in batch)


async def _ajson_chunks(columns: list[str], batches: AsyncIterator[list[dict]]) -> AsyncIterator[str]:
    yield "["
    first = True
    async for batch in batches:
        parts = []
        for row in batch:
            parts.append(("\n" if first else ",\n") + json.dumps({c: row.get(c) for c in columns}, ensure_ascii=False))
            first = False
        yield "".join(parts)


def chain_head() -> dict[str, Any]:
    chain = AuditChain.objects.order_by("pk").first()
    if chain is None:
        return {"headSeq": 0, "headHash": "", "headSignature": ""}
    return {"headSeq": chain.head_seq, "headHash": chain.head_hash, "headSignature": chain.head_signature}


class Signer:
    """The HMAC of every byte an export sends before its signature (``INBOX_AUDIT_SIGNING_KEY``)."""

    def __init__(self) -> None:
        self.mac = hmac.new(settings.INBOX_AUDIT_SIGNING_KEY.encode(), digestmod=hashlib.sha256)

    def __call__(self, chunk: str) -> str:
        self.mac.update(chunk.encode())
        return chunk

    def hexdigest(self) -> str:
        return self.mac.hexdigest()


def _trailer(fmt: str, head: dict[str, Any], signer: Signer) -> str:
    if fmt == "csv":
        writer = csv.writer(_Line())
        chain = signer(writer.writerow(["#chain", head["headSeq"], head["headHash"], head["headSignature"]]))
        return chain + writer.writerow(["#signature", signer.hexdigest()])
    chain = signer(f'\n],\n"chain": {json.dumps(head)}')
    return chain + f',\n"signature": "{signer.hexdigest()}"}}\n'


def signed_chunks(fmt: str, chunks: Iterator[str]) -> Iterator[str]:
    """The export's chunks, then the chain's head and the signature over everything before it."""
    signer, head = Signer(), chain_head()
    if fmt == "json":
        yield signer('{"rows": ')
    for chunk in chunks:
        yield signer(chunk)
    yield _trailer(fmt, head, signer)


async def asigned_chunks(fmt: str, chunks: AsyncIterator[str]) -> AsyncIterator[str]:
    signer, head = Signer(), await sync_to_async(chain_head)()
    if fmt == "json":
        yield signer('{"rows": ')
    async for chunk in chunks:
        yield signer(chunk)
    yield _trailer(fmt, head, signer)


EXPORTS = {
    "decisions": (DECISION_FIELDS, DECISION_COLUMNS, decision_row),
    "events": (EVENT_FIELDS, EVENT_COLUMNS, event_row),
}


FORMATS = {"csv": "text/csv; charset=utf-8", "json": "application/json"}


def export_response(*, request: HttpRequest, form: AuditFilterForm, kind: str, fmt: str) -> StreamingHttpResponse:
    fields, columns, make_row = EXPORTS[kind]
    queryset = form.decisions() if kind == "decisions" else with_seals(form.events())
    if isinstance(request, ASGIRequest):
        batches_async = aiter_rows(queryset, fields, make_row)
        content: Any = asigned_chunks(fmt, (_acsv_chunks if fmt == "csv" else _ajson_chunks)(columns, batches_async))
    else:
        chunks = (csv_chunks if fmt == "csv" else json_chunks)(columns, iter_rows(queryset, fields, make_row))
        content = signed_chunks(fmt, chunks)
    response = StreamingHttpResponse(content, content_type=FORMATS[fmt])
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    response["Content-Disposition"] = f'attachment; filename="inbox-{kind}-{stamp}.{fmt}"'
    response["Cache-Control"] = "no-store"
    return response
