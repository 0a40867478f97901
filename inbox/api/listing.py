"""Read API: items and runs an approver or agent may see (`GET /api/v1/items`, `/items/<id>`, `/runs/<id>`), and
the approver's saved views of the list (`/views`, `/views/<id>`; `GET /api/v1/items?view=<id>` lists a view's
items)."""

from __future__ import annotations

from functools import cached_property
from typing import Any

from django.core.paginator import Paginator
from django.db.models import Prefetch, QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from inbox import access
from inbox.api.serializers import ItemDetailSerializer, ItemSerializer, ProvenanceSerializer, RunDetailSerializer
from inbox.audit.provenance import item_provenance
from inbox.core.errors import ERROR_SCHEMA, ApplicationError, StrictCharField, read_input
from inbox.limits import LIST_COUNT_LIMIT, MAX_DB_ID, MAX_SAVED_VIEW_NAME
from inbox.listing import saved_views
from inbox.listing import selectors as listing_selectors
from inbox.models import InboxItem, SavedView
from inbox.policies import selectors as policy_selectors


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
    view = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_DB_ID,
        help_text="A saved view's id (`GET /api/v1/views`): its tab, filters and order, as the list shows it; the "
        "other filters narrow it further.",
    )


class BoundedPaginator(Paginator):
    """Counts at most ``LIST_COUNT_LIMIT`` + 1 rows, as the list's tabs do: a request never counts a million."""

    object_list: QuerySet[Any]

    @cached_property
    def counted(self) -> int:
        # Only the ids, in no order: the rows' annotations and joins are for the page, not for counting.
        return self.object_list.order_by().values("pk")[: LIST_COUNT_LIMIT + 1].count()

    @cached_property
    def count(self) -> int:
        return min(self.counted, LIST_COUNT_LIMIT)


class BoundedPagination(PageNumberPagination):
    """``count`` up to ``LIST_COUNT_LIMIT`` (10,000) with ``countIsExact``; past it, as the list's pager, the pages
    stop there (narrow with the filters)."""

    django_paginator_class = BoundedPaginator

    def get_paginated_response(self, data: Any) -> Response:
        response = super().get_paginated_response(data)
        assert self.page is not None  # set by paginate_queryset, which the view called
        paginator = self.page.paginator
        assert isinstance(paginator, BoundedPaginator)
        response.data["countIsExact"] = paginator.counted <= LIST_COUNT_LIMIT
        if not response.data["countIsExact"] and not self.page.has_next():
            response.data["next"] = None  # the pages stop at the bound
        return response

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        response = super().get_paginated_response_schema(schema)
        response["properties"]["count"]["description"] = (
            f"Items matching, counted up to {LIST_COUNT_LIMIT:,}: past it this reads {LIST_COUNT_LIMIT:,}, "
            "`countIsExact` is false and the pages stop there"
        )
        response["properties"]["countIsExact"] = {"type": "boolean"}
        response["required"] = [*response.get("required", []), "countIsExact"]
        return response


class ItemListApi(generics.ListAPIView):
    serializer_class = ItemSerializer
    pagination_class = BoundedPagination

    @extend_schema(
        summary="List inbox items (newest first, or in the saved view's order)", parameters=[ItemListQuerySerializer]
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        query = ItemListQuerySerializer(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        filters = dict(query.validated_data)
        view_id = filters.pop("view", None)
        view = None
        if view_id is not None:
            view = saved_views.visible_views(self.request.user).filter(pk=view_id).first()
            if view is None:
                raise ApplicationError.invalid("view", "no saved view of yours or your teams' has this id")
        view_filters = saved_views.filters_of(view) if view is not None else None
        items = listing_selectors.item_list(user=self.request.user, view=view_filters, **filters)
        return listing_selectors.with_truth(items)


class ItemDetailApi(generics.RetrieveAPIView):
    serializer_class = ItemDetailSerializer

    @extend_schema(summary="One item, with what policies did to it or would have done (shadow)")
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        items = access.visible_items(self.request.user).select_related("agent", "thread", "run", "decided_by")
        matches = Prefetch("policy_matches", queryset=policy_selectors.matches_in_order())
        return listing_selectors.with_truth(items).prefetch_related(matches)


class ItemProvenanceApi(APIView):
    @extend_schema(
        summary="An item's audit events, each with its place in the audit chain, and the last verification",
        responses={200: ProvenanceSerializer, 404: OpenApiResponse(ERROR_SCHEMA)},
    )
    def get(self, request: Request, pk: int) -> Response:
        item = get_object_or_404(access.visible_items(request.user), pk=pk)
        provenance = item_provenance(item)
        data = {"item": item.pk, "events": provenance.events, "chain": provenance.chain, "seen": provenance.seen}
        return Response(ProvenanceSerializer(data).data)


class RunDetailApi(APIView):
    @extend_schema(summary="A run with its items, snapshots, tool calls and resume", responses=RunDetailSerializer)
    def get(self, request: Request, pk: int) -> Response:
        run = get_object_or_404(access.visible_runs(request.user).select_related("agent", "thread"), pk=pk)
        return Response(RunDetailSerializer(run, context={"request": request}).data)


class SavedViewSerializer(serializers.ModelSerializer):
    owner = serializers.CharField(source="owner.username", read_only=True)
    team = serializers.CharField(source="team.name", read_only=True, allow_null=True, default=None)
    query = serializers.CharField(read_only=True, help_text="The list's query string (`/inbox/?<query>`)")
    description = serializers.SerializerMethodField(help_text="The filters in words")
    items = serializers.SerializerMethodField(help_text="`GET /api/v1/items?view=<id>`")

    class Meta:
        model = SavedView
        fields = ["id", "name", "owner", "team", "query", "description", "items", "created_at"]

    def get_description(self, view: SavedView) -> str:
        return saved_views.describe(saved_views.filters_of(view))

    def get_items(self, view: SavedView) -> str:
        return f"/api/v1/items?view={view.pk}"


class SavedViewInputSerializer(serializers.Serializer):
    name = StrictCharField(max_length=MAX_SAVED_VIEW_NAME, required=False)
    query = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=1000,
        help_text="The list's filters and sort as its query string, e.g. `tab=open&agent=mailer&sort=oldest` "
        "(read as the list reads it: unknown values are dropped).",
    )
    team = StrictCharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        help_text="Staff: the name of a team to share the view with; null for no one.",
    )


class SavedViewListApi(APIView):
    @extend_schema(
        summary="Your saved views and those shared with your teams", responses=SavedViewSerializer(many=True)
    )
    def get(self, request: Request) -> Response:
        views = saved_views.views_in_order(request.user)
        return Response(SavedViewSerializer(views, many=True).data)

    @extend_schema(
        summary="Save the list's filters and sort as a named view",
        request=SavedViewInputSerializer,
        responses={
            201: SavedViewSerializer,
            400: OpenApiResponse(ERROR_SCHEMA, description="A field is invalid; `field` names it"),
            403: OpenApiResponse(ERROR_SCHEMA, description="Sharing with a team, not staff"),
            409: OpenApiResponse(ERROR_SCHEMA, description="You already have a view of that name"),
        },
    )
    def post(self, request: Request) -> Response:
        body = read_input(SavedViewInputSerializer, request.data, codes={"name": "invalid_view"})
        view = saved_views.saved_view_create(
            user=request.user, name=body.get("name"), query=body.get("query", ""), team=body.get("team")
        )
        return Response(SavedViewSerializer(view).data, status=status.HTTP_201_CREATED)


class SavedViewDetailApi(APIView):
    @extend_schema(summary="One saved view", responses={200: SavedViewSerializer, 404: OpenApiResponse(ERROR_SCHEMA)})
    def get(self, request: Request, pk: int) -> Response:
        view = saved_views.views_in_order(request.user).filter(pk=pk).first()
        if view is None:
            raise ApplicationError(404, "not_found", "No such saved view.")
        return Response(SavedViewSerializer(view).data)

    @extend_schema(
        summary="Rename a view, or (staff) share it with a team",
        description="`name` renames it; `team` (staff) shares it with that team, null shares it with no one. "
        "Its filters are not changed: save a new view instead.",
        request=SavedViewInputSerializer,
        responses={
            200: SavedViewSerializer,
            400: OpenApiResponse(ERROR_SCHEMA, description="A field is invalid; `field` names it"),
            403: OpenApiResponse(ERROR_SCHEMA, description="Not its owner or staff"),
            404: OpenApiResponse(ERROR_SCHEMA, description="No such view"),
            409: OpenApiResponse(ERROR_SCHEMA, description="You already have a view of that name"),
        },
    )
    def patch(self, request: Request, pk: int) -> Response:
        body = read_input(SavedViewInputSerializer, request.data, codes={"name": "invalid_view"})
        changes = {key: body[key] for key in ("name", "team") if key in body}
        if "query" in body:
            raise ApplicationError.invalid("query", "a view's filters do not change: save a new view")
        view = saved_views.saved_view_update(user=request.user, view_id=pk, **changes)
        return Response(SavedViewSerializer(view).data)

    @extend_schema(
        summary="Delete a view",
        request=None,
        responses={
            204: OpenApiResponse(description="Deleted"),
            403: OpenApiResponse(ERROR_SCHEMA),
            404: OpenApiResponse(ERROR_SCHEMA),
        },
    )
    def delete(self, request: Request, pk: int) -> Response:
        saved_views.saved_view_delete(user=request.user, view_id=pk)
        return Response(status=status.HTTP_204_NO_CONTENT)
