"""A live conformance report per agent: what each agent did, protocol behaviour by protocol behaviour, as the inbox
observed it on ingest and on each resumed run.

``rules``: the catalogue; ``recorder``: the observations of a stored run or a resume's reply, written in their
transactions; ``selectors``: the report. ``GET /api/v1/agents/<slug>/conformance`` serves it."""
