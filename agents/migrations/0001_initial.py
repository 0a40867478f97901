import datetime
import django.core.validators
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('auth', '0012_alter_user_first_name_max_length'),
    ]

    operations = [
        migrations.CreateModel(
            name='Agent',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('slug', models.SlugField(max_length=64, unique=True)),
                ('name', models.CharField(max_length=200)),
                ('endpoint_url', models.CharField(blank=True, help_text='Where resumes (RunAgentInput) are POSTed. http or https only.', max_length=500, validators=[django.core.validators.URLValidator(schemes=['http', 'https'])], verbose_name='AG-UI endpoint URL')),
                ('auth_header_name', models.CharField(blank=True, default='Authorization', help_text='Header sent with every request to the agent.', max_length=100)),
                ('auth_header_value', models.CharField(blank=True, help_text="Secret value of that header, e.g. 'Bearer …'. Empty sends none.", max_length=1000)),
                ('enabled', models.BooleanField(default=True, help_text="A disabled agent's ingest requests are refused (403).")),
                ('default_ttl', models.DurationField(default=datetime.timedelta(days=1), help_text='Expiry applied to interrupts that carry no expiresAt.')),
                ('approvals_required', models.PositiveSmallIntegerField(default=1, help_text='Distinct approvals an item needs (quorum).', validators=[django.core.validators.MinValueValidator(1)])),
                ('description', models.TextField(blank=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('teams', models.ManyToManyField(blank=True, help_text='Teams that decide its items.', related_name='agents', to='auth.group')),
            ],
            options={
                'ordering': ['name'],
            },
        ),
        migrations.CreateModel(
            name='AgentToken',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('token_hash', models.CharField(editable=False, max_length=64, unique=True)),
                ('prefix', models.CharField(editable=False, help_text='First characters, to tell tokens apart.', max_length=16)),
                ('label', models.CharField(blank=True, max_length=100)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('last_used_at', models.DateTimeField(blank=True, editable=False, null=True)),
                ('revoked_at', models.DateTimeField(blank=True, null=True)),
                ('agent', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='tokens', to='agents.agent')),
            ],
            options={
                'ordering': ['-created_at'],
            },
        ),
    ]
