"""Read API: items and runs an approver or agent may see (`GET /api/v1/items`, `/items/<id>`, `/runs/<id>`)."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from inbox import access
from inbox.listing import selectors as listing_selectors
from inbox.listing.serializers import ItemSerializer, RunDetailSerializer
from inbox.models import InboxItem


class ItemListApi(generics.ListAPIView):
    serializer_class = ItemSerializer

    @extend_schema(
        summary="List inbox items (newest first)",
        parameters=[
            OpenApiParameter("status", enum=[s.value for s in InboxItem.Status]),
            OpenApiParameter(
                "outcome",
                enum=[*InboxItem.Outcome.values, "none"],
                description="What happened to the item: approved, approved_with_edits, denied, answered (a form or "
                "question), cancelled, expired; `none` for items still open (no outcome yet).",
            ),
            OpenApiParameter("agent", str, description="Agent slug"),
            OpenApiParameter("reason", str),
            OpenApiParameter("thread", str, description="AG-UI threadId"),
        ],
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        params = self.request.query_params
        status_filter = params.get("status")
        if status_filter and status_filter not in InboxItem.Status.values:
            from rest_framework.exceptions import ValidationError

            raise ValidationError({"status": [f"Must be one of {', '.join(InboxItem.Status.values)}."]})
        outcome_filter = params.get("outcome")
        outcomes = [*InboxItem.Outcome.values, "none"]
        if outcome_filter and outcome_filter not in outcomes:
            from rest_framework.exceptions import ValidationError

            raise ValidationError({"outcome": [f"Must be one of {', '.join(outcomes)}."]})
        return listing_selectors.item_list(
            user=self.request.user,
            status=status_filter,
            outcome=outcome_filter,
            agent=params.get("agent"),
            reason=params.get("reason"),
            thread=params.get("thread"),
        )


class ItemDetailApi(generics.RetrieveAPIView):
    serializer_class = ItemSerializer

    def get_queryset(self):
        return access.visible_items(self.request.user).select_related("agent", "thread", "run", "decided_by")


class RunDetailApi(APIView):
    @extend_schema(summary="A run with its items, snapshots, tool calls and resume", responses=RunDetailSerializer)
    def get(self, request: Request, pk: int) -> Response:
        run = get_object_or_404(access.visible_runs(request.user).select_related("agent", "thread"), pk=pk)
        return Response(RunDetailSerializer(run, context={"request": request}).data)
