"""A web process freezes what it loaded at startup (``config.startup``), its compiled templates included: full
collections no longer walk it, and no first request compiles a page's templates."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_asgi_application_puts_its_startup_objects_out_of_the_collectors_sight(tmp_path):
    code = (
        "import gc, sys, weakref, config.asgi\n"
        "from pathlib import Path\n"
        "from django.template import base, engines\n"
        "cached = engines['django'].engine.template_loaders[0].get_template_cache\n"
        "names = [p.relative_to('templates').as_posix() for p in Path('templates').rglob('*.html')]\n"
        "jinja = [name for name in names if name.startswith('jinja2/')]\n"
        "names = [name for name in names if name not in jinja]\n"
        "missing = [name for name in names if not isinstance(cached.get(name), base.Template)]\n"
        "env = engines['jinja2'].env\n"
        "key = lambda name: (weakref.ref(env.loader), name.removeprefix('jinja2/'))\n"
        "missing += [name for name in jinja if env.cache.get(key(name)) is None]\n"
        "tracked = sum(1 for o in gc.get_objects() if isinstance(o, base.Template))\n"
        "print(gc.get_freeze_count(), 'inbox.web.listing' in sys.modules, len(names), len(missing), tracked)"
    )
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
    frozen, views_loaded, templates, not_compiled, templates_in_sight = done.stdout.split()
    # Django, the app's modules and every view the URLconf imports: far more than a bare interpreter's.
    assert int(frozen) > 50_000
    assert views_loaded == "True"
    # Every page template of the project is compiled into its engine's cache (Django's cached loader; the Jinja2
    # environment's for the list's rows), and frozen with the rest.
    assert int(templates) > 50
    assert (not_compiled, templates_in_sight) == ("0", "0")
