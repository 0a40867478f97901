"""What an open page's websocket receives: the page's changed fragments, rendered on the server for the socket's
user, as htmx out-of-band swaps.

``render`` draws what a batch of pushes changed on the page a socket shows (``LiveView``), through the same
selectors and templates as the page itself, so a fragment never holds what its user may not see. A page that
reconnects sends ``since`` and gets its fragments afresh if anything happened meanwhile (docs/deciding.md)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.http import HttpRequest, QueryDict
from django.middleware.csrf import get_token
from django.template import loader
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.text import Truncator

from inbox.core.converters import database_id
from inbox.decisions.rules import is_requester, requester_of
from inbox.listing import chain, detail
from inbox.listing.selectors import ListFilters
from inbox.models import AuditEvent, InboxItem
from inbox.web.pages import list_context, run_live_context, run_rows

Event = tuple[str, dict[str, Any]]

LIST_EVENTS = frozenset(
    {
        "item.created",
        "item.decided",
        "item.undone",
        "item.expired",
        "items.expired",
        "item.claimed",
        "item.reminder",
        "item.escalated",
        "items.delegated",
    }
)
VIEWS = ("list", "item", "run", "page")
# Closing codes a page does not reconnect after (live.js): signed out, or its object is no longer visible.
GONE = 4404


@dataclass(frozen=True)
class LiveView:
    """What one socket's page shows, from the socket's query string."""

    kind: str
    pk: int | None = None
    query: QueryDict | None = None
    since: float | None = None
    shown_status: str = ""  # the item page: the item's status when the page was rendered
    after: int | None = None  # the item page reached right after deciding: the run just decided (the chain)
    chain: bool = False  # ... and "Then go to the next open item" is on: follow the chain at once

    @classmethod
    def parse(cls, query_string: bytes | str) -> LiveView | None:
        """None for a socket that speaks the JSON protocol (no ``view``); a ValueError for a bad one."""
        query = QueryDict(query_string)
        kind = query.get("view")
        if kind is None:
            return None
        if kind not in VIEWS:
            raise ValueError(f"view: one of {', '.join(VIEWS)}")
        pk = None
        if kind in ("item", "run") or kind == "list" and "item" in query:  # the list's split view shows an item
            key = "item" if kind == "list" else kind
            pk = database_id(query.get(key))
            if pk is None:
                raise ValueError(f"{key}: the numeric id of the {key}")
        since = None
        if query.get("since"):
            try:
                since = float(query["since"])
            except ValueError:
                raise ValueError("since: seconds since the epoch") from None
        return cls(
            kind=kind,
            pk=pk,
            query=query,
            since=since,
            shown_status=query.get("status", ""),
            after=database_id(query.get("after")),
            chain=query.get("chain") == "1",
        )

    @property
    def follows_chain(self) -> bool:
        """The page goes to the chain's follow-up as soon as it arrives: the item page reached by deciding, never the
        list's split view, whose pane stays on the item read (the follow-up is announced there, with its key)."""
        return self.chain and self.kind == "item"

    @property
    def subscription(self) -> tuple[str, int] | None:
        if self.pk is None:
            return None
        return ("run", self.pk) if self.kind == "run" else ("item", self.pk)


_csrf = threading.local()


def render_to_string(name: str, context: dict[str, Any]) -> str:
    """A template of the page, with the socket's CSRF token for its forms (no request is at hand here)."""
    return loader.render_to_string(name, {"csrf_token": getattr(_csrf, "token", ""), **context})


@dataclass
class Rendered:
    html: str = ""
    close_code: int | None = None


def changed_since(since: float | None) -> bool:
    """Whether anything was recorded since ``since`` (less the resync margin): a reconnecting page then
    gets its fragments afresh. Without a cursor, always."""
    if since is None:
        return True
    try:
        moment = datetime.fromtimestamp(since, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return True
    cutoff = moment - timedelta(seconds=settings.INBOX_LIVE_RESYNC_MARGIN_SECONDS)
    return AuditEvent.objects.filter(created_at__gte=cutoff).exists()


def csrf_token_for(cookie_secret: str | None) -> str:
    """The CSRF token forms in pushed fragments carry: a fresh mask of the page's own CSRF cookie, as
    ``{% csrf_token %}`` would render it for that browser's next request."""
    if not cookie_secret:
        return ""
    request = HttpRequest()
    request.META["CSRF_COOKIE"] = cookie_secret
    return get_token(request)


def render(view: LiveView, user: Any, events: list[Event], *, full: bool = False, csrf_token: str = "") -> Rendered:
    """The fragments ``events`` changed on ``view`` for ``user`` (all of them when ``full``). ``csrf_token``
    goes into the forms the fragments hold (see :func:`csrf_token_for`)."""
    cursor = timezone.now().timestamp()
    renderer = {"list": _list, "item": _item, "run": _run, "page": _page}[view.kind]
    _csrf.token = csrf_token
    result = renderer(view, user, events, full)
    if result.html or result.close_code is None and events:
        result.html += _meta(cursor, events[-1][0] if events else "")
    return result


def in_sync() -> str:
    """What a page whose socket connects with nothing changed since its rendering is sent instead of fresh
    fragments: its cursor, moved on to now. The page then knows it shows the latest state and that no resync
    will swap its parts later (a click on a row swapped under it is lost)."""
    return _meta(timezone.now().timestamp(), "")


def _meta(cursor: float, last_event: str) -> str:
    return format_html(
        '<span id="live-meta" hidden data-cursor="{}" data-last-event="{}" hx-swap-oob="true"></span>',
        f"{cursor:.3f}",
        last_event,
    )


# --- the list -------------------------------------------------------------------------------------


def _list(view: LiveView, user: Any, events: list[Event], full: bool) -> Rendered:
    """The list's parts, and those of the item its split view shows beside it (``view.pk``)."""
    rendered = _list_parts(view, user, events, full)
    if view.pk is not None:
        # An item the user may no longer see leaves the pane as it is (the list stays live); its page would close.
        rendered.html += _item(view, user, events, full).html
    return rendered


def _list_parts(view: LiveView, user: Any, events: list[Event], full: bool) -> Rendered:
    if not full and not any(event in LIST_EVENTS for event, _ in events):
        return Rendered()
    filters = ListFilters.from_query(view.query or QueryDict())
    context = {**list_context(user=user, filters=filters), "user": user, "oob": True}
    changed = {payload.get("item") for event, payload in events if event in LIST_EVENTS}
    context["flash"] = {item.pk for item in context["items"] if item.pk in changed}
    parts = [
        render_to_string("inbox/_list_tabs.html", context),
        # Table parts parse only inside a table or a <template>: htmx swaps out-of-band what a template holds.
        f"<template>{render_to_string('inbox/_list_rows.html', context)}</template>",
        render_to_string("inbox/_list_empty.html", context),
        render_to_string("inbox/_list_pager.html", context),
    ]
    parts += [_toast(event, payload) for event, payload in events if event in TOAST_EVENTS]
    if not full:
        parts.append(_announcement(context["items"], events))
    return Rendered("".join(parts))


GONE_EVENTS = frozenset({"item.decided", "item.expired"})
NAMED_AT_MOST = 3


def _titles(titles: list[str], more: int) -> str:
    quoted = [f"“{title}”" for title in titles[:NAMED_AT_MOST]]
    more += max(0, len(titles) - NAMED_AT_MOST)
    if more:
        return ", ".join(quoted) + f" and {more} more"
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def _announcement(shown: Any, events: list[Event]) -> str:
    """What a screen reader hears of a push to the list (``#live-announce``, polite): the items that arrived in
    view (or came back: an undone decision) and those that left it, batched in one sentence each; nothing when
    nothing arrived or left."""
    on_page = {item.pk: item for item in shown}
    arrived = list(dict.fromkeys(p.get("item") for e, p in events if e == "item.created" and p.get("item") in on_page))
    gone = [p.get("item") for e, p in events if e in GONE_EVENTS]
    left = list(dict.fromkeys(pk for pk in gone if pk is not None and pk not in on_page))
    swept = sum(int(p.get("count") or 0) for e, p in events if e == "items.expired")
    back = [p.get("item") for e, p in events if e == "item.undone" and p.get("reopened") and p.get("item") in on_page]
    sentences = []
    if arrived:
        titles = [on_page[pk].short_title for pk in arrived]
        noun = "New item" if len(titles) == 1 else f"{len(titles)} new items"
        sentences.append(f"{noun}: {_titles(titles, 0)}.")
    if back:
        sentences.append(
            f"Back in the list (a decision was undone): {_titles([on_page[pk].short_title for pk in dict.fromkeys(back)], 0)}."
        )
    if left:
        titles = list(InboxItem.objects.filter(pk__in=left[:NAMED_AT_MOST]).values_list("message", flat=True))
        titles = [Truncator(title).chars(80) for title in titles if title]
        if titles:
            sentences.append(f"Left the list: {_titles(titles, len(left) - len(titles))}.")
        else:
            sentences.append(f"{len(left)} item{'s' if len(left) != 1 else ''} left the list.")
    if swept:
        sentences.append(f"{swept} item{'s' if swept != 1 else ''} expired.")
    if not sentences:
        return ""
    return format_html('<div id="live-announce" hx-swap-oob="innerHTML">{}</div>', " ".join(sentences))


# --- other pages: reminders as toasts -------------------------------------------------------------


# A reminder, and items handed to the viewer as someone's delegate (``inbox.teams.away.tell_delegate``).
TOAST_EVENTS = frozenset({"item.reminder", "items.delegated"})


def _page(view: LiveView, user: Any, events: list[Event], full: bool) -> Rendered:
    return Rendered("".join(_toast(event, payload) for event, payload in events if event in TOAST_EVENTS))


def _toast(event: str, payload: dict[str, Any]) -> str:
    if event == "items.delegated":
        items = payload.get("items") or []
        url = InboxItem(pk=items[0]).get_absolute_url() if len(items) == 1 else reverse("inbox:list")
        prefix = f"{payload.get('from', '')} is away: "
    else:
        url, prefix = InboxItem(pk=payload["item"]).get_absolute_url(), "Reminder: "
    return format_html(
        '<div id="live-toasts" hx-swap-oob="beforeend"><div class="live-toast"><a href="{}">{}{}</a></div></div>',
        url,
        prefix,
        payload.get("message", ""),
    )


# --- an item page ---------------------------------------------------------------------------------


def _item(view: LiveView, user: Any, events: list[Event], full: bool) -> Rendered:
    assert view.pk is not None  # an item view names its item (LiveView.parse)
    item = detail.item_for_page(user=user, pk=view.pk)
    if item is None:
        return Rendered(close_code=GONE)
    relevant = [(e, p) for e, p in events if p.get("item") == item.pk or p.get("run") == item.run_id]
    chained = [(e, p) for e, p in events if e == "resume.state" and view.after and p.get("run") == view.after]
    if not relevant and not chained and not full:
        return Rendered()
    siblings = detail.item_siblings(item)
    decisions = list(item.decisions.select_related("user"))
    context = {
        "item": item,
        "run": item.run,
        "siblings": siblings,
        "decided_count": sum(1 for sibling in siblings if sibling.status in _DECIDED),
        "user": user,
        "oob": True,
        "chain_auto": view.follows_chain,
        **detail.item_team(user=user, item=item, decisions=decisions),
    }
    # The claim box in both states: once the item is closed, its claim, release and assign controls are disabled
    # (they would fail), as the decision form is (``_claim_alert.html``'s lock).
    names = ["inbox/_item_run_card.html", "inbox/_claim_alert.html", "inbox/_claim.html"]
    if item.is_open:
        context["is_requester"] = is_requester(user, requester_of(item))
        names.append("inbox/_quorum_hint.html")
        if context["quorum"]:
            names.append("inbox/_quorum.html")
    else:
        # The outcome (in the open page's placeholder, above its locked form, when it was decided elsewhere), its
        # delivery, the tool result and the follow-up, as they change; the card's heading says what was decided.
        context.update(chain.follow_up_context(user=user, run_id=item.run_id))
        names += ["inbox/_item_outcome.html", "inbox/_decision_heading.html"]
        quorum = context["quorum"]
        if quorum and quorum.remaining == 0 and item.status == InboxItem.Status.RESOLVED and not item.is_denial:
            names.append("inbox/_quorum.html")  # every approver of the quorum, as the decided item's page lists them
    if full or any(event == "comment.added" and p.get("item") == item.pk for event, p in relevant):
        names.append("inbox/_comment_list.html")
    parts = [render_to_string(name, context) for name in names]
    if not item.is_open and context["quorum"] and "inbox/_quorum.html" not in names:
        # An open page's count of approvals and its hint say no more once the item is over.
        parts.append('<div id="quorum" hx-swap-oob="delete"></div><p id="quorum-hint" hx-swap-oob="delete"></p>')
    parts.append(render_to_string("inbox/_status_pill.html", {**context, "pill_id": "item-status"}))
    notice = _chain_notice(view, item, user, [*relevant, *chained]) or _item_notice(
        item, user, relevant, shown_status=view.shown_status if full else ""
    )
    if notice:
        parts.append(_notice(*notice))
    return Rendered("".join(parts))


def _chain_notice(view: LiveView, item: InboxItem, user: Any, events: list[Event]) -> tuple[str, str] | None:
    """The resume of the run just decided (``view.after``) or of this decided item's run came back with a
    new interrupt: say so, with its link (followed at once when ``view.chain``)."""
    for event, payload in reversed(events):
        run_id = payload.get("run")
        if event != "resume.state" or not payload.get("resumedRun") or run_id is None:
            continue
        if run_id != view.after and (item.is_open or run_id != item.run_id):
            continue
        following = chain.follow_up(user=user, run_id=run_id, resumed_run_id=payload["resumedRun"])
        if following is not None and following.pk != item.pk:
            html = render_to_string(
                "inbox/_chain_notice.html",
                {"follow_up": following, "chain_auto": view.follows_chain, "asked_after": run_id},
            )
            return (html, "")
    return None


_DECIDED = (InboxItem.Status.RESOLVED, InboxItem.Status.CANCELLED)


def _who(name: str | None, user: Any, *, me: str) -> str:
    return me if name and name == user.get_username() else (name or "")


def _outcome(event: str, payload: dict[str, Any], user: Any) -> str:
    if event == "item.expired":
        note = payload.get("note")
        how = "Superseded" if payload.get("outcome") == InboxItem.Outcome.SUPERSEDED else "Expired"
        return f"{how}: {note}." if note else f"{how}."
    how = "Cancelled" if payload.get("status") == InboxItem.Status.CANCELLED else "Decided"
    who = _who(payload.get("decidedBy"), user, me="you (in another window)")
    return f"{how} by {who}." if who else f"{how}."


def _undone(payload: dict[str, Any], user: Any) -> str:
    who = _who(payload.get("by"), user, me="you (in another window)")
    if payload.get("reopened"):
        return f"Undone by {who}: open again, nothing was sent. Reload to decide."
    return f"{who} withdrew their approval."


def _item_notice(item: InboxItem, user: Any, events: list[Event], *, shown_status: str) -> tuple[str, str] | None:
    notice = None
    for event, payload in events:
        if payload.get("item") != item.pk:
            continue
        if event in ("item.decided", "item.expired"):
            notice = (f"{_outcome(event, payload, user)} The outcome is shown above the form.", "warn")
        elif event == "item.undone":
            notice = (_undone(payload, user), "")
        elif event in ("item.reminder", "item.escalated"):
            prefix = "Reminder: " if event == "item.reminder" else ""
            notice = (f"{prefix}{payload.get('message', '')}", "warn")
        elif event == "item.claimed":
            holder = payload.get("claimedBy")
            text = f"Claimed by {_who(holder, user, me='you')}." if holder else "Released: no one holds this item now."
            notice = (text, "")
        elif event == "item.vote":
            notice = (
                f"{payload.get('by')} approved ({payload.get('approvals')} of {payload.get('required')} approvals).",
                "",
            )
        elif event == "item.tool_result":
            # Only what arrived: the agent reported a result (after a denial too, some agents do); it shows above.
            notice = ("The agent reported the tool call’s result.", "")
    if notice is None and shown_status == InboxItem.Status.OPEN and not item.is_open:
        # Closed while the page's socket was down: say so, as the push would have.
        event = "item.expired" if item.status == InboxItem.Status.EXPIRED else "item.decided"
        payload = {
            "status": item.status,
            "note": item.status_note,
            "decidedBy": item.decided_by.get_username() if item.decided_by else None,
        }
        notice = (f"{_outcome(event, payload, user)} The outcome is shown above the form.", "warn")
    return notice


def _notice(text: str, tone: str) -> str:
    """``text`` is escaped, unless it is already safe HTML (a rendered template, such as the chain's link)."""
    return format_html(
        '<div id="live-notice" role="status" aria-live="polite"{} hx-swap-oob="true">{}</div>',
        format_html(' data-tone="{}"', tone) if tone else "",
        text,
    )


# --- a run page -----------------------------------------------------------------------------------


def _run(view: LiveView, user: Any, events: list[Event], full: bool) -> Rendered:
    assert view.pk is not None  # a run view names its run (LiveView.parse)
    run = detail.run_for_page(user=user, pk=view.pk)
    if run is None:
        return Rendered(close_code=GONE)
    relevant = [(e, p) for e, p in events if p.get("run") == run.pk]
    if not relevant and not full:
        return Rendered()
    items = detail.run_items(run)
    context = {"run": run, "items": items, "user": user, "oob": True, **run_live_context(run, items, user=user)}
    parts = [render_to_string("inbox/_run_live.html", context)]
    touched = {p.get("item") for _, p in relevant}
    for row in run_rows(items, None, user):
        item = row["item"]
        if not (full or item.pk in touched):
            continue
        if item.is_open:
            parts.append(render_to_string("inbox/_run_item.html", {**context, "row": row}))
        else:  # keep the row (and what was chosen) but show its new status and lock it
            pk_text = str(item.pk)
            pill = {"item": item, "pill_id": f"run-item-status-{pk_text}", "lock_target": f"#run-item-{pk_text}"}
            parts.append(render_to_string("inbox/_status_pill.html", {**pill, "oob": True}))
    if full or any(event == "comment.added" and not p.get("item") for event, p in relevant):
        comments = detail.comments_of(run)
        parts.append(render_to_string("inbox/_comment_list.html", {"comments": comments, "oob": True}))
    notice = _run_notice(items, user, relevant)
    if notice:
        parts.append(_notice(*notice))
    return Rendered("".join(parts))


def _run_notice(items: list[InboxItem], user: Any, events: list[Event]) -> tuple[str, str] | None:
    by_pk = {item.pk: item for item in items}
    notice = None
    for event, payload in events:
        if event in ("item.decided", "item.expired"):
            if event == "item.decided" and payload.get("decidedBy") == user.get_username():
                continue
            text = f"{_outcome(event, payload, user).removesuffix('.')} — interrupt {payload.get('item')}."
            notice = (text, "warn" if event == "item.expired" else "")
        elif event == "item.undone" and payload.get("by") != user.get_username():
            notice = (f"{_undone(payload, user).removesuffix('.')} — interrupt {payload.get('item')}.", "")
        elif event == "item.claimed" and payload.get("claimedBy") != user.get_username():
            item = by_pk.get(payload["item"]) if "item" in payload else None
            name = item.interrupt_id if item else f"interrupt {payload.get('item')}"
            holder = payload.get("claimedBy")
            text = (
                f"{holder} is on {name}: only they decide it."
                if holder
                else f"{name} was released: anyone may decide it."
            )
            notice = (text, "")
        elif event == "item.reminder":
            notice = (f"Reminder: {payload.get('message', '')}", "warn")
    return notice
