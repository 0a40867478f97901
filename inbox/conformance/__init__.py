"""A live conformance report per agent: what each agent did, protocol behaviour by protocol
behaviour, as the inbox observed it on ingest and on each resumed run.

- ``rules``: the catalogue: each behaviour, the spec rule it is held to, and the variants an agent can show.
- ``models``: ``ConformanceObservation``, one row per (agent, behaviour, variant) with when it was last seen
  and an example run.
- ``recorder``: derives the observations of a stored run (``record_run``) and of a resume's reply
  (``record_resume``); called from the ingest and resume write paths, in their transactions.
- ``selectors``: the report (``agent_report``), every behaviour in catalogue order.
- ``api``: ``GET /api/v1/agents/<slug>/conformance``.
"""
