from django.urls import path

from inbox import views

app_name = "inbox"
urlpatterns = [
    path("inbox/", views.item_list, name="list"),
    path("inbox/items/<int:pk>/", views.item_detail, name="item"),
    path("inbox/runs/<int:pk>/", views.run_detail, name="run"),
    path("inbox/threads/<int:pk>/", views.thread_detail, name="thread"),
]
