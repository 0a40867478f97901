from django.urls import path

from inbox import audit_views

app_name = "audit"
urlpatterns = [
    path("", audit_views.audit_log, name="log"),
    path("export/<str:kind>.<str:fmt>", audit_views.audit_export, name="export"),
    path("tool-calls/<path:tool_call_id>/", audit_views.tool_call_trail, name="tool_call"),
    path("threads/<int:pk>/", audit_views.thread_detail, name="thread"),
    path("stats/", audit_views.stats, name="stats"),
]
