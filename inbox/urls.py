from django.urls import path

from inbox import audit_views, team_views, views

app_name = "inbox"
urlpatterns = [
    path("inbox/", views.item_list, name="list"),
    path("inbox/rows/", views.item_rows, name="rows"),
    path("inbox/items/<int:pk>/", views.item_detail, name="item"),
    path("inbox/items/<int:pk>/decide/", views.item_decide, name="item_decide"),
    path("inbox/items/<int:pk>/claim/", team_views.item_claim, name="item_claim"),
    path("inbox/items/<int:pk>/release/", team_views.item_release, name="item_release"),
    path("inbox/items/<int:pk>/assign/", team_views.item_assign, name="item_assign"),
    path("inbox/items/<int:pk>/comments/", team_views.item_comment, name="item_comment"),
    path("inbox/bulk/", team_views.bulk_decide, name="bulk_decide"),
    path("inbox/runs/<int:pk>/comments/", team_views.run_comment, name="run_comment"),
    path("inbox/runs/<int:pk>/", views.run_detail, name="run"),
    path("inbox/runs/<int:pk>/decide/", views.run_decide, name="run_decide"),
    path("inbox/runs/<int:pk>/live/", views.run_live, name="run_live"),
    path("inbox/threads/<int:pk>/", views.thread_detail, name="thread"),
    path("inbox/settings/notifications/", audit_views.notification_settings, name="notification_settings"),
]
