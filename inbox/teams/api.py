"""Team review API: claim, unclaim and assign an item; comments on items and runs; bulk decisions."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from inbox import access
from inbox.core.errors import StrictCharField, read_input
from inbox.decisions.rules import check_visible
from inbox.limits import MAX_DISCUSSION_COMMENT
from inbox.listing.serializers import ItemSerializer
from inbox.models import Comment
from inbox.teams.claims import assignee_named, item_assign, item_claim, item_unclaim
from inbox.teams.comments import record_comment


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
        item = (item_claim if self.action == "claim" else item_unclaim)(item_id=pk, user=request.user)
        return Response(ItemSerializer(item, context={"request": request}).data)


class ItemUnclaimApi(ItemClaimApi):
    action = "unclaim"

    @extend_schema(summary="Release a claim (the holder or staff)", request=None, responses={200: ItemSerializer})
    def post(self, request: Request, pk: int) -> Response:
        return super().post(request, pk)


class AssignInputSerializer(serializers.Serializer):
    assignee = StrictCharField(help_text="The username of an active teammate who can see the item.")


class ItemAssignApi(APIView):
    @extend_schema(
        summary="Assign an item to a teammate",
        request=AssignInputSerializer,
        responses={200: ItemSerializer},
    )
    def post(self, request: Request, pk: int) -> Response:
        check_visible(pk, request.user)
        body = read_input(AssignInputSerializer, request.data, codes={"assignee": "invalid_assignee"})
        item = item_assign(item_id=pk, user=request.user, assignee=assignee_named(body["assignee"]))
        return Response(ItemSerializer(item, context={"request": request}).data)


class CommentSerializer(serializers.ModelSerializer):
    user = serializers.CharField(source="user.username")

    class Meta:
        model = Comment
        fields = ["id", "user", "body", "created_at"]


class CommentInputSerializer(serializers.Serializer):
    body = StrictCharField(max_length=MAX_DISCUSSION_COMMENT, trim_whitespace=False)


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
        request=CommentInputSerializer,
        responses={201: CommentSerializer},
    )
    def post(self, request: Request, pk: int) -> Response:
        target = self._target(request, pk)
        body = read_input(CommentInputSerializer, request.data, codes={"body": "invalid_comment"})
        comment = record_comment(user=request.user, body=body["body"], **{self.target: target})
        return Response(CommentSerializer(comment).data, status=status.HTTP_201_CREATED)
