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
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


class Batcher:
    """Calls ``handle(values)`` on its own thread with every value added since the previous call. After the
    first value of a batch it waits up to ``linger`` seconds for more, so a steady stream costs at most
    one call per ``linger`` (a flush ends the wait at once)."""

    def __init__(self, name: str, handle: Callable[[list[Any]], None], linger: float = 0.0) -> None:
        self.name = name
        self.handle = handle
        self.linger = linger
        self.pid = os.getpid()
        self.queue: queue.SimpleQueue[tuple[Any, threading.Event | None]] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            batch = [self.queue.get()]
            deadline = time.monotonic() + self.linger
            while batch[-1][1] is None:
                try:
                    batch.append(self.queue.get(timeout=max(0.0, deadline - time.monotonic())))
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
