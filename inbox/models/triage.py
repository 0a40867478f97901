"""A person's own ways through the list: saved views (named filters and sort) and snoozes (an open item out of
their Open list until a time)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models
from django.utils import timezone


class SavedView(models.Model):
    """The list's filters and sort under a name, as the list's own query string (``ListFilters.querystring``):
    the owner's, and a team's too when staff share it with one."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", db_index=False)
    # A team deleted leaves the view to its owner alone.
    team = models.ForeignKey(
        Group, null=True, blank=True, on_delete=models.SET_NULL, related_name="saved_views", db_index=False
    )
    name = models.CharField(max_length=60)
    query = models.CharField(max_length=1000, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        app_label = "inbox"
        constraints = [models.UniqueConstraint(fields=["owner", "name"], name="saved_view_name_per_owner")]
        indexes = [models.Index(fields=["team"], condition=models.Q(team__isnull=False), name="saved_view_team")]

    def __str__(self) -> str:
        return self.name


class Snooze(models.Model):
    """``user`` does not want ``item`` in their Open list before ``until``. The wake sweep sets ``woken_at`` when
    it reminds them; from then on (or from ``until``, whichever comes first) the item is back."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", db_index=False)
    item = models.ForeignKey("inbox.InboxItem", on_delete=models.CASCADE, related_name="snoozes", db_index=False)
    until = models.DateTimeField()
    # The time asked for was past the item's deadline and was brought forward to before it.
    clamped = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)
    woken_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        app_label = "inbox"
        # The list's NOT EXISTS probes (user, item): one index lookup per row it reads, never a scan.
        constraints = [models.UniqueConstraint(fields=["user", "item"], name="snooze_one_per_person")]
        indexes = [
            # The wake sweep: snoozes not woken yet, by time.
            models.Index(fields=["until"], condition=models.Q(woken_at__isnull=True), name="snooze_due"),
            # Deleting an item (its agent) deletes its snoozes.
            models.Index(fields=["item"], name="snooze_item"),
        ]

    def __str__(self) -> str:
        return f"item {self.item_id} snoozed by {self.user_id} until {self.until:%Y-%m-%d %H:%M}"
