"""Signals the agent registry sends after each change, so that upper layers (the inbox's audit log) can
record it without ``agents`` knowing about them.

Every signal is sent inside the transaction of the change (receivers that write rows write them atomically
with it) with ``sender=Agent`` and these keyword arguments:

- ``agent_changed(agent, change, fields, user, via, changes=None)``: ``change`` is ``created``, ``changed``,
  ``enabled`` or ``disabled``; ``fields`` names the changed fields; ``changes`` (when the sender knows them)
  maps fields to ``{"before": ..., "after": ...}`` as JSON, secrets only as ``"set"``/``"not set"``.
- ``token_issued(agent, token, rotated, revoked, user, via)``: a new ingest token (``token.prefix`` only;
  the raw value is never sent); ``rotated`` when it replaced every live token, ``revoked`` lists those.
- ``tokens_revoked(agent, tokens, all_live, user, via)``: tokens revoked without a replacement;
  ``all_live`` when every live token of the agent was revoked at once.

``user`` is the person who acted (None from the command line or the system); ``via`` says where the change
came from (``admin``, ``agent_token``, ``agent_create``, …).
"""

from __future__ import annotations

from django.dispatch import Signal

agent_changed = Signal()
token_issued = Signal()
tokens_revoked = Signal()
