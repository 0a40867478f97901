"""Store what a closed item's outcome means (approved, approved with edits, denied, answered, cancelled,
expired), so that every screen and the API say "Denied" instead of a green "Resolved"."""

from django.db import migrations, models


def backfill_outcomes(apps, schema_editor):
    """Set-based where the status alone decides; resolved items are read in batches to classify their payload
    with the same rule the decision service uses (``inbox.models.outcome_of``)."""
    from inbox.models import outcome_of

    InboxItem = apps.get_model("inbox", "InboxItem")
    InboxItem.objects.filter(status="cancelled").update(outcome="cancelled")
    InboxItem.objects.filter(status="expired").update(outcome="expired")
    resolved = InboxItem.objects.filter(status="resolved", outcome="").order_by("pk")
    last = 0
    while True:
        batch = list(resolved.filter(pk__gt=last).values_list("pk", "response_payload")[:2000])
        if not batch:
            break
        by_outcome: dict[str, list[int]] = {}
        for pk, payload in batch:
            by_outcome.setdefault(outcome_of("resolved", payload), []).append(pk)
        for outcome, pks in by_outcome.items():
            InboxItem.objects.filter(pk__in=pks).update(outcome=outcome)
        last = batch[-1][0]


class Migration(migrations.Migration):
    dependencies = [
        ("inbox", "0008_merge_20261201_0110"),
    ]

    operations = [
        migrations.AddField(
            model_name="inboxitem",
            name="outcome",
            field=models.CharField(
                blank=True,
                choices=[
                    ("approved", "Approved"),
                    ("approved_with_edits", "Approved with edits"),
                    ("denied", "Denied"),
                    ("answered", "Answered"),
                    ("cancelled", "Cancelled"),
                    ("expired", "Expired"),
                ],
                default="",
                max_length=24,
            ),
        ),
        migrations.RunPython(backfill_outcomes, migrations.RunPython.noop),
    ]
