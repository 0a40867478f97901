from django.urls import path

from agents import api as agents_api
from inbox import api, api_team

urlpatterns = [
    path("runs", api.RunIngestApi.as_view(), name="api-runs-ingest"),
    path("agent", api.AgentWhoAmIApi.as_view(), name="api-agent-whoami"),
    path("runs/<int:pk>", api.RunDetailApi.as_view(), name="api-run"),
    path("items", api.ItemListApi.as_view(), name="api-items"),
    path("items/<int:pk>", api.ItemDetailApi.as_view(), name="api-item"),
    path("items/<int:pk>/decision", api.ItemDecisionApi.as_view(), name="api-item-decision"),
    path("items/<int:pk>/claim", api_team.ItemClaimApi.as_view(), name="api-item-claim"),
    path("items/<int:pk>/unclaim", api_team.ItemUnclaimApi.as_view(), name="api-item-unclaim"),
    path("items/<int:pk>/assign", api_team.ItemAssignApi.as_view(), name="api-item-assign"),
    path("items/<int:pk>/comments", api_team.CommentsApi.as_view(target="item"), name="api-item-comments"),
    path("runs/<int:pk>/comments", api_team.CommentsApi.as_view(target="run"), name="api-run-comments"),
    path("items/bulk-decision", api_team.BulkDecisionApi.as_view(), name="api-items-bulk"),
    path("agents/<slug:slug>/runs", agents_api.RunStartApi.as_view(), name="api-agent-runs-start"),
    path("runs/<int:pk>/resume/retry", agents_api.ResumeRetryApi.as_view(), name="api-run-resume-retry"),
]
