from django.urls import path

import inbox.core.converters  # noqa: F401  (registers the "id" path converter)
from inbox.web import audit as views

app_name = "audit"
urlpatterns = [
    path("", views.audit_log, name="log"),
    path("export/<str:kind>.<str:fmt>", views.audit_export, name="export"),
    path("tool-calls/<path:tool_call_id>/", views.tool_call_trail, name="tool_call"),
    path("threads/<id:pk>/", views.thread_detail, name="thread"),
    path("stats/", views.stats, name="stats"),
    path("review/", views.review, name="review"),
    path("review/export.csv", views.review_export, name="review_export"),
]
