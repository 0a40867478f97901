"""The team review side of the approver pages: claim, release and assign an item, discuss an item or a
run, and decide many list rows at once. Each view checks visibility first (404), calls one service from
``inbox.decisions`` and redirects; refused input re-renders the page with the error beside its field."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from inbox import decisions, selectors
from inbox.api_team import MAX_BULK_ITEMS
from inbox.decisions import BULK_ACTIONS, DecisionError
from inbox.models import InboxItem, Run
from inbox.page_selectors import ListFilters
from inbox.views import _item_or_404, _item_page, _run_or_404, _run_page

_FAILURE_WORDS = {"needs_input": "needs its form", "not_found": "not found", "not_open": "no longer open",
                  "expired": "expired", "claimed": "held by someone else", "self_approval": "you asked for it",
                  "already_approved": "you already approved it"}  # fmt: skip


def _claim_refused(request: HttpRequest, pk: int, error: DecisionError) -> HttpResponse:
    item = _item_or_404(request, pk)
    return _item_page(request, item, status=error.status, extra={"claim_error": error})


def _claim_action(request: HttpRequest, pk: int, service, done: str) -> HttpResponse:
    _item_or_404(request, pk)
    try:
        item = service(item_id=pk, user=request.user)
    except DecisionError as error:
        return _claim_refused(request, pk, error)
    messages.success(request, done)
    return redirect(item)


@login_required
@require_POST
def item_claim(request: HttpRequest, pk: int) -> HttpResponse:
    return _claim_action(request, pk, decisions.item_claim, "You’re on it: your teammates see that you hold this item.")


@login_required
@require_POST
def item_release(request: HttpRequest, pk: int) -> HttpResponse:
    return _claim_action(request, pk, decisions.item_unclaim, "Released: anyone on the team can pick this item up.")


@login_required
@require_POST
def item_assign(request: HttpRequest, pk: int) -> HttpResponse:
    _item_or_404(request, pk)
    username = request.POST.get("assignee", "").strip()
    assignee = get_user_model().objects.filter(username=username, is_active=True).first() if username else None
    try:
        if assignee is None:
            raise DecisionError(400, "invalid_assignee", "Choose a teammate to assign this item to.",
                                [{"path": "assignee", "message": "Choose a teammate."}])  # fmt: skip
        item = decisions.item_assign(item_id=pk, user=request.user, assignee=assignee)
    except DecisionError as error:
        return _claim_refused(request, pk, error)
    who = "yourself" if assignee.pk == request.user.pk else assignee.get_username()
    messages.success(request, f"Assigned to {who}.")
    return redirect(item)


def _comment(request: HttpRequest, *, item: InboxItem | None = None, run: Run | None = None) -> HttpResponse:
    target = item or run
    body = request.POST.get("body", "")
    try:
        decisions.record_comment(user=request.user, body=body, item=item, run=run)
    except DecisionError as error:
        page = _item_page if item is not None else _run_page
        return page(request, target, status=error.status, extra={"comment_error": error, "comment_body": body})
    return redirect(f"{target.get_absolute_url()}#discussion")


@login_required
@require_POST
def item_comment(request: HttpRequest, pk: int) -> HttpResponse:
    return _comment(request, item=_item_or_404(request, pk))


@login_required
@require_POST
def run_comment(request: HttpRequest, pk: int) -> HttpResponse:
    return _comment(request, run=_run_or_404(request, pk))


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
    elif len(ids) > MAX_BULK_ITEMS:
        request.session["bulk_result"] = {"error": f"At most {MAX_BULK_ITEMS} items at once."}
    else:
        try:  # decision_bulk refuses an over-long comment before deciding anything
            results = decisions.decision_bulk(item_ids=ids, user=request.user, action=action, comment=comment.strip())
        except DecisionError as error:
            request.session["bulk_result"] = {"error": error.message}
        else:
            request.session["bulk_result"] = _summary(request.user, action, results)
    return redirect(_list_url(request.POST))


def _summary(user, action: str, results: list[dict]) -> dict:
    failed = [result for result in results if not result["ok"]]
    labels = {
        pk: (message or interrupt_id)
        for pk, message, interrupt_id in selectors.visible_items(user)
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
