"""The REST API (`/api/v1/`): one line per URL, each naming the package that serves it."""

from django.urls import path

import inbox.core.converters  # noqa: F401  (registers the "id" path converter)
from inbox.api import audit, conformance, decisions, ingest, listing, policies, resumes, teams

urlpatterns = [
    path("audit/review-quality", audit.ReviewQualityApi.as_view(), name="api-audit-review-quality"),
    path("audit/stats", audit.StatsApi.as_view(), name="api-audit-stats"),
    path("runs", ingest.RunIngestApi.as_view(), name="api-runs-ingest"),
    path("agent", ingest.AgentWhoAmIApi.as_view(), name="api-agent-whoami"),
    path("agents/<slug:slug>/runs", ingest.RunStartApi.as_view(), name="api-agent-runs-start"),
    path("agents/<slug:slug>/starts/<id:pk>", ingest.RunStartDetailApi.as_view(), name="api-agent-start"),
    path("agents/<slug:slug>/conformance", conformance.AgentConformanceApi.as_view(), name="api-agent-conformance"),
    path("runs/<id:pk>", listing.RunDetailApi.as_view(), name="api-run"),
    path("items", listing.ItemListApi.as_view(), name="api-items"),
    path("views", listing.SavedViewListApi.as_view(), name="api-views"),
    path("views/<id:pk>", listing.SavedViewDetailApi.as_view(), name="api-view"),
    path("items/<id:pk>", listing.ItemDetailApi.as_view(), name="api-item"),
    path("items/<id:pk>/provenance", listing.ItemProvenanceApi.as_view(), name="api-item-provenance"),
    path("items/<id:pk>/decision", decisions.ItemDecisionApi.as_view(), name="api-item-decision"),
    path("items/<id:pk>/decision/undo", decisions.ItemDecisionUndoApi.as_view(), name="api-item-decision-undo"),
    path("items/bulk-decision", decisions.BulkDecisionApi.as_view(), name="api-items-bulk"),
    path("items/<id:pk>/claim", teams.ItemClaimApi.as_view(), name="api-item-claim"),
    path("items/<id:pk>/unclaim", teams.ItemUnclaimApi.as_view(), name="api-item-unclaim"),
    path("items/<id:pk>/assign", teams.ItemAssignApi.as_view(), name="api-item-assign"),
    path("items/<id:pk>/snooze", teams.ItemSnoozeApi.as_view(), name="api-item-snooze"),
    path("items/<id:pk>/comments", teams.CommentsApi.as_view(target="item"), name="api-item-comments"),
    path("runs/<id:pk>/comments", teams.CommentsApi.as_view(target="run"), name="api-run-comments"),
    path("runs/<id:pk>/resume/retry", resumes.ResumeRetryApi.as_view(), name="api-run-resume-retry"),
    path("away", teams.AwayApi.as_view(), name="api-away"),
    path("notices", teams.NoticeListApi.as_view(), name="api-notices"),
    path("notification-preferences", teams.PreferencesApi.as_view(), name="api-notification-preferences"),
    path("escalation-rules", teams.EscalationRuleListApi.as_view(), name="api-escalation-rules"),
    path("escalation-rules/<id:pk>", teams.EscalationRuleDetailApi.as_view(), name="api-escalation-rule"),
    path("business-hours", teams.BusinessHoursListApi.as_view(), name="api-business-hours"),
    path("business-hours/<str:team>", teams.BusinessHoursDetailApi.as_view(), name="api-business-hours-team"),
    path("agent/escalation-rules", teams.AgentEscalationRuleListApi.as_view(), name="api-agent-escalation-rules"),
    path(
        "agent/escalation-rules/<id:pk>", teams.AgentEscalationRuleDetailApi.as_view(), name="api-agent-escalation-rule"
    ),
    path("policies", policies.PolicyListApi.as_view(), name="api-policies"),
    path("policies/stats", policies.PolicyStatsApi.as_view(), name="api-policies-stats"),
    path("policies/backtests", policies.SetBacktestListApi.as_view(), name="api-policy-set-backtests"),
    path(
        "policies/backtests/<id:backtest_pk>", policies.SetBacktestDetailApi.as_view(), name="api-policy-set-backtest"
    ),
    path("policies/<id:pk>", policies.PolicyDetailApi.as_view(), name="api-policy"),
    path("policies/<id:pk>/matches", policies.PolicyMatchesApi.as_view(), name="api-policy-matches"),
    path("policies/<id:pk>/backtests", policies.BacktestListApi.as_view(), name="api-policy-backtests"),
    path(
        "policies/<id:pk>/backtests/<id:backtest_pk>", policies.BacktestDetailApi.as_view(), name="api-policy-backtest"
    ),
]
