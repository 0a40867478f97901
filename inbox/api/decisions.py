"""Decision API: one item (`POST /api/v1/items/<id>/decision`), its undo (`POST /api/v1/items/<id>/decision/undo`)
and bulk (`POST /api/v1/items/bulk-decision`)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from inbox.api.serializers import ItemSerializer
from inbox.core.errors import ApplicationError, StrictBooleanField, StrictCharField, StrictIntegerField, read_input
from inbox.decisions.rules import BULK_ACTIONS, check_visible
from inbox.decisions.services import decision_bulk, decision_submit, decision_undo
from inbox.limits import MAX_BULK_ITEMS, MAX_DB_ID, MAX_DECISION_COMMENT
from inbox.models import Decision

UNDOABLE_HELP = (
    "Whether you may undo this decision for INBOX_UNDO_SECONDS (POST …/decision/undo); the run's resume waits for "
    "that window. false: no undo, the resume leaves as soon as the run is decided (scripts and agents)."
)


class DecisionInputSerializer(serializers.Serializer):
    """The body of ``POST /api/v1/items/<id>/decision``."""

    status = serializers.ChoiceField(choices=Decision.Status.choices)
    payload = serializers.JSONField(
        required=False,
        allow_null=True,
        default=None,
        help_text="The answer, valid against the item's responseSchema. Omit when cancelled.",
    )
    comment = StrictCharField(required=False, allow_blank=True, max_length=MAX_DECISION_COMMENT)
    undoable = StrictBooleanField(required=False, default=True, help_text=UNDOABLE_HELP)


# The same body for the OpenAPI document, inline (clients read it without resolving components).
DECISION_BODY_SCHEMA = {
    "type": "object",
    "required": ["status"],
    "properties": {
        "status": {"type": "string", "enum": Decision.Status.values},
        "payload": {"description": DecisionInputSerializer().fields["payload"].help_text},
        "comment": {"type": "string", "nullable": True, "maxLength": MAX_DECISION_COMMENT},
        "undoable": {"type": "boolean", "default": True, "description": UNDOABLE_HELP},
    },
}


# The error code of a refused body, by its first offending field.
DECISION_INPUT_CODES = {
    "status": "invalid_status",
    "comment": "invalid_comment",
    "undoable": "invalid_undoable",
    "body": "invalid_body",
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
        fields = [
            "id",
            "status",
            "outcome",
            "payload",
            "comment",
            "user",
            "final",
            "created_at",
            "undo_until",
            "withdrawn_at",
        ]
        extra_kwargs = {
            "outcome": {
                "help_text": "What this decision means, judged by the item's responseSchema when it was made "
                "(approved, approved_with_edits, denied, answered, cancelled): a quorum, the pages and the "
                "exports read it."
            }
        }


class ItemDecisionApi(APIView):
    @extend_schema(
        operation_id="items_decide",
        summary="Decide an item: resolve it with a payload, or cancel it",
        description=(
            "`resolved` carries a `payload` valid against the item's `responseSchema` (denial is "
            '`{"approved": false}`); `cancelled` carries none. Session or token auth. When every item of the '
            'run is decided, the batched resume is queued. Unless the body says `"undoable": false`, the '
            "decision can be undone until `undoUntil` (INBOX_UNDO_SECONDS, shortened near the run's deadline) and "
            "the resume is held until then."
        ),
        request={"application/json": DECISION_BODY_SCHEMA},
        responses={
            201: OpenApiResponse(
                OpenApiTypes.OBJECT,
                description="Stored: {item, decision, closed, approvals, required, undoUntil} (undoUntil: null when "
                "it cannot be undone)",
            ),
            400: OpenApiResponse(DECISION_ERROR_SCHEMA, description="Invalid body or payload; errors name each path."),
            403: OpenApiResponse(DECISION_ERROR_SCHEMA, description="Claimed by someone else, or self-approval."),
            404: OpenApiResponse(DECISION_ERROR_SCHEMA, description="No such item visible to you."),
            409: OpenApiResponse(
                DECISION_ERROR_SCHEMA, description="Not open (state, decision), `expired`, or `too_close_to_deadline`."
            ),
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
                "Approve, sent at once (no undo)",
                request_only=True,
                value={"status": "resolved", "payload": {"approved": True}, "undoable": False},
            ),
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
        check_visible(pk, request.user)
        body = read_input(DecisionInputSerializer, request.data, codes=DECISION_INPUT_CODES)
        outcome = decision_submit(
            item_id=pk,
            user=request.user,
            status=body["status"],
            payload=body["payload"],
            comment=body.get("comment", ""),
            undoable=body["undoable"],
        )
        until = outcome.decision.undo_until
        return Response(
            {
                "item": ItemSerializer(outcome.item, context={"request": request}).data,
                "decision": DecisionOutputSerializer(outcome.decision).data,
                "closed": outcome.closed,
                "approvals": outcome.approvals,
                "required": outcome.required,
                "undoUntil": until.isoformat() if until else None,
            },
            status=status.HTTP_201_CREATED,
        )


class ItemDecisionUndoApi(APIView):
    @extend_schema(
        operation_id="items_decision_undo",
        summary="Undo your decision on an item, before its answer is sent",
        description=(
            "Withdraws your latest decision on the item while its undo window is open (`undoUntil` of the "
            "decision's answer) and nothing of the run has been sent: the item is open again when your decision "
            "closed it, the run's held resume is withdrawn unsent, other people's decisions stand. The decision and "
            "its undo both stay in the audit log. No body."
        ),
        request=None,
        responses={
            200: OpenApiResponse(
                OpenApiTypes.OBJECT, description="Withdrawn: {item, decision, reopened} (reopened: the item is open)"
            ),
            404: OpenApiResponse(DECISION_ERROR_SCHEMA, description="No such item visible to you."),
            409: OpenApiResponse(
                DECISION_ERROR_SCHEMA,
                description="`nothing_to_undo` (no undoable decision of yours on it), or `too_late`: the window "
                "closed, or the answer was already sent.",
            ),
        },
        examples=[
            OpenApiExample(
                "Too late",
                response_only=True,
                status_codes=["409"],
                value={
                    "error": "too_late",
                    "detail": "Already sent — too late to undo: the answer has gone to the agent.",
                    "state": "sending",
                },
            )
        ],
    )
    def post(self, request: Request, pk: int) -> Response:
        check_visible(pk, request.user)
        if not isinstance(request.data, dict):  # no body, or an empty object; a malformed one is DRF's 400
            raise ApplicationError(
                400, "invalid_body", "This call takes no body.", errors=[{"path": "body", "message": "must be empty"}]
            )
        outcome = decision_undo(item_id=pk, user=request.user)
        return Response(
            {
                "item": ItemSerializer(outcome.item, context={"request": request}).data,
                "decision": DecisionOutputSerializer(outcome.decision).data,
                "reopened": outcome.reopened,
            }
        )


class BulkDecisionInputSerializer(serializers.Serializer):
    """The body of ``POST /api/v1/items/bulk-decision``."""

    ids = serializers.ListField(
        child=StrictIntegerField(
            min_value=1,
            max_value=MAX_DB_ID,
            error_messages={
                "min_value": f"item ids are whole numbers from 1 to {MAX_DB_ID}",
                "max_value": f"item ids are whole numbers from 1 to {MAX_DB_ID}",
            },
        ),
        min_length=1,
        max_length=MAX_BULK_ITEMS,
        error_messages={
            "empty": "a non-empty array of item ids is required",
            "min_length": "a non-empty array of item ids is required",
            "max_length": f"at most {MAX_BULK_ITEMS} items at once",
        },
    )
    action = serializers.ChoiceField(choices=list(BULK_ACTIONS))
    comment = StrictCharField(required=False, allow_blank=True, max_length=MAX_DECISION_COMMENT)
    undoable = StrictBooleanField(required=False, default=True, help_text=UNDOABLE_HELP)


class BulkDecisionApi(APIView):
    @extend_schema(
        summary="Approve, deny or cancel many items that need no form input",
        description="Each item gets its own decision and audit event; one failure does not block the rest. "
        "The answer lists each item's result in the order given.",
        request=BulkDecisionInputSerializer,
        responses={200: OpenApiResponse(description='{"results": [{"id", "ok", "status"|"error", "detail"}]}')},
    )
    def post(self, request: Request) -> Response:
        codes = {"action": "invalid_action", "undoable": "invalid_undoable"}
        body = read_input(BulkDecisionInputSerializer, request.data, codes=codes)
        results = decision_bulk(
            item_ids=body["ids"],
            user=request.user,
            action=body["action"],
            comment=body.get("comment", ""),
            undoable=body["undoable"],
        )
        return Response(
            {
                "results": results,
                "decided": sum(1 for r in results if r["ok"]),
                "failed": sum(1 for r in results if not r["ok"]),
            }
        )
