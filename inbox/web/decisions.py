"""Decision pages: the item form, the run form and the list's bulk action. Each calls the decision service."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from inbox import access
from inbox.core.errors import ApplicationError
from inbox.core.json_view import args_diff
from inbox.decisions import services as decisions
from inbox.decisions import submission
from inbox.decisions.rules import BULK_ACTIONS, UNDO_OFFER_SESSION_KEY
from inbox.decisions.services import DecisionOutcome, decision_submit
from inbox.limits import MAX_DB_ID
from inbox.listing import detail
from inbox.listing.selectors import ListFilters
from inbox.models import DecisionVia
from inbox.web.pages import (
    THEN_NEXT_SESSION_KEY,
    decision_words,
    item_or_404,
    item_page,
    list_filters_of,
    pane_moved_on,
    pane_shown_ahead,
    run_or_404,
    run_page,
)


@login_required
@require_POST
def item_decide(request: HttpRequest, pk: int) -> HttpResponse:
    item = item_or_404(request, pk)
    try:
        status, payload = submission.read_decision(item, request.POST)
        outcome = decision_submit(
            item_id=item.pk,
            user=request.user,
            status=status,
            payload=payload,
            comment=submission.read_comment(request.POST),
            undoable=True,
            via=DecisionVia.PAGE,
        )
    except ApplicationError as error:
        item.refresh_from_db()
        return item_page(request, item, error=error, post=request.POST, status=error.status)
    undo = _offer_undo(
        request, [outcome], words=decision_words(outcome.item) if outcome.closed else "Approval recorded"
    )
    going_on = request.POST.get("then") == "next"
    if "then_shown" in request.POST:
        request.session[THEN_NEXT_SESSION_KEY] = going_on  # the toggle is remembered for the next item
    if outcome.closed:
        # The Undo toast says it, with its button; without one, a message does.
        said = "" if undo else f"{decision_words(outcome.item)}: “{item.short_title}”."
        if going_on:
            shown = pane_shown_ahead(request, said=said, after=item.run_id)
            if shown is not None:
                return shown
            following, _previous = detail.neighbours_in_list(
                user=request.user, filters=list_filters_of(request), item=item
            )
            if following is not None:
                moved_on = pane_moved_on(request, said=said, following=following, after=item.run_id)
                if moved_on is not None:
                    return moved_on
                if said:
                    messages.success(request, said)
                # The next page watches this run's resume: a follow-up interrupt is the chain's next step.
                return redirect(f"{following.get_absolute_url()}?after={item.run_id}")
        if said:
            messages.success(request, said)
    else:
        remaining = outcome.required - outcome.approvals
        needs = "another approver" if remaining == 1 else f"{remaining} more approvers"
        recorded = f"Your approval is recorded: {outcome.approvals} of {outcome.required}."
        messages.info(request, f"{recorded} It needs {needs}.")
        return redirect(item)
    return redirect(f"{item.get_absolute_url()}?after={item.run_id}")  # watches the resume for a follow-up


@login_required
@require_POST
def item_edit_diff(request: HttpRequest, pk: int) -> HttpResponse:
    """The "Approve with edits" box's preview, as the approver types (htmx): the edited arguments against the
    proposal, field by field and word by word — the diff the decided item and the tool-call trail show.
    POST for the size of the arguments; nothing is stored. Text that is not (yet) JSON says so, as a 200."""
    item = item_or_404(request, pk)
    proposal = item.proposal
    context: dict = {"diff": None, "problem": ""}
    if not proposal or proposal.get("args") is None:
        context["problem"] = "The proposal's arguments are unknown, so there is nothing to compare with."
    else:
        try:
            edited = submission.parse_edited_args(request.POST.get("edited_args", ""))
        except submission.DecisionInputError as error:
            context["problem"] = f"Not valid JSON yet: {error.message}"
        else:
            diff = args_diff(item.proposed_args, edited)
            context["diff"] = diff if any(line.change != "same" for line in diff) else None
            context["problem"] = "" if context["diff"] else "No changes: identical to the proposal."
    return render(request, "inbox/_edit_diff.html", context)


@login_required
@require_POST
def run_decide(request: HttpRequest, pk: int) -> HttpResponse:
    """Decide several interrupts of one run in one go: all of them are stored, or none."""
    run = run_or_404(request, pk)
    items = detail.run_items(run)
    try:
        comment = submission.read_comment(request.POST)
        choices = [
            decisions.RunChoice(item, *choice)
            for item in items
            if item.is_open
            and (choice := submission.run_choice_payload(item, request.POST.get(f"decision-{item.pk}", ""))) is not None
        ]
        outcomes = decisions.decision_submit_run(
            run=run, user=request.user, choices=choices, comment=comment, undoable=True
        )
    except ApplicationError as error:
        return run_page(request, run, error=error, post=request.POST, status=error.status)
    recorded = f"{len(choices)} decision{'s' if len(choices) != 1 else ''} recorded"
    if not _offer_undo(request, outcomes, words=recorded):
        messages.success(request, f"{recorded}.")
    return redirect(run)


def _offer_undo(request: HttpRequest, outcomes: list[DecisionOutcome], *, words: str) -> bool:
    """Offer Undo for these decisions (the toast ``{% undo_toast %}`` draws on every page while the window is open,
    the ``u`` key): False when none of them can be undone."""
    undoable = [outcome for outcome in outcomes if outcome.decision.undo_until is not None]
    if not undoable:
        return False
    if len(undoable) == 1:
        words = f"{words}: “{undoable[0].item.short_title}”"
    request.session[UNDO_OFFER_SESSION_KEY] = {"items": [outcome.item.pk for outcome in undoable], "words": words}
    return True


@login_required
@require_POST
def undo(request: HttpRequest) -> HttpResponse:
    """The toast's Undo: withdraw the user's decisions on the items it names (one, or a bulk action's)."""
    ids = _read_ids(request.POST)
    request.session.pop(UNDO_OFFER_SESSION_KEY, None)
    results = decisions.decision_undo_many(item_ids=ids, user=request.user)
    undone = [result for result in results if result["ok"]]
    refused = [result for result in results if not result["ok"]]
    if len(results) == 1:
        item = item_or_404(request, results[0]["id"])
        if undone:
            again = "is open again" if undone[0]["reopened"] else "stands without your approval"
            messages.success(request, f"Undone: “{item.short_title}” {again}. Nothing was sent.")
        else:
            messages.error(request, refused[0]["detail"])
        return redirect(item)
    if undone:
        messages.success(request, f"Undone: {len(undone)} decision{'s' if len(undone) != 1 else ''}. Nothing was sent.")
    for result in refused[:3]:
        messages.error(request, f"Item {result['id']}: {result['detail']}")
    if not results:
        messages.error(request, "Nothing to undo.")
    back = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}, require_https=False):
        back = "/inbox/"
    return redirect(back or "/inbox/")


_FAILURE_WORDS = {
    "needs_input": "needs its form",
    "not_found": "not found",
    "not_open": "no longer open",
    "expired": "expired",
    "claimed": "held by someone else",
    "self_approval": "you asked for it",
    "already_approved": "you already approved it",
}


def _list_url(post: QueryDict) -> str:
    """Back to the list the form was on, rebuilt from known filters only (never an arbitrary URL)."""
    filters = ListFilters.from_query(QueryDict(post.get("next", "")))
    query = filters.querystring()
    return f"/inbox/?{query}" if query else "/inbox/"


def _read_ids(post: QueryDict) -> list[int]:
    ids = []
    for value in post.getlist("ids"):
        try:
            ids.append(int(value))
        except ValueError:
            continue  # a tampered value: reported below as nothing selected if nothing else is left
        if not 0 < ids[-1] <= MAX_DB_ID:
            ids.pop()
    return ids


@login_required
@require_POST
def bulk_decide(request: HttpRequest) -> HttpResponse:
    """Approve, deny or cancel the selected rows; each item is decided on its own, and the list shows a
    summary of what was decided and why each of the others was not."""
    ids = _read_ids(request.POST)
    action = request.POST.get("action", "")
    comment = request.POST.get("comment", "")
    if action not in BULK_ACTIONS:
        request.session["bulk_result"] = {"error": "Choose Approve, Deny or Cancel."}
    elif not ids:
        request.session["bulk_result"] = {"error": "Select at least one item first."}
    else:
        try:  # decision_bulk refuses too many items or an over-long comment before deciding anything
            # A list key (A, D) presses the bulk button with ``via=key``: the items were not on screen either way.
            via = DecisionVia.LIST_KEY if request.POST.get("via") == "key" else DecisionVia.BULK
            results = decisions.decision_bulk(
                item_ids=ids, user=request.user, action=action, comment=comment.strip(), undoable=True, via=via
            )
        except ApplicationError as error:
            request.session["bulk_result"] = {"error": error.message}
        else:
            summary = _summary(request.user, action, results)
            offered = _offer_bulk_undo(request, action, results)
            # Every item decided and each undoable: the undo toast ("Approved 10 items — Undo") is the
            # confirmation; a summary saying "10 decided." beside it said it twice. A summary stays for what the
            # toast does not say: votes, items that need their form, failures.
            if not (offered == summary["decided"] and not summary["votes"] and not summary["failures"]):
                request.session["bulk_result"] = summary
    return redirect(_list_url(request.POST))


_BULK_WORDS = {"approve": "Approved", "deny": "Denied", "cancel": "Cancelled"}


def _offer_bulk_undo(request: HttpRequest, action: str, results: list[dict]) -> int:
    """Offer the undo toast for the items decided; how many it covers."""
    decided = [result["id"] for result in results if result["ok"] and result.get("undoUntil")]
    if not decided:
        return 0
    words = _BULK_WORDS[action]
    if len(decided) > 1:
        words = f"{words} {len(decided)} items"
    else:
        title = access.visible_items(request.user).filter(pk=decided[0]).first()
        words = f"{words}: “{title.short_title}”" if title else words
    request.session[UNDO_OFFER_SESSION_KEY] = {"items": decided, "words": words}
    return len(decided)


def _summary(user, action: str, results: list[dict]) -> dict:
    failed = [result for result in results if not result["ok"]]
    labels = {
        pk: (message or interrupt_id)
        for pk, message, interrupt_id in access.visible_items(user)
        .filter(pk__in=[result["id"] for result in failed])
        .values_list("pk", "message", "interrupt_id")
    }
    failures = [
        {
            "id": result["id"],
            "label": labels.get(result["id"], f"Item {result['id']}")[:120],
            "url": f"/inbox/items/{result['id']}/" if result["id"] in labels else "",
            "reason": _FAILURE_WORDS.get(result["error"], result["error"].replace("_", " ")),
            "detail": result["detail"],
            "needs_form": result["error"] == "needs_input",
        }
        for result in failed
    ]
    return {
        "action": action,
        "decided": sum(1 for result in results if result["ok"] and result.get("closed", True)),
        "votes": sum(1 for result in results if result["ok"] and not result.get("closed", True)),
        "needs_form": sum(1 for failure in failures if failure["needs_form"]),
        "other_failed": sum(1 for failure in failures if not failure["needs_form"]),
        "failures": failures,
    }
