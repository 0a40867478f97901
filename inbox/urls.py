"""The approver's pages: one line per URL, each naming the package that serves it."""

from django.urls import path

import inbox.core.converters  # noqa: F401  (registers the "id" path converter)
from inbox.web import decisions as decision_views
from inbox.web import links
from inbox.web import listing as listing_views
from inbox.web import policies as policy_views
from inbox.web import teams as team_views

app_name = "inbox"
urlpatterns = [
    path("inbox/", listing_views.item_list, name="list"),
    path("inbox/rows/", listing_views.item_rows, name="rows"),
    path("inbox/views/", listing_views.saved_view_list, name="saved_views"),
    path("inbox/views/<id:pk>/", listing_views.saved_view_update, name="saved_view"),
    path("inbox/views/<id:pk>/delete/", listing_views.saved_view_delete, name="saved_view_delete"),
    path("inbox/items/<id:pk>/", listing_views.item_detail, name="item"),
    path("inbox/items/<id:pk>/seen/", listing_views.item_seen, name="item_seen"),
    path("inbox/items/<id:pk>/provenance/", listing_views.item_provenance, name="item_provenance"),
    path("inbox/items/<id:pk>/decide/", decision_views.item_decide, name="item_decide"),
    path("inbox/items/<id:pk>/edit-diff/", decision_views.item_edit_diff, name="item_edit_diff"),
    path("inbox/items/<id:pk>/claim/", team_views.item_claim, name="item_claim"),
    path("inbox/items/<id:pk>/release/", team_views.item_release, name="item_release"),
    path("inbox/items/<id:pk>/assign/", team_views.item_assign, name="item_assign"),
    path("inbox/items/<id:pk>/snooze/", team_views.item_snooze, name="item_snooze"),
    path("inbox/items/<id:pk>/unsnooze/", team_views.item_unsnooze, name="item_unsnooze"),
    path("inbox/items/<id:pk>/comments/", team_views.item_comment, name="item_comment"),
    path("inbox/decide/<str:token>/", links.decision_link, name="decision_link"),
    path("inbox/bulk/", decision_views.bulk_decide, name="bulk_decide"),
    path("inbox/undo/", decision_views.undo, name="undo"),
    path("inbox/runs/<id:pk>/comments/", team_views.run_comment, name="run_comment"),
    path("inbox/runs/<id:pk>/", listing_views.run_detail, name="run"),
    path("inbox/runs/<id:pk>/decide/", decision_views.run_decide, name="run_decide"),
    path("inbox/runs/<id:pk>/live/", listing_views.run_live, name="run_live"),
    path("inbox/runs/<id:pk>/preview/", listing_views.run_preview, name="run_preview"),
    path("inbox/threads/<id:pk>/", listing_views.thread_detail, name="thread"),
    path("inbox/settings/notifications/", team_views.notification_settings, name="notification_settings"),
    path("inbox/settings/away/", team_views.away_settings, name="away_settings"),
    path("inbox/settings/escalation/", team_views.escalation_settings, name="escalation_settings"),
    path("inbox/settings/escalation/<id:pk>/delete/", team_views.escalation_rule_delete, name="escalation_rule_delete"),
    path("policies/", policy_views.policy_list, name="policies"),
    path("policies/new/", policy_views.policy_new, name="policy_new"),
    path("policies/stats/", policy_views.policy_stats, name="policy_stats"),
    path("policies/backtests/", policy_views.policy_set_backtest_start, name="policy_set_backtest_start"),
    path("policies/backtests/<id:backtest_pk>/", policy_views.policy_set_backtest, name="policy_set_backtest"),
    path("policies/<id:pk>/", policy_views.policy_detail, name="policy"),
    path("policies/<id:pk>/edit/", policy_views.policy_edit, name="policy_edit"),
    path("policies/<id:pk>/promote/", policy_views.policy_promote_view, name="policy_promote"),
    path("policies/<id:pk>/backtests/", policy_views.policy_backtest_start, name="policy_backtest_start"),
    path("policies/<id:pk>/backtests/<id:backtest_pk>/", policy_views.policy_backtest, name="policy_backtest"),
]
