from django.urls import path

from inbox import api

urlpatterns = [
    path("runs", api.RunIngestApi.as_view(), name="api-runs-ingest"),
    path("runs/<int:pk>", api.RunDetailApi.as_view(), name="api-run"),
    path("items", api.ItemListApi.as_view(), name="api-items"),
    path("items/<int:pk>", api.ItemDetailApi.as_view(), name="api-item"),
]
