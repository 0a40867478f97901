"""The approver's pages: one line per URL, each naming the package that serves it."""

from django.urls import path

from inbox.decisions import views as decision_views
from inbox.listing import views as listing_views
from inbox.teams import views as team_views

app_name = "inbox"
urlpatterns = [
    path("inbox/", listing_views.item_list, name="list"),
    path("inbox/rows/", listing_views.item_rows, name="rows"),
    path("inbox/items/<int:pk>/", listing_views.item_detail, name="item"),
    path("inbox/items/<int:pk>/decide/", decision_views.item_decide, name="item_decide"),
    path("inbox/items/<int:pk>/claim/", team_views.item_claim, name="item_claim"),
    path("inbox/items/<int:pk>/release/", team_views.item_release, name="item_release"),
    path("inbox/items/<int:pk>/assign/", team_views.item_assign, name="item_assign"),
    path("inbox/items/<int:pk>/comments/", team_views.item_comment, name="item_comment"),
    path("inbox/bulk/", decision_views.bulk_decide, name="bulk_decide"),
    path("inbox/runs/<int:pk>/comments/", team_views.run_comment, name="run_comment"),
    path("inbox/runs/<int:pk>/", listing_views.run_detail, name="run"),
    path("inbox/runs/<int:pk>/decide/", decision_views.run_decide, name="run_decide"),
    path("inbox/runs/<int:pk>/live/", listing_views.run_live, name="run_live"),
    path("inbox/runs/<int:pk>/preview/", listing_views.run_preview, name="run_preview"),
    path("inbox/threads/<int:pk>/", listing_views.thread_detail, name="thread"),
    path("inbox/settings/notifications/", team_views.notification_settings, name="notification_settings"),
]
