from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.contrib.auth.models import Group
from django.core.validators import MinValueValidator, URLValidator
from django.db import models
from django.utils import timezone

TOKEN_PREFIX = "agi_"

http_url_validator = URLValidator(schemes=["http", "https"])


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


class Agent(models.Model):
    """An AG-UI agent that parks interrupts here. Its endpoint is set by admins only, never from an
    ingest body: the inbox POSTs decisions there, so it must not be attacker-controlled."""

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    endpoint_url = models.CharField(
        "AG-UI endpoint URL",
        max_length=500,
        blank=True,
        validators=[http_url_validator],
        help_text="Where resumes (RunAgentInput) are POSTed. http or https only.",
    )
    auth_header_name = models.CharField(
        max_length=100, blank=True, default="Authorization", help_text="Header sent with every request to the agent."
    )
    auth_header_value = models.CharField(
        max_length=1000, blank=True, help_text="Secret value of that header, e.g. 'Bearer …'. Empty sends none."
    )
    enabled = models.BooleanField(default=True, help_text="A disabled agent's ingest requests are refused (403).")
    default_ttl = models.DurationField(
        default=timedelta(hours=24),
        help_text="Expiry applied to interrupts that carry no expiresAt.",
    )
    approvals_required = models.PositiveSmallIntegerField(
        default=1, validators=[MinValueValidator(1)], help_text="Distinct approvals an item needs (quorum)."
    )
    teams = models.ManyToManyField(Group, blank=True, related_name="agents", help_text="Teams that decide its items.")
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name or self.slug

    def issue_token(self, *, label: str = "") -> tuple[AgentToken, str]:
        """Create a new ingest token; the raw value is returned once and never stored."""
        raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
        token = AgentToken.objects.create(agent=self, token_hash=hash_token(raw), prefix=raw[:12], label=label)
        return token, raw

    def rotate_tokens(self, *, label: str = "") -> str:
        """Revoke every live token and issue a fresh one."""
        self.tokens.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        return self.issue_token(label=label)[1]


class AgentToken(models.Model):
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="tokens")
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    prefix = models.CharField(max_length=16, editable=False, help_text="First characters, to tell tokens apart.")
    label = models.CharField(max_length=100, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({'revoked' if self.revoked_at else 'active'})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    def revoke(self) -> None:
        if self.revoked_at is None:
            self.revoked_at = timezone.now()
            self.save(update_fields=["revoked_at"])
