"""The agent registry in the Django admin.

Tokens are shown by prefix only (the hash never leaves the database); rotating shows the new raw token
once, in a message. The endpoint URL and the outbound auth header are where the inbox POSTs decisions,
so only superusers may change them.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import Count, Q, QuerySet
from django.http import HttpRequest

from agents import services
from agents.forms import AgentForm
from agents.models import Agent, AgentToken

SECRET_FIELDS = ("endpoint_url", "auth_header_name", "auth_header_value")


class AgentTokenInline(admin.TabularInline):
    model = AgentToken
    extra = 0
    can_delete = False
    fields = ("prefix_display", "label", "created_at", "last_used_at", "revoked_at")
    readonly_fields = ("prefix_display", "label", "created_at", "last_used_at", "revoked_at")
    verbose_name_plural = "Ingest tokens (issue, rotate and revoke with the actions on the agent list)"

    @admin.display(description="Token")
    def prefix_display(self, token: AgentToken) -> str:
        return f"{token.prefix}…"

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin):
    form = AgentForm
    list_display = (
        "name",
        "slug",
        "endpoint_url",
        "enabled",
        "team_list",
        "live_tokens",
        "approvals_required",
        "default_ttl",
    )
    list_filter = ("enabled", "teams")
    search_fields = ("slug", "name", "endpoint_url", "description")
    prepopulated_fields = {"slug": ("name",)}
    filter_horizontal = ("teams",)
    inlines = [AgentTokenInline]
    actions = ["rotate_tokens", "revoke_tokens", "enable_agents", "disable_agents"]
    fieldsets = (
        (None, {"fields": ("name", "slug", "description", "enabled", "teams")}),
        ("Where the inbox sends resumes", {"fields": SECRET_FIELDS + ("clear_auth_header_value",)}),
        ("Policy", {"fields": ("default_ttl", "approvals_required")}),
    )

    def get_queryset(self, request: HttpRequest) -> QuerySet[Agent]:
        return (
            super()
            .get_queryset(request)
            .prefetch_related("teams")
            .annotate(_live_tokens=Count("tokens", filter=Q(tokens__revoked_at__isnull=True)))
        )

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        if request.user.is_superuser:
            return ()
        return ("endpoint_url", "auth_header_name", "auth_header_status")

    def get_fieldsets(self, request: HttpRequest, obj: Any = None):
        if request.user.is_superuser:
            return self.fieldsets
        return (
            self.fieldsets[0],
            (
                "Where the inbox sends resumes (superusers only)",
                {"fields": ("endpoint_url", "auth_header_name", "auth_header_status")},
            ),
            self.fieldsets[2],
        )

    @admin.display(description="Auth header value")
    def auth_header_status(self, agent: Agent) -> str:
        return "set (hidden)" if agent.auth_header_value else "none"

    @admin.display(description="Teams")
    def team_list(self, agent: Agent) -> str:
        return ", ".join(team.name for team in agent.teams.all()) or "—"

    @admin.display(description="Live tokens", ordering="_live_tokens")
    def live_tokens(self, agent: Agent) -> int:
        return agent._live_tokens  # type: ignore[attr-defined]  # annotated by get_queryset

    def save_model(self, request: HttpRequest, obj: Agent, form: forms.ModelForm, change: bool) -> None:
        changed = [
            name
            for name in form.changed_data
            if name != "clear_auth_header_value"
            # The secret field is always blank in the page, so "changed" means a different value.
            and not (name == "auth_header_value" and form.cleaned_data[name] == form.initial.get(name))
        ]
        services.agent_save(obj, created=not change, fields=changed, user=request.user, via="admin")

    @admin.action(description="Rotate tokens (revoke live ones, issue a new one shown once)")
    def rotate_tokens(self, request: HttpRequest, queryset: QuerySet[Agent]) -> None:
        for agent in queryset:
            raw = services.tokens_rotate(
                agent, label=f"rotated by {request.user.get_username()}", user=request.user, via="admin"
            )
            self.message_user(
                request,
                f"New ingest token for {agent.slug}: {raw} — copy it now, it is not shown again.",
                messages.WARNING,
            )

    @admin.action(description="Revoke all live tokens")
    def revoke_tokens(self, request: HttpRequest, queryset: QuerySet[Agent]) -> None:
        count = sum(len(services.tokens_revoke(agent, user=request.user, via="admin")) for agent in queryset)
        self.message_user(request, f"Revoked {count} token(s).", messages.SUCCESS)

    @admin.action(description="Enable")
    def enable_agents(self, request: HttpRequest, queryset: QuerySet[Agent]) -> None:
        for agent in queryset:
            services.agent_set_enabled(agent, enabled=True, user=request.user, via="admin")

    @admin.action(description="Disable (ingest is refused with 403)")
    def disable_agents(self, request: HttpRequest, queryset: QuerySet[Agent]) -> None:
        for agent in queryset:
            services.agent_set_enabled(agent, enabled=False, user=request.user, via="admin")


@admin.register(AgentToken)
class AgentTokenAdmin(admin.ModelAdmin):
    list_display = ("prefix_display", "agent", "label", "is_active", "created_at", "last_used_at", "revoked_at")
    list_filter = (("revoked_at", admin.EmptyFieldListFilter), "agent")
    search_fields = ("prefix", "label", "agent__slug", "agent__name")
    list_select_related = ("agent",)
    # token_hash is never shown: the form lists only these.
    fields = ("agent", "prefix_display", "label", "created_at", "last_used_at", "revoked_at")
    readonly_fields = ("agent", "prefix_display", "created_at", "last_used_at", "revoked_at")
    actions = ["revoke"]

    @admin.display(description="Token")
    def prefix_display(self, token: AgentToken) -> str:
        return f"{token.prefix}…"

    @admin.display(boolean=True, description="Active")
    def is_active(self, token: AgentToken) -> bool:
        return token.is_active

    def has_add_permission(self, request: HttpRequest) -> bool:
        # A token is issued with the agent's "rotate" action, which shows the raw value once.
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.action(description="Revoke selected tokens")
    def revoke(self, request: HttpRequest, queryset: QuerySet[AgentToken]) -> None:
        tokens = services.token_list_revoke(queryset, user=request.user, via="admin")
        self.message_user(request, f"Revoked {len(tokens)} token(s).", messages.SUCCESS)
