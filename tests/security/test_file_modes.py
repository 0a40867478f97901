"""The embedded default's files hold session keys and the secret key: readable by their owner only."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.once  # the embedded default's own files, whatever the run's servers


def test_the_sqlite_database_is_created_0600_in_a_0700_var_directory(tmp_path):
    var = tmp_path / "var"
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE")}
    # A Redis URL of its own so that the command starts no embedded Redis; migrate never talks to it.
    env.update(INBOX_VAR_DIR=str(var), REDIS_URL="redis://127.0.0.1:1/0", DJANGO_SETTINGS_MODULE="config.settings")
    old_umask = os.umask(0o022)  # the usual umask, which makes files 0644 and directories 0755
    try:
        subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
    finally:
        os.umask(old_umask)
    database = var / "db.sqlite3"
    assert stat.S_IMODE(var.stat().st_mode) == 0o700
    assert stat.S_IMODE(database.stat().st_mode) == 0o600
    for extra in (var / "db.sqlite3-wal", var / "db.sqlite3-shm"):
        if extra.exists():
            assert stat.S_IMODE(extra.stat().st_mode) == 0o600, extra


def test_an_existing_world_readable_database_is_made_private(tmp_path):
    var = tmp_path / "var"
    var.mkdir()
    database = var / "db.sqlite3"
    database.touch()
    database.chmod(0o644)
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env.update(INBOX_VAR_DIR=str(var), REDIS_URL="redis://127.0.0.1:1/0", DJANGO_SETTINGS_MODULE="config.settings")
    subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env, check=True, capture_output=True)
    assert stat.S_IMODE(database.stat().st_mode) == 0o600
