"""Extension points other modules register into at import time (see ``InboxConfig.ready``).

``after_ingest``: called inside the ingest transaction with ``run`` and ``items``; use on_commit for I/O.
``after_decision``: called inside the decision transaction with ``item`` and ``decision``.
"""

from __future__ import annotations

from collections.abc import Callable

after_ingest: list[Callable[..., None]] = []
after_decision: list[Callable[..., None]] = []
