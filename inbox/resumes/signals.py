"""Signals the outbox sends, for the packages above it that act on a resume's fate.

``resume_failed(sender=Resume, resume)``: sent inside the transaction that failed the resume for good (only a
person retries it). Receivers write in that transaction; work outside the database goes after the commit.
"""

from django.dispatch import Signal

resume_failed = Signal()
