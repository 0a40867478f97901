"""Celery's autodiscovery imports ``inbox.tasks``: this module imports every package's tasks.

Each task is a thin wrapper that loads rows by id and calls one service; each is safe to run twice.
Task names are fixed strings (``inbox.tasks.*``, ``inbox.notifications.*``) so queued messages and the
beat schedule survive module moves.
"""

from inbox.audit import tasks as _audit_tasks  # noqa: F401
from inbox.expiry import tasks as _expiry_tasks  # noqa: F401
from inbox.ingest import tasks as _ingest_tasks  # noqa: F401
from inbox.policies import tasks as _policy_tasks  # noqa: F401
from inbox.resumes import tasks as _resume_tasks  # noqa: F401
from inbox.teams import tasks as _team_tasks  # noqa: F401
