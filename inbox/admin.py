"""The inbox domain in the Django admin.

What agents sent and what people decided is evidence: threads, runs, items, decisions and resumes are
read-only here (decisions go through the inbox pages and API, which validate and audit them).
``AuditEvent`` is append-only: nobody may add, change or delete one, superusers included.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from agents.endpoints import validate_endpoint_url
from agents.models import http_url_validator
from inbox.audit.record import Actor, audit
from inbox.core.errors import ApplicationError
from inbox.models import (
    ApiToken,
    AuditChain,
    AuditCheckpoint,
    AuditEvent,
    AuditSeal,
    AuditVerification,
    AwayStatus,
    BusinessHours,
    Comment,
    ConformanceObservation,
    Decision,
    Escalation,
    EscalationRule,
    InboxItem,
    ItemSearchText,
    ItemSeen,
    Notice,
    NotificationPreference,
    Resume,
    Run,
    RunStart,
    SavedView,
    Snooze,
    TeamLead,
    TeamWebhook,
    Thread,
)
from inbox.teams import away


class ReadOnlyAdmin(admin.ModelAdmin):
    """Viewable by staff with the view permission; deletable by superusers (to clean up test data)."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.is_superuser


def pretty_json(value: Any) -> str:
    text = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)
    # format_html escapes the agent-supplied text.
    return format_html('<pre style="white-space: pre-wrap; margin: 0">{}</pre>', text)


@admin.register(Thread)
class ThreadAdmin(ReadOnlyAdmin):
    list_display = ("thread_id", "agent", "created_at", "updated_at", "timeline")
    list_filter = ("agent",)
    search_fields = ("thread_id", "agent__slug")
    list_select_related = ("agent",)
    date_hierarchy = "created_at"

    @admin.display(description="Timeline")
    def timeline(self, thread: Thread) -> str:
        return format_html('<a href="{}">timeline</a>', reverse("audit:thread", args=[thread.pk]))


@admin.register(Run)
class RunAdmin(ReadOnlyAdmin):
    list_display = ("run_id", "agent", "thread", "source", "outcome", "created_at")
    list_filter = ("outcome", "source", "agent")
    search_fields = ("run_id", "thread__thread_id", "parent_run_id", "error_message")
    list_select_related = ("agent", "thread")
    date_hierarchy = "created_at"
    exclude = ("events", "state_snapshot", "messages_snapshot", "tool_calls", "tool_results", "input", "result")
    readonly_fields = ("tool_calls_json", "tool_results_json", "result_json")

    @admin.display(description="Tool calls")
    def tool_calls_json(self, run: Run) -> str:
        return pretty_json(run.tool_calls)

    @admin.display(description="Tool results")
    def tool_results_json(self, run: Run) -> str:
        return pretty_json(run.tool_results)

    @admin.display(description="Result")
    def result_json(self, run: Run) -> str:
        return pretty_json(run.result)


class DecisionInline(admin.TabularInline):
    model = Decision
    extra = 0
    can_delete = False
    fields = ("user", "status", "payload", "comment", "final", "counts", "created_at")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(InboxItem)
class InboxItemAdmin(ReadOnlyAdmin):
    list_display = (
        "interrupt_id",
        "reason",
        "tool_name",
        "agent",
        "status",
        "decided_by",
        "created_at",
        "expires_at",
        "trail",
    )
    list_filter = ("status", "reason", "agent", "expires_at_defaulted")
    search_fields = ("interrupt_id", "tool_call_id", "message", "thread__thread_id", "run__run_id")
    list_select_related = ("agent", "decided_by")
    date_hierarchy = "created_at"
    inlines = [DecisionInline]

    @admin.display(description="Tool-call trail")
    def trail(self, item: InboxItem) -> str:
        if not item.tool_call_id:
            return "—"
        return format_html('<a href="{}">trail</a>', reverse("audit:tool_call", args=[item.tool_call_id]))


@admin.register(ItemSearchText)
class ItemSearchTextAdmin(ReadOnlyAdmin):
    """What the inbox list's text search reads, one row per item (written at ingest)."""

    list_display = ("item", "agent", "text")
    list_filter = ("agent",)
    search_fields = ("text",)
    list_select_related = ("item", "agent")


@admin.register(Decision)
class DecisionAdmin(ReadOnlyAdmin):
    list_display = ("item", "user", "status", "final", "counts", "created_at")
    list_filter = ("status", "final", "item__agent")
    search_fields = ("item__interrupt_id", "user__username", "comment")
    list_select_related = ("item", "user")
    date_hierarchy = "created_at"


@admin.register(Resume)
class ResumeAdmin(ReadOnlyAdmin):
    list_display = (
        "next_run_id",
        "agent",
        "thread",
        "state",
        "attempts",
        "last_error_short",
        "delivered_at",
        "created_at",
    )
    list_filter = ("state", "agent")
    search_fields = ("next_run_id", "thread__thread_id", "run__run_id", "last_error")
    list_select_related = ("agent", "thread")
    date_hierarchy = "created_at"

    @admin.display(description="Last error")
    def last_error_short(self, resume: Resume) -> str:
        return (resume.last_error[:80] + "…") if len(resume.last_error) > 80 else resume.last_error


class AppendOnlyAdmin(admin.ModelAdmin):
    """Rows the inbox writes and nobody edits: listed and shown, never added, changed or deleted here."""

    def get_actions(self, request: HttpRequest) -> dict:
        return {}  # not even "delete selected"

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(AuditSeal)
class AuditSealAdmin(AppendOnlyAdmin):
    list_display = ("seq", "event_id", "hash", "sealed_at")
    search_fields = ("=event_id", "=hash")


@admin.register(AuditChain)
class AuditChainAdmin(AppendOnlyAdmin):
    list_display = ("head_seq", "head_hash", "sealed_through", "updated_at")


@admin.register(AuditCheckpoint)
class AuditCheckpointAdmin(AppendOnlyAdmin):
    list_display = ("seq", "hash", "events_purged", "purged_before", "created_at")


@admin.register(AuditVerification)
class AuditVerificationAdmin(AppendOnlyAdmin):
    list_display = ("started_at", "finished_at", "events_checked", "through_seq", "ok", "event_id", "problem")
    list_filter = ("ok",)


@admin.register(Notice)
class NoticeAdmin(AppendOnlyAdmin):
    """The notice outbox: what was sent to whom, its state and last error (docs/teams.md)."""

    list_display = ("created_at", "kind", "channel", "to", "webhook", "state", "attempts", "last_error")
    list_filter = ("state", "kind", "channel")
    search_fields = ("to", "subject", "=key")
    list_select_related = ("webhook",)
    raw_id_fields = ("user",)


@admin.register(ItemSeen)
class ItemSeenAdmin(AppendOnlyAdmin):
    list_display = ("first_seen_at", "item", "user")
    raw_id_fields = ("item", "user")


@admin.register(AuditEvent)
class AuditEventAdmin(AppendOnlyAdmin):
    list_display = ("created_at", "actor_type", "actor_label", "verb", "object_type", "object_id", "agent")
    list_filter = ("verb", "actor_type", "object_type", "agent")
    search_fields = ("actor_label", "verb", "object_id", "thread__thread_id")
    list_select_related = ("agent",)
    date_hierarchy = "created_at"
    readonly_fields = ("data_json",)
    exclude = ("data",)

    @admin.display(description="Data")
    def data_json(self, event: AuditEvent) -> str:
        return pretty_json(event.data)


@admin.register(Comment)
class CommentAdmin(admin.ModelAdmin):
    list_display = ("user", "item", "run", "body_short", "created_at")
    search_fields = ("body", "user__username")
    list_select_related = ("user", "item", "run")
    raw_id_fields = ("item", "run", "user")
    date_hierarchy = "created_at"

    @admin.display(description="Comment")
    def body_short(self, comment: Comment) -> str:
        return comment.body[:80]


@admin.register(NotificationPreference)
class NotificationPreferenceAdmin(admin.ModelAdmin):
    list_display = ("user", "email_mode", "digest_last_sent_at")
    list_filter = ("email_mode",)
    search_fields = ("user__username", "user__email")
    list_select_related = ("user",)
    raw_id_fields = ("user",)


class TeamWebhookForm(forms.ModelForm):
    url = forms.CharField(
        max_length=500, validators=[http_url_validator], help_text="http or https; the inbox POSTs JSON here."
    )
    secret = forms.CharField(
        max_length=200,
        required=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Signing key (Standard Webhooks: a whsec_… secret is used as its base64-decoded bytes, any "
        "other as its UTF-8 bytes). Leave blank to keep the current one.",
    )

    class Meta:
        model = TeamWebhook
        fields = ("team", "url", "secret", "enabled")

    def clean_secret(self) -> str:
        secret = self.cleaned_data.get("secret") or ""
        if not secret and self.instance.pk:
            return self.instance.secret
        if not secret:
            raise forms.ValidationError("A secret is required: receivers verify the signature with it.")
        return secret

    def clean_url(self) -> str:
        url = self.cleaned_data["url"]
        validate_endpoint_url(url)  # no internal addresses, no user part: the agents' rule (agents/endpoints.py)
        return url


@admin.register(TeamWebhook)
class TeamWebhookAdmin(admin.ModelAdmin):
    form = TeamWebhookForm
    list_display = ("team", "url", "enabled", "created_at")
    list_filter = ("enabled", "team")
    search_fields = ("url", "team__name")
    list_select_related = ("team",)


@admin.register(ConformanceObservation)
class ConformanceObservationAdmin(ReadOnlyAdmin):
    list_display = ("agent", "behaviour", "variant", "last_seen_at", "first_seen_at", "example_run")
    list_filter = ("behaviour", "variant", "agent")
    search_fields = ("agent__slug", "behaviour", "variant", "detail")
    list_select_related = ("agent", "example_run")


@admin.register(RunStart)
class RunStartAdmin(ReadOnlyAdmin):
    """Runs started from an agent's page, while and after a worker asked the agent."""

    list_display = ("created_at", "agent", "user", "thread_id", "state", "error_code", "run")
    list_filter = ("state", "agent")
    search_fields = ("agent__slug", "user__username", "thread_id", "error")
    list_select_related = ("agent", "user", "run")


@admin.register(SavedView)
class SavedViewAdmin(admin.ModelAdmin):
    """People's saved views of the list (they keep them on the views page; staff share them with a team)."""

    list_display = ("name", "owner", "team", "query", "created_at")
    list_filter = ("team",)
    search_fields = ("name", "owner__username", "query")
    list_select_related = ("owner", "team")
    raw_id_fields = ("owner",)


@admin.register(Snooze)
class SnoozeAdmin(ReadOnlyAdmin):
    """Who snoozed which item until when (snoozing is audited; people change their own on the item page)."""

    list_display = ("item", "user", "until", "clamped", "woken_at", "created_at")
    list_filter = ("clamped",)
    search_fields = ("user__username", "item__interrupt_id")
    list_select_related = ("item", "user")


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Approvers' API tokens: adding one shows its key once, in a message; only its hash is stored."""

    list_display = ("prefix_display", "user", "label", "is_active", "created_at", "last_used_at", "revoked_at")
    list_filter = (("revoked_at", admin.EmptyFieldListFilter),)
    search_fields = ("prefix", "label", "user__username")
    list_select_related = ("user",)
    fields = ("user", "label")
    actions = ["revoke"]

    @admin.display(description="Token")
    def prefix_display(self, token: ApiToken) -> str:
        return f"{token.prefix}…"

    @admin.display(boolean=True, description="Active")
    def is_active(self, token: ApiToken) -> bool:
        return token.is_active

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        return ("user", "label") if obj is not None else ()

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: ApiToken, form: forms.ModelForm, change: bool) -> None:
        if change:
            return
        token, raw = ApiToken.issue(obj.user, label=obj.label)
        obj.pk, obj.prefix, obj.token_hash, obj.created_at = token.pk, token.prefix, token.token_hash, token.created_at
        obj._state.adding = False
        audit(actor=Actor.for_user(request.user), verb="api_token.issued", obj=obj.user, data={"prefix": token.prefix})
        messages.warning(request, f"The new API token for {obj.user} — copy it now, it is not shown again: {raw}")

    @admin.action(description="Revoke selected tokens")
    def revoke(self, request: HttpRequest, queryset) -> None:
        tokens = list(queryset.filter(revoked_at__isnull=True).select_related("user"))
        now = timezone.now()
        for token in tokens:
            ApiToken.objects.filter(pk=token.pk).update(revoked_at=now)
            audit(
                actor=Actor.for_user(request.user),
                verb="api_token.revoked",
                obj=token.user,
                data={"prefix": token.prefix},
            )
        self.message_user(request, f"Revoked {len(tokens)} token(s).", messages.SUCCESS)


# Escalation rules are set through the API (``/api/v1/escalation-rules``), which checks and audits them; an
# escalation that fired is evidence.
@admin.register(EscalationRule)
class EscalationRuleAdmin(ReadOnlyAdmin):
    list_display = ("__str__", "step", "after_minutes", "before_deadline_minutes", "enabled", "created_at")
    list_filter = ("enabled", "step")
    search_fields = ("team__name", "agent__slug", "to_team__name", "to_user__username")


@admin.register(Escalation)
class EscalationAdmin(ReadOnlyAdmin):
    list_display = ("item", "step", "target_label", "why", "fired_at")
    list_filter = ("step",)
    search_fields = ("target_label",)


class AwayStatusForm(forms.ModelForm):
    """The service's checks (``inbox.teams.away.check_away``) beside their fields."""

    class Meta:
        model = AwayStatus
        fields = ["user", "starts_at", "ends_at", "delegate"]

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        if all(data.get(name) for name in self.Meta.fields):
            try:
                away.check_away(
                    user=data["user"], starts_at=data["starts_at"], ends_at=data["ends_at"], delegate=data["delegate"]
                )
            except ApplicationError as error:
                field = {"from": "starts_at", "until": "ends_at"}.get(error.field or "", error.field)
                self.add_error(field if field in self.fields else None, error.message.split(": ", 1)[-1])
        return data


@admin.register(AwayStatus)
class AwayStatusAdmin(admin.ModelAdmin):
    """Staff set someone away (and their delegate) here; the service hands their items over and audits it."""

    form = AwayStatusForm
    list_display = ("user", "starts_at", "ends_at", "delegate", "set_by")
    search_fields = ("user__username", "delegate__username")

    def save_model(self, request: HttpRequest, obj: AwayStatus, form: Any, change: bool) -> None:
        saved = away.away_set(
            user=obj.user, starts_at=obj.starts_at, ends_at=obj.ends_at, delegate=obj.delegate, set_by=request.user
        )
        obj.pk = saved.pk

    def delete_model(self, request: HttpRequest, obj: AwayStatus) -> None:
        away.away_clear(user=obj.user, set_by=request.user)

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        for status in queryset.select_related("user"):
            away.away_clear(user=status.user, set_by=request.user)


@admin.register(TeamLead)
class TeamLeadAdmin(admin.ModelAdmin):
    """Staff name a team's leads here (audited): a lead writes the team's shadow policies and business hours, and
    counts only while a member of the team (docs/policies.md)."""

    list_display = ("team", "user")
    search_fields = ("team__name", "user__username")

    def save_model(self, request: HttpRequest, obj: TeamLead, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        data = {"team": obj.team.name, "user": obj.user.get_username()}
        audit(actor=Actor.for_user(request.user), verb="team.lead_named", obj=obj, data=data)

    def delete_model(self, request: HttpRequest, obj: TeamLead) -> None:
        data = {"team": obj.team.name, "user": obj.user.get_username()}
        audit(actor=Actor.for_user(request.user), verb="team.lead_removed", obj=obj, data=data)
        super().delete_model(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        for lead in queryset.select_related("team", "user"):
            self.delete_model(request, lead)


# Business hours are set on the Escalation rules page (staff, or the team's lead), which checks and audits them.
@admin.register(BusinessHours)
class BusinessHoursAdmin(ReadOnlyAdmin):
    list_display = ("team", "days", "opens", "closes", "time_zone")
    search_fields = ("team__name",)


from inbox.policies import admin as policies_admin  # noqa: E402, F401  (registers policies, link uses)
from inbox.sso import admin as sso_admin  # noqa: E402, F401  (registers the SSO models)
