"""The inbox's tables as the models describe them, and what the models cannot say (PostgreSQL only):

- the audit log is append-only: a trigger refuses DELETE, and any UPDATE except one that only sets foreign keys to
  NULL, so that ``on_delete=SET_NULL`` keeps working (deleting an agent or a user nulls the references in the log,
  the rows stay). SQLite is left alone: Django's test flush empties tables with DELETE there, and SQLite is the
  single-user embedded default, not where an audit trail has to hold against its own operators;
- text search on the list reads ``ItemSearchText.text`` through a trigram index; its expression is the one Django
  writes for ``__icontains`` (``UPPER(...) LIKE UPPER(...)``). ``pg_trgm`` ships with PostgreSQL (contrib); a role
  that may not create it gets a PostgreSQL warning and a search that scans, as on SQLite.
"""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('agents', '0001_initial'),
        ('auth', '0012_alter_user_first_name_max_length'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='InboxItem',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('position', models.PositiveIntegerField(help_text="Order within the run's interrupts[].")),
                ('interrupt_id', models.CharField(max_length=255)),
                ('reason', models.CharField(max_length=255)),
                ('message', models.TextField(blank=True)),
                ('tool_call_id', models.CharField(blank=True, max_length=255)),
                ('response_schema', models.JSONField(blank=True, null=True)),
                ('response_schema_text', models.TextField(blank=True, db_default='', default='')),
                ('expires_at', models.DateTimeField()),
                ('expires_at_defaulted', models.BooleanField(default=False)),
                ('metadata', models.JSONField(blank=True, null=True)),
                ('raw', models.JSONField(default=dict)),
                ('tool_call', models.JSONField(blank=True, null=True)),
                ('status', models.CharField(choices=[('open', 'Open'), ('resolved', 'Resolved'), ('cancelled', 'Cancelled'), ('expired', 'Expired')], default='open', max_length=16)),
                ('status_note', models.TextField(blank=True, help_text='Why the item ended as it did, when not decided.')),
                ('outcome', models.CharField(blank=True, choices=[('approved', 'Approved'), ('approved_with_edits', 'Approved with edits'), ('denied', 'Denied'), ('answered', 'Answered'), ('cancelled', 'Cancelled'), ('expired', 'Expired'), ('superseded', 'Superseded')], default='', max_length=24)),
                ('response_payload', models.JSONField(blank=True, null=True)),
                ('decided_at', models.DateTimeField(blank=True, null=True)),
                ('decision_comment', models.TextField(blank=True)),
                ('claimed_at', models.DateTimeField(blank=True, null=True)),
                ('reminder_sent_at', models.DateTimeField(blank=True, null=True)),
                ('tool_result', models.JSONField(blank=True, null=True)),
                ('tool_result_at', models.DateTimeField(blank=True, null=True)),
                ('approvals_required', models.PositiveSmallIntegerField(blank=True, null=True)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('agent', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='items', to='agents.agent')),
                ('claimed_by', models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='claimed_items', to=settings.AUTH_USER_MODEL)),
                ('decided_by', models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('routed_team', models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='routed_items', to='auth.group')),
            ],
            options={
                'ordering': ['-created_at', '-id'],
            },
        ),
        migrations.CreateModel(
            name='ApiToken',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('token_hash', models.CharField(editable=False, max_length=64, unique=True)),
                ('prefix', models.CharField(editable=False, help_text='First characters, to tell tokens apart.', max_length=16)),
                ('label', models.CharField(blank=True, max_length=100)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now, editable=False)),
                ('last_used_at', models.DateTimeField(blank=True, editable=False, null=True)),
                ('revoked_at', models.DateTimeField(blank=True, editable=False, null=True)),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='api_tokens', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'verbose_name': 'API token',
            },
        ),
        migrations.CreateModel(
            name='EscalationRule',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('step', models.PositiveSmallIntegerField(default=1, help_text='1, or 2 to go further up the chain.')),
                ('after_minutes', models.PositiveIntegerField(blank=True, help_text='Still open this long after arrival.', null=True)),
                ('before_deadline_minutes', models.PositiveIntegerField(blank=True, help_text='Still open this long before its deadline.', null=True)),
                ('enabled', models.BooleanField(default=True)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('agent', models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='escalation_rules', to='agents.agent')),
                ('created_by', models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('team', models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='escalation_rules', to='auth.group')),
                ('to_team', models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='escalations_to', to='auth.group')),
                ('to_user', models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ['team_id', 'agent_id', 'step'],
            },
        ),
        migrations.CreateModel(
            name='ItemSearchText',
            fields=[
                ('item', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='search_text', serialize=False, to='inbox.inboxitem')),
                ('text', models.TextField()),
                ('tool_call_id', models.CharField(blank=True, default='', max_length=255)),
            ],
        ),
        migrations.CreateModel(
            name='Escalation',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('step', models.PositiveSmallIntegerField()),
                ('target_label', models.CharField(max_length=200)),
                ('why', models.CharField(max_length=300)),
                ('fired_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('to_team', models.ForeignKey(blank=True, db_constraint=False, db_index=False, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='auth.group')),
                ('to_user', models.ForeignKey(blank=True, db_constraint=False, db_index=False, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('rule', models.ForeignKey(db_constraint=False, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='escalations', to='inbox.escalationrule')),
                ('item', models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='escalations', to='inbox.inboxitem')),
            ],
            options={
                'ordering': ['fired_at', 'id'],
            },
        ),
        migrations.CreateModel(
            name='DecisionLinkUse',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('token_hash', models.CharField(max_length=64, unique=True)),
                ('action', models.CharField(max_length=16)),
                ('result', models.CharField(blank=True, max_length=64)),
                ('used_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('item', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='link_uses', to='inbox.inboxitem')),
            ],
        ),
        migrations.CreateModel(
            name='Decision',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('status', models.CharField(choices=[('resolved', 'Resolved'), ('cancelled', 'Cancelled')], max_length=16)),
                ('payload', models.JSONField(blank=True, null=True)),
                ('comment', models.TextField(blank=True)),
                ('final', models.BooleanField(default=False)),
                ('counts', models.BooleanField(default=True)),
                ('created_at', models.DateTimeField(db_index=True, default=django.utils.timezone.now)),
                ('undo_until', models.DateTimeField(blank=True, null=True)),
                ('withdrawn_at', models.DateTimeField(blank=True, null=True)),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='decisions', to=settings.AUTH_USER_MODEL)),
                ('item', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='decisions', to='inbox.inboxitem')),
            ],
            options={
                'ordering': ['created_at', 'id'],
            },
        ),
        migrations.CreateModel(
            name='NotificationPreference',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('email_mode', models.CharField(choices=[('immediate', 'Email me at once'), ('digest', 'Periodic digest'), ('off', 'No email')], default='immediate', max_length=16)),
                ('digest_last_sent_at', models.DateTimeField(blank=True, null=True)),
                ('user', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='inbox_prefs', to=settings.AUTH_USER_MODEL)),
            ],
        ),
        migrations.CreateModel(
            name='Policy',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=100, unique=True)),
                ('description', models.TextField(blank=True)),
                ('position', models.PositiveIntegerField(default=100, help_text='Lower runs first.')),
                ('enabled', models.BooleanField(default=True)),
                ('reason', models.CharField(blank=True, help_text="The interrupt's reason; empty = any.", max_length=255)),
                ('tool_name', models.CharField(blank=True, help_text='For tool_call: the tool; empty = any.', max_length=255)),
                ('subject', models.CharField(choices=[('arguments', 'Tool arguments'), ('metadata', 'Interrupt metadata')], default='arguments', max_length=16)),
                ('match_schema', models.JSONField(blank=True, help_text='A JSON Schema the subject must satisfy; empty = any.', null=True)),
                ('action', models.CharField(choices=[('approve', 'Approve'), ('deny', 'Deny'), ('require_approvals', 'Require N approvals'), ('route', 'Route to a team')], max_length=32)),
                ('approvals', models.PositiveSmallIntegerField(blank=True, help_text="For 'require N approvals'.", null=True)),
                ('counts_as_approver', models.BooleanField(default=False, help_text='On an agent that needs several approvals, an approval by this policy counts as one of them. Otherwise it is recorded and the item still needs every approval from people.')),
                ('mode', models.CharField(choices=[('enforce', 'Enforce'), ('shadow', 'Shadow (record only)')], default='shadow', max_length=16)),
                ('version', models.PositiveIntegerField(default=1)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('agent', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='policies', to='agents.agent')),
                ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('route_team', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='routed_by_policies', to='auth.group')),
                ('service_user', models.OneToOneField(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='inbox_policy', to=settings.AUTH_USER_MODEL)),
                ('team', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='policies', to='auth.group')),
            ],
            options={
                'verbose_name_plural': 'policies',
                'ordering': ['position', 'pk'],
            },
        ),
        migrations.CreateModel(
            name='PolicyBacktest',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('policy_version', models.PositiveIntegerField()),
                ('draft', models.BooleanField(default=False, help_text="The form's unsaved values, not the saved version.")),
                ('rules', models.JSONField()),
                ('days', models.PositiveSmallIntegerField()),
                ('since', models.DateTimeField()),
                ('until', models.DateTimeField()),
                ('state', models.CharField(choices=[('pending', 'Queued'), ('running', 'Reading items'), ('done', 'Done'), ('failed', 'Failed')], default='pending', max_length=16)),
                ('total', models.PositiveIntegerField(default=0)),
                ('scanned', models.PositiveIntegerField(default=0)),
                ('decided', models.PositiveIntegerField(default=0)),
                ('matched', models.PositiveIntegerField(default=0)),
                ('compared', models.PositiveIntegerField(default=0)),
                ('agreed', models.PositiveIntegerField(default=0)),
                ('found_wrong', models.PositiveIntegerField(default=0)),
                ('outcomes', models.JSONField(default=dict)),
                ('error', models.TextField(blank=True)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('progress_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('attempt', models.PositiveSmallIntegerField(default=0)),
                ('policy', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='backtests', to='inbox.policy')),
                ('requested_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ['-created_at', '-pk'],
            },
        ),
        migrations.CreateModel(
            name='BacktestFinding',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('kind', models.CharField(choices=[('disagreed', 'People decided otherwise'), ('found_wrong', 'Found wrong later')], max_length=16)),
                ('item', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='inbox.inboxitem')),
                ('backtest', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='findings', to='inbox.policybacktest')),
            ],
        ),
        migrations.CreateModel(
            name='PolicyMatch',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('policy_version', models.PositiveIntegerField()),
                ('mode', models.CharField(choices=[('enforce', 'Enforce'), ('shadow', 'Shadow (record only)')], max_length=16)),
                ('action', models.CharField(choices=[('approve', 'Approve'), ('deny', 'Deny'), ('require_approvals', 'Require N approvals'), ('route', 'Route to a team')], max_length=32)),
                ('outcome', models.CharField(choices=[('decided', 'Decided the item'), ('voted', 'Counted as one approval'), ('recorded', 'Approval recorded, not counted'), ('raised', 'Raised the quorum'), ('routed', 'Routed the item'), ('shadow', 'Would have acted (shadow)'), ('refused', 'Could not act')], max_length=16)),
                ('payload', models.JSONField(blank=True, null=True)),
                ('note', models.TextField(blank=True)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('decision', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='policy_matches', to='inbox.decision')),
                ('item', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='policy_matches', to='inbox.inboxitem')),
                ('policy', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='matches', to='inbox.policy')),
            ],
            options={
                'ordering': ['-created_at', '-pk'],
            },
        ),
        migrations.CreateModel(
            name='Run',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('run_id', models.CharField(max_length=255)),
                ('parent_run_id', models.CharField(blank=True, max_length=255)),
                ('source', models.CharField(choices=[('ingest', 'Posted by the agent'), ('resume', 'Resumed by the inbox'), ('started', 'Started from the inbox')], default='ingest', max_length=16)),
                ('outcome', models.CharField(choices=[('interrupt', 'Interrupted'), ('success', 'Succeeded'), ('cancelled', 'Cancelled'), ('error', 'Failed (RUN_ERROR)')], max_length=16)),
                ('outcome_omitted', models.BooleanField(default=False)),
                ('result', models.JSONField(blank=True, null=True)),
                ('error_message', models.TextField(blank=True)),
                ('state_snapshot', models.JSONField(blank=True, null=True)),
                ('messages_snapshot', models.JSONField(blank=True, null=True)),
                ('tool_calls', models.JSONField(blank=True, default=list)),
                ('tool_results', models.JSONField(blank=True, default=list)),
                ('pending_tool_call_ids', models.JSONField(blank=True, default=list)),
                ('events', models.JSONField(blank=True, default=list)),
                ('input', models.JSONField(blank=True, null=True)),
                ('requested_by', models.CharField(blank=True, max_length=255)),
                ('content_hash', models.CharField(blank=True, max_length=64)),
                ('notified_at', models.DateTimeField(blank=True, null=True)),
                ('created_at', models.DateTimeField(db_index=True, default=django.utils.timezone.now)),
                ('agent', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='runs', to='agents.agent')),
            ],
            options={
                'ordering': ['-created_at'],
            },
        ),
        migrations.AddField(
            model_name='inboxitem',
            name='run',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='items', to='inbox.run'),
        ),
        migrations.CreateModel(
            name='ConformanceObservation',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('behaviour', models.CharField(max_length=64)),
                ('variant', models.CharField(max_length=64)),
                ('detail', models.TextField(blank=True)),
                ('evidence_run_id', models.CharField(blank=True, default='', max_length=255)),
                ('event_index', models.IntegerField(blank=True, null=True)),
                ('first_seen_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('last_seen_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('agent', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='conformance', to='agents.agent')),
                ('example_run', models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='inbox.run')),
            ],
        ),
        migrations.CreateModel(
            name='Comment',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('body', models.TextField()),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='inbox_comments', to=settings.AUTH_USER_MODEL)),
                ('item', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='comments', to='inbox.inboxitem')),
                ('run', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='comments', to='inbox.run')),
            ],
            options={
                'ordering': ['created_at', 'id'],
            },
        ),
        migrations.CreateModel(
            name='RunStart',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('thread_id', models.CharField(max_length=255)),
                ('run_input', models.JSONField()),
                ('state', models.CharField(choices=[('pending', 'Asking the agent'), ('done', 'Done'), ('failed', 'Failed')], default='pending', max_length=16)),
                ('error_status', models.PositiveSmallIntegerField(blank=True, null=True)),
                ('error_code', models.CharField(blank=True, max_length=64)),
                ('error', models.TextField(blank=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('agent', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='starts', to='agents.agent')),
                ('run', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='inbox.run')),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='run_starts', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ['-created_at', '-pk'],
            },
        ),
        migrations.CreateModel(
            name='SavedView',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=60)),
                ('query', models.CharField(blank=True, max_length=1000)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('owner', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('team', models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='saved_views', to='auth.group')),
            ],
        ),
        migrations.CreateModel(
            name='Snooze',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('until', models.DateTimeField()),
                ('clamped', models.BooleanField(default=False)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('woken_at', models.DateTimeField(blank=True, null=True)),
                ('item', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='snoozes', to='inbox.inboxitem')),
                ('user', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
        ),
        migrations.CreateModel(
            name='SSOIdentity',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('issuer', models.CharField(max_length=500)),
                ('subject', models.CharField(max_length=255)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('last_login_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='sso_identities', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'verbose_name_plural': 'SSO identities',
            },
        ),
        migrations.CreateModel(
            name='TeamClaimMapping',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('claim_value', models.CharField(help_text="A value of the groups claim, e.g. 'acme-ops'.", max_length=255)),
                ('team', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='claim_mappings', to='auth.group')),
            ],
        ),
        migrations.CreateModel(
            name='TeamWebhook',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('url', models.CharField(max_length=500)),
                ('secret', models.CharField(help_text='Signing key of the Standard Webhooks headers.', max_length=200)),
                ('enabled', models.BooleanField(default=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('team', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='inbox_webhooks', to='auth.group')),
            ],
        ),
        migrations.CreateModel(
            name='Thread',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('thread_id', models.CharField(max_length=255)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('agent', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='threads', to='agents.agent')),
            ],
        ),
        migrations.AddField(
            model_name='run',
            name='thread',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='runs', to='inbox.thread'),
        ),
        migrations.CreateModel(
            name='Resume',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('next_run_id', models.CharField(help_text="The resumed run's runId, fixed at creation.", max_length=255)),
                ('input', models.JSONField(help_text='The exact RunAgentInput sent, camelCase.')),
                ('state', models.CharField(choices=[('pending', 'Pending'), ('sending', 'Sending'), ('delivered', 'Delivered'), ('accepted', 'Delivered, result unknown'), ('failed', 'Failed'), ('expired', 'Expired')], default='pending', max_length=16)),
                ('attempts', models.PositiveIntegerField(default=0)),
                ('last_error', models.TextField(blank=True)),
                ('next_attempt_at', models.DateTimeField(blank=True, null=True)),
                ('claimed_at', models.DateTimeField(blank=True, null=True)),
                ('lease_until', models.DateTimeField(blank=True, help_text='While sending: the claim holds until then unless its worker renews it.', null=True)),
                ('last_sent_at', models.DateTimeField(blank=True, help_text='When the latest attempt that reached the send step POSTed the input.', null=True)),
                ('retry_until', models.DateTimeField(blank=True, help_text='Transport retries stop here (or at the earliest expiresAt).', null=True)),
                ('delivered_at', models.DateTimeField(blank=True, null=True)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('agent', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='resumes', to='agents.agent')),
                ('resumed_run', models.OneToOneField(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='resumed_by', to='inbox.run')),
                ('run', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='resume', to='inbox.run')),
                ('thread', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='resumes', to='inbox.thread')),
            ],
        ),
        migrations.AddField(
            model_name='inboxitem',
            name='thread',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='items', to='inbox.thread'),
        ),
        migrations.CreateModel(
            name='AuditEvent',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('actor_type', models.CharField(choices=[('user', 'User'), ('agent', 'Agent'), ('system', 'System')], max_length=16)),
                ('actor_label', models.CharField(help_text="Username, agent slug or 'system' at the time.", max_length=200)),
                ('verb', models.CharField(max_length=64)),
                ('object_type', models.CharField(max_length=32)),
                ('object_id', models.CharField(max_length=64)),
                ('data', models.JSONField(blank=True, default=dict)),
                ('created_at', models.DateTimeField(db_index=True, default=django.utils.timezone.now)),
                ('actor_agent', models.ForeignKey(blank=True, db_constraint=False, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='agents.agent')),
                ('actor_user', models.ForeignKey(blank=True, db_constraint=False, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('agent', models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='audit_events', to='agents.agent')),
                ('thread', models.ForeignKey(blank=True, db_constraint=False, db_index=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='audit_events', to='inbox.thread')),
            ],
            options={
                'ordering': ['-created_at', '-id'],
            },
        ),
        migrations.CreateModel(
            name='AwayStatus',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('starts_at', models.DateTimeField()),
                ('ends_at', models.DateTimeField()),
                ('updated_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('delegate', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('set_by', models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('user', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='inbox_away', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'verbose_name': 'away status',
                'verbose_name_plural': 'away statuses',
                'constraints': [models.CheckConstraint(condition=models.Q(('ends_at__gt', models.F('starts_at'))), name='away_ends_after_it_starts'), models.CheckConstraint(condition=models.Q(('delegate', models.F('user')), _negated=True), name='away_delegate_is_someone_else')],
            },
        ),
        migrations.AddConstraint(
            model_name='escalationrule',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('team__isnull', False), ('agent__isnull', True)), models.Q(('team__isnull', True), ('agent__isnull', False)), _connector='OR'), name='escalation_scope_is_one_of_team_or_agent'),
        ),
        migrations.AddConstraint(
            model_name='escalationrule',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('after_minutes__isnull', False), ('before_deadline_minutes__isnull', True)), models.Q(('after_minutes__isnull', True), ('before_deadline_minutes__isnull', False)), _connector='OR'), name='escalation_trigger_is_one'),
        ),
        migrations.AddConstraint(
            model_name='escalationrule',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('to_team__isnull', False), ('to_user__isnull', True)), models.Q(('to_team__isnull', True), ('to_user__isnull', False)), _connector='OR'), name='escalation_target_is_one'),
        ),
        migrations.AddConstraint(
            model_name='escalationrule',
            constraint=models.UniqueConstraint(condition=models.Q(('team__isnull', False)), fields=('team', 'step'), name='escalation_team_step'),
        ),
        migrations.AddConstraint(
            model_name='escalationrule',
            constraint=models.UniqueConstraint(condition=models.Q(('agent__isnull', False)), fields=('agent', 'step'), name='escalation_agent_step'),
        ),
        migrations.AddField(
            model_name='itemsearchtext',
            name='agent',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='agents.agent'),
        ),
        migrations.AddIndex(
            model_name='escalation',
            index=models.Index(condition=models.Q(('to_team__isnull', False)), fields=['to_team', 'item'], name='escalation_to_team'),
        ),
        migrations.AddIndex(
            model_name='escalation',
            index=models.Index(condition=models.Q(('to_user__isnull', False)), fields=['to_user', 'item'], name='escalation_to_user'),
        ),
        migrations.AddConstraint(
            model_name='escalation',
            constraint=models.UniqueConstraint(fields=('item', 'rule'), name='escalation_once_per_item_and_rule'),
        ),
        migrations.AddConstraint(
            model_name='policy',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('agent__isnull', False), ('team__isnull', True)), models.Q(('agent__isnull', True), ('team__isnull', False)), _connector='OR'), name='policy_scope_is_one_of_agent_or_team'),
        ),
        migrations.AddIndex(
            model_name='policybacktest',
            index=models.Index(fields=['policy', '-created_at'], name='backtest_policy_newest'),
        ),
        migrations.AddIndex(
            model_name='backtestfinding',
            index=models.Index(fields=['backtest', 'kind', 'item'], name='finding_backtest_kind'),
        ),
        migrations.AddIndex(
            model_name='policymatch',
            index=models.Index(fields=['policy', 'mode'], name='policymatch_policy_mode'),
        ),
        migrations.AddConstraint(
            model_name='conformanceobservation',
            constraint=models.UniqueConstraint(fields=('agent', 'behaviour', 'variant'), name='conformance_unique_variant'),
        ),
        migrations.AddIndex(
            model_name='savedview',
            index=models.Index(condition=models.Q(('team__isnull', False)), fields=['team'], name='saved_view_team'),
        ),
        migrations.AddConstraint(
            model_name='savedview',
            constraint=models.UniqueConstraint(fields=('owner', 'name'), name='saved_view_name_per_owner'),
        ),
        migrations.AddIndex(
            model_name='snooze',
            index=models.Index(condition=models.Q(('woken_at__isnull', True)), fields=['until'], name='snooze_due'),
        ),
        migrations.AddIndex(
            model_name='snooze',
            index=models.Index(fields=['item'], name='snooze_item'),
        ),
        migrations.AddConstraint(
            model_name='snooze',
            constraint=models.UniqueConstraint(fields=('user', 'item'), name='snooze_one_per_person'),
        ),
        migrations.AddConstraint(
            model_name='ssoidentity',
            constraint=models.UniqueConstraint(fields=('issuer', 'subject'), name='sso_identity_unique'),
        ),
        migrations.AddConstraint(
            model_name='teamclaimmapping',
            constraint=models.UniqueConstraint(fields=('team', 'claim_value'), name='team_claim_unique'),
        ),
        migrations.AddIndex(
            model_name='thread',
            index=models.Index(fields=['thread_id'], name='thread_by_thread_id'),
        ),
        migrations.AddConstraint(
            model_name='thread',
            constraint=models.UniqueConstraint(fields=('agent', 'thread_id'), name='thread_unique_per_agent'),
        ),
        migrations.AddIndex(
            model_name='run',
            index=models.Index(condition=models.Q(('notified_at__isnull', True)), fields=['created_at'], name='run_unannounced'),
        ),
        migrations.AddConstraint(
            model_name='run',
            constraint=models.UniqueConstraint(fields=('thread', 'run_id'), name='run_unique_per_thread'),
        ),
        migrations.AddIndex(
            model_name='resume',
            index=models.Index(fields=['state', 'lease_until'], name='resume_state_lease'),
        ),
        migrations.AddIndex(
            model_name='resume',
            index=models.Index(fields=['state', 'next_attempt_at'], name='resume_state_next_attempt'),
        ),
        migrations.AddIndex(
            model_name='inboxitem',
            index=models.Index(condition=models.Q(('status', 'open')), fields=['expires_at', 'id', 'agent', 'routed_team'], name='item_open_expires'),
        ),
        migrations.AddIndex(
            model_name='inboxitem',
            index=models.Index(condition=models.Q(('status', 'open')), fields=['id', 'agent', 'routed_team'], name='item_open_newest'),
        ),
        migrations.AddIndex(
            model_name='inboxitem',
            index=models.Index(condition=models.Q(('status__in', ['resolved', 'cancelled'])), fields=['id', 'agent', 'routed_team'], name='item_decided_newest'),
        ),
        migrations.AddIndex(
            model_name='inboxitem',
            index=models.Index(condition=models.Q(('status', 'expired')), fields=['id', 'agent', 'routed_team'], name='item_expired_newest'),
        ),
        migrations.AddIndex(
            model_name='inboxitem',
            index=models.Index(fields=['id', 'agent', 'routed_team'], name='item_newest'),
        ),
        migrations.AddIndex(
            model_name='inboxitem',
            index=models.Index(fields=['agent', 'id', 'routed_team'], name='item_agent_newest'),
        ),
        migrations.AddIndex(
            model_name='inboxitem',
            index=models.Index(condition=models.Q(('status', 'open')), fields=['reason', 'agent', 'routed_team', 'id'], name='item_open_reason'),
        ),
        migrations.AddIndex(
            model_name='inboxitem',
            index=models.Index(fields=['reason', 'status', 'agent', 'routed_team', 'id'], name='item_reason_status'),
        ),
        migrations.AddIndex(
            model_name='inboxitem',
            index=models.Index(condition=models.Q(('status__in', ['resolved', 'cancelled'])), fields=['expires_at'], name='item_decided_expires'),
        ),
        migrations.AddIndex(
            model_name='inboxitem',
            index=models.Index(fields=['agent', 'status', 'expires_at'], name='item_agent_status_expires'),
        ),
        migrations.AddIndex(
            model_name='inboxitem',
            index=models.Index(condition=models.Q(('decided_by__isnull', False)), fields=['decided_by'], name='item_decided_by'),
        ),
        migrations.AddIndex(
            model_name='inboxitem',
            index=models.Index(condition=models.Q(('claimed_by__isnull', False)), fields=['claimed_by'], name='item_claimed_by'),
        ),
        migrations.AddConstraint(
            model_name='inboxitem',
            constraint=models.UniqueConstraint(fields=('run', 'interrupt_id'), name='item_unique_per_run'),
        ),
        migrations.AddIndex(
            model_name='auditevent',
            index=models.Index(fields=['object_type', 'object_id'], name='audit_object'),
        ),
        migrations.AddIndex(
            model_name='auditevent',
            index=models.Index(fields=['verb', 'created_at', 'id'], name='audit_verb_newest'),
        ),
        migrations.AddIndex(
            model_name='auditevent',
            index=models.Index(condition=models.Q(('actor_user__isnull', False)), fields=['actor_user', 'created_at', 'id'], name='audit_actor_user_newest'),
        ),
        migrations.AddIndex(
            model_name='auditevent',
            index=models.Index(condition=models.Q(('actor_agent__isnull', False)), fields=['actor_agent', 'created_at', 'id'], name='audit_actor_agent_newest'),
        ),
        migrations.AddIndex(
            model_name='itemsearchtext',
            index=models.Index(condition=models.Q(('tool_call_id', ''), _negated=True), fields=['tool_call_id'], name='search_tool_call'),
        ),
    ]


class PostgreSQLOnly(migrations.RunSQL):
    """``RunSQL`` that runs on PostgreSQL and does nothing elsewhere."""

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            super().database_forwards(app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            super().database_backwards(app_label, schema_editor, from_state, to_state)


# The references an UPDATE may set to NULL (on_delete=SET_NULL does, when the row they point at goes); the rest is
# frozen.
NULLABLE_FKS = ("actor_user_id", "actor_agent_id", "agent_id", "thread_id")

AUDIT_APPEND_ONLY = [
    """
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
$$ LANGUAGE plpgsql
""".format(
        fks=", ".join(f"'{column}'" for column in NULLABLE_FKS),
        fk_checks="\n       ".join(
            f"OR (NEW.{column} IS NOT NULL AND NEW.{column} IS DISTINCT FROM OLD.{column})" for column in NULLABLE_FKS
        ),
    ),
    """
CREATE TRIGGER inbox_auditevent_append_only
    BEFORE UPDATE OR DELETE ON inbox_auditevent
    FOR EACH ROW EXECUTE FUNCTION inbox_auditevent_append_only()
""",
]

AUDIT_APPEND_ONLY_REVERSE = [
    "DROP TRIGGER IF EXISTS inbox_auditevent_append_only ON inbox_auditevent",
    "DROP FUNCTION IF EXISTS inbox_auditevent_append_only()",
]

SEARCH_TRIGRAMS = """
DO $$
BEGIN
    BEGIN
        CREATE EXTENSION IF NOT EXISTS pg_trgm;
    EXCEPTION WHEN OTHERS THEN
        RAISE WARNING 'pg_trgm unavailable (%); the inbox''s text search will scan', SQLERRM;
        RETURN;
    END;
    CREATE INDEX IF NOT EXISTS "item_search_trgm" ON "inbox_itemsearchtext" USING gin (UPPER("text") gin_trgm_ops);
END;
$$
"""

SEARCH_TRIGRAMS_REVERSE = 'DROP INDEX IF EXISTS "item_search_trgm"'

Migration.operations += [
    PostgreSQLOnly(AUDIT_APPEND_ONLY, AUDIT_APPEND_ONLY_REVERSE),
    PostgreSQLOnly(SEARCH_TRIGRAMS, SEARCH_TRIGRAMS_REVERSE),
]
