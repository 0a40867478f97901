"""A per-process daemon thread that hands values to a slow call in batches, off the request path.

Used for work that follows a commit but need not hold up the response (queueing Celery tasks): the
request adds a value and returns; the thread takes everything added since its last call and makes one
call with the lot. What is lost if the process dies first must be recoverable by other means (the
announcer's runs keep ``notified_at`` NULL, and beat finds them).
"""

from __future__ import annotations

import atexit
import logging
import os
import queue
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


class Batcher:
    """Calls ``handle(values)`` on its own thread with every value added since the previous call. After the
    first value of a batch it waits ``linger`` seconds for more, so a steady stream costs at most one call per
    ``linger`` (a flush ends the wait at once).

    Only the first value of a batch wakes the thread: while it lingers it sleeps on an event that only
    ``flush`` sets, not on the queue, so the values added meanwhile are appended without waking anybody. (It
    used to wait on the queue with a timeout, and each value woke it for nothing: a thread switch and a hand
    of the GIL per ingest, measurable in ``bench/ingest.py``.)"""

    def __init__(self, name: str, handle: Callable[[list[Any]], None], linger: float = 0.0) -> None:
        self.name = name
        self.handle = handle
        self.linger = linger
        self.pid = os.getpid()
        self.queue: queue.SimpleQueue[tuple[Any, threading.Event | None]] = queue.SimpleQueue()
        self._flushing = threading.Event()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            batch = [self.queue.get()]
            if batch[0][1] is None and self.linger > 0:
                self._flushing.wait(self.linger)
            self._flushing.clear()
            while True:
                try:
                    batch.append(self.queue.get_nowait())
                except queue.Empty:
                    break
            values = [value for value, done in batch if done is None]
            try:
                if values:
                    self.handle(values)
            except Exception:
                log.exception("%s failed on %d value(s)", self.name, len(values))
            finally:
                for _, done in batch:
                    if done is not None:
                        done.set()

    def add(self, value: Any) -> None:
        self.queue.put((value, None))

    def flush(self, timeout: float = 5.0) -> None:
        """Wait until everything added before this call has been handled."""
        done = threading.Event()
        self.queue.put((None, done))
        self._flushing.set()
        done.wait(timeout)

    @classmethod
    def per_process(cls, name: str, handle: Callable[[list[Any]], None], linger: float = 0.0) -> Callable[[], Batcher]:
        """A getter for this process's batcher, started on first use and again after a fork (Celery's
        prefork pool). Whatever is pending at interpreter exit is handled first, for up to 2 s."""
        lock = threading.Lock()
        current: list[Batcher] = []

        def get() -> Batcher:
            if not current or current[0].pid != os.getpid():
                with lock:
                    if not current or current[0].pid != os.getpid():
                        current[:] = [cls(name, handle, linger)]
            return current[0]

        @atexit.register
        def _flush_at_exit() -> None:
            if current and current[0].pid == os.getpid() and current[0].thread.is_alive():
                current[0].flush(timeout=2.0)

        return get
