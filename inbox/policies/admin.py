"""Policies in the admin, read-only: they are created and edited on their own pages (/policies/) or the API,
where every change is checked, versioned and audited with its diff."""

from __future__ import annotations

from django.contrib import admin
from django.utils.html import format_html

from inbox.models.links import DecisionLinkUse
from inbox.models.policies import BacktestFinding, Policy, PolicyBacktest, PolicyMatch


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Policy)
class PolicyAdmin(ReadOnlyAdmin):
    list_display = ["name", "position", "agent", "team", "action", "mode", "enabled", "version", "page"]
    list_filter = ["mode", "action", "enabled"]
    search_fields = ["name", "tool_name", "reason"]

    @admin.display(description="Edit")
    def page(self, policy: Policy) -> str:
        return format_html('<a href="{}">policy page</a>', policy.get_absolute_url())


@admin.register(PolicyMatch)
class PolicyMatchAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "policy", "policy_version", "item", "mode", "action", "outcome"]
    list_filter = ["mode", "outcome", "action"]
    search_fields = ["policy__name", "item__interrupt_id", "item__tool_call_id"]
    list_select_related = ["policy", "item"]


@admin.register(PolicyBacktest)
class PolicyBacktestAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "policy", "policy_version", "draft", "days", "state", "matched", "agreed", "page"]
    list_filter = ["state", "draft"]
    search_fields = ["policy__name"]
    list_select_related = ["policy"]

    @admin.display(description="Result")
    def page(self, backtest: PolicyBacktest) -> str:
        return format_html('<a href="{}">backtest page</a>', backtest.get_absolute_url())


@admin.register(BacktestFinding)
class BacktestFindingAdmin(ReadOnlyAdmin):
    list_display = ["backtest", "kind", "item"]
    list_filter = ["kind"]
    list_select_related = ["backtest", "item"]


@admin.register(DecisionLinkUse)
class DecisionLinkUseAdmin(ReadOnlyAdmin):
    list_display = ["used_at", "user", "item", "action", "result"]
    list_filter = ["action", "result"]
    search_fields = ["user__username", "item__interrupt_id"]
    list_select_related = ["user", "item"]
