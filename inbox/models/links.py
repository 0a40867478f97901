"""The record that makes a notification's decision link single-use."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class DecisionLinkUse(models.Model):
    """A decision link (Approve / Deny in an email or a chat message) that was used. Its token's SHA-256 is
    unique, so a link decides at most once, even when it is confirmed twice at the same moment."""

    token_hash = models.CharField(max_length=64, unique=True)
    item = models.ForeignKey("inbox.InboxItem", on_delete=models.CASCADE, related_name="link_uses")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    action = models.CharField(max_length=16)
    # What the decision service answered: "ok", or the error code it refused with.
    result = models.CharField(max_length=64, blank=True)
    used_at = models.DateTimeField(default=timezone.now)

    class Meta:
        app_label = "inbox"

    def __str__(self) -> str:
        return f"{self.action} link for item {self.item_id} used by {self.user_id}"
