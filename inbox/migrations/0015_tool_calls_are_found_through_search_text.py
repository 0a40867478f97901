"""The tool-call audit trail finds items by toolCallId through ItemSearchText, a row written once at ingest and never
updated, instead of an index on the items: that index took a new entry on every change of an item's status (the
expiry sweep writes 100,000 rows at once; a decision, a claim). Existing rows get their item's tool call id."""

from django.db import migrations, models

FILL = (
    'UPDATE "inbox_itemsearchtext" SET "tool_call_id" = (SELECT item."tool_call_id" FROM "inbox_inboxitem" item '
    'WHERE item."id" = "inbox_itemsearchtext"."item_id") '
    'WHERE "item_id" IN (SELECT "id" FROM "inbox_inboxitem" WHERE "tool_call_id" <> \'\')'
)


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0002_agents_carry_a_policy_generation"),
        ("inbox", "0014_audit_log_by_verb_and_actor_newest_first"),
    ]

    operations = [
        migrations.AddField(
            model_name="itemsearchtext",
            name="tool_call_id",
            field=models.CharField(blank=True, default="", max_length=255),
        ),
        migrations.RunSQL(FILL, migrations.RunSQL.noop, elidable=False),
        migrations.AddIndex(
            model_name="itemsearchtext",
            index=models.Index(
                condition=models.Q(("tool_call_id", ""), _negated=True), fields=["tool_call_id"], name="search_tool_call"
            ),
        ),
        migrations.RemoveIndex(model_name="inboxitem", name="item_tool_call"),
    ]
