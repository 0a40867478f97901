"""Every API error is a JSON body; DRF's validation errors keep their field names."""

from __future__ import annotations

from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


def exception_handler(exc, context) -> Response | None:
    response = drf_exception_handler(exc, context)
    if response is not None and isinstance(response.data, dict) and "detail" in response.data:
        code = getattr(exc, "default_code", "error")
        detail = getattr(exc, "detail", None)
        response.data.setdefault("error", getattr(detail, "code", None) or code)
        if getattr(exc, "field", None):  # inbox.core.parsers.UnsafeBody
            response.data.setdefault("field", exc.field)
            response.data.setdefault("rule", exc.rule)
    return response


ERROR_SCHEMA = {
    "type": "object",
    "properties": {
        "error": {"type": "string"},
        "detail": {"type": "string"},
        "field": {"type": "string", "description": "Path of the first offending field."},
        "rule": {"type": "string"},
        "errors": {"type": "array", "items": {"type": "object"}},
    },
}
