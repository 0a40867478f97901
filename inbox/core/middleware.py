"""Query strings and form fields holding characters the database cannot store are refused at the door.

A ``\\u0000`` in ``?q=`` or in a form's comment reaches PostgreSQL as a query parameter or a stored value and
fails there (a 500). This middleware answers 400 naming the parameter before any view runs.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse

from inbox.core.safe_json import text_problem

_FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


class RejectUnstorableText:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        sources = [("query", request.GET)]
        if request.method == "POST" and request.content_type in _FORM_TYPES:
            sources.append(("form", request.POST))
        for where, params in sources:
            for name, values in params.lists():
                for value in [name, *values]:
                    problem = text_problem(value)
                    if problem is not None:
                        return _refuse(where, name, problem)
        return self.get_response(request)


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
