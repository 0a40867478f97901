"""Team review on the approver pages (Django test client): claims, the Mine tab, quorum, discussion and
bulk decisions, as an approver sees them."""

from __future__ import annotations

import copy
import re

import pytest
from django.test import Client

from inbox.models import AuditEvent, Comment, Decision, InboxItem
from tests.conftest import spec_example
from tests.inbox.conftest import XSS, interrupt_run, quarterly_filing


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def tool_approval(n: int = 0) -> dict:
    body = copy.deepcopy(spec_example("minimal_tool_approval"))
    body["threadId"], body["runId"] = f"thread-{n}", f"run-{n}"
    return body


@pytest.fixture
def post_items(agent, ingest):
    """Post runs as the 'mailer' agent (or ``as_agent``); returns every item they created, in order."""

    def post(*bodies: dict, as_agent=None) -> list[InboxItem]:
        items = []
        for body in bodies:
            response = ingest(as_agent or agent, body)
            assert response.status_code == 201, response.content
            items += list(InboxItem.objects.filter(run_id=response.json()["id"]).order_by("position"))
        return items

    return post


@pytest.fixture
def email_item(post_items) -> InboxItem:
    return post_items(tool_approval())[0]


def page_of(client: Client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def decision_fieldset(page: str) -> str:
    match = re.search(r'<fieldset class="decision-fieldset"[^>]*>', page)
    assert match, "no decision form on the page"
    return match.group(0)


# --- claim, release, assign ------------------------------------------------------------------------


def test_claim_release_and_assign_work_from_the_item_page_and_are_audited(email_item, alice, bob):
    url = email_item.get_absolute_url()
    as_alice, as_bob = client_for(alice), client_for(bob)
    assert "No one is on this yet" in page_of(as_alice, url)

    claimed = as_alice.post(f"{url}claim/", follow=True)
    assert "You’re on it" in claimed.content.decode() and "You hold this item" in claimed.content.decode()
    assert InboxItem.objects.get().claimed_by == alice

    assigned = as_alice.post(f"{url}assign/", {"assignee": "bob"}, follow=True)
    assert "Assigned to bob." in assigned.content.decode()
    assert InboxItem.objects.get().claimed_by == bob
    assert "You hold this item" in page_of(as_bob, url)

    released = as_bob.post(f"{url}release/", follow=True)
    assert "Released: anyone on the team can pick this item up." in released.content.decode()
    assert InboxItem.objects.get().claimed_by is None
    verbs = list(AuditEvent.objects.filter(verb__startswith="item.").order_by("pk").values_list("verb", "actor_label"))
    assert verbs[-3:] == [("item.claimed", "alice"), ("item.assigned", "alice"), ("item.unclaimed", "bob")]


def test_a_teammate_cannot_take_or_release_someone_elses_claim(email_item, alice, bob):
    url = email_item.get_absolute_url()
    client_for(alice).post(f"{url}claim/")
    as_bob = client_for(bob)

    taken = as_bob.post(f"{url}claim/")
    assert taken.status_code == 409
    assert "alice already holds this item." in taken.content.decode()
    released = as_bob.post(f"{url}release/")
    assert released.status_code == 403
    assert "Only the holder or staff can release this claim." in released.content.decode()
    assert InboxItem.objects.get().claimed_by == alice


def test_the_assign_select_offers_teammates_and_staff_but_not_outsiders(email_item, alice, bob, carol, staff):
    page = page_of(client_for(alice), email_item.get_absolute_url())
    select = re.search(r'<select name="assignee".*?</select>', page, re.S).group(0)
    assert '<option value="bob">bob</option>' in select
    assert '<option value="staff">staff</option>' in select
    assert '<option value="alice">Me (alice)</option>' in select
    assert "carol" not in select


def test_assigning_to_an_outsider_or_no_one_is_refused_beside_the_select(email_item, alice, carol):
    url = email_item.get_absolute_url()
    as_alice = client_for(alice)

    outsider = as_alice.post(f"{url}assign/", {"assignee": "carol"})
    assert outsider.status_code == 400
    assert "data-claim-error><li>carol cannot see this item&#x27;s agent.</li>" in outsider.content.decode()
    nobody = as_alice.post(f"{url}assign/", {"assignee": ""})
    assert nobody.status_code == 400
    assert "Choose a teammate to assign this item to." in nobody.content.decode()
    assert InboxItem.objects.get().claimed_by is None


def test_an_outsider_gets_404_on_every_team_action_of_an_item_she_cannot_see(email_item, carol):
    as_carol = client_for(carol)
    url = email_item.get_absolute_url()
    for action, data in (
        ("claim/", {}),
        ("release/", {}),
        ("assign/", {"assignee": "carol"}),
        ("comments/", {"body": "hello"}),
    ):
        assert as_carol.post(f"{url}{action}", data).status_code == 404, action
    assert as_carol.post(f"/inbox/runs/{email_item.run_id}/comments/", {"body": "hello"}).status_code == 404
    item = InboxItem.objects.get()
    assert item.claimed_by is None and not Comment.objects.exists()


# --- a claimed item: who decides it ------------------------------------------------------------------


def test_only_the_holder_decides_a_claimed_item_others_see_the_form_disabled(email_item, alice, bob):
    url = email_item.get_absolute_url()
    client_for(alice).post(f"{url}claim/")
    as_bob = client_for(bob)

    page = page_of(as_bob, url)
    assert "Claimed by alice" in page and "data-claim-lock" in page
    assert " disabled" in decision_fieldset(page)
    assert " disabled" not in decision_fieldset(page_of(client_for(alice), url))

    refused = as_bob.post(f"{url}decide/", {"action": "approve"})
    assert refused.status_code == 403
    assert "alice holds this item; only they decide it." in refused.content.decode()
    assert not Decision.objects.exists()
    assert client_for(alice).post(f"{url}decide/", {"action": "approve"}).status_code == 302
    assert InboxItem.objects.get().status == "resolved"


def test_staff_see_the_claim_but_may_override_it(email_item, alice, staff):
    url = email_item.get_absolute_url()
    client_for(alice).post(f"{url}claim/")
    page = page_of(client_for(staff), url)
    assert "data-claim-override" in page and "the override is recorded in the audit" in page
    assert " disabled" not in decision_fieldset(page)
    assert 'data-release title="Staff: release alice’s claim' in page


def test_the_list_rows_show_who_holds_an_item(post_items, alice, bob):
    first, second = post_items(tool_approval(1), tool_approval(2))
    client_for(bob).post(f"{first.get_absolute_url()}claim/")
    client_for(alice).post(f"{second.get_absolute_url()}claim/")
    page = page_of(client_for(alice), "/inbox/")
    assert re.search(
        r'data-holder="bob" title="Claimed by bob"><span class="avatar avatar-sm"[^>]*>BO</span>bob ', page
    )
    assert re.search(r'data-holder="alice" title="Claimed by alice">.*?</span>You ', page)


def test_the_mine_tab_lists_only_the_open_items_i_hold_with_its_count(post_items, alice, bob):
    mine, theirs, unclaimed, decided = post_items(*(tool_approval(n) for n in range(4)))
    as_alice = client_for(alice)
    assert "Nothing on your plate" in page_of(as_alice, "/inbox/?tab=mine")
    for item in (mine, decided):
        as_alice.post(f"{item.get_absolute_url()}claim/")
    client_for(bob).post(f"{theirs.get_absolute_url()}claim/")
    as_alice.post(f"{decided.get_absolute_url()}decide/", {"action": "approve"})

    response = as_alice.get("/inbox/?tab=mine")
    assert [item.pk for item in response.context["items"]] == [mine.pk]
    page = response.content.decode()
    assert 'data-count="mine">1</span>' in page and 'data-count="open">3</span>' in page
    assert 'data-tab="mine" class="tab is-active"' in page


# --- quorum ----------------------------------------------------------------------------------------


@pytest.fixture
def quorum_item(make_agent, post_items) -> InboxItem:
    return post_items(tool_approval(), as_agent=make_agent("strict", approvals_required=2))[0]


def test_a_quorum_item_shows_one_of_two_after_one_approval_and_closes_with_the_second(quorum_item, alice, bob):
    url = quorum_item.get_absolute_url()
    as_alice = client_for(alice)
    before = page_of(as_alice, url)
    assert "0 of 2 approvals" in before and "Approving adds your vote" in before

    first = as_alice.post(f"{url}decide/", {"action": "approve"}, follow=True).content.decode()
    assert "Your approval is recorded: 1 of 2. It needs another approver." in first
    assert "1 of 2 approvals" in first
    assert "Approved by <strong>alice</strong> (you)." in first
    assert "You approved; waiting for one more." in first
    # Approve is disabled once my approval counts (a second press would be refused); Deny stays mine to give.
    assert 'data-action="approve" disabled aria-describedby="quorum-hint"' in first
    assert InboxItem.objects.get().status == "open"
    assert "1 of 2 approvals" in page_of(client_for(bob), url)

    again = as_alice.post(f"{url}decide/", {"action": "approve"})
    assert again.status_code == 409
    assert "You already approved this answer; another approver must." in again.content.decode()

    closing = client_for(bob).post(f"{url}decide/", {"action": "approve"}, follow=True).content.decode()
    assert "Approved: “Send email to a@b.com with subject &#x27;Hi&#x27;?”." in closing
    assert "2 of 2 approvals" in closing and "<strong>alice</strong> and <strong>bob</strong>" in closing
    assert InboxItem.objects.get().status == "resolved"


def test_the_requester_is_told_plainly_that_someone_else_must_approve(agent, post_items, alice):
    body = tool_approval()
    body["metadata"] = {"requestedBy": "alice@example.com"}
    item = post_items(body)[0]
    refused = client_for(alice).post(f"{item.get_absolute_url()}decide/", {"action": "approve"})
    assert refused.status_code == 403
    assert "You asked for this action, so someone else must approve it." in refused.content.decode()


# --- discussion ------------------------------------------------------------------------------------


def test_comments_on_an_item_are_listed_newest_last_and_escaped(email_item, alice, bob):
    url = email_item.get_absolute_url()
    assert client_for(alice).post(f"{url}comments/", {"body": "Is a@b.com right?"}).status_code == 302
    client_for(bob).post(f"{url}comments/", {"body": XSS})

    page = page_of(client_for(alice), url)
    assert page.index("Is a@b.com right?") < page.index("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;")
    assert "<script>alert" not in page and "<img src=x" not in page
    assert re.search(r'<strong>bob</strong> <time datetime="[^"]+" title="[^"]+">just now</time>', page)
    assert [c.body for c in Comment.objects.filter(item=email_item)] == ["Is a@b.com right?", XSS]


def test_comments_on_a_run_are_shown_on_the_run_page_and_escaped(email_item, alice):
    run_url = f"/inbox/runs/{email_item.run_id}/"
    response = client_for(alice).post(f"{run_url}comments/", {"body": XSS}, follow=True)
    page = response.content.decode()
    assert response.redirect_chain[-1][0] == f"{run_url}#discussion"
    assert "&lt;script&gt;alert" in page and "<script>alert" not in page
    assert Comment.objects.get().run_id == email_item.run_id


def test_the_run_page_shows_who_holds_each_open_interrupt(email_item, alice, bob):
    from inbox.teams.claims import item_claim

    item_claim(item_id=email_item.pk, user=bob)
    run_url = f"/inbox/runs/{email_item.run_id}/"
    chips = re.findall(
        r'data-holder="([^"]*)"[^>]*>.*?</span>\s*(?:You|\w+) <span class="muted">on it',
        client_for(alice).get(run_url).content.decode(),
    )
    assert chips == ["bob"]
    bobs = client_for(bob).get(run_url).content.decode()
    assert 'You <span class="muted">on it' in bobs and "data-run-submit" in bobs
    # alice can choose nothing on this run: no submit, a sentence saying why.
    alices = client_for(alice).get(run_url).content.decode()
    assert "data-run-submit" not in alices and "data-set-all" not in alices
    assert "Every open interrupt here is held by a teammate" in alices


def test_a_comment_too_long_is_refused_on_the_page_and_kept_in_the_box(email_item, alice):
    response = client_for(alice).post(f"{email_item.get_absolute_url()}comments/", {"body": "z" * 10_001})
    assert response.status_code == 400
    page = response.content.decode()
    assert "A comment is at most 10000 characters (10001 given)." in page and "z" * 10_001 in page
    assert not Comment.objects.exists()


def test_an_empty_comment_is_refused_next_to_the_comment_box(email_item, alice):
    response = client_for(alice).post(f"{email_item.get_absolute_url()}comments/", {"body": "   "})
    assert response.status_code == 400
    assert re.search(r"data-comment-error><li>A comment needs some text\.</li>", response.content.decode())
    run_response = client_for(alice).post(f"/inbox/runs/{email_item.run_id}/comments/", {"body": ""})
    assert run_response.status_code == 400 and "A comment needs some text." in run_response.content.decode()
    assert not Comment.objects.exists()


# --- bulk decisions --------------------------------------------------------------------------------


def test_bulk_approve_of_ten_items_creates_ten_decisions_and_ten_audit_events(post_items, alice):
    items = post_items(*(tool_approval(n) for n in range(10)))
    response = client_for(alice).post(
        "/inbox/bulk/",
        {"ids": [i.pk for i in items], "action": "approve", "comment": "batch ok", "next": "tab=open"},
        follow=True,
    )
    assert response.redirect_chain == [("/inbox/", 302)]
    assert Decision.objects.filter(comment="batch ok", payload={"approved": True}).count() == 10
    assert AuditEvent.objects.filter(verb="item.resolved").count() == 10
    assert set(InboxItem.objects.values_list("status", flat=True)) == {"resolved"}
    assert "<strong>10 decided</strong>." in response.content.decode()
    assert "data-bulk-summary" not in page_of(client_for(alice), "/inbox/"), "the summary is shown once"


def test_bulk_reports_each_failure_with_its_reason_and_link_without_blocking_the_rest(
    post_items, make_agent, alice, carol
):
    tool, other_tool = post_items(tool_approval(1), tool_approval(2))
    form = post_items(quarterly_filing())[0]
    foreign_agent = make_agent("foreign")
    foreign_agent.agent.teams.set(carol.groups.all())
    foreign = post_items(tool_approval(3), as_agent=foreign_agent)[0]

    response = client_for(alice).post(
        "/inbox/bulk/",
        {"ids": [form.pk, tool.pk, foreign.pk, other_tool.pk], "action": "approve", "next": "tab=all"},
        follow=True,
    )
    assert response.redirect_chain == [("/inbox/?tab=all", 302)]
    page = response.content.decode()
    assert "<strong>2 decided</strong>, 1 needs its form, 1 could not be decided:" in page
    needs = re.search(rf'data-bulk-failure="{form.pk}">(.*?)</li>', page, re.S).group(1)
    assert f'<a href="/inbox/items/{form.pk}/">Please provide the quarterly filing details.</a>' in needs
    assert "needs its form" in needs
    missing = re.search(rf'data-bulk-failure="{foreign.pk}">(.*?)</li>', page, re.S).group(1)
    assert "not found" in missing and "<a " not in missing and "Send email" not in missing
    statuses = dict(InboxItem.objects.values_list("pk", "status"))
    assert statuses == {tool.pk: "resolved", other_tool.pk: "resolved", form.pk: "open", foreign.pk: "open"}


def test_bulk_with_nothing_selected_or_no_action_decides_nothing_and_says_why(email_item, alice):
    as_alice = client_for(alice)
    nothing = as_alice.post("/inbox/bulk/", {"action": "approve", "ids": ["x"]}, follow=True).content.decode()
    assert "Nothing was decided.</strong> Select at least one item first." in nothing
    no_action = as_alice.post("/inbox/bulk/", {"ids": [email_item.pk], "action": "launch"}, follow=True)
    assert "Choose Approve, Deny or Cancel." in no_action.content.decode()
    too_long = as_alice.post(
        "/inbox/bulk/", {"ids": [email_item.pk], "action": "approve", "comment": "c" * 5001}, follow=True
    )
    assert "A comment is at most 5000 characters (5001 given)." in too_long.content.decode()
    assert not Decision.objects.exists()
    off_site = as_alice.post("/inbox/bulk/", {"action": "deny", "ids": [], "next": "//evil.example/x"})
    assert off_site["Location"] == "/inbox/"


def test_a_bulk_approval_of_a_quorum_item_is_a_vote(quorum_item, alice):
    page = client_for(alice).post("/inbox/bulk/", {"ids": [quorum_item.pk], "action": "approve"}, follow=True)
    assert "<strong>0 decided</strong>, 1 approval recorded (waiting for another approver)." in page.content.decode()
    assert InboxItem.objects.get().status == "open"


def test_the_list_offers_a_checkbox_for_each_open_item_disabled_when_it_needs_its_form_or_is_held(
    post_items, alice, bob
):
    tool = post_items(tool_approval())[0]
    held = post_items(tool_approval(5))[0]
    client_for(bob).post(f"{held.get_absolute_url()}claim/")
    form = post_items(quarterly_filing())[0]
    done = post_items(tool_approval(9))[0]
    client_for(alice).post(f"{done.get_absolute_url()}decide/", {"action": "deny"})

    page = page_of(client_for(alice), "/inbox/?tab=all")
    assert f'name="ids" value="{tool.pk}" form="bulk-form" data-bulk-select' in page
    assert f'value="{form.pk}"' not in page
    form_row = re.search(rf'data-item-id="{form.pk}".*?</tr>', page, re.S).group(0)
    assert 'title="Needs an answer from its form: open it to decide"' in form_row and "disabled" in form_row
    held_row = re.search(rf'data-item-id="{held.pk}".*?</tr>', page, re.S).group(0)
    assert 'title="Claimed by bob: only they decide it"' in held_row and 'name="ids"' not in held_row
    done_row = re.search(rf'data-item-id="{done.pk}".*?</tr>', page, re.S).group(0)
    assert "checkbox" not in done_row
    assert "data-bulk-all" in page and 'id="bulk-form"' in page
    assert 'id="bulk-form"' not in page_of(client_for(alice), "/inbox/?tab=decided")


# --- cost ------------------------------------------------------------------------------------------


def test_the_list_keeps_a_constant_query_count_for_a_page_of_fifty_on_every_tab_including_mine(
    client, alice, bob, post_items, django_assert_num_queries
):
    client.force_login(alice)
    first = post_items(
        interrupt_run("t-a", "r-a", [{"id": f"a-{n}", "reason": "confirmation", "message": "a"} for n in range(3)])
    )[0]
    first.claimed_by = alice
    first.save(update_fields=["claimed_by"])
    # session, user (with the away banner's status: inbox.teams.backends), the approver's teams and agents (read
    # once per request, the agent filter's choices with them: inbox.access), the list's own 3, and the approver's
    # saved views
    with django_assert_num_queries(7):
        client.get("/inbox/?tab=mine")

    items = post_items(
        interrupt_run(
            "t-b",
            "r-b",
            [
                {"id": f"b-{n}", "reason": ["confirmation", "input_required"][n % 2], "message": f"m {n}"}
                for n in range(80)
            ],
        )
    )
    InboxItem.objects.filter(pk__in=[item.pk for item in items[:60]]).update(claimed_by=alice)
    InboxItem.objects.filter(pk__in=[item.pk for item in items[60:]]).update(claimed_by=bob)
    Comment.objects.bulk_create([Comment(item=item, user=bob, body="hm") for item in items[:20]])
    for query in ("", "tab=mine", "tab=mine&page=2", "tab=all&sort=newest"):
        response = client.get(f"/inbox/?{query}")
        assert len(response.context["items"]) > 0, query
        with django_assert_num_queries(7):
            response = client.get(f"/inbox/?{query}")
            response.content  # noqa: B018 -- rendering included
    assert len(client.get("/inbox/?tab=mine").context["items"]) == 50


def test_leaving_the_team_hides_its_items_from_the_next_request_on(email_item, alice):
    """The approver's teams and agents are read once per request (inbox.access): never kept beyond it."""
    client = client_for(alice)
    assert "Send email" in page_of(client, "/inbox/") or email_item.message in page_of(client, "/inbox/")
    assert client.get(f"/inbox/items/{email_item.pk}/").status_code == 200
    team = alice.groups.get()
    alice.groups.remove(team)
    assert client.get(f"/inbox/items/{email_item.pk}/").status_code == 404
    assert client.get(f"/inbox/runs/{email_item.run_id}/").status_code == 404
    assert email_item.message not in page_of(client, "/inbox/?tab=all")
    alice.groups.add(team)
    assert client.get(f"/inbox/items/{email_item.pk}/").status_code == 200
