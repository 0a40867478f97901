"""The ``config`` app: what a process of the product needs on disk and beside it before it serves anything.

Importing ``config.settings`` has no side effects; setting Django up (``django.setup()``: every
``manage.py`` command, the web server, Celery, the test run, the bench scripts) runs this hook once.
"""

from __future__ import annotations

import os
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
        Path(settings.VAR_DIR).mkdir(parents=True, exist_ok=True, mode=0o700)  # the mode only if it is new
        Path(settings.STATIC_ROOT).mkdir(parents=True, exist_ok=True)
        private_sqlite_files()
        embedded_redis.start_if_embedded()


def private_sqlite_files() -> None:
    """The SQLite database holds session keys: its file is created (empty, which SQLite takes as a new
    database) readable by its owner only, and an existing one made so; SQLite gives its -wal and -shm files the
    database file's mode."""
    database = settings.DATABASES["default"]
    if not database["ENGINE"].endswith("sqlite3") or str(database["NAME"]).startswith((":memory:", "file:")):
        return
    path = Path(database["NAME"])
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
    for file in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        if file.exists() and file.stat().st_mode & 0o077:
            file.chmod(0o600)
