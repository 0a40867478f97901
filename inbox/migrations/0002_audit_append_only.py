"""AuditEvent is append-only, enforced by PostgreSQL itself: a trigger refuses DELETE, and refuses any
UPDATE except one that only sets foreign keys to NULL. That exception keeps ``on_delete=SET_NULL``
working: deleting an agent, a user or a thread nulls the references in the log, the log rows stay.

SQLite is left alone: Django's test flush empties tables with DELETE there, and SQLite is the
single-user embedded default, not where an audit trail has to hold against its own operators.
"""

from django.db import migrations

# Columns the ORM nulls out on delete of the row they point at. Everything else is frozen.
NULLABLE_FKS = ("actor_user_id", "actor_agent_id", "agent_id", "thread_id")

CREATE = """
CREATE OR REPLACE FUNCTION inbox_auditevent_append_only() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'inbox_auditevent is append-only: DELETE of audit event % refused', OLD.id;
    END IF;
    IF (to_jsonb(NEW) - ARRAY[{fks}]) IS DISTINCT FROM (to_jsonb(OLD) - ARRAY[{fks}])
       {fk_checks}
    THEN
        RAISE EXCEPTION 'inbox_auditevent is append-only: UPDATE of audit event % refused '
                        '(only nulling a reference to a deleted row is allowed)', OLD.id;
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS inbox_auditevent_append_only ON inbox_auditevent;
CREATE TRIGGER inbox_auditevent_append_only
    BEFORE UPDATE OR DELETE ON inbox_auditevent
    FOR EACH ROW EXECUTE FUNCTION inbox_auditevent_append_only();
""".format(
    fks=", ".join(f"'{column}'" for column in NULLABLE_FKS),
    fk_checks="\n       ".join(
        f"OR (NEW.{column} IS NOT NULL AND NEW.{column} IS DISTINCT FROM OLD.{column})" for column in NULLABLE_FKS
    ),
)

DROP = """
DROP TRIGGER IF EXISTS inbox_auditevent_append_only ON inbox_auditevent;
DROP FUNCTION IF EXISTS inbox_auditevent_append_only();
"""


def install(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE, params=None)


def uninstall(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP, params=None)


class Migration(migrations.Migration):
    # After the other engineer's 0002 so the graph keeps one leaf; the lead may renumber on merge.
    dependencies = [("inbox", "0002_run_requested_by")]

    operations = [migrations.RunPython(install, uninstall, elidable=False)]
