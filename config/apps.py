"""The ``config`` app: what a process of the product needs on disk and beside it before it serves anything.

Importing ``config.settings`` has no side effects; setting Django up (``django.setup()``: every
``manage.py`` command, the web server, Celery, the test run, the bench scripts) runs this hook once.
"""

from __future__ import annotations

from pathlib import Path

from django.apps import AppConfig
from django.conf import settings


class RuntimeConfig(AppConfig):
    name = "config"
    label = "runtime"
    verbose_name = "Runtime"

    def ready(self) -> None:
        from config import embedded_redis

        # The SQLite database and the embedded Redis live here; WhiteNoise warns when STATIC_ROOT is missing.
        Path(settings.VAR_DIR).mkdir(parents=True, exist_ok=True)
        Path(settings.STATIC_ROOT).mkdir(parents=True, exist_ok=True)
        embedded_redis.start_if_embedded()
