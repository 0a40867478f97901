"""The conformance report of one agent: every behaviour of the catalogue, in order, with the variants seen."""

from __future__ import annotations

from typing import Any

from agents.models import Agent
from inbox.conformance.rules import BEHAVIOURS, CONFORMS, DEVIATES
from inbox.models.conformance import ConformanceObservation


def agent_report(agent: Agent) -> list[dict[str, Any]]:
    """One entry per behaviour: ``key``, ``title``, ``rule``, ``expects``, ``status`` (``conforms`` when
    every variant seen conforms, ``deviates`` when one deviates, ``note`` otherwise, ``unseen`` when never
    observed), and ``seen``: the variants observed, newest first, each with ``variant``, ``verdict``,
    ``did`` (what the agent did), ``detail``, ``lastSeenAt``, ``firstSeenAt``, ``exampleRun`` (pk, runId,
    url) or None (a refused or cut run was not stored), and ``evidence``: the runId the agent gave and the index
    of the event at fault in its stream (None when no one event is)."""
    rows = (
        ConformanceObservation.objects.filter(agent=agent)
        .select_related("example_run")
        .order_by("-last_seen_at", "behaviour", "variant")
    )
    by_behaviour: dict[str, list[ConformanceObservation]] = {}
    for row in rows:
        by_behaviour.setdefault(row.behaviour, []).append(row)
    report = []
    for behaviour in BEHAVIOURS:
        seen = []
        for row in by_behaviour.get(behaviour.key, []):
            try:
                variant = behaviour.variant(row.variant)
            except StopIteration:  # a variant retired from the catalogue
                continue
            run = row.example_run
            seen.append(
                {
                    "variant": variant.key,
                    "verdict": variant.verdict,
                    "did": variant.label,
                    "detail": row.detail,
                    "lastSeenAt": row.last_seen_at,
                    "firstSeenAt": row.first_seen_at,
                    "exampleRun": {"id": run.pk, "runId": run.run_id, "url": run.get_absolute_url()} if run else None,
                    "evidence": {"runId": row.evidence_run_id, "eventIndex": row.event_index},
                }
            )
        verdicts = {entry["verdict"] for entry in seen}
        if not seen:
            status = "unseen"
        elif DEVIATES in verdicts:
            status = DEVIATES
        elif verdicts == {CONFORMS}:
            status = CONFORMS
        else:
            status = "note"
        report.append(
            {
                "key": behaviour.key,
                "title": behaviour.title,
                "rule": behaviour.rule,
                "expects": behaviour.expects,
                "status": status,
                "seen": seen,
            }
        )
    return report
