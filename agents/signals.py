"""Signals the agent registry sends after each change, so that upper layers (the inbox's audit log) can record it
without ``agents`` knowing about them.

Each is sent with ``sender=Agent`` inside the transaction of the change, so a receiver that writes rows writes
them atomically with it. Their arguments are listed beside each signal below."""

from __future__ import annotations

from django.dispatch import Signal

# ``user`` is the person who acted (None from the command line or the system); ``via`` where the change came from
# (``admin``, ``agent_token``, ``agent_create``, …).

# (agent, change, fields, user, via, changes=None): ``change`` is created, changed, enabled or disabled;
# ``fields`` names the changed fields; ``changes`` maps them to {"before": ..., "after": ...} as JSON, secrets
# only as "set" / "not set".
agent_changed = Signal()
# (agent, token, rotated, revoked, user, via): a new ingest token (``token.prefix`` only, never the raw value);
# ``rotated`` when it replaced every live token, ``revoked`` lists those.
token_issued = Signal()
# (agent, tokens, all_live, user, via): tokens revoked without a replacement; ``all_live`` when every live token
# of the agent was revoked at once.
tokens_revoked = Signal()
