"""Query strings and form fields holding characters the database cannot store are refused at the door.

A ``\\u0000`` in ``?q=`` or in a form's comment reaches PostgreSQL as a query parameter or a stored value and
fails there (a 500). This middleware answers 400 naming the parameter before any view runs. Form fields are
read for the pages only: an API view (DRF) reads its body itself, as JSON, and answers a form body 415; reading
it here first would leave the view a consumed stream.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse
from rest_framework.views import APIView

from inbox.core.safe_json import text_problem

_FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


class RejectUnstorableText:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return _check("query", request.GET) or self.get_response(request)

    def process_view(self, request: HttpRequest, view_func: Callable, view_args: tuple, view_kwargs: dict):
        if request.method != "POST" or request.content_type not in _FORM_TYPES:
            return None
        view_class = getattr(view_func, "cls", None)
        if isinstance(view_class, type) and issubclass(view_class, APIView):
            return None
        return _check("form", request.POST)


def _check(where: str, params) -> HttpResponse | None:
    for name, values in params.lists():
        for value in [name, *values]:
            problem = text_problem(value)
            if problem is not None:
                return _refuse(where, name, problem)
    return None


def _refuse(where: str, name: str, problem: tuple[str, str]) -> HttpResponse:
    rule, message = problem
    field = name if text_problem(name) is None else "(parameter name)"
    return JsonResponse(
        {
            "error": "invalid_text",
            "detail": f"The {where} parameter {field!r} {message}.",
            "field": field,
            "rule": rule,
        },
        status=400,
    )
