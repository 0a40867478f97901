"""The inbox list's rows, worked out once per page: ``{% list_rows as rows %}`` in ``inbox/_rows.html``.

A page draws 50 rows, and each row asked the template engine for some forty values through filters (ages, times in
the current time zone, cut texts, the reason in words, the run's deadline, the delivery state) and three or four
``{% include %}``s: about 1,900 Python calls a row, two thirds of the list page's work. Here each row's values are
computed once, in plain Python, by the same functions the filters use (``inbox_tags``), with the clock, the time
zone and today's date read once per page; the template only places them. The HTML is still all in the template
(``tests/inbox/test_list_rows.py`` holds the row's cells to the shared partials they repeat: ``_deadline.html``,
``_outcome_badge.html``, ``_delivery_mark.html``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Any

from django import template
from django.utils import timezone

from inbox.agui import emitters
from inbox.listing.selectors import BulkNote
from inbox.models import InboxItem
from inbox.templatetags.inbox_tags import (
    AGE_STEPS,
    clip,
    delivery,
    reason_class,
    reason_label,
    remaining_words,
    run_deadline,
)

register = template.Library()

_STATUS_LABELS = {value: str(label) for value, label in InboxItem.Status.choices}
_OUTCOME_LABELS = {value: str(label) for value, label in InboxItem.Outcome.choices}


@dataclass(slots=True)
class Moment:
    """A time as the row shows it: ``iso`` (``|iso``) and ``stamp`` (``|stamp``), both in the current time zone."""

    iso: str
    stamp: str


@dataclass(slots=True)
class Holder:
    """Who holds (claimed) an open row: the person (for ``_avatar.html``), their name, whether it is the viewer."""

    person: Any
    name: str
    is_viewer: bool


@dataclass(slots=True)
class Snoozed:
    """The viewer's snooze of an open row: until when, and that time as people say it (``|until_words``)."""

    until: Moment
    words: str


@dataclass(slots=True)
class Deadline:
    """An open row's deadline as ``_deadline.html`` draws it: the run's (``|run_deadline``) and, when it is not
    the item's own, the item's; ``left`` is ``|short_remaining``."""

    at: Moment
    left: str
    is_run_deadline: bool
    own: str  # the item's own expiresAt (stamp), when the run's deadline is earlier
    defaulted: bool


@dataclass(slots=True)
class ShownDelivery:
    """``item|delivery`` as ``_delivery_mark.html`` draws it."""

    state: str
    sentence: str
    label: str


@dataclass(slots=True)
class Row:
    """One row of the list: every value ``inbox/_rows.html`` shows, worked out."""

    pk: int
    status: str
    href: str
    flash: bool
    note: BulkNote
    interrupt_id: str
    outcome_key: str
    outcome_label: str
    agent_name: str
    thread: str
    reason: str
    reason_class: str
    reason_label: str
    words: str
    words_long: bool
    holder: Holder | None
    snoozed: Snoozed | None
    tool_name: str
    tool_short: str
    created: Moment
    age: str
    deadline: Deadline | None
    decided_by: str
    delivery: ShownDelivery | None


class _Page:
    """What every row of a page reads the same: the clock, the time zone, today (``until_words``)."""

    def __init__(self) -> None:
        self.now = timezone.now()
        self.zone: tzinfo = timezone.get_current_timezone()
        self.today = self.now.astimezone(self.zone).date()

    def moment(self, value: datetime) -> Moment:
        """``|iso`` and ``|stamp`` of ``value``: the template converts an aware time to the current zone first."""
        local = value.astimezone(self.zone) if value.utcoffset() is not None else value
        return Moment(local.isoformat(), f"{local:%Y-%m-%d %H:%M:%S} {local.tzname() or ''}".rstrip())

    def age(self, value: datetime) -> str:
        """``|short_age``."""
        seconds = max(0, int((self.now - value).total_seconds()))
        for below, words, unit in AGE_STEPS:
            if below is None or seconds < below:
                return words.format(n=seconds // unit)
        return ""

    def remaining(self, value: datetime) -> str:
        """``|short_remaining``."""
        return remaining_words(int((value - self.now).total_seconds()))

    def until(self, moment: datetime) -> str:
        """``|until_words``."""
        local = moment.astimezone(self.zone)
        days = (local.date() - self.today).days
        clock = f"{local:%H:%M}"
        if days <= 0:
            return clock
        if days == 1:
            return f"tomorrow {clock}"
        if days < 7:
            return f"{local:%a} {clock}"
        return f"{local:%b} {local.day}, {clock}"


def _row(item: InboxItem, page: _Page, *, path: str, viewer: Any, flash: Any) -> Row:
    is_open = item.status == InboxItem.Status.OPEN
    outcome_label = _OUTCOME_LABELS.get(item.outcome, item.outcome) if item.outcome else _STATUS_LABELS[item.status]
    words = clip(item.message or emitters.question_of(emitters.Interrupt.of(item)) or item.interrupt_id, 600)
    holder = None
    claimed_by = item.claimed_by if item.claimed_by_id is not None else None
    if claimed_by is not None and is_open:
        holder = Holder(claimed_by, claimed_by.get_username(), item.held_by(viewer))
    snoozed_until = getattr(item, "snoozed_until", None)
    snoozed = Snoozed(page.moment(snoozed_until), page.until(snoozed_until)) if snoozed_until and is_open else None
    deadline = None
    if is_open:
        decide_by = run_deadline(item)
        assert decide_by is not None  # an InboxItem always has one
        differs = decide_by != item.expires_at
        deadline = Deadline(
            at=page.moment(decide_by),
            left=page.remaining(decide_by),
            is_run_deadline=differs,
            own=page.moment(item.expires_at).stamp if differs else "",
            defaulted=item.expires_at_defaulted,
        )
    shown = delivery(item) if item.status in InboxItem.DECIDED else None
    tool_name = item.tool_name
    return Row(
        pk=item.pk,
        status=item.status,
        href=f"{path}{item.pk}/",
        flash=bool(flash) and item.pk in flash,
        note=item.bulk_note,  # type: ignore[attr-defined]  # listing.selectors.with_bulk_notes
        interrupt_id=item.interrupt_id,
        outcome_key=item.outcome or item.status,
        outcome_label=outcome_label,
        agent_name=item.agent.name or item.agent.slug,
        thread=clip(item.thread.thread_id, 28),
        reason=item.reason,
        reason_class=reason_class(item),
        reason_label=clip(reason_label(item), 28),
        words=words,
        words_long=len(words) > 90,
        holder=holder,
        snoozed=snoozed,
        tool_name=tool_name,
        tool_short=clip(tool_name, 64) if tool_name else "",
        created=page.moment(item.created_at),
        age=page.age(item.created_at),
        deadline=deadline,
        decided_by=item.decided_by.get_username() if item.decided_by_id is not None and item.decided_by else "",
        delivery=ShownDelivery(shown.state, shown.sentence, shown.label) if shown else None,
    )


@register.simple_tag(takes_context=True)
def list_rows(context: template.Context) -> list[Row]:
    """``{% list_rows as rows %}``: the context's ``items`` (each with its ``bulk_note``) as ``Row``s, for the
    context's ``user``, linking to ``item_path``; ``flash``: the ids of rows that just changed."""
    page = _Page()
    path, viewer, flash = str(context.get("item_path") or ""), context.get("user"), context.get("flash")
    return [_row(item, page, path=path, viewer=viewer, flash=flash) for item in context.get("items") or ()]
