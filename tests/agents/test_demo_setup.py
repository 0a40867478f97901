from django.core.management import call_command

from agents.models import Agent


def test_demo_setup_creates_the_demo_agent_once_and_updates_its_endpoint(db):
    call_command("demo_setup", "--endpoint", "http://127.0.0.1:8001/")
    call_command("demo_setup", "--endpoint", "http://127.0.0.1:9001/")
    agent = Agent.objects.get(slug="demo")
    assert (agent.name, agent.endpoint_url) == ("Demo agent", "http://127.0.0.1:9001/")
    assert Agent.objects.count() == 1
    assert agent.teams.count() == 0


def test_demo_setup_audits_what_it_changes_and_nothing_when_nothing_changes(db):
    from inbox.models import AuditEvent

    for endpoint in ("http://127.0.0.1:8001/", "http://127.0.0.1:9001/", "http://127.0.0.1:9001/"):
        call_command("demo_setup", "--endpoint", endpoint)
    events = AuditEvent.objects.filter(agent__slug="demo").order_by("id")
    assert [(event.verb, event.actor_label) for event in events] == [
        ("agent.created", "demo_setup"),
        ("agent.changed", "demo_setup"),
    ]
    assert events[1].data == {
        "fields": ["endpoint_url"],
        "changes": {"endpoint_url": {"before": "http://127.0.0.1:8001/", "after": "http://127.0.0.1:9001/"}},
    }
