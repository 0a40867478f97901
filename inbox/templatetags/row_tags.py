"""The inbox list's rows, worked out once per page and placed by a Jinja2 template: ``{% list_rows %}`` in
``inbox/_rows.html`` renders ``jinja2/inbox/rows.html``.

A page draws 50 rows, and each row asked the template engine for some forty values through filters (ages, times in
the current time zone, cut texts, the reason in words, the run's deadline, the delivery state) and three or four
``{% include %}``s: about 1,900 Python calls a row, two thirds of the list page's work. Here each row's values are
computed once, in plain Python, by the same functions the filters use (``inbox_tags``), with the clock, the time
zone and today's date read once per page; the template only places them, and Jinja2 places them five times faster
than Django's engine did (``config/jinja_env.py``). The HTML is still all in the template
(``tests/inbox/test_list_rows.py`` holds the row's cells to the shared partials they repeat: ``_deadline.html``,
``_outcome_badge.html``, ``_delivery_mark.html``, ``_avatar.html``).

A row is an object of plain values (``Row``: Jinja2 reads ``row.pk`` as an attribute first). What the template
can tell from one of them (which note a row has, whether its deadline passed) it compares there: Jinja2 compiles a
comparison to plain Python, so a second field for it would only be more to work out."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Any

from django import template
from django.template import engines
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe

from inbox.agui import emitters
from inbox.listing.selectors import BulkNote
from inbox.models import InboxItem
from inbox.templatetags.inbox_tags import (
    AGE_STEPS,
    avatar_hue,
    clip,
    delivery,
    initials,
    reason_class,
    reason_label,
    remaining_words,
    run_deadline,
)

register = template.Library()

_STATUS_LABELS = {value: str(label) for value, label in InboxItem.Status.choices}
_OUTCOME_LABELS = {value: str(label) for value, label in InboxItem.Outcome.choices}


@dataclass(slots=True)
class Row:
    """One row of the list: every value ``jinja2/inbox/rows.html`` shows or tests, worked out. Times are ``iso``
    (``|iso``) and ``stamp`` (``|stamp``), both in the current time zone."""

    pk: int
    status: str
    href: str
    flash: bool
    # The row's BulkNote (listing.selectors.bulk_note): its kind and words, and each kind the template tests.
    note_kind: str
    note_words: str
    selectable: bool
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
    # Whether someone holds (claimed) an open row; who, for the chip and its avatar (``_avatar.html``).
    held: bool
    holder_name: str
    holder_is_viewer: bool
    holder_hue: int
    holder_initials: str
    # The viewer's snooze of an open row: until when, and that time as people say it (``|until_words``).
    snoozed: bool
    snoozed_iso: str
    snoozed_stamp: str
    snoozed_words: str
    tool_name: str
    tool_short: str
    created_iso: str
    created_stamp: str
    age: str
    # An open row's deadline as ``_deadline.html`` draws it: the run's (``|run_deadline``); ``left`` is
    # ``|short_remaining``; ``own``, the item's own expiresAt (stamp) when the run's deadline is earlier.
    deadline: bool
    deadline_iso: str
    deadline_stamp: str
    deadline_left: str
    is_run_deadline: bool
    deadline_own: str
    deadline_defaulted: bool
    decided_by: str
    # ``item|delivery`` as ``_delivery_mark.html`` draws it (a decided row).
    delivery: bool
    delivery_state: str
    delivery_sentence: str
    delivery_label: str


class _Page:
    """What every row of a page reads the same: the clock, the time zone, today (``until_words``)."""

    def __init__(self) -> None:
        self.now = timezone.now()
        self.zone: tzinfo = timezone.get_current_timezone()
        self.today = self.now.astimezone(self.zone).date()

    def moment(self, value: datetime) -> tuple[str, str]:
        """``|iso`` and ``|stamp`` of ``value``: the template converts an aware time to the current zone first."""
        local = value.astimezone(self.zone) if value.utcoffset() is not None else value
        return local.isoformat(), f"{local:%Y-%m-%d %H:%M:%S} {local.tzname() or ''}".rstrip()

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
    note: BulkNote = item.bulk_note  # type: ignore[attr-defined]  # listing.selectors.with_bulk_notes
    claimed_by = item.claimed_by if item.claimed_by_id is not None else None
    holder = claimed_by if is_open else None
    snoozed_until: datetime | None = getattr(item, "snoozed_until", None) if is_open else None
    snoozed_iso, snoozed_stamp = page.moment(snoozed_until) if snoozed_until else ("", "")
    deadline_iso = deadline_stamp = deadline_left = deadline_own = ""
    differs = False
    if is_open:
        decide_by = run_deadline(item)
        assert decide_by is not None  # an InboxItem always has one
        differs = decide_by != item.expires_at
        deadline_iso, deadline_stamp = page.moment(decide_by)
        deadline_left = page.remaining(decide_by)
        deadline_own = page.moment(item.expires_at)[1] if differs else ""
    shown = delivery(item) if item.status in InboxItem.DECIDED else None
    tool_name = item.tool_name
    created_iso, created_stamp = page.moment(item.created_at)
    return Row(
        pk=item.pk,
        status=item.status,
        href=f"{path}{item.pk}/",
        flash=bool(flash) and item.pk in flash,
        note_kind=note.kind,
        note_words=note.words,
        selectable=note.selectable,
        interrupt_id=item.interrupt_id,
        outcome_key=item.outcome or item.status,
        outcome_label=outcome_label,
        # listing.selectors._row_columns
        agent_name=item.agent_name or item.agent_slug,  # type: ignore[attr-defined]
        thread=clip(item.thread_key, 28),  # type: ignore[attr-defined]
        reason=item.reason,
        reason_class=reason_class(item),
        reason_label=clip(reason_label(item), 28),
        words=words,
        words_long=len(words) > 90,
        held=holder is not None,
        holder_name=holder.get_username() if holder is not None else "",
        holder_is_viewer=holder is not None and item.held_by(viewer),
        holder_hue=avatar_hue(holder) if holder is not None else 0,
        holder_initials=initials(holder) if holder is not None else "",
        snoozed=bool(snoozed_until),
        snoozed_iso=snoozed_iso,
        snoozed_stamp=snoozed_stamp,
        snoozed_words=page.until(snoozed_until) if snoozed_until else "",
        tool_name=tool_name,
        tool_short=clip(tool_name, 64) if tool_name else "",
        created_iso=created_iso,
        created_stamp=created_stamp,
        age=page.age(item.created_at),
        deadline=is_open,
        deadline_iso=deadline_iso,
        deadline_stamp=deadline_stamp,
        deadline_left=deadline_left,
        is_run_deadline=differs,
        deadline_own=deadline_own,
        deadline_defaulted=item.expires_at_defaulted,
        decided_by=item.decided_by_name or "",  # type: ignore[attr-defined]  # listing.selectors._row_columns
        delivery=shown is not None,
        delivery_state=shown.state if shown else "",
        delivery_sentence=shown.sentence if shown else "",
        delivery_label=shown.label if shown else "",
    )


@register.simple_tag(takes_context=True)
def list_rows(context: template.Context) -> SafeString:
    """``{% list_rows %}``: the context's ``items`` (each with its ``bulk_note``) as the list's ``<tr>`` rows, for
    the context's ``user``, linking to ``item_path``; ``flash``: the ids of rows that just changed;
    ``may_have_open``: whether the list may show open rows (its selection column)."""
    page = _Page()
    path, viewer, flash = str(context.get("item_path") or ""), context.get("user"), context.get("flash")
    rows = [_row(item, page, path=path, viewer=viewer, flash=flash) for item in context.get("items") or ()]
    html = (
        engines["jinja2"]
        .get_template("inbox/rows.html")
        .render({"rows": rows, "may_have_open": context.get("may_have_open")})
    )
    return mark_safe(html)  # Jinja2's output, every value in it escaped (config/jinja_env.py)
