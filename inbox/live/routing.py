"""Websocket routes."""

from __future__ import annotations

from django.urls import path

from inbox.live.consumers import InboxConsumer

websocket_urlpatterns: list = [
    path("ws/inbox/", InboxConsumer.as_asgi()),
]
