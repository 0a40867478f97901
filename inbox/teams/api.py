"""Team review API: claim, unclaim and assign an item; comments on items and runs; bulk decisions."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from inbox import access
from inbox.decisions.services import DecisionError
from inbox.limits import MAX_DISCUSSION_COMMENT
from inbox.listing.serializers import ItemSerializer
from inbox.models import Comment
from inbox.teams.claims import item_assign, item_claim, item_unclaim
from inbox.teams.comments import record_comment


def error_response(error: DecisionError) -> Response:
    return Response(error.as_dict(), status=error.status)


def field_error(field: str, message: str) -> Response:
    return Response(
        {
            "error": "invalid",
            "detail": f"{field}: {message}",
            "field": field,
            "errors": [{"path": field, "message": message}],
        },
        status=400,
    )


class ItemClaimApi(APIView):
    action = "claim"

    @extend_schema(
        summary='Claim an item ("I\'m on it")',
        request=None,
        responses={
            200: ItemSerializer,
            404: OpenApiResponse(description="Not visible"),
            409: OpenApiResponse(description="Held by someone else, or no longer open"),
        },
    )
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
    @extend_schema(
        summary="Assign an item to a teammate",
        request=inline_serializer("AssignInput", {"assignee": serializers.CharField()}),
        responses={200: ItemSerializer},
    )
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
            return get_object_or_404(access.visible_items(request.user), pk=pk)
        return get_object_or_404(access.visible_runs(request.user), pk=pk)

    @extend_schema(summary="Discussion on an item or run", responses={200: CommentSerializer(many=True)})
    def get(self, request: Request, pk: int) -> Response:
        target = self._target(request, pk)
        comments = target.comments.select_related("user")
        return Response(CommentSerializer(comments, many=True).data)

    @extend_schema(
        summary="Add a comment",
        request=inline_serializer("CommentInput", {"body": serializers.CharField(max_length=MAX_DISCUSSION_COMMENT)}),
        responses={201: CommentSerializer},
    )
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
