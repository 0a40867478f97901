"""Single sign-on records: who a provider's subject is here, and which teams follow which claim value."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models
from django.utils import timezone


class SSOIdentity(models.Model):
    """A user's account at the OpenID Connect provider: (issuer, sub) is the key, never the email, so an
    email claim cannot take over a local account."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sso_identities")
    issuer = models.CharField(max_length=500)
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(default=timezone.now)
    last_login_at = models.DateTimeField(default=timezone.now)

    class Meta:
        app_label = "inbox"
        constraints = [models.UniqueConstraint(fields=["issuer", "subject"], name="sso_identity_unique")]
        verbose_name_plural = "SSO identities"

    def __str__(self) -> str:
        return f"{self.subject} @ {self.issuer}"


class TeamClaimMapping(models.Model):
    """Members of ``team`` are the users whose groups claim (``OIDC_GROUPS_CLAIM``) holds ``claim_value``,
    applied at each SSO login. A team with no mapping is managed by hand only."""

    team = models.ForeignKey(Group, on_delete=models.CASCADE, related_name="claim_mappings")
    claim_value = models.CharField(max_length=255, help_text="A value of the groups claim, e.g. 'acme-ops'.")

    class Meta:
        app_label = "inbox"
        constraints = [models.UniqueConstraint(fields=["team", "claim_value"], name="team_claim_unique")]

    def __str__(self) -> str:
        return f"{self.claim_value} → {self.team}"
