"""What a long-lived process (a web worker, a Celery worker) does once its code is loaded."""

from __future__ import annotations

import gc
from pathlib import Path

TEMPLATE_SUFFIXES = (".html", ".txt")


def freeze_loaded_objects(*, templates: bool = False) -> None:
    """Load the URLconf (every view module with it), with ``templates`` compile the project's templates (a web
    process: ``compile_project_templates``), then move every object alive so far out of the cyclic garbage
    collector's sight (``gc.freeze``). Modules, classes, functions, settings and compiled templates live as long as
    the process; a full collection walked them all again every few hundred requests, and stalled the request it
    fell in. What the process creates from here on is still collected.
    Before a fork it also spares the children's copy-on-write pages the collector's writes."""
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018  (imports every view module)
    if templates:
        compile_project_templates()
    gc.collect()
    gc.freeze()


def compile_project_templates() -> None:
    """Compile every template in the template engines' ``DIRS`` (the project's ``templates/``; the Jinja2 engine's
    ``templates/jinja2/``, which the Django engine leaves to it) into their caches. Compiled on first use instead,
    they would stay in the collector's sight and the first request for each page would pay for its templates. A
    template that does not compile stops the process here rather than failing a request later."""
    from django.template import engines

    every = list(engines.all())
    roots = {Path(directory) for engine in every for directory in getattr(engine, "dirs", ())}
    for engine in every:
        for directory in getattr(engine, "dirs", ()):
            root = Path(directory)
            others = [other for other in roots if other != root and other.is_relative_to(root)]
            for path in sorted(root.rglob("*")):
                if path.suffix not in TEMPLATE_SUFFIXES or not path.is_file():
                    continue
                if not any(path.is_relative_to(other) for other in others):
                    engine.get_template(path.relative_to(root).as_posix())
