"""Expiry sweep and reminders. Placeholder until issue 5 lands."""


def expire_sweep() -> int:
    return 0


def reminders_send() -> int:
    return 0
