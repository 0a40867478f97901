"""The REST API (`/api/v1/`): one line per URL, each naming the package that serves it."""

from django.urls import path

from inbox.conformance import api as conformance
from inbox.decisions import api as decisions
from inbox.ingest import api as ingest
from inbox.listing import api as listing
from inbox.policies import api as policies
from inbox.resumes import api as resumes
from inbox.teams import api as teams

urlpatterns = [
    path("runs", ingest.RunIngestApi.as_view(), name="api-runs-ingest"),
    path("agent", ingest.AgentWhoAmIApi.as_view(), name="api-agent-whoami"),
    path("agents/<slug:slug>/runs", ingest.RunStartApi.as_view(), name="api-agent-runs-start"),
    path("agents/<slug:slug>/conformance", conformance.AgentConformanceApi.as_view(), name="api-agent-conformance"),
    path("runs/<int:pk>", listing.RunDetailApi.as_view(), name="api-run"),
    path("items", listing.ItemListApi.as_view(), name="api-items"),
    path("items/<int:pk>", listing.ItemDetailApi.as_view(), name="api-item"),
    path("items/<int:pk>/decision", decisions.ItemDecisionApi.as_view(), name="api-item-decision"),
    path("items/bulk-decision", decisions.BulkDecisionApi.as_view(), name="api-items-bulk"),
    path("items/<int:pk>/claim", teams.ItemClaimApi.as_view(), name="api-item-claim"),
    path("items/<int:pk>/unclaim", teams.ItemUnclaimApi.as_view(), name="api-item-unclaim"),
    path("items/<int:pk>/assign", teams.ItemAssignApi.as_view(), name="api-item-assign"),
    path("items/<int:pk>/comments", teams.CommentsApi.as_view(target="item"), name="api-item-comments"),
    path("runs/<int:pk>/comments", teams.CommentsApi.as_view(target="run"), name="api-run-comments"),
    path("runs/<int:pk>/resume/retry", resumes.ResumeRetryApi.as_view(), name="api-run-resume-retry"),
    path("policies", policies.PolicyListApi.as_view(), name="api-policies"),
    path("policies/<int:pk>", policies.PolicyDetailApi.as_view(), name="api-policy"),
]
