"""Runs record when their open items were announced, so the announcement is claimed once and a lost task
is picked up by beat. Runs stored before this migration were announced by the old on-commit task.

Also drops two indexes every ingest paid for and no query needs: run.thread and thread.agent each lead a
unique constraint's index already."""

import django.db.models.deletion

from django.db import migrations, models
from django.db.models import F


def mark_existing_runs_announced(apps, schema_editor) -> None:
    Run = apps.get_model("inbox", "Run")
    Run.objects.filter(notified_at__isnull=True).update(notified_at=F("created_at"))


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0001_agent_registry"),
        ("inbox", "0003_leaner_indexes_for_the_expiry_sweep"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="notified_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(mark_existing_runs_announced, migrations.RunPython.noop, elidable=True),
        migrations.AlterField(
            model_name="run",
            name="thread",
            field=models.ForeignKey(
                db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="runs", to="inbox.thread"
            ),
        ),
        migrations.AlterField(
            model_name="thread",
            name="agent",
            field=models.ForeignKey(
                db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="threads", to="agents.agent"
            ),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(
                condition=models.Q(("notified_at__isnull", True)), fields=["created_at"], name="run_unannounced"
            ),
        ),
    ]
