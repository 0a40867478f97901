from django.urls import path

from inbox.web import agents

app_name = "agents"
urlpatterns = [
    path("agents/", agents.agent_list, name="list"),
    path("agents/<slug:slug>/", agents.agent_detail, name="detail"),
    path("agents/<slug:slug>/settings/", agents.agent_settings, name="settings"),
    path("agents/<slug:slug>/starts/<int:start_id>/", agents.start_progress, name="start"),
    path("agents/<slug:slug>/enabled/", agents.agent_enabled, name="enabled"),
    path("agents/<slug:slug>/tokens/", agents.agent_tokens, name="tokens"),
]
