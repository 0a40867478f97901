from django.urls import path

from inbox.listing import agent_views

app_name = "agents"
urlpatterns = [
    path("agents/", agent_views.agent_list, name="list"),
    path("agents/<slug:slug>/", agent_views.agent_detail, name="detail"),
]
