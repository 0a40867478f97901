from django.urls import path

from inbox.listing import agent_views

app_name = "agents"
urlpatterns = [
    path("agents/", agent_views.agent_list, name="list"),
    path("agents/<slug:slug>/", agent_views.agent_detail, name="detail"),
    path("agents/<slug:slug>/settings/", agent_views.agent_settings, name="settings"),
    path("agents/<slug:slug>/starts/<int:start_id>/", agent_views.start_progress, name="start"),
    path("agents/<slug:slug>/enabled/", agent_views.agent_enabled, name="enabled"),
    path("agents/<slug:slug>/tokens/", agent_views.agent_tokens, name="tokens"),
]
