"""The page behind a notification's Approve / Deny link. GET shows what will be decided and asks to confirm
(it never decides: mail scanners and chat previews fetch links); the confirmation's POST decides."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from inbox.decisions.links import LinkRefused, check_link, read_link, use_link
from inbox.decisions.rules import DecisionError
from inbox.limits import MAX_DECISION_COMMENT
from inbox.web.pages import decision_words


def _refused(request: HttpRequest, code: str, message: str, *, item=None, status: int) -> HttpResponse:
    return render(
        request, "decisions/link_refused.html", {"code": code, "message": message, "item": item}, status=status
    )


@login_required
@require_http_methods(["GET", "POST"])
def decision_link(request: HttpRequest, token: str) -> HttpResponse:
    try:
        if request.method == "POST":
            outcome = use_link(
                token=token, user=request.user, comment=request.POST.get("comment", "")[:MAX_DECISION_COMMENT]
            )
        else:
            link = read_link(token)
            item = check_link(link, request.user)
            return render(request, "decisions/link_confirm.html", {"item": item, "action": link.action, "token": token})
    except LinkRefused as refused:
        # An item the user may not see is named only to its own approvers (check_link refuses others first).
        return _refused(request, refused.code, refused.message, item=refused.item, status=refused.status)
    except DecisionError as error:
        return _refused(request, error.code, error.message, status=error.status)
    item = outcome.item
    if outcome.closed:
        messages.success(request, f"{decision_words(item)}: “{item.short_title}”.")
    else:
        messages.info(request, f"Your approval is recorded: {outcome.approvals} of {outcome.required}.")
    return redirect(item)
