from django.urls import path

from inbox.consumers import InboxConsumer

websocket_urlpatterns: list = [
    path("ws/inbox/", InboxConsumer.as_asgi()),
]
