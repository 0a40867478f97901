"""The 404 and 403 handlers: the styled pages (templates/404.html, 403.html) for people, JSON for the API.

An address under ``/api/`` that matches no view, or a permission refused outside DRF's own handling, answers
with the same JSON shape as the API's other errors, never with an HTML page a client cannot read.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults

from config.unavailable import wants_json


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if wants_json(request):
        return JsonResponse({"error": "not_found", "detail": f"No such address: {request.path}"}, status=404)
    return defaults.page_not_found(request, exception)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    if wants_json(request):
        return JsonResponse({"error": "permission_denied", "detail": "You may not do this."}, status=403)
    return defaults.permission_denied(request, exception)
