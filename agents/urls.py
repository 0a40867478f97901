from django.urls import path

from agents import views

app_name = "agents"
urlpatterns = [
    path("agents/", views.agent_list, name="list"),
    path("agents/<slug:slug>/", views.agent_detail, name="detail"),
]
