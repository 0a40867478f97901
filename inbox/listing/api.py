"""Read API: items and runs an approver or agent may see (`GET /api/v1/items`, `/items/<id>`, `/runs/<id>`)."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from inbox import access
from inbox.listing import selectors as listing_selectors
from inbox.listing.serializers import ItemSerializer, RunDetailSerializer
from inbox.models import InboxItem


class ItemListQuerySerializer(serializers.Serializer):
    """The filters of ``GET /api/v1/items``."""

    status = serializers.ChoiceField(choices=InboxItem.Status.choices, required=False, allow_blank=True)
    outcome = serializers.ChoiceField(
        choices=[*InboxItem.Outcome.values, "none"],
        required=False,
        allow_blank=True,
        help_text="What happened to the item: approved, approved_with_edits, denied, answered (a form or question), "
        "cancelled, expired; `none` for items still open (no outcome yet).",
    )
    agent = serializers.CharField(required=False, allow_blank=True, help_text="Agent slug")
    reason = serializers.CharField(required=False, allow_blank=True)
    thread = serializers.CharField(required=False, allow_blank=True, help_text="AG-UI threadId")


class ItemListApi(generics.ListAPIView):
    serializer_class = ItemSerializer

    @extend_schema(summary="List inbox items (newest first)", parameters=[ItemListQuerySerializer])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        query = ItemListQuerySerializer(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        return listing_selectors.item_list(user=self.request.user, **query.validated_data)


class ItemDetailApi(generics.RetrieveAPIView):
    serializer_class = ItemSerializer

    def get_queryset(self):
        return access.visible_items(self.request.user).select_related("agent", "thread", "run", "decided_by")


class RunDetailApi(APIView):
    @extend_schema(summary="A run with its items, snapshots, tool calls and resume", responses=RunDetailSerializer)
    def get(self, request: Request, pk: int) -> Response:
        run = get_object_or_404(access.visible_runs(request.user).select_related("agent", "thread"), pk=pk)
        return Response(RunDetailSerializer(run, context={"request": request}).data)
