"""The notice outbox: every e-mail and webhook call the inbox sends is a ``Notice`` row first, written in the
transaction of what caused it, one per recipient and channel, with the bytes it will send.

Life of a row: ``pending → sending → sent | failed`` (back to ``pending`` between retries), as a resume's:

- **claim**: one ``UPDATE … RETURNING`` moves due ``pending`` rows to ``sending`` with a lease (``lease_until``,
  ``INBOX_NOTICE_LEASE_SECONDS``) and counts the attempt (``attempts`` is the claim's fencing token); on PostgreSQL
  the rows are picked with ``FOR UPDATE SKIP LOCKED``, so concurrent workers take different rows.
- **send**: just before each send the worker renews the lease under its claim (a claim the sweep took back is
  not sent); an e-mail carries ``Message-ID: <key@host>``, a webhook call ``Idempotency-Key: <key>`` and
  ``webhook-id: msg_<key>``, the same on every attempt, so a receiver can drop a repeat.
- **record**: ``sent``; or a transient failure (transport error, 429, 5xx, a mail server refusing) back to
  ``pending`` with capped, jittered backoff until ``retry_until`` (``INBOX_NOTICE_RETRY_WINDOW_SECONDS``), then
  ``failed``; a final refusal (other 4xx, an address the endpoint rules refuse, a refused recipient) is ``failed``
  at once. A successful send is recorded whatever became of the claim meanwhile.
- **recover**: ``notices_sweep`` (beat, every ``INBOX_RECOVERY_SWEEP_SECONDS``) puts back rows whose lease lapsed
  (their worker died) and queues again due rows whose queue message was lost (Redis restarted empty).

Who sends: a worker that wrote the rows sends them after its commit (``deliver``); otherwise the doorbell task
``inbox.notifications.send_notices`` (one per channel, so a dead mail server never holds back a webhook) sends
every due row of its channel. The broker only rings: the table is the truth.
"""

from __future__ import annotations

import functools
import logging
import smtplib
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import httpx
from celery import current_app
from django.conf import settings
from django.core.mail import EmailMessage, EmailMultiAlternatives, get_connection
from django.db import connection, transaction
from django.db.models import Count, F, Max, Min, Q, QuerySet, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from agents import endpoints
from inbox.audit.record import Actor, audit
from inbox.core import queue
from inbox.core.sql import id_set, update_returning
from inbox.models import Notice, TeamWebhook
from inbox.teams.signatures import sign, standard_webhook_headers

log = logging.getLogger(__name__)

SEND_TASK = "inbox.notifications.send_notices"
CLAIM_BATCH = 20  # rows one claim takes; a doorbell claims batches until none is due


# --- writing ----------------------------------------------------------------------------------------------


def _deadline(now: datetime) -> datetime:
    return now + timedelta(seconds=settings.INBOX_NOTICE_RETRY_WINDOW_SECONDS)


def email_notices(kind: str, messages: Iterable[tuple[Any, EmailMessage]]) -> list[Notice]:
    """Store one e-mail notice per (recipient, message): its subject, text and HTML as they will be sent. Call
    inside the transaction of what caused them."""
    now = timezone.now()
    rows = []
    for user, message in messages:
        if not message.to or not message.to[0]:
            continue  # no address: nothing to send
        html = next(
            (content for content, mimetype in getattr(message, "alternatives", []) if mimetype == "text/html"), ""
        )
        rows.append(
            Notice(
                kind=kind,
                channel=Notice.Channel.EMAIL,
                user=user,
                to=message.to[0],
                subject=message.subject[:255],
                body=str(message.body),
                html=html,
                created_at=now,
                next_attempt_at=now,
                retry_until=_deadline(now),
            )
        )
    return Notice.objects.bulk_create(rows)


def webhook_notice(kind: str, webhook: TeamWebhook, body: bytes, *, key: Any, event: str) -> Notice:
    """Store one webhook call (``key``: the notice's id, which the body may carry too)."""
    now = timezone.now()
    return Notice.objects.create(
        key=key,
        kind=kind,
        channel=Notice.Channel.WEBHOOK,
        webhook=webhook,
        body=body.decode(),
        event=event,
        created_at=now,
        next_attempt_at=now,
        retry_until=_deadline(now),
    )


def ring(channel: str, *, countdown: float | None = None) -> None:
    """Queue the channel's doorbell. The broker being down loses nothing: the sweep rings again."""
    try:
        current_app.send_task(SEND_TASK, args=[channel], countdown=countdown)
    except Exception:
        log.exception("could not queue the %s notices' doorbell; the sweep will", channel)


def ring_on_commit(notices: Sequence[Notice]) -> None:
    """After the commit that wrote them, ring the doorbell of each of their channels."""
    for channel in sorted({notice.channel for notice in notices}):
        transaction.on_commit(functools.partial(ring, channel))


def deliver_on_commit(notices: Sequence[Notice]) -> None:
    """After the commit that wrote them, this process sends them (a worker's own notices)."""
    ids = [notice.pk for notice in notices]
    if ids:
        transaction.on_commit(lambda: deliver(ids), robust=True)


# --- claiming, sending, recording ----------------------------------------------------------------------


def _claim(candidates: QuerySet[Notice], now: datetime) -> list[Notice]:
    """Take the given due rows: ``sending``, leased, the attempt counted. Returns the rows this call took."""
    with transaction.atomic():
        rows = update_returning(
            candidates,
            values={
                "state": Notice.State.SENDING,
                "claimed_at": now,
                "lease_until": now + timedelta(seconds=settings.INBOX_NOTICE_LEASE_SECONDS),
                "updated_at": now,
            },
            guard={"state": Notice.State.PENDING},
            returning=["id"],
        )
        ids = [row[0] for row in rows]
        if not ids:
            return []
        Notice.objects.filter(pk__in=id_set(ids)).update(attempts=F("attempts") + 1)
    return list(Notice.objects.filter(pk__in=id_set(ids)).select_related("webhook__team").order_by("pk"))


def _due(now: datetime) -> QuerySet[Notice]:
    return Notice.objects.filter(state=Notice.State.PENDING, next_attempt_at__lte=now)


def claim_ids(ids: Sequence[int]) -> list[Notice]:
    """Claim the given rows that are still due."""
    now = timezone.now()
    return _claim(_due(now).filter(pk__in=id_set(ids)), now) if ids else []


def deliver(ids: Sequence[int]) -> int:
    """Claim and send the given rows (those still due): webhooks, then e-mails. Returns the e-mails sent."""
    claimed = claim_ids(ids)
    _send_webhooks([notice for notice in claimed if notice.channel == Notice.Channel.WEBHOOK])
    return _send_emails([notice for notice in claimed if notice.channel == Notice.Channel.EMAIL])


def send_due(channel: str, *, batches: int = 50) -> int:
    """The doorbell: claim and send the channel's due rows, ``CLAIM_BATCH`` at a time (on PostgreSQL ``SKIP
    LOCKED``: other workers take other rows). Returns how many rows it sent or recorded."""
    handled = 0
    for _ in range(batches):
        now = timezone.now()
        candidates = _due(now).filter(channel=channel).order_by("next_attempt_at", "pk")
        if connection.vendor == "postgresql":
            candidates = candidates.select_for_update(skip_locked=True)
        with transaction.atomic():  # FOR UPDATE needs one; the claim's own block nests in it
            claimed = _claim(candidates[:CLAIM_BATCH], now)
        if not claimed:
            break
        if channel == Notice.Channel.EMAIL:
            _send_emails(claimed)
        else:
            _send_webhooks(claimed)
        handled += len(claimed)
    else:
        ring(channel)  # more left: another turn, so other tasks get the worker in between
    return handled


def _held(notice: Notice) -> QuerySet[Notice]:
    """The row while this attempt's claim holds (still ``sending`` under the same attempt number)."""
    return Notice.objects.filter(pk=notice.pk, state=Notice.State.SENDING, attempts=notice.attempts)


def _renew(notice: Notice) -> bool:
    """Just before a send: renew the lease under this claim. False: the sweep took the row back; do not send."""
    now = timezone.now()
    lease = now + timedelta(seconds=settings.INBOX_NOTICE_LEASE_SECONDS)
    return bool(_held(notice).update(lease_until=lease, updated_at=now))


def _sent(notice: Notice) -> None:
    # A send that happened is never thrown away, whatever became of the claim meanwhile.
    now = timezone.now()
    Notice.objects.filter(pk=notice.pk).exclude(state=Notice.State.SENT).update(
        state=Notice.State.SENT, sent_at=now, lease_until=None, last_error="", first_error_at=None, updated_at=now
    )


def _failed(notice: Notice, error: str, *, final: bool = False) -> str:
    """Record a failed attempt under its claim: retried with backoff until ``retry_until``, else ``failed``."""
    now = timezone.now()
    delay = queue.backoff_seconds(
        notice.attempts, base=settings.INBOX_NOTICE_BACKOFF_BASE, cap=settings.INBOX_NOTICE_BACKOFF_CAP
    )
    since = Coalesce(F("first_error_at"), Value(now))
    error = error[:2000]
    if not final and now + timedelta(seconds=delay) < notice.retry_until:
        moved = _held(notice).update(
            state=Notice.State.PENDING,
            next_attempt_at=now + timedelta(seconds=delay),
            lease_until=None,
            last_error=error,
            first_error_at=since,
            updated_at=now,
        )
        if moved:
            log.warning("notice %s by %s failed (%s); retrying in %.1f s", notice.pk, notice.channel, error, delay)
            ring(notice.channel, countdown=delay)
        return "retrying"
    if not final:
        error = f"{error} (gave up: retries end at {notice.retry_until.isoformat()})"
    if _held(notice).update(
        state=Notice.State.FAILED, lease_until=None, last_error=error, first_error_at=since, updated_at=now
    ):
        log.error("notice %s by %s to %s failed for good: %s", notice.pk, notice.channel, notice.recipient, error)
        if notice.webhook is not None:
            record_webhook_failure(notice.webhook, error)
    return "failed"


def message_id(notice: Notice) -> str:
    host = urlsplit(settings.SITE_URL).hostname or "inbox.invalid"
    return f"<{notice.key}@{host}>"


def _email_of(notice: Notice) -> EmailMessage:
    headers = {"Message-ID": message_id(notice)}
    if not notice.html:
        return EmailMessage(notice.subject, notice.body, settings.DEFAULT_FROM_EMAIL, [notice.to], headers=headers)
    message = EmailMultiAlternatives(
        notice.subject, notice.body, settings.DEFAULT_FROM_EMAIL, [notice.to], headers=headers
    )
    message.attach_alternative(notice.html, "text/html")
    return message


def _send_emails(notices: list[Notice]) -> int:
    """Send claimed e-mail rows over one connection; each row's outcome is its own. Returns how many were sent."""
    if not notices:
        return 0
    mail = get_connection(fail_silently=False)
    try:
        mail.open()
    except Exception as exc:  # the mail server is down or refusing: every row retries
        for notice in notices:
            _failed(notice, f"{type(exc).__name__}: {exc}")
        return 0
    sent = 0
    try:
        for notice in notices:
            if not _renew(notice):
                continue
            try:
                mail.send_messages([_email_of(notice)])
            except smtplib.SMTPRecipientsRefused as exc:
                _failed(notice, f"the mail server refused the recipient: {exc.recipients}", final=True)
            except Exception as exc:
                _failed(notice, f"{type(exc).__name__}: {exc}")
            else:
                _sent(notice)
                sent += 1
    finally:
        try:
            mail.close()
        except Exception:  # noqa: BLE001 - the outcomes are recorded; a QUIT that fails changes none
            log.debug("closing the mail connection failed", exc_info=True)
    return sent


def _send_webhooks(notices: list[Notice]) -> None:
    for notice in notices:
        if _renew(notice):
            send_webhook(notice)


def webhook_headers(notice: Notice, data: bytes) -> dict[str, str]:
    assert notice.webhook is not None
    return {
        "Content-Type": "application/json",
        "User-Agent": "approval-inbox-webhook/1",
        "X-Inbox-Event": notice.event or "items.created",
        "X-Inbox-Signature": sign(notice.webhook.secret, data),
        "Idempotency-Key": str(notice.key),
        **standard_webhook_headers(
            notice.webhook.secret, message_id=f"msg_{notice.key.hex}", body=data, timestamp=int(time.time())
        ),
    }


def send_webhook(notice: Notice) -> str:
    """One POST of a claimed webhook row to its team's URL (only there, and only on a public address unless
    ``INBOX_AGENT_ALLOWED_NETWORKS`` allows it), recorded: ``delivered``, ``retrying``, or ``failed`` /
    ``refused`` / ``rejected`` / ``disabled`` (final)."""
    webhook = notice.webhook
    if webhook is None or not webhook.enabled:
        _failed(notice, "the webhook was disabled or deleted", final=True)
        return "disabled"
    data = notice.body.encode()
    try:
        # The agents' rule (agents/endpoints.py): public addresses only, and the request connects to the address
        # checked, so the name cannot resolve elsewhere in between.
        destination = endpoints.target(webhook.url)
    except endpoints.EndpointRefused as refused:
        if not refused.resolvable:  # a name that does not resolve (yet): retried like a refused connection
            return _failed(notice, refused.message)
        _failed(notice, refused.message, final=True)
        return "refused"
    try:
        with httpx.Client(
            timeout=settings.INBOX_WEBHOOK_TIMEOUT,
            follow_redirects=False,
            trust_env=False,
            verify=endpoints.tls_context(),
        ) as http:
            response = http.post(
                destination.url,
                content=data,
                headers={**webhook_headers(notice, data), **destination.headers},
                extensions=destination.extensions,
            )
    except httpx.HTTPError as exc:
        return _failed(notice, f"{exc.__class__.__name__}: {exc}")
    if response.is_success:
        _sent(notice)
        return "delivered"
    error = f"HTTP {response.status_code}"
    if response.status_code < 500 and response.status_code != 429:
        _failed(notice, error, final=True)
        return "rejected"
    return _failed(notice, error)


def record_webhook_failure(webhook: TeamWebhook, error: str) -> None:
    """The audit record of a webhook call given up."""
    log.error("webhook %s to %s gave up: %s", webhook.pk, webhook.url, error)
    audit(
        actor=Actor.system("notifications"),
        verb="webhook.failed",
        obj=webhook,
        data={"team": webhook.team.name, "url": webhook.url, "error": error},
    )


# --- recovery ----------------------------------------------------------------------------------------------


def notices_sweep(*, now: datetime | None = None) -> int:
    """Beat: put back rows whose lease lapsed (their worker died between claiming and recording; past their
    retry window they fail), and queue again due rows whose queue message was lost. Returns the rows moved."""
    now = now or timezone.now()
    lapsed = Notice.objects.filter(state=Notice.State.SENDING, lease_until__lt=now)
    note = "the worker sending it stopped before recording the outcome (its lease lapsed)"
    failed = lapsed.filter(retry_until__lte=now).update(
        state=Notice.State.FAILED, lease_until=None, last_error=f"{note}; retries ended", updated_at=now
    )
    requeued = list(lapsed.values_list("channel", flat=True).distinct())
    put_back = lapsed.update(
        state=Notice.State.PENDING, next_attempt_at=now, lease_until=None, last_error=note, updated_at=now
    )
    # A due row this overdue lost its doorbell: due again from now, so it is rung once per grace period.
    overdue = Notice.objects.filter(
        state=Notice.State.PENDING,
        next_attempt_at__lt=now - timedelta(seconds=settings.INBOX_NOTICE_REQUEUE_GRACE_SECONDS),
    )
    channels = set(requeued) | set(overdue.values_list("channel", flat=True).distinct())
    stale = overdue.update(next_attempt_at=now)
    for channel in sorted(channels):
        ring(channel)
    if failed or put_back or stale:
        log.warning("notice sweep: %d put back, %d re-queued, %d failed past their window", put_back, stale, failed)
    return failed + put_back + stale


# --- reading -----------------------------------------------------------------------------------------------


def notices_of(user: Any) -> QuerySet[Notice]:
    """A person's e-mail notices, newest first."""
    return Notice.objects.filter(user=user).order_by("-pk")


@dataclass(frozen=True)
class FailingChannel:
    """A channel with notices being retried: the mail server, or one team webhook."""

    channel: str
    webhook_id: int | None
    label: str
    retrying: int
    since: datetime
    last_error: str


def failing_channels() -> list[FailingChannel]:
    """Channels whose notices are being retried now, the longest-failing first."""
    retrying = Notice.objects.filter(
        state__in=[Notice.State.PENDING, Notice.State.SENDING], first_error_at__isnull=False
    )
    groups = (
        retrying.values("channel", "webhook_id", "webhook__url", "webhook__team__name")
        .annotate(count=Count("pk"), since=Min("first_error_at"), newest=Max("pk"))
        .order_by("since")[:50]
    )
    errors = dict(Notice.objects.filter(pk__in=[group["newest"] for group in groups]).values_list("pk", "last_error"))
    return [
        FailingChannel(
            channel=group["channel"],
            webhook_id=group["webhook_id"],
            label=(
                "e-mail (the mail server)"
                if group["channel"] == Notice.Channel.EMAIL
                else f"webhook of {group['webhook__team__name']} ({group['webhook__url']})"
            ),
            retrying=group["count"],
            since=group["since"],
            last_error=errors.get(group["newest"], ""),
        )
        for group in groups
    ]


def failing_past(seconds: float, *, now: datetime | None = None) -> list[str]:
    """The channels failing for longer than ``seconds`` (``/healthz``): one query on the rows being retried."""
    cutoff = (now or timezone.now()) - timedelta(seconds=seconds)
    rows = (
        Notice.objects.filter(Q(state=Notice.State.PENDING) | Q(state=Notice.State.SENDING), first_error_at__lt=cutoff)
        .values_list("channel", "webhook_id")
        .distinct()[:10]
    )
    return sorted(f"webhook {webhook_id}" if webhook_id else channel for channel, webhook_id in rows)
