"""The one error type of the inbox, ``ApplicationError``, and its two renderings.

A service refuses with ``ApplicationError(status, code, message, field=..., errors=[...], **extra)``. The API
renders it as the JSON body of docs/api.md (``exception_handler``, DRF's ``EXCEPTION_HANDLER``); pages render
the same object (``inbox/_errors.html`` reads ``error.message``, ``code``, ``status`` and ``errors``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import JsonResponse
from rest_framework import exceptions, serializers
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import exception_handler as drf_exception_handler


class ApplicationError(Exception):
    """A refusal the user (or agent) can act on: HTTP status, a machine code, a sentence, and the fields."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        field: str | None = None,
        errors: list[dict[str, Any]] | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.errors = errors or []
        self.field = field if field is not None else _first_path(self.errors)
        self.extra = extra

    def __str__(self) -> str:
        return self.message

    def as_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"error": self.code, "detail": self.message}
        if self.field is not None:
            body["field"] = self.field
        if self.errors:
            body["errors"] = self.errors
        body.update(self.extra)
        return body

    def json_response(self) -> JsonResponse:
        """The API's body for a plain Django view (one that is not a DRF view, e.g. a streamed export)."""
        return JsonResponse(self.as_dict(), status=self.status)

    @classmethod
    def invalid(cls, field: str, message: str, *, code: str = "invalid", status: int = 400) -> ApplicationError:
        """One field is wrong: ``invalid("assignee", "a username is required")``."""
        return cls(status, code, f"{field}: {message}", field=field, errors=[{"path": field, "message": message}])

    @classmethod
    def from_validation(
        cls, detail: Any, *, codes: Mapping[str, str] | None = None, default_code: str = "invalid"
    ) -> ApplicationError:
        """A serializer's errors as one refusal: every message with its dotted path (errors about the body
        as a whole are on ``body``), the code chosen by the first field."""
        errors = list(_flatten(detail))
        first = errors[0] if errors else {"path": "body", "message": "invalid input"}
        code = (codes or {}).get(first["path"].split(".")[0], default_code)
        return cls(400, code, f"{first['path']}: {first['message']}", errors=errors)


def _first_path(errors: list[dict[str, Any]]) -> str | None:
    if not errors:
        return None
    first = errors[0]
    return first.get("path", first.get("field"))


def _flatten(detail: Any, path: str = "") -> list[dict[str, str]]:
    """DRF's nested error detail as ``[{"path": "ids.2", "message": ...}]``, in declaration order."""
    if isinstance(detail, Mapping):
        flat: list[dict[str, str]] = []
        for key, value in detail.items():
            if isinstance(key, int):  # a ListField's child: reported on the list, naming the position
                flat += [
                    {"path": error["path"], "message": f"item {key}: {error['message']}"}
                    for error in _flatten(value, path)
                ]
                continue
            name = "" if key in (api_settings.NON_FIELD_ERRORS_KEY, "detail") else str(key)
            flat += _flatten(value, f"{path}.{name}" if path and name else name or path)
        return flat
    if isinstance(detail, list):
        if all(isinstance(value, str) for value in detail):
            return [{"path": path or "body", "message": str(value)} for value in detail]
        flat = []
        for index, value in enumerate(detail):
            if value:
                flat += _flatten(value, f"{path}.{index}" if path else str(index))
        return flat
    return [{"path": path or "body", "message": str(detail)}]


def read_input(
    serializer_class: type[serializers.Serializer],
    data: Any,
    *,
    codes: Mapping[str, str] | None = None,
    context: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The validated data of ``serializer_class`` for a request body, or an ``ApplicationError`` naming each
    offending field (``codes`` picks the error code by the first field)."""
    serializer = serializer_class(data=data, context=context or {})
    if not serializer.is_valid():
        raise ApplicationError.from_validation(serializer.errors, codes=codes)
    return dict(serializer.validated_data)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's errors in the same body: a ``ValidationError`` keeps DRF's field-keyed members and gains ``error``,
    ``detail``, ``field`` and ``errors``; authentication and permission errors gain ``error``. Anything else (a
    programming error) is not caught here: it is a 500 and is logged."""
    if isinstance(exc, ApplicationError):
        refused = Response(exc.as_dict(), status=exc.status)
        if isinstance(exc.extra.get("retryAfter"), int):  # a 429 or 503 says when to ask again
            refused["Retry-After"] = str(exc.extra["retryAfter"])
        return refused
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        refusal = ApplicationError.from_validation(exc.detail)
        legacy = response.data if isinstance(response.data, dict) else {}
        response.data = {**legacy, **refusal.as_dict()}
    elif isinstance(response.data, dict) and "detail" in response.data:
        code = getattr(exc, "default_code", "error")
        detail = getattr(exc, "detail", None)
        response.data.setdefault("error", getattr(detail, "code", None) or code)
        field = getattr(exc, "field", None)  # the JSON parser's UnsafeBody
        if field:
            response.data.setdefault("field", field)
            response.data.setdefault("rule", getattr(exc, "rule", None))
        elif isinstance(exc, exceptions.UnsupportedMediaType):  # the API reads JSON only
            response.data.setdefault("field", "Content-Type")
            response.data.setdefault("rule", "media_type")
    return response


class StrictCharField(serializers.CharField):
    """A string, and only a string (DRF's CharField turns 42 into "42"); null reads as ""."""

    default_error_messages = {
        "invalid": "must be a string",
        "blank": "must not be empty",
        "max_length": "must be at most {max_length} characters",
    }

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("allow_null", not kwargs.get("required", True))
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)

    def validate_empty_values(self, data: Any) -> tuple[bool, Any]:
        if data is None and self.allow_null:
            return True, ""
        return super().validate_empty_values(data)


class StrictIntegerField(serializers.IntegerField):
    """A JSON integer, and only that (DRF's IntegerField accepts "1" and 1.0)."""

    default_error_messages = {"invalid": "must be an integer"}

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    """A JSON true or false, and only that (DRF's BooleanField accepts "yes", 1 and "on")."""

    default_error_messages = {"invalid": "must be true or false"}

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


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
