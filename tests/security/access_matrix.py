"""The access matrix: for every URL pattern (keyed by URL name, or route) and API operation (``METHOD /path``),
never by the module serving it, the status each role gets (roles and objects: ``test_access_matrix.world``;
what the statuses mean: docs/security.md, section 10). ``lead`` is a member of the approver's team who leads it:
unless a row says otherwise, they get what the approver gets. It lives with the tests because only they and the docs
read it (``python -m tests.security.access_matrix`` prints the docs' table); nothing at run time does."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ROLES = ("anonymous", "agent", "approver", "other", "delegate", "staff", "lead")


@dataclass(frozen=True)
class Row:
    key: str  # URL name ("inbox:item"), route when unnamed, "admin/" for the admin, or "METHOD /api/v1/path"
    method: str
    path: str  # the request's path, with {item}, {run}, {thread}, {agent}, {view}, {rule}, ... from the world
    expect: tuple[int, ...]  # one status per role, in ROLES' order
    body: Any = None  # JSON for API operations, form fields for pages
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def expected(self) -> dict[str, int]:
        return dict(zip(ROLES, self.expect, strict=True))


def S(  # noqa: N802
    anonymous: int, agent: int, approver: int, other: int, delegate: int, staff: int, lead: int | None = None
) -> tuple[int, ...]:
    """One status per role; a team lead (``lead``) gets what an approver of the team gets unless told."""
    return (anonymous, agent, approver, other, delegate, staff, approver if lead is None else lead)


LOGIN = 302  # a page asks to sign in (anonymous, and an agent's token, which pages do not read)
DECISION = {"status": "resolved", "payload": {"approved": True}}
RUN = {
    "type": "RUN_FINISHED",
    "threadId": "t-matrix",
    "runId": "r-matrix",
    "outcome": {"type": "interrupt", "interrupts": [{"id": "i-m", "reason": "confirmation", "message": "Go?"}]},
}

PAGES: list[Row] = [
    Row("/", "GET", "/", S(302, 302, 302, 302, 302, 302), note="redirects to /inbox/"),
    Row(
        "healthz",
        "GET",
        "/healthz",
        S(503, 503, 503, 503, 503, 503),
        note="public; says only whether the parts answer (503 here: no Celery worker in this test)",
    ),
    Row("admin/", "GET", "/admin/", S(302, 302, 302, 302, 302, 200), note="every route under admin/"),
    Row("login", "GET", "/accounts/login/", S(200, 200, 200, 200, 200, 200)),
    Row("logout", "POST", "/accounts/logout/", S(302, 302, 302, 302, 302, 302)),
    Row("oidc_authentication_callback", "GET", "/oidc/callback/", S(404, 404, 404, 404, 404, 404)),
    Row("oidc_authentication_init", "GET", "/oidc/authenticate/", S(404, 404, 404, 404, 404, 404)),
    Row("oidc_logout", "POST", "/oidc/logout/", S(302, 302, 302, 302, 302, 302)),
    Row("schema", "GET", "/api/schema/", S(200, 200, 200, 200, 200, 200), note="the public API description"),
    Row("api-docs", "GET", "/api/docs/", S(200, 200, 200, 200, 200, 200)),
    Row("audit:log", "GET", "/audit/", S(LOGIN, LOGIN, 200, 200, 200, 200), note="each sees their agents' events"),
    Row("audit:export", "GET", "/audit/export/decisions.csv", S(LOGIN, LOGIN, 200, 200, 200, 200)),
    Row("audit:tool_call", "GET", "/audit/tool-calls/{tool_call}/", S(LOGIN, LOGIN, 200, 404, 200, 200)),
    Row("audit:thread", "GET", "/audit/threads/{thread}/", S(LOGIN, LOGIN, 200, 404, 200, 200)),
    Row("audit:stats", "GET", "/audit/stats/", S(LOGIN, LOGIN, 200, 200, 200, 200)),
    Row("audit:review", "GET", "/audit/review/", S(LOGIN, LOGIN, 200, 200, 200, 200), note="each sees their agents"),
    Row("audit:review_export", "GET", "/audit/review/export.csv", S(LOGIN, LOGIN, 200, 200, 200, 200)),
    Row("inbox:list", "GET", "/inbox/", S(LOGIN, LOGIN, 200, 200, 200, 200)),
    Row("inbox:rows", "GET", "/inbox/rows/", S(LOGIN, LOGIN, 200, 200, 200, 200)),
    Row("inbox:saved_views", "GET", "/inbox/views/", S(LOGIN, LOGIN, 200, 200, 200, 200)),
    Row(
        "inbox:saved_view",
        "POST",
        "/inbox/views/{view}/",
        S(LOGIN, LOGIN, 302, 404, 404, 404, lead=404),
        body={"name": "x"},
    ),
    Row(
        "inbox:saved_view_delete", "POST", "/inbox/views/{view}/delete/", S(LOGIN, LOGIN, 302, 404, 404, 404, lead=404)
    ),
    Row("inbox:item", "GET", "/inbox/items/{item}/", S(LOGIN, LOGIN, 200, 404, 200, 200)),
    Row(
        "inbox:item_decide",
        "POST",
        "/inbox/items/{item}/decide/",
        S(LOGIN, LOGIN, 302, 404, 302, 302),
        body={"action": "approve"},
    ),
    Row("inbox:item_edit_diff", "POST", "/inbox/items/{item}/edit-diff/", S(LOGIN, LOGIN, 200, 404, 200, 200)),
    Row(
        "inbox:item_seen",
        "POST",
        "/inbox/items/{item}/seen/",
        S(LOGIN, LOGIN, 204, 404, 204, 204),
        note="records that the pane showed the item to this person",
    ),
    Row(
        "inbox:item_provenance",
        "GET",
        "/inbox/items/{item}/provenance/",
        S(LOGIN, LOGIN, 200, 404, 200, 200),
        note="the item page's Audit record card, read when opened",
    ),
    Row("inbox:item_claim", "POST", "/inbox/items/{item}/claim/", S(LOGIN, LOGIN, 302, 404, 302, 302)),
    Row("inbox:item_release", "POST", "/inbox/items/{item}/release/", S(LOGIN, LOGIN, 302, 404, 302, 302)),
    Row(
        "inbox:item_assign",
        "POST",
        "/inbox/items/{item}/assign/",
        S(LOGIN, LOGIN, 302, 404, 302, 302),
        body={"assignee": "alice"},
    ),
    Row(
        "inbox:item_snooze",
        "POST",
        "/inbox/items/{item}/snooze/",
        S(LOGIN, LOGIN, 302, 404, 302, 302),
        body={"until": "1h"},
    ),
    Row("inbox:item_unsnooze", "POST", "/inbox/items/{item}/unsnooze/", S(LOGIN, LOGIN, 302, 404, 302, 302)),
    Row(
        "inbox:item_comment",
        "POST",
        "/inbox/items/{item}/comments/",
        S(LOGIN, LOGIN, 302, 404, 302, 302),
        body={"body": "x"},
    ),
    Row(
        "inbox:decision_link",
        "GET",
        "/inbox/decide/{link}/",
        S(LOGIN, LOGIN, 200, 403, 403, 403, lead=403),
        note="a link e-mailed to alice; anyone else's use is refused, and a person who left the team gets 404",
    ),
    Row("inbox:bulk_decide", "POST", "/inbox/bulk/", S(LOGIN, LOGIN, 302, 302, 302, 302), body={"action": "approve"}),
    Row("inbox:undo", "POST", "/inbox/undo/", S(LOGIN, LOGIN, 302, 302, 302, 302)),
    Row(
        "inbox:run_comment",
        "POST",
        "/inbox/runs/{run}/comments/",
        S(LOGIN, LOGIN, 302, 404, 302, 302),
        body={"body": "x"},
    ),
    Row("inbox:run", "GET", "/inbox/runs/{run}/", S(LOGIN, LOGIN, 200, 404, 200, 200)),
    Row("inbox:run_decide", "POST", "/inbox/runs/{run}/decide/", S(LOGIN, LOGIN, 400, 404, 400, 400)),
    Row("inbox:run_live", "GET", "/inbox/runs/{run}/live/", S(LOGIN, LOGIN, 200, 404, 200, 200)),
    Row("inbox:run_preview", "GET", "/inbox/runs/{run}/preview/", S(LOGIN, LOGIN, 200, 404, 200, 200)),
    Row("inbox:thread", "GET", "/inbox/threads/{thread}/", S(LOGIN, LOGIN, 302, 404, 302, 302)),
    Row("inbox:notification_settings", "GET", "/inbox/settings/notifications/", S(LOGIN, LOGIN, 200, 200, 200, 200)),
    Row(
        "inbox:away_settings",
        "POST",
        "/inbox/settings/away/",
        S(LOGIN, LOGIN, 302, 302, 302, 302),
        body={"action": "clear"},
    ),
    Row("inbox:escalation_settings", "GET", "/inbox/settings/escalation/", S(LOGIN, LOGIN, 200, 200, 200, 200)),
    Row(
        "inbox:escalation_rule_delete",
        "POST",
        "/inbox/settings/escalation/{rule}/delete/",
        S(LOGIN, LOGIN, 302, 404, 302, 302),
    ),
    Row(
        "inbox:policies",
        "GET",
        "/policies/",
        S(LOGIN, LOGIN, 404, 404, 404, 200, lead=200),
        note="staff's and team leads' pages (a lead's teams' policies): 404 to anyone else",
    ),
    Row("inbox:policy_new", "GET", "/policies/new/", S(LOGIN, LOGIN, 404, 404, 404, 200, lead=200)),
    Row("inbox:policy_stats", "GET", "/policies/stats/", S(LOGIN, LOGIN, 404, 404, 404, 200, lead=200)),
    Row("inbox:policy", "GET", "/policies/{policy}/", S(LOGIN, LOGIN, 404, 404, 404, 200, lead=200)),
    Row("inbox:policy_edit", "GET", "/policies/{policy}/edit/", S(LOGIN, LOGIN, 404, 404, 404, 200, lead=200)),
    Row(
        "inbox:policy_promote",
        "POST",
        "/policies/{policy}/promote/",
        S(LOGIN, LOGIN, 404, 404, 404, 302, lead=302),
        note="lena did not write the version and it has a backtest: a second lead may promote it",
    ),
    Row(
        "inbox:policy_backtest_start",
        "POST",
        "/policies/{policy}/backtests/",
        S(LOGIN, LOGIN, 404, 404, 404, 302, lead=302),
        body={"days": "30"},
    ),
    Row(
        "inbox:policy_backtest",
        "GET",
        "/policies/{policy}/backtests/{backtest}/",
        S(LOGIN, LOGIN, 404, 404, 404, 200, lead=200),
    ),
    Row(
        "inbox:policy_set_backtest_start",
        "POST",
        "/policies/backtests/",
        S(LOGIN, LOGIN, 404, 404, 404, 302, lead=404),
        body={"days": "30", "policy": "{policy}"},
        note="the enforced policies in order, with a shadow one: staff only (it reads every enforced policy)",
    ),
    Row(
        "inbox:policy_set_backtest",
        "GET",
        "/policies/backtests/{set_backtest}/",
        S(LOGIN, LOGIN, 404, 404, 404, 200, lead=404),
    ),
    Row("agents:list", "GET", "/agents/", S(LOGIN, LOGIN, 200, 200, 200, 200), note="each sees their teams' agents"),
    Row("agents:detail", "GET", "/agents/{agent}/", S(LOGIN, LOGIN, 200, 404, 200, 200)),
    Row("agents:settings", "POST", "/agents/{agent}/settings/", S(LOGIN, LOGIN, 403, 404, 403, 400)),
    Row("agents:start", "GET", "/agents/{agent}/starts/{start}/", S(LOGIN, LOGIN, 200, 404, 404, 404, lead=404)),
    Row("agents:enabled", "POST", "/agents/{agent}/enabled/", S(LOGIN, LOGIN, 403, 404, 403, 400)),
    Row("agents:tokens", "POST", "/agents/{agent}/tokens/", S(LOGIN, LOGIN, 403, 404, 403, 400)),
]

UNAUTHENTICATED = 401  # the API: no session and no valid token
OPERATIONS: list[Row] = [
    Row("GET /api/v1/agent", "GET", "/api/v1/agent", S(401, 200, 401, 401, 401, 401), note="the agent's token only"),
    Row("GET /api/v1/agent/escalation-rules", "GET", "/api/v1/agent/escalation-rules", S(401, 200, 401, 401, 401, 401)),
    Row(
        "POST /api/v1/agent/escalation-rules",
        "POST",
        "/api/v1/agent/escalation-rules",
        S(401, 400, 401, 401, 401, 401),
        body={"afterMinutes": 1, "toUser": "carol"},
        note="an agent's token names no one: 400 naming toUser",
    ),
    Row(
        "GET /api/v1/agent/escalation-rules/{id}",
        "GET",
        "/api/v1/agent/escalation-rules/{agent_rule}",
        S(401, 200, 401, 401, 401, 401),
    ),
    Row(
        "DELETE /api/v1/agent/escalation-rules/{id}",
        "DELETE",
        "/api/v1/agent/escalation-rules/{agent_rule}",
        S(401, 204, 401, 401, 401, 401),
    ),
    Row(
        "GET /api/v1/agents/{slug}/conformance",
        "GET",
        "/api/v1/agents/{agent}/conformance",
        S(401, 401, 200, 404, 200, 200),
    ),
    Row(
        "POST /api/v1/agents/{slug}/runs",
        "POST",
        "/api/v1/agents/{agent}/runs",
        S(401, 401, 400, 404, 400, 400),
        body={},
    ),
    Row(
        "GET /api/v1/agents/{slug}/starts/{id}",
        "GET",
        "/api/v1/agents/{agent}/starts/{start}",
        S(401, 401, 200, 404, 404, 404, lead=404),
        note="only the person who started it",
    ),
    Row("GET /api/v1/away", "GET", "/api/v1/away", S(401, 401, 404, 404, 404, 404), note="one's own status"),
    Row(
        "PUT /api/v1/away",
        "PUT",
        "/api/v1/away",
        S(401, 401, 200, 400, 200, 200),
        body="away",
        note="naming tess, of ops: not carol's teammate (400 naming delegate)",
    ),
    Row("DELETE /api/v1/away", "DELETE", "/api/v1/away", S(401, 401, 204, 204, 204, 204)),
    Row(
        "GET /api/v1/business-hours",
        "GET",
        "/api/v1/business-hours",
        S(401, 401, 200, 200, 200, 200),
        note="the hours of the teams one may set them for (a lead's teams, staff every team): empty for the others",
    ),
    Row(
        "PUT /api/v1/business-hours/{team}",
        "PUT",
        "/api/v1/business-hours/ops",
        S(401, 401, 403, 403, 403, 200, lead=200),
        body={"days": "12345", "opens": "09:00", "closes": "17:00", "timeZone": "Europe/Berlin"},
        note="ops's hours: staff's or its lead's",
    ),
    Row(
        "DELETE /api/v1/business-hours/{team}",
        "DELETE",
        "/api/v1/business-hours/ops",
        S(401, 401, 403, 403, 403, 204, lead=204),
    ),
    Row("GET /api/v1/escalation-rules", "GET", "/api/v1/escalation-rules", S(401, 401, 200, 200, 200, 200)),
    Row(
        "POST /api/v1/escalation-rules",
        "POST",
        "/api/v1/escalation-rules",
        S(401, 401, 403, 400, 403, 201),
        body={"agent": "{agent}", "step": 2, "afterMinutes": 60, "toUser": "carol"},
        note="to carol, of another team: a grant of access, staff's alone, not a team lead's (carol sees no such agent: 400)",
    ),
    Row("GET /api/v1/escalation-rules/{id}", "GET", "/api/v1/escalation-rules/{rule}", S(401, 401, 200, 404, 200, 200)),
    Row(
        "DELETE /api/v1/escalation-rules/{id}",
        "DELETE",
        "/api/v1/escalation-rules/{rule}",
        S(401, 401, 204, 404, 204, 204),
    ),
    Row("GET /api/v1/items", "GET", "/api/v1/items", S(401, 401, 200, 200, 200, 200), note="each sees their items"),
    Row("GET /api/v1/items/{id}", "GET", "/api/v1/items/{item}", S(401, 401, 200, 404, 200, 200)),
    Row(
        "POST /api/v1/items/{id}/assign",
        "POST",
        "/api/v1/items/{item}/assign",
        S(401, 401, 200, 404, 200, 200),
        body={"assignee": "alice"},
    ),
    Row("POST /api/v1/items/{id}/claim", "POST", "/api/v1/items/{item}/claim", S(401, 401, 200, 404, 200, 200)),
    Row("GET /api/v1/items/{id}/comments", "GET", "/api/v1/items/{item}/comments", S(401, 401, 200, 404, 200, 200)),
    Row(
        "POST /api/v1/items/{id}/comments",
        "POST",
        "/api/v1/items/{item}/comments",
        S(401, 401, 201, 404, 201, 201),
        body={"body": "x"},
    ),
    Row(
        "POST /api/v1/items/{id}/decision",
        "POST",
        "/api/v1/items/{item}/decision",
        S(401, 401, 201, 404, 201, 201),
        body=DECISION,
    ),
    Row(
        "POST /api/v1/items/{id}/decision/undo",
        "POST",
        "/api/v1/items/{item}/decision/undo",
        S(401, 401, 409, 404, 409, 409),
    ),
    Row(
        "POST /api/v1/items/{id}/snooze",
        "POST",
        "/api/v1/items/{item}/snooze",
        S(401, 401, 200, 404, 200, 200),
        body={"until": "1h"},
    ),
    Row("DELETE /api/v1/items/{id}/snooze", "DELETE", "/api/v1/items/{item}/snooze", S(401, 401, 204, 404, 204, 204)),
    Row(
        "GET /api/v1/items/{id}/provenance",
        "GET",
        "/api/v1/items/{item}/provenance",
        S(401, 401, 200, 404, 200, 200),
        note="the item's audit events and their seals",
    ),
    Row("POST /api/v1/items/{id}/unclaim", "POST", "/api/v1/items/{item}/unclaim", S(401, 401, 200, 404, 200, 200)),
    Row(
        "POST /api/v1/items/bulk-decision",
        "POST",
        "/api/v1/items/bulk-decision",
        S(401, 401, 200, 200, 200, 200),
        body={"ids": ["{item}"], "action": "approve"},
        note="another team's item is reported as not found, per item",
    ),
    Row(
        "GET /api/v1/audit/review-quality",
        "GET",
        "/api/v1/audit/review-quality",
        S(401, 401, 200, 200, 200, 200),
        note="each sees their agents' figures",
    ),
    Row(
        "GET /api/v1/audit/stats",
        "GET",
        "/api/v1/audit/stats",
        S(401, 401, 200, 200, 200, 200),
        note="each sees their agents' figures",
    ),
    Row("GET /api/v1/notices", "GET", "/api/v1/notices", S(401, 401, 200, 200, 200, 200), note="one's own notices"),
    Row(
        "GET /api/v1/notification-preferences",
        "GET",
        "/api/v1/notification-preferences",
        S(401, 401, 200, 200, 200, 200),
        note="one's own",
    ),
    Row(
        "PUT /api/v1/notification-preferences",
        "PUT",
        "/api/v1/notification-preferences",
        S(401, 401, 200, 200, 200, 200),
        body={"emailMode": "digest"},
    ),
    Row(
        "GET /api/v1/policies",
        "GET",
        "/api/v1/policies",
        S(401, 401, 403, 403, 403, 200, lead=200),
        note="staff's, and a team lead's for the teams they lead",
    ),
    Row("POST /api/v1/policies", "POST", "/api/v1/policies", S(401, 401, 403, 403, 403, 400, lead=400), body={}),
    Row("GET /api/v1/policies/{id}", "GET", "/api/v1/policies/{policy}", S(401, 401, 403, 403, 403, 200, lead=200)),
    Row(
        "PATCH /api/v1/policies/{id}",
        "PATCH",
        "/api/v1/policies/{policy}",
        S(401, 401, 403, 403, 403, 200, lead=200),
        body={},
    ),
    Row(
        "POST /api/v1/policies/{id}/backtests",
        "POST",
        "/api/v1/policies/{policy}/backtests",
        S(401, 401, 403, 403, 403, 201, lead=201),
        body={},
    ),
    Row(
        "GET /api/v1/policies/{id}/backtests/{backtest_pk}",
        "GET",
        "/api/v1/policies/{policy}/backtests/{backtest}",
        S(401, 401, 403, 403, 403, 200, lead=200),
    ),
    Row(
        "GET /api/v1/policies/{id}/backtests",
        "GET",
        "/api/v1/policies/{policy}/backtests",
        S(401, 401, 403, 403, 403, 200, lead=200),
    ),
    Row(
        "GET /api/v1/policies/{id}/matches",
        "GET",
        "/api/v1/policies/{policy}/matches",
        S(401, 401, 403, 403, 403, 200, lead=200),
    ),
    Row(
        "GET /api/v1/policies/stats",
        "GET",
        "/api/v1/policies/stats",
        S(401, 401, 403, 403, 403, 200, lead=200),
        note="the policies the caller manages (a lead: their teams')",
    ),
    Row(
        "GET /api/v1/policies/backtests",
        "GET",
        "/api/v1/policies/backtests",
        S(401, 401, 403, 403, 403, 200, lead=403),
        note="the enforced policies in order: staff only",
    ),
    Row(
        "POST /api/v1/policies/backtests",
        "POST",
        "/api/v1/policies/backtests",
        S(401, 401, 403, 403, 403, 201, lead=403),
        body={"policy": "{policy}"},
    ),
    Row(
        "GET /api/v1/policies/backtests/{backtest_pk}",
        "GET",
        "/api/v1/policies/backtests/{set_backtest}",
        S(401, 401, 403, 403, 403, 200, lead=403),
    ),
    Row(
        "POST /api/v1/runs",
        "POST",
        "/api/v1/runs",
        S(401, 201, 401, 401, 401, 401),
        body=RUN,
        note="ingest: the agent's token only",
    ),
    Row("GET /api/v1/runs/{id}", "GET", "/api/v1/runs/{run}", S(401, 401, 200, 404, 200, 200)),
    Row("GET /api/v1/runs/{id}/comments", "GET", "/api/v1/runs/{run}/comments", S(401, 401, 200, 404, 200, 200)),
    Row(
        "POST /api/v1/runs/{id}/comments",
        "POST",
        "/api/v1/runs/{run}/comments",
        S(401, 401, 201, 404, 201, 201),
        body={"body": "x"},
    ),
    Row(
        "POST /api/v1/runs/{id}/resume/retry",
        "POST",
        "/api/v1/runs/{failed_run}/resume/retry",
        S(401, 401, 403, 404, 403, 202),
    ),
    Row("GET /api/v1/views", "GET", "/api/v1/views", S(401, 401, 200, 200, 200, 200), note="one's own views"),
    Row(
        "POST /api/v1/views",
        "POST",
        "/api/v1/views",
        S(401, 401, 201, 201, 201, 201),
        body={"name": "Another", "query": "tab=all"},
    ),
    Row(
        "GET /api/v1/views/{id}",
        "GET",
        "/api/v1/views/{view}",
        S(401, 401, 200, 404, 404, 404, lead=404),
        note="alice's view",
    ),
    Row(
        "PATCH /api/v1/views/{id}",
        "PATCH",
        "/api/v1/views/{view}",
        S(401, 401, 200, 404, 404, 404, lead=404),
        body={"name": "Renamed"},
    ),
    Row("DELETE /api/v1/views/{id}", "DELETE", "/api/v1/views/{view}", S(401, 401, 204, 404, 404, 404, lead=404)),
]

# Every route under one of these prefixes is one row: the Django admin (staff only, per-model permissions).
PREFIX_ROWS = {"admin/": "admin/"}


def markdown_table() -> str:
    """The matrix as docs/security.md prints it."""
    lines = [
        "| URL name or operation | method | " + " | ".join(ROLES) + " | note |",
        "|---|---|" + "---|" * len(ROLES) + "---|",
    ]
    for row in [*PAGES, *OPERATIONS]:
        statuses = " | ".join(str(status) for status in row.expect)
        lines.append(f"| `{row.key}` | {row.method} | {statuses} | {row.note} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown_table())
