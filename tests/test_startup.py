"""A web process freezes what it loaded at startup (``config.startup``): full collections no longer walk it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_asgi_application_puts_its_startup_objects_out_of_the_collectors_sight(tmp_path):
    code = "import gc, sys, config.asgi; print(gc.get_freeze_count(), 'inbox.listing.views' in sys.modules)"
    env = {**os.environ, "INBOX_VAR_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "config.settings"}
    try:
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
        )
    finally:
        # Without REDIS_URL the import started an embedded Redis under tmp_path, which outlives the process.
        from config import embedded_redis

        embedded_redis.stop(tmp_path)

    assert done.returncode == 0, done.stderr
    frozen, views_loaded = done.stdout.split()
    # Django, the app's modules and every view the URLconf imports: far more than a bare interpreter's.
    assert int(frozen) > 50_000
    assert views_loaded == "True"
