"""The notice outbox: one row per recipient and channel (an e-mail to a person, a call to a team webhook), written in
the transaction of what caused it and sent from the table by ``inbox.teams.outbox``."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone


class Notice(models.Model):
    """A notice to send: what it says is fixed when the row is written, so every attempt sends the same bytes."""

    class Kind(models.TextChoices):
        ANNOUNCEMENT = "announcement", "New items"
        DIGEST = "digest", "Digest"
        REMINDER = "reminder", "Expiry reminder"
        SNOOZE = "snooze", "Back from snooze"
        ESCALATION = "escalation", "Escalation"
        DELIVERY_FAILED = "delivery_failed", "Answer not delivered"
        SUPERSEDED = "superseded", "Items superseded"
        DELEGATION = "delegation", "Items handed over"

    class Channel(models.TextChoices):
        EMAIL = "email", "E-mail"
        WEBHOOK = "webhook", "Webhook"

    class State(models.TextChoices):
        PENDING = "pending", "Waiting"
        SENDING = "sending", "Sending"
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed"

    # The notice's id to the outside: the webhook's ``Idempotency-Key`` and the e-mail's ``Message-ID``.
    key = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    channel = models.CharField(max_length=10, choices=Channel.choices)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="notices"
    )
    webhook = models.ForeignKey(
        "inbox.TeamWebhook", null=True, blank=True, on_delete=models.CASCADE, related_name="notices"
    )
    to = models.CharField(max_length=254, blank=True, help_text="The e-mail address, as it was when written.")
    subject = models.CharField(max_length=255, blank=True)
    body = models.TextField(help_text="The e-mail's text, or the webhook's JSON body.")
    html = models.TextField(blank=True)
    event = models.CharField(max_length=40, blank=True, help_text="A webhook's X-Inbox-Event.")
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    first_error_at = models.DateTimeField(null=True, blank=True, help_text="Failing since (cleared when sent).")
    next_attempt_at = models.DateTimeField(default=timezone.now)
    claimed_at = models.DateTimeField(null=True, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    retry_until = models.DateTimeField(help_text="Retries stop here: the notice is failed.")
    sent_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        app_label = "inbox"
        indexes = [
            models.Index(fields=["state", "next_attempt_at"], name="notice_state_next_attempt"),
            models.Index(fields=["state", "lease_until"], name="notice_state_lease"),
            models.Index(fields=["user", "-id"], name="notice_user_recent"),
            models.Index(fields=["webhook", "-id"], name="notice_webhook_recent"),
        ]

    def __str__(self) -> str:
        return f"notice {self.pk} {self.kind} by {self.channel} ({self.state})"

    @property
    def status(self) -> str:
        """What a person reads: ``sent``, ``failed``, ``retrying`` (an attempt failed; ``last_error`` says why),
        ``sending`` or ``waiting``."""
        if self.state == self.State.PENDING:
            return "retrying" if self.last_error else "waiting"
        return self.state

    @property
    def recipient(self) -> str:
        return self.to if self.channel == self.Channel.EMAIL else (self.webhook.url if self.webhook else "")
