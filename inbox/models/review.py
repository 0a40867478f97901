"""What review quality is measured from (``inbox.audit.review``): when each person was first shown each item."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class ItemSeen(models.Model):
    """The first time the item page or the split view's pane showed ``item`` to ``user``; never updated."""

    item = models.ForeignKey("inbox.InboxItem", on_delete=models.CASCADE, related_name="+", db_index=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    first_seen_at = models.DateTimeField(default=timezone.now)

    class Meta:
        app_label = "inbox"
        constraints = [models.UniqueConstraint(fields=["item", "user"], name="item_seen_once_per_user")]

    def __str__(self) -> str:
        return f"item {self.item_id} seen by {self.user_id} at {self.first_seen_at:%Y-%m-%d %H:%M:%S}"
