"""Admin for single sign-on: which teams follow which value of the groups claim, and the linked identities."""

from __future__ import annotations

from django.contrib import admin

from inbox.models.sso import SSOIdentity, TeamClaimMapping


@admin.register(TeamClaimMapping)
class TeamClaimMappingAdmin(admin.ModelAdmin):
    list_display = ["claim_value", "team"]
    list_filter = ["team"]
    search_fields = ["claim_value", "team__name"]


@admin.register(SSOIdentity)
class SSOIdentityAdmin(admin.ModelAdmin):
    list_display = ["user", "issuer", "subject", "created_at", "last_login_at"]
    search_fields = ["user__username", "subject"]
    readonly_fields = ["user", "issuer", "subject", "created_at", "last_login_at"]

    def has_add_permission(self, request) -> bool:
        return False
