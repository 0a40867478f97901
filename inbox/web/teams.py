"""The team review side of the approver pages: claim, release and assign an item, snooze it for oneself,
discuss an item or a run, and decide many list rows at once. Each view checks visibility first (404), calls one service from
``inbox.decisions`` and redirects; refused input re-renders the page with the error beside its field."""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import Group
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from agents.models import Agent
from inbox import access
from inbox.core.errors import ApplicationError
from inbox.core.paging import BoundedPaginator
from inbox.limits import LIST_COUNT_LIMIT, MAX_ESCALATION_MINUTES
from inbox.listing import detail
from inbox.models import InboxItem, NotificationPreference, Run
from inbox.teams import away, claims, comments, escalations, hours, outbox, preferences, snooze
from inbox.web.pages import item_or_404, item_page, list_filters_of, run_or_404, run_page, then_next


def _claim_refused(request: HttpRequest, pk: int, error: ApplicationError) -> HttpResponse:
    item = item_or_404(request, pk)
    return item_page(request, item, status=error.status, extra={"claim_error": error})


def _claim_action(request: HttpRequest, pk: int, service, done: str) -> HttpResponse:
    item_or_404(request, pk)
    try:
        item = service(item_id=pk, user=request.user)
    except ApplicationError as error:
        return _claim_refused(request, pk, error)
    if item.claimed_by_id not in (None, request.user.pk):  # you are away: your delegate holds it
        done = f"You are away: {item.claimed_by.get_username()}, your delegate, holds this item."
    messages.success(request, done)
    return redirect(item)


@login_required
@require_POST
def item_claim(request: HttpRequest, pk: int) -> HttpResponse:
    return _claim_action(request, pk, claims.item_claim, "You’re on it: your teammates see that you hold this item.")


@login_required
@require_POST
def item_release(request: HttpRequest, pk: int) -> HttpResponse:
    return _claim_action(request, pk, claims.item_unclaim, "Released: anyone on the team can pick this item up.")


@login_required
@require_POST
def item_assign(request: HttpRequest, pk: int) -> HttpResponse:
    item_or_404(request, pk)
    try:
        assignee = claims.assignee_named(request.POST.get("assignee"))
        item = claims.item_assign(item_id=pk, user=request.user, assignee=assignee)
    except ApplicationError as error:
        return _claim_refused(request, pk, error)
    who = "yourself" if assignee.pk == request.user.pk else assignee.get_username()
    if item.claimed_by_id != assignee.pk and item.claimed_by is not None:  # away: their delegate holds it
        holder = item.claimed_by.get_username()
        who = f"{holder}: {'you are' if assignee.pk == request.user.pk else assignee.get_username() + ' is'} away"
    messages.success(request, f"Assigned to {who}.")
    return redirect(item)


@login_required
@require_POST
def item_snooze(request: HttpRequest, pk: int) -> HttpResponse:
    """Snooze the item for the viewer (``until``: a preset of ``snooze.PRESETS`` or an ISO 8601 time), then go
    on as deciding does: to the next open item of their list when "then the next item" is on, else the list."""
    item = item_or_404(request, pk)
    try:
        _snooze, when = snooze.item_snooze(item_id=pk, user=request.user, choice=request.POST.get("until", ""))
    except ApplicationError as error:
        return item_page(request, item_or_404(request, pk), status=error.status, extra={"snooze_error": error})
    words = f"Snoozed until {timezone.localtime(when.until):%a %H:%M %Z}: “{item.short_title}” is out of your Open list"
    if when.clamped:
        deadline = timezone.localtime(when.deadline)
        words += f" (brought forward: it must be decided by {deadline:%a %H:%M %Z}, so it comes back before that)"
    messages.success(request, words + ".")
    if then_next(request):
        following, _previous = detail.neighbours_in_list(user=request.user, filters=list_filters_of(request), item=item)
        if following is not None:
            return redirect(following)
    return redirect(reverse("inbox:list") + "?" + list_filters_of(request).querystring())


@login_required
@require_POST
def item_unsnooze(request: HttpRequest, pk: int) -> HttpResponse:
    item = item_or_404(request, pk)
    if snooze.item_unsnooze(item_id=pk, user=request.user):
        messages.success(request, "Unsnoozed: it is back in your Open list.")
    return redirect(item)


def _comment(request: HttpRequest, target: InboxItem | Run) -> HttpResponse:
    body = request.POST.get("body", "")
    try:
        if isinstance(target, InboxItem):
            comments.record_comment(user=request.user, body=body, item=target)
        else:
            comments.record_comment(user=request.user, body=body, run=target)
    except ApplicationError as error:
        extra = {"comment_error": error, "comment_body": body}
        if isinstance(target, InboxItem):
            return item_page(request, target, status=error.status, extra=extra)
        return run_page(request, target, status=error.status, extra=extra)
    return redirect(f"{target.get_absolute_url()}#discussion")


@login_required
@require_POST
def item_comment(request: HttpRequest, pk: int) -> HttpResponse:
    return _comment(request, item_or_404(request, pk))


@login_required
@require_POST
def run_comment(request: HttpRequest, pk: int) -> HttpResponse:
    return _comment(request, run_or_404(request, pk))


class AwayForm(forms.Form):
    starts_at = forms.DateTimeField(
        label="From", widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M")
    )
    ends_at = forms.DateTimeField(
        label="Until", widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M")
    )
    delegate = forms.ChoiceField(label="Delegate")

    def __init__(self, *args, user, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        teammates = away.delegates_for(user)
        cast(forms.ChoiceField, self.fields["delegate"]).choices = [("", "Choose a teammate")] + [
            (person.get_username(), person.get_username()) for person in teammates
        ]


def _away_context(user, form: AwayForm | None = None) -> dict:
    status = away.away_status_of(user)
    initial = (
        {"starts_at": status.starts_at, "ends_at": status.ends_at, "delegate": status.delegate.get_username()}
        if status
        else {}
    )
    return {"away_form": form or AwayForm(user=user, initial=initial), "away_status": status}


class PreferenceForm(forms.Form):
    email_mode = forms.ChoiceField(
        choices=NotificationPreference.Mode.choices, widget=forms.RadioSelect, label="Email about new items"
    )


@login_required
def notification_settings(request: HttpRequest) -> HttpResponse:
    prefs = preferences.preferences_of(request.user)
    form = PreferenceForm(request.POST or None, initial={"email_mode": prefs.email_mode})
    if request.method == "POST":
        if form.is_valid():
            preferences.preferences_set_email_mode(user=request.user, mode=form.cleaned_data["email_mode"])
            messages.success(request, "Notification preferences saved.")
            return redirect("inbox:notification_settings")
        context = {"form": form, "prefs": prefs, **_away_context(request.user), **_notices(request)}
        return render(request, "audit/notifications.html", context, status=400)
    teams = request.user.groups.order_by("name")
    context = {"form": form, "prefs": prefs, "teams": teams, **_away_context(request.user), **_notices(request)}
    return render(request, "audit/notifications.html", context)


NOTICES_PER_PAGE = 20


def _notices(request: HttpRequest) -> dict:
    """The person's notices, a page at a time (``?notices=<page>``), and for staff the channels failing now."""
    paginator = BoundedPaginator(outbox.notices_of(request.user), NOTICES_PER_PAGE, bound=LIST_COUNT_LIMIT)
    page = paginator.get_page(request.GET.get("notices"))
    failing = outbox.failing_channels() if request.user.is_staff else []
    return {"notices": page, "failing_channels": failing}


@login_required
@require_POST
def away_settings(request: HttpRequest) -> HttpResponse:
    """Mark yourself away (from, until, a delegate), or back ("I’m back")."""
    if request.POST.get("action") == "clear":
        away.away_clear(user=request.user, set_by=request.user)
        messages.success(request, "Welcome back: items assigned to you come to you again.")
        return redirect("inbox:notification_settings")
    form = AwayForm(request.POST, user=request.user)
    if form.is_valid():
        delegate = get_user_model().objects.get(username=form.cleaned_data["delegate"])
        try:
            status = away.away_set(
                user=request.user,
                starts_at=form.cleaned_data["starts_at"],
                ends_at=form.cleaned_data["ends_at"],
                delegate=delegate,
                set_by=request.user,
            )
        except ApplicationError as error:
            form.add_error(FORM_FIELDS.get(error.field or "", None), error.message.split(": ", 1)[-1])
        else:
            messages.success(
                request,
                f"Marked away until {status.ends_at:%Y-%m-%d %H:%M}: {delegate.get_username()} decides for you.",
            )
            return redirect("inbox:notification_settings")
    prefs = preferences.preferences_of(request.user)
    context = {
        "form": PreferenceForm(initial={"email_mode": prefs.email_mode}),
        "prefs": prefs,
        "teams": request.user.groups.order_by("name"),
        **_away_context(request.user, form),
        **_notices(request),
    }
    return render(request, "audit/notifications.html", context, status=400)


# The service's field names (the API's) as the form's.
FORM_FIELDS = {"from": "starts_at", "until": "ends_at", "delegate": "delegate"}


# --- escalation rules (``inbox.teams.escalations``): the page beside the API --------------------------


class EscalationRuleForm(forms.Form):
    """One rule step: whose items it watches (a team of yours or an agent you see), when it fires, whom it adds."""

    scope = forms.ChoiceField(label="Items of")
    step = forms.TypedChoiceField(
        label="Step", coerce=int, choices=[(1, "1: first"), (2, "2: after step 1, further up")], initial=1
    )
    trigger = forms.ChoiceField(
        label="When",
        choices=[("after", "minutes after it arrived"), ("before", "minutes before its deadline")],
        initial="after",
    )
    minutes = forms.IntegerField(label="Minutes", min_value=1, max_value=MAX_ESCALATION_MINUTES, initial=30)
    to_team = forms.ModelChoiceField(
        label="Add the team", queryset=Group.objects.order_by("name"), required=False, empty_label="—"
    )
    to_user = forms.CharField(label="or the person (username)", required=False, max_length=150)

    def __init__(self, *args, user, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        everything = access.sees_everything(user)
        teams = Group.objects.all() if everything else user.groups.all()
        agents = access.visible_agents(user)
        cast(forms.ChoiceField, self.fields["scope"]).choices = [
            ("Teams", [(f"team:{team.pk}", team.name) for team in teams.order_by("name")]),
            ("Agents", [(f"agent:{agent.pk}", agent.name or agent.slug) for agent in agents.order_by("slug")]),
        ]

    def clean_to_user(self):
        username = self.cleaned_data["to_user"].strip()
        if not username:
            return None
        person = get_user_model().objects.filter(username=username, is_active=True).first()
        if person is None:
            raise forms.ValidationError(f"no active person {username!r}")
        return person

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        if "to_user" in data and bool(data.get("to_team")) == bool(data["to_user"]):
            self.add_error("to_team", "choose a team to add, or name a person: one of them")
        return data

    def rule_fields(self) -> dict:
        """The service's fields (``escalation_rule_create``)."""
        data = self.cleaned_data
        kind, _, pk = data["scope"].partition(":")
        return {
            "team": Group.objects.get(pk=pk) if kind == "team" else None,
            "agent": Agent.objects.get(pk=pk) if kind == "agent" else None,
            "step": data["step"],
            "after_minutes": data["minutes"] if data["trigger"] == "after" else None,
            "before_deadline_minutes": data["minutes"] if data["trigger"] == "before" else None,
            "to_team": data.get("to_team"),
            "to_user": data["to_user"],
            "enabled": True,
        }


# The service's field names (the API's) as the form's.
RULE_FORM_FIELDS = {"team": "scope", "agent": "scope", "step": "step", "toUser": "to_user", "toTeam": "to_team"}


class HoursForm(forms.Form):
    """A team's business hours (``inbox.teams.hours``): staff's for any team, a lead's for the teams they lead."""

    team = forms.ModelChoiceField(label="Team", queryset=Group.objects.none())
    days = forms.MultipleChoiceField(
        label="Days",
        choices=[("1", "Mon"), ("2", "Tue"), ("3", "Wed"), ("4", "Thu"), ("5", "Fri"), ("6", "Sat"), ("7", "Sun")],
        widget=forms.CheckboxSelectMultiple,
        initial=["1", "2", "3", "4", "5"],
        required=False,
    )
    opens = forms.TimeField(label="Opens", widget=forms.TimeInput(attrs={"type": "time"}, format="%H:%M"))
    closes = forms.TimeField(label="Closes", widget=forms.TimeInput(attrs={"type": "time"}, format="%H:%M"))
    time_zone = forms.CharField(label="Time zone", max_length=64, initial="UTC")
    clear = forms.BooleanField(label="Around the clock (no business hours)", required=False)

    def __init__(self, *args, user, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        cast(forms.ModelChoiceField, self.fields["team"]).queryset = hours.teams_whose_hours(user)
        self.initial.setdefault("opens", "09:00")
        self.initial.setdefault("closes", "17:00")


# The service's field names as the hours form's.
HOURS_FORM_FIELDS = {"days": "days", "timeZone": "time_zone", "closes": "closes", "team": "team"}


def _save_hours(request: HttpRequest, form: HoursForm) -> bool:
    data = form.cleaned_data
    try:
        if data["clear"]:
            hours.hours_clear(user=request.user, team=data["team"])
            messages.success(request, f"{data['team'].name} works around the clock: no business hours.")
            return True
        saved = hours.hours_set(
            user=request.user,
            team=data["team"],
            days="".join(data["days"]),
            opens=data["opens"],
            closes=data["closes"],
            time_zone=data["time_zone"].strip(),
        )
    except ApplicationError as error:
        form.add_error(HOURS_FORM_FIELDS.get(error.field or ""), error.message.split(": ", 1)[-1])
        return False
    messages.success(request, f"Business hours of {data['team'].name}: {hours.hours_words(saved)}.")
    return True


@login_required
def escalation_settings(request: HttpRequest) -> HttpResponse:
    """The escalation rules you may change (your teams' and your agents'; staff: all), and a form to add one; the
    business hours of the teams you lead (staff: all), and a form to set them."""
    posted = request.POST if request.method == "POST" else None
    hours_posted = posted is not None and posted.get("form") == "hours"
    form = EscalationRuleForm(None if hours_posted else posted, user=request.user)
    hours_form = HoursForm(posted if hours_posted else None, user=request.user)
    if hours_posted:
        if hours_form.is_valid() and _save_hours(request, hours_form):
            return redirect("inbox:escalation_settings")
    elif request.method == "POST" and form.is_valid():
        try:
            rule = escalations.escalation_rule_create(actor=request.user, fields=form.rule_fields())
        except ApplicationError as error:
            form.add_error(RULE_FORM_FIELDS.get(error.field or ""), error.message.split(": ", 1)[-1])
        else:
            messages.success(request, f"Escalation rule added: {rule.why}, add {rule.target_label}.")
            messages.info(request, escalations.rule_note(rule))
            return redirect("inbox:escalation_settings")
    rules = [
        (rule, escalations.rule_note(rule))
        for rule in escalations.rules_visible_to(request.user).select_related("created_by")
    ]
    teams = hours.teams_whose_hours(request.user)
    kept = [
        (team, hours.hours_words(team.inbox_hours))
        for team in teams.filter(inbox_hours__isnull=False).select_related("inbox_hours")
    ]
    may_set = teams.exists()
    context = {
        "form": form,
        "rules": rules,
        "hours_form": hours_form,
        "team_hours": kept,
        "may_set_hours": may_set,
        "hours_why_not": "" if may_set else _why_no_hours(request.user),
    }
    status = 400 if form.errors or hours_form.errors else 200
    return render(request, "audit/escalation_rules.html", context, status=status)


def _why_no_hours(user: Any) -> str:
    """Why the business-hours card offers nothing to ``user``, when it does not (read only then)."""
    if access.sees_everything(user):
        return "Business hours belong to a team, and there is no team yet: create one in the admin first."
    return "A team's business hours are set by staff or by the team's lead; you lead no team."


@login_required
@require_POST
def escalation_rule_delete(request: HttpRequest, pk: int) -> HttpResponse:
    rule = get_object_or_404(escalations.rules_visible_to(request.user), pk=pk)
    escalations.escalation_rule_delete(actor=request.user, rule=rule)
    messages.success(request, f"Escalation rule deleted: {rule.scope_label}, step {rule.step} and any after it.")
    return redirect("inbox:escalation_settings")
