"""The inbox list's rows, rendered in Python: the one part of a page drawn 50 times per request.

The list is where approvers wait (issue 15: a page under 30 ms at a million items). Its SQL takes a few
milliseconds; drawing 50 rows through Django templates took several times that — each row resolved ~50
variables, ran a dozen filters and four ``{% include %}``s. Here a row is one f-string whose every value
goes through :func:`esc` (``html.escape``, what the template's autoescape does): the same HTML, byte for
byte, as the template it replaced, five to six times faster (``bench/inbox_list.py`` prints the page). The markup is the one the list's CSS, its
JavaScript (``inbox.js``, ``live.js``) and its tests read; the page and the live fragments draw them with ``{% item_rows %}``
(``_list_rows.html``). Badges, deadlines and delivery marks drawn elsewhere (item and run pages)
stay templates: they are drawn once per page.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django import template
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe

from inbox.models import InboxItem
from inbox.templatetags.inbox_tags import (
    avatar_hue,
    delivery_label,
    delivery_sentence,
    delivery_state,
    initials,
    reason_class,
    reason_label,
    run_deadline,
    short_age,
    short_remaining,
)

register = template.Library()

LOCK_ICON = (
    '<svg viewBox="0 0 16 16" aria-hidden="true"><rect x="3" y="7" width="10" height="7" rx="1.5"/>'
    '<path d="M5.5 7V5a2.5 2.5 0 0 1 5 0v2"/></svg>'
)
FORM_ICON = (
    '<svg viewBox="0 0 16 16" aria-hidden="true"><rect x="2.5" y="2" width="11" height="12" rx="1.5"/>'
    '<path d="M5 5.5h6M5 8h6M5 10.5h3.5"/></svg>'
)


def esc(value: Any) -> str:
    """Autoescape: ``& < > " '`` as entities (Django's ``escape`` is this, behind a lazy-string check)."""
    return html.escape(str(value), quote=True)


def _chars(text: str, length: int) -> str:
    """``|truncatechars:length``: at most ``length`` characters, the last one "…" when cut."""
    return text if len(text) <= length else text[: length - 1] + "…"


def iso(moment: datetime | None) -> str:
    """``|date:'c'`` in the current time zone."""
    return timezone.localtime(moment).isoformat() if moment else ""


def stamp(moment: datetime | None) -> str:
    """``|date:'Y-m-d H:i:s T'`` in the current time zone."""
    if not moment:
        return ""
    local = timezone.localtime(moment)
    return f"{local:%Y-%m-%d %H:%M:%S} {local.tzname() or ''}".rstrip()


def _select_cell(item: InboxItem, note: Any) -> str:
    """The selection cell: the bulk checkbox, or why the row has none (``listing.selectors.bulk_note``)."""
    if note.selectable:
        is_self = note.kind == "self"
        title = esc(note.words) if is_self else "Select for a bulk decision (x)"
        described = f' aria-describedby="self-note-{item.pk}"' if is_self else ""
        return (
            f'<td class="col-select"><label class="bulk-check" title="{title}"><input type="checkbox" name="ids" '
            f'value="{item.pk}" form="bulk-form" data-bulk-select aria-label="Select {esc(item.interrupt_id)}"'
            f"{described}></label></td>"
        )
    words = esc(note.words)
    if note.kind == "closed":
        return f'<td class="col-select"><span class="visually-hidden">{words}</span></td>'
    kind = esc(note.kind)
    icon = LOCK_ICON if note.kind == "claimed" else FORM_ICON
    return (
        f'<td class="col-select"><span class="bulk-check is-disabled bulk-note bulk-note-{kind}" data-bulk-note="{kind}"'
        f' title="{words}">{icon}<span class="visually-hidden">{words}</span></span></td>'
    )


def _message_cell(item: InboxItem, url: str, user: Any) -> str:
    words = _chars(item.message or item.interrupt_id, 600)
    title = f' title="{esc(words)}"' if len(words) > 90 else ""
    parts = [f'<a class="row-link" href="{url}"{title}>{esc(words)}</a>']
    if item.claimed_by and item.status == InboxItem.Status.OPEN:
        holder = esc(item.claimed_by.get_username())
        parts.append(
            f'<span class="holder-chip" data-holder="{holder}" title="Claimed by {holder}"><span class="avatar avatar-sm"'
            f' data-hue="{avatar_hue(item.claimed_by)}" aria-hidden="true">{esc(initials(item.claimed_by))}</span>'
            f'{"You" if item.held_by(user) else holder} <span class="muted">on it</span></span>'
        )
    note = item.bulk_note  # type: ignore[attr-defined]
    if note.kind == "form":
        parts.append(
            f'<span class="note-chip is-form" aria-hidden="true" title="{esc(note.words)}">Needs its form</span>'
        )
    elif note.kind == "self":
        parts.append(
            f'<span class="note-chip is-self" id="self-note-{item.pk}" data-self-requested title="{esc(note.words)}">'
            'Requested by you<span class="visually-hidden">: someone else must approve it; you may deny or cancel it'
            "</span></span>"
        )
    return f'<td class="col-message">{"".join(parts)}</td>'


def _deadline(item: InboxItem) -> str:
    """``_deadline.html`` as the list draws it (not ``big``)."""
    deadline = run_deadline(item)
    if deadline is None:
        return ""
    if deadline != item.expires_at:
        why = (
            ": another interrupt of this run expires then, and the run's one resume must go back before it (this"
            f" one's own expiresAt is {esc(stamp(item.expires_at))})"
        )
    else:
        why = " (the agent's default time-to-live)" if item.expires_at_defaulted else ""
    at = esc(iso(deadline))
    return (
        f'<time class="countdown" data-expires="{at}" datetime="{at}" title="Decide by {esc(stamp(deadline))}{why}">'
        f"{left if (left := short_remaining(deadline)) == 'expired' else 'in ' + left}</time>"
    )


def _closed(item: InboxItem) -> str:
    """``_outcome_badge.html``, who decided, and ``_delivery.html`` with ``compact``."""
    key = esc(item.outcome_key)
    badge = f'<span class="pill pill-{key}" data-outcome="{key}">{esc(item.outcome_label)}</span>'
    by = f' <span class="sub-inline">by {esc(item.decided_by.get_username())}</span>' if item.decided_by else ""
    mark = ""
    if item.is_decided:
        state = esc(delivery_state(item))
        mark = (
            f'<span class="delivery-mark delivery-{state}" data-delivery="{state}" title="{esc(delivery_sentence(item))}">'
            f"{esc(delivery_label(state))}</span>"
        )
    return f"{badge}{by} {mark}"


def render_row(
    item: InboxItem, *, user: Any, flash: set[int] | frozenset[int], may_have_open: bool, item_url: str = ""
) -> str:
    """One ``<tr>`` of the list (``item`` from ``list_context``: annotated by ``with_truth`` and ``with_bulk_notes``).
    ``item_url``: the item page's URL with ``{pk}`` for its id (one ``reverse`` per page, not per row)."""
    url = esc(item_url.format(pk=item.pk) if item_url else item.get_absolute_url())
    status = esc(item.status)
    key, tool = esc(item.outcome_key), item.tool_name
    select = _select_cell(item, item.bulk_note) if may_have_open else ""  # type: ignore[attr-defined]
    tool_cell = (
        f'<td class="col-tool" title="{esc(tool)}"><code>{esc(_chars(tool, 64))}</code></td>'
        if tool
        else '<td class="col-tool"><span class="muted">—</span></td>'
    )
    due = _deadline(item) if item.status == InboxItem.Status.OPEN else _closed(item)
    return (
        f'<tr data-item-row data-item-id="{item.pk}" data-status="{status}" data-href="{url}" class="row-{status}'
        f'{" live-flash" if item.pk in flash else ""}">\n'
        f"  {select}\n"
        f'  <td class="col-status"><span class="status-dot status-{key}" title="{esc(item.outcome_label)}"></span></td>\n'
        f'  <td class="col-agent"><span class="agent-name">{esc(item.agent.name or item.agent.slug)}</span>'
        f'<span class="sub mono" title="Thread">{esc(_chars(item.thread.thread_id, 28))}</span></td>\n'
        f'  <td class="col-reason"><span class="badge {esc(reason_class(item.reason))}" title="{esc(item.reason)}">'
        f"{esc(_chars(reason_label(item.reason), 28))}</span></td>\n"
        f"  {_message_cell(item, url, user)}\n"
        f"  {tool_cell}\n"
        f'  <td class="col-age"><time datetime="{esc(iso(item.created_at))}" title="{esc(stamp(item.created_at))}">'
        f"{esc(short_age(item.created_at))}</time></td>\n"
        f'  <td class="col-due">{due}</td>\n'
        "</tr>\n"
    )


def render_rows(items: Iterable[InboxItem], *, user: Any, flash: Iterable[int] = (), may_have_open: bool) -> SafeString:
    flashed = frozenset(flash)
    item_url = reverse("inbox:item", kwargs={"pk": 1}).replace("/1/", "/{pk}/")
    return mark_safe(
        "".join(
            render_row(item, user=user, flash=flashed, may_have_open=may_have_open, item_url=item_url) for item in items
        )
    )


@register.simple_tag(takes_context=True)
def item_rows(context: template.Context) -> SafeString:
    """``{% item_rows %}``: the rows of ``items`` for ``user``, ``flash`` (pks that just changed) marked."""
    return render_rows(
        context["items"],
        user=context["user"],
        flash=context.get("flash") or (),
        may_have_open=bool(context.get("may_have_open")),
    )
