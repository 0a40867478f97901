"""``manage.py migrate`` on the embedded default (no ``REDIS_URL``) leaves no ``redis-server`` running after it
exits; a server that was already answering (started by ``make run`` or another process) is left to its owner."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from config import embedded_redis

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.once  # the embedded default, whatever the run's servers


def migrate(var_dir: Path) -> None:
    env = {key: value for key, value in os.environ.items() if key not in ("REDIS_URL", "DATABASE_URL")}
    env.update(INBOX_VAR_DIR=str(var_dir), DJANGO_SETTINGS_MODULE="config.settings")
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True, timeout=300)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_migrate_stops_the_redis_it_started(tmp_path):
    var_dir = tmp_path / "var"
    pidfile = var_dir / "redis.pid"
    try:
        migrate(var_dir)

        assert not embedded_redis._answers(embedded_redis.socket_path(var_dir))
        assert not pidfile.exists() or not alive(int(pidfile.read_text()))
    finally:
        embedded_redis.stop(var_dir)  # on a failure, the server the command left behind


def test_migrate_leaves_a_running_redis_to_its_owner(tmp_path):
    var_dir = tmp_path / "var"
    embedded_redis.ensure_started(var_dir)
    try:
        migrate(var_dir)
        assert embedded_redis._answers(embedded_redis.socket_path(var_dir))
    finally:
        embedded_redis.stop(var_dir)
