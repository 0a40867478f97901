"""The team review side of the approver pages: claim, release and assign an item, discuss an item or a
run, and decide many list rows at once. Each view checks visibility first (404), calls one service from
``inbox.decisions`` and redirects; refused input re-renders the page with the error beside its field."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from inbox.core.errors import ApplicationError
from inbox.listing.pages import item_or_404, item_page, run_or_404, run_page
from inbox.models import InboxItem, NotificationPreference, Run
from inbox.teams import claims, comments, preferences


def _claim_refused(request: HttpRequest, pk: int, error: ApplicationError) -> HttpResponse:
    item = item_or_404(request, pk)
    return item_page(request, item, status=error.status, extra={"claim_error": error})


def _claim_action(request: HttpRequest, pk: int, service, done: str) -> HttpResponse:
    item_or_404(request, pk)
    try:
        item = service(item_id=pk, user=request.user)
    except ApplicationError as error:
        return _claim_refused(request, pk, error)
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
    messages.success(request, f"Assigned to {who}.")
    return redirect(item)


def _comment(request: HttpRequest, *, item: InboxItem | None = None, run: Run | None = None) -> HttpResponse:
    target = item or run
    body = request.POST.get("body", "")
    try:
        comments.record_comment(user=request.user, body=body, item=item, run=run)
    except ApplicationError as error:
        page = item_page if item is not None else run_page
        return page(request, target, status=error.status, extra={"comment_error": error, "comment_body": body})
    return redirect(f"{target.get_absolute_url()}#discussion")


@login_required
@require_POST
def item_comment(request: HttpRequest, pk: int) -> HttpResponse:
    return _comment(request, item=item_or_404(request, pk))


@login_required
@require_POST
def run_comment(request: HttpRequest, pk: int) -> HttpResponse:
    return _comment(request, run=run_or_404(request, pk))


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
        return render(request, "audit/notifications.html", {"form": form, "prefs": prefs}, status=400)
    teams = request.user.groups.order_by("name")
    return render(request, "audit/notifications.html", {"form": form, "prefs": prefs, "teams": teams})
