"""Decision API: one item (`POST /api/v1/items/<id>/decision`) and bulk (`POST /api/v1/items/bulk-decision`)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from inbox.decisions.services import BULK_ACTIONS, DecisionError, decision_bulk, decision_submit
from inbox.limits import MAX_BULK_ITEMS, MAX_DB_ID, MAX_DECISION_COMMENT
from inbox.listing.serializers import ItemSerializer
from inbox.models import Decision
from inbox.teams.api import error_response, field_error

DECISION_BODY_SCHEMA = {
    "type": "object",
    "required": ["status"],
    "properties": {
        "status": {"type": "string", "enum": ["resolved", "cancelled"]},
        "payload": {"description": "The answer, valid against the item's responseSchema. Omit when cancelled."},
        "comment": {"type": "string", "maxLength": 5000},
    },
}


DECISION_ERROR_SCHEMA = {
    "type": "object",
    "properties": {
        "error": {"type": "string", "description": "invalid_payload | invalid_status | not_open | expired | ..."},
        "detail": {"type": "string"},
        "errors": {
            "type": "array",
            "items": {"type": "object", "properties": {"path": {"type": "string"}, "message": {"type": "string"}}},
            "description": "jsonschema errors: path is the payload path joined with '.', '' for the root.",
        },
        "state": {"type": "string", "description": "On 409: the item's state (resolved, cancelled, expired)."},
        "decision": {"type": "object", "description": "On 409 for a decided item: status, payload, decidedBy, ..."},
    },
}


class DecisionOutputSerializer(serializers.ModelSerializer):
    user = serializers.CharField(source="user.username")

    class Meta:
        model = Decision
        fields = ["id", "status", "payload", "comment", "user", "final", "created_at"]


class ItemDecisionApi(APIView):
    @extend_schema(
        operation_id="items_decide",
        summary="Decide an item: resolve it with a payload, or cancel it",
        description=(
            "`resolved` carries a `payload` valid against the item's `responseSchema` (denial is "
            '`{"approved": false}`); `cancelled` carries none. Session or token auth. When every item of the '
            "run is decided, the batched resume is queued."
        ),
        request={"application/json": DECISION_BODY_SCHEMA},
        responses={
            201: OpenApiResponse(
                OpenApiTypes.OBJECT, description="Stored: {item, decision, closed, approvals, required}"
            ),
            400: OpenApiResponse(DECISION_ERROR_SCHEMA, description="Invalid body or payload; errors name each path."),
            403: OpenApiResponse(DECISION_ERROR_SCHEMA, description="Claimed by someone else, or self-approval."),
            404: OpenApiResponse(DECISION_ERROR_SCHEMA, description="No such item visible to you."),
            409: OpenApiResponse(DECISION_ERROR_SCHEMA, description="No longer open (state, decision), or `expired`."),
            413: OpenApiResponse(DECISION_ERROR_SCHEMA, description="Payload over INBOX_DECISION_MAX_BYTES."),
        },
        examples=[
            OpenApiExample("Approve", request_only=True, value={"status": "resolved", "payload": {"approved": True}}),
            OpenApiExample(
                "Approve with edits",
                request_only=True,
                value={
                    "status": "resolved",
                    "comment": "softened the wording",
                    "payload": {"approved": True, "editedArgs": {"to": "a@b.com", "subject": "Hi", "body": "Hello"}},
                },
            ),
            OpenApiExample("Cancel", request_only=True, value={"status": "cancelled"}),
            OpenApiExample(
                "Invalid payload",
                response_only=True,
                status_codes=["400"],
                value={
                    "error": "invalid_payload",
                    "detail": "The answer does not match the schema at 'year': ...",
                    "errors": [{"path": "year", "message": "1999 is less than the minimum of 2000"}],
                },
            ),
        ],
    )
    def post(self, request: Request, pk: int) -> Response:
        body = request.data
        if not isinstance(body, dict):
            return Response(
                {
                    "error": "invalid_body",
                    "detail": "The body must be a JSON object.",
                    "field": "body",
                    "errors": [{"path": "body", "message": "must be a JSON object"}],
                },
                status=400,
            )
        comment = body.get("comment", "")
        if comment is None:
            comment = ""
        if not isinstance(comment, str):  # its length is checked by decision_submit
            return Response(
                {
                    "error": "invalid_comment",
                    "detail": "comment must be a string.",
                    "field": "comment",
                    "errors": [{"path": "comment", "message": "must be a string"}],
                },
                status=400,
            )
        try:
            outcome = decision_submit(
                item_id=pk, user=request.user, status=body.get("status"), payload=body.get("payload"), comment=comment
            )
        except DecisionError as error:
            data = error.as_dict()
            if error.errors:
                data.setdefault("field", error.errors[0]["path"])
            return Response(data, status=error.status)
        return Response(
            {
                "item": ItemSerializer(outcome.item, context={"request": request}).data,
                "decision": DecisionOutputSerializer(outcome.decision).data,
                "closed": outcome.closed,
                "approvals": outcome.approvals,
                "required": outcome.required,
            },
            status=status.HTTP_201_CREATED,
        )


class BulkDecisionApi(APIView):
    @extend_schema(
        summary="Approve, deny or cancel many items that need no form input",
        description="Each item gets its own decision and audit event; one failure does not block the rest. "
        "The answer lists each item's result in the order given.",
        request=inline_serializer(
            "BulkDecisionInput",
            {
                "ids": serializers.ListField(child=serializers.IntegerField()),
                "action": serializers.ChoiceField(choices=list(BULK_ACTIONS)),
                "comment": serializers.CharField(required=False, max_length=MAX_DECISION_COMMENT),
            },
        ),
        responses={200: OpenApiResponse(description='{"results": [{"id", "ok", "status"|"error", "detail"}]}')},
    )
    def post(self, request: Request) -> Response:
        data = request.data if isinstance(request.data, dict) else {}
        ids = data.get("ids")
        if not isinstance(ids, list) or not ids or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
            return field_error("ids", "a non-empty array of item ids is required")
        if not all(0 < i <= MAX_DB_ID for i in ids):
            return field_error("ids", f"item ids are whole numbers from 1 to {MAX_DB_ID}")
        if len(ids) > MAX_BULK_ITEMS:
            return field_error("ids", f"at most {MAX_BULK_ITEMS} items at once")
        comment = data.get("comment", "")
        if not isinstance(comment, str):
            return field_error("comment", "must be a string")
        try:
            results = decision_bulk(item_ids=ids, user=request.user, action=data.get("action"), comment=comment)
        except DecisionError as error:
            return error_response(error)
        return Response(
            {
                "results": results,
                "decided": sum(1 for r in results if r["ok"]),
                "failed": sum(1 for r in results if not r["ok"]),
            }
        )
