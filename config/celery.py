import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("inbox")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Workers and beat record heartbeats for /healthz (signal handlers and the beat scheduler).
import config.heartbeat  # noqa: E402, F401
