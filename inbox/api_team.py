"""Team review API: claim, unclaim and assign an item; comments on items and runs; bulk decisions."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from inbox import selectors
from inbox.decisions import (
    BULK_ACTIONS,
    MAX_DECISION_COMMENT,
    MAX_DISCUSSION_COMMENT,
    DecisionError,
    decision_bulk,
    item_assign,
    item_claim,
    item_unclaim,
    record_comment,
)
from inbox.models import Comment
from inbox.serializers import ItemSerializer

MAX_BULK_ITEMS = 500


def error_response(error: DecisionError) -> Response:
    return Response(error.as_dict(), status=error.status)


def field_error(field: str, message: str) -> Response:
    return Response({"error": "invalid", "detail": f"{field}: {message}", "field": field,
                     "errors": [{"path": field, "message": message}]}, status=400)  # fmt: skip


class ItemClaimApi(APIView):
    action = "claim"

    @extend_schema(summary="Claim an item (\"I'm on it\")", request=None,
                   responses={200: ItemSerializer, 404: OpenApiResponse(description="Not visible"),
                              409: OpenApiResponse(description="Held by someone else, or no longer open")})  # fmt: skip
    def post(self, request: Request, pk: int) -> Response:
        try:
            item = (item_claim if self.action == "claim" else item_unclaim)(item_id=pk, user=request.user)
        except DecisionError as error:
            return error_response(error)
        return Response(ItemSerializer(item, context={"request": request}).data)


class ItemUnclaimApi(ItemClaimApi):
    action = "unclaim"

    @extend_schema(summary="Release a claim (the holder or staff)", request=None, responses={200: ItemSerializer})
    def post(self, request: Request, pk: int) -> Response:
        return super().post(request, pk)


class ItemAssignApi(APIView):
    @extend_schema(summary="Assign an item to a teammate",
                   request=inline_serializer("AssignInput", {"assignee": serializers.CharField()}),
                   responses={200: ItemSerializer})  # fmt: skip
    def post(self, request: Request, pk: int) -> Response:
        username = request.data.get("assignee") if isinstance(request.data, dict) else None
        if not isinstance(username, str) or not username.strip():
            return field_error("assignee", "a username is required")
        assignee = get_user_model().objects.filter(username=username.strip(), is_active=True).first()
        if assignee is None:
            return field_error("assignee", f"no active user {username!r}")
        try:
            item = item_assign(item_id=pk, user=request.user, assignee=assignee)
        except DecisionError as error:
            return error_response(error)
        return Response(ItemSerializer(item, context={"request": request}).data)


class CommentSerializer(serializers.ModelSerializer):
    user = serializers.CharField(source="user.username")

    class Meta:
        model = Comment
        fields = ["id", "user", "body", "created_at"]


class CommentsApi(APIView):
    """GET lists, POST adds a comment on an item (``target="item"``) or a run (``target="run"``)."""

    target = "item"

    def _target(self, request: Request, pk: int):
        if self.target == "item":
            return get_object_or_404(selectors.visible_items(request.user), pk=pk)
        return get_object_or_404(selectors.visible_runs(request.user), pk=pk)

    @extend_schema(summary="Discussion on an item or run", responses={200: CommentSerializer(many=True)})
    def get(self, request: Request, pk: int) -> Response:
        target = self._target(request, pk)
        comments = target.comments.select_related("user")
        return Response(CommentSerializer(comments, many=True).data)

    @extend_schema(summary="Add a comment", request=inline_serializer("CommentInput", {"body": serializers.CharField(max_length=MAX_DISCUSSION_COMMENT)}),
                   responses={201: CommentSerializer})  # fmt: skip
    def post(self, request: Request, pk: int) -> Response:
        target = self._target(request, pk)
        body = request.data.get("body") if isinstance(request.data, dict) else None
        if not isinstance(body, str):
            return field_error("body", "a text body is required")
        try:
            comment = record_comment(user=request.user, body=body, **{self.target: target})
        except DecisionError as error:
            return error_response(error)
        return Response(CommentSerializer(comment).data, status=status.HTTP_201_CREATED)


class BulkDecisionApi(APIView):
    @extend_schema(
        summary="Approve, deny or cancel many items that need no form input",
        description="Each item gets its own decision and audit event; one failure does not block the rest. "
        "The answer lists each item's result in the order given.",
        request=inline_serializer("BulkDecisionInput", {
            "ids": serializers.ListField(child=serializers.IntegerField()),
            "action": serializers.ChoiceField(choices=list(BULK_ACTIONS)),
            "comment": serializers.CharField(required=False, max_length=MAX_DECISION_COMMENT),
        }),
        responses={200: OpenApiResponse(description='{"results": [{"id", "ok", "status"|"error", "detail"}]}')},
    )  # fmt: skip
    def post(self, request: Request) -> Response:
        data = request.data if isinstance(request.data, dict) else {}
        ids = data.get("ids")
        if not isinstance(ids, list) or not ids or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
            return field_error("ids", "a non-empty array of item ids is required")
        if len(ids) > MAX_BULK_ITEMS:
            return field_error("ids", f"at most {MAX_BULK_ITEMS} items at once")
        comment = data.get("comment", "")
        if not isinstance(comment, str):
            return field_error("comment", "must be a string")
        try:
            results = decision_bulk(item_ids=ids, user=request.user, action=data.get("action"), comment=comment)
        except DecisionError as error:
            return error_response(error)
        return Response({"results": results, "decided": sum(1 for r in results if r["ok"]),
                         "failed": sum(1 for r in results if not r["ok"])})  # fmt: skip
