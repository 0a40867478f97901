from django.urls import path

from inbox import audit_views, views

app_name = "inbox"
urlpatterns = [
    path("inbox/", views.item_list, name="list"),
    path("inbox/rows/", views.item_rows, name="rows"),
    path("inbox/items/<int:pk>/", views.item_detail, name="item"),
    path("inbox/items/<int:pk>/decide/", views.item_decide, name="item_decide"),
    path("inbox/runs/<int:pk>/", views.run_detail, name="run"),
    path("inbox/runs/<int:pk>/decide/", views.run_decide, name="run_decide"),
    path("inbox/runs/<int:pk>/live/", views.run_live, name="run_live"),
    path("inbox/threads/<int:pk>/", views.thread_detail, name="thread"),
    path("inbox/settings/notifications/", audit_views.notification_settings, name="notification_settings"),
]
