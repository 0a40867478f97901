"""The audit log's hash chain: a seal per event, the signed head, purge checkpoints and verification runs."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from inbox.core.fields import RowsJSONField


class AuditSeal(models.Model):
    """An audit event's place in the chain: ``hash`` covers the event's content, its position and the hash
    before it. ``refs`` keeps the event's references as they were sealed (a deleted user or agent nulls them)."""

    seq = models.PositiveBigIntegerField(primary_key=True)
    event_id = models.BigIntegerField(unique=True)
    hash = models.CharField(max_length=64)
    refs = RowsJSONField(default=dict)
    sealed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        app_label = "inbox"

    def __str__(self) -> str:
        return f"seal {self.seq} of audit event {self.event_id}"


class AuditChain(models.Model):
    """The one row that says where the chain ends, signed with ``INBOX_AUDIT_SIGNING_KEY``: a chain cut at its
    end no longer matches it. ``sealed_through`` is an event id below which every event is sealed."""

    head_seq = models.PositiveBigIntegerField(default=0)
    head_hash = models.CharField(max_length=64)
    head_signature = models.CharField(max_length=64)
    sealed_through = models.BigIntegerField(default=0)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        app_label = "inbox"

    def __str__(self) -> str:
        return f"audit chain through seal {self.head_seq}"


class AuditCheckpoint(models.Model):
    """Where a retention purge cut the chain: the seal it kept as the new start, signed."""

    seq = models.PositiveBigIntegerField(unique=True)
    hash = models.CharField(max_length=64)
    signature = models.CharField(max_length=64)
    events_purged = models.PositiveBigIntegerField()
    purged_before = models.DateTimeField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        app_label = "inbox"

    def __str__(self) -> str:
        return f"audit checkpoint at seal {self.seq}"


class AuditVerification(models.Model):
    """One walk of the chain by ``audit_verify``: what it checked and the first problem it found."""

    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    events_checked = models.PositiveBigIntegerField(default=0)
    through_seq = models.PositiveBigIntegerField(default=0)
    ok = models.BooleanField(default=False)
    problem = models.TextField(blank=True)
    event_id = models.BigIntegerField(null=True, blank=True)

    class Meta:
        app_label = "inbox"
        get_latest_by = "started_at"

    def __str__(self) -> str:
        return f"audit verification of {self.started_at:%Y-%m-%d %H:%M}: {'ok' if self.ok else self.problem}"
