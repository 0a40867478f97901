"""Settings for Approval Inbox: one module, every knob read through config.env.

Nothing set gives the embedded default (SQLite and an embedded Redis under ``var/``). Production sets
``DATABASE_URL``, ``REDIS_URL``, ``SECRET_KEY``, ``ALLOWED_HOSTS`` and ``DEBUG=0``.
"""

from __future__ import annotations

import hashlib
import ipaddress
import secrets
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import dj_database_url
from kombu import Exchange, Queue

from config import embedded_redis, queues
from config.env import ImproperEnv, env_bool, env_float, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
# Importing this module has no side effects: the `config` app's ready hook (config/apps.py) creates VAR_DIR
# and starts the embedded Redis; the launcher (`make run`) writes the secret-key file.
VAR_DIR = Path(env_str("INBOX_VAR_DIR", str(BASE_DIR / "var")))
SECRET_KEY_FILE = VAR_DIR / "secret_key"


def _secret_key() -> str:
    key = env_str("SECRET_KEY")
    if key:
        return key
    # `make run` writes a key once into VAR_DIR (so sessions survive restarts and its processes agree); a
    # process started without it and without SECRET_KEY gets a key of its own, valid until it exits.
    try:
        return SECRET_KEY_FILE.read_text().strip() or secrets.token_urlsafe(50)
    except FileNotFoundError:
        return secrets.token_urlsafe(50)


SECRET_KEY = _secret_key()
DEBUG = env_bool("DEBUG", False)  # off under `make run` too; `DEBUG=1 make run` while developing
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
SITE_URL = env_str("SITE_URL", f"http://127.0.0.1:{env_int('PORT', 8000)}")

INSTALLED_APPS = [
    "config.apps.RuntimeConfig",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "django_jsonform",
    "channels",
    "agents",
    "inbox",
]
# Each app's migrations stay one line: django-linear-migrations (a development tool, requirements-dev.txt) fails
# the system checks (`makemigrations --check` in `make lint`) when an app has two leaf migrations or when its
# max_migration.txt does not name its latest one; its makemigrations writes that file.
if find_spec("django_linear_migrations"):
    INSTALLED_APPS.append("django_linear_migrations")

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "inbox.access.RememberPerRequest",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
    # The inbox list's rows only (config/jinja_env.py says why): rendered by name through this engine.
    {
        "BACKEND": "django.template.backends.jinja2.Jinja2",
        "NAME": "jinja2",
        "DIRS": [BASE_DIR / "templates" / "jinja2"],
        "APP_DIRS": False,
        "OPTIONS": {"environment": "config.jinja_env.environment"},
    },
]

# --- Database ---------------------------------------------------------------------------------
DATABASE_URL = env_str("DATABASE_URL")
if DATABASE_URL:
    # No persistent connections by default: under ASGI each request runs on a thread of its own, and a
    # connection kept per thread piles up until PostgreSQL refuses new clients (seen in bench/ingest.py).
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 0))}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(VAR_DIR / "db.sqlite3"),
            "OPTIONS": {
                # Writers take the lock when the transaction starts, so two concurrent writers queue
                # behind each other instead of one failing with "database is locked" mid-way.
                "transaction_mode": "IMMEDIATE",
                "timeout": 20,
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
            # A file, not :memory:, so a Celery worker or live server in another process sees it.
            "TEST": {"NAME": str(VAR_DIR / "test.sqlite3")},
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis: Celery broker and channel layer ---------------------------------------------------
REDIS_URL = env_str("REDIS_URL")
EMBEDDED_REDIS = not REDIS_URL
if EMBEDDED_REDIS:
    # Only its address: it is started by the `config` app's ready hook or by the launcher.
    REDIS_URL = embedded_redis.redis_url(VAR_DIR)


# kombu's Redis transport, with unacknowledged messages restored safely after a lost connection (config/broker.py).
CELERY_BROKER_TRANSPORT = "config.broker:Transport"


def _celery_broker_url(url: str) -> str:
    # kombu spells a unix-socket Redis <transport>+socket://; "inbox-redis" is config.broker's transport
    return "inbox-redis+socket://" + url.removeprefix("unix://") if url.startswith("unix://") else url


CELERY_BROKER_URL = _celery_broker_url(REDIS_URL)
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Celery's Django fixup closes a worker's database connections after every task unless this many tasks have not yet
# run on them; config.celery closes them the way Django does around a request instead (CONN_MAX_AGE, health checks).
CELERY_DB_REUSE_MAX = 1000
# `make test` runs the suite on several pytest-xdist processes sharing one Redis: each gets its own Celery queue,
# channel-layer prefix and throttle keys (and the workers and servers it starts inherit them), so one process's
# purge or throttle reset never touches another's.
_TEST_PROCESS = "-" + env_str("PYTEST_XDIST_WORKER") if env_str("PYTEST_XDIST_WORKER") else ""
CHANNELS_PREFIX = env_str("CHANNELS_PREFIX", "inbox") + _TEST_PROCESS
CELERY_QUEUE_PREFIX = queues.prefix()  # CELERY_QUEUE, and the test process as above
# Tasks go to a queue by urgency (docs/operations.md): a deadline never waits behind a backlog of resumes, e-mails or a
# backtest. Redis serves a worker's queues in turn (kombu rotates them), never in -Q order: only a worker of its own
# keeps the deadlines queue on time, and `make run` starts one (config/launcher.py). The default queue takes any task
# not named here.
CELERY_TASK_DEFAULT_QUEUE = CELERY_QUEUE_PREFIX
INBOX_QUEUES = {kind: queues.name(kind) for kind in queues.KINDS}
# A worker started without -Q consumes every queue.
CELERY_TASK_QUEUES = [
    Queue(name, Exchange(name, type="direct"), routing_key=name)
    for name in [CELERY_QUEUE_PREFIX, *INBOX_QUEUES.values()]
]
_ROUTED = {
    "deadlines": [
        "inbox.tasks.expire_stale_items",
        "inbox.notifications.escalate",
        "inbox.tasks.wake_snoozed_items",
        "inbox.tasks.send_expiry_reminders",
        "inbox.tasks.requeue_stuck_resumes",
        "inbox.tasks.requeue_stalled_backtests",
    ],
    "resumes": ["inbox.tasks.dispatch_resume", "inbox.tasks.start_run"],
    "notifications": [
        "inbox.notifications.announce_new_runs",
        "inbox.notifications.notify_missed_runs",
        "inbox.notifications.deliver_webhook",
        "inbox.notifications.notify_superseded",
        "inbox.notifications.send_notices",
        "inbox.notifications.sweep_notices",
    ],
    "batch": [
        "inbox.tasks.backtest_policy",
        "inbox.notifications.send_digests",
        "inbox.tasks.seal_audit_log",
        "inbox.tasks.purge_audit_log",
    ],
}
CELERY_TASK_ROUTES: dict[str, dict[str, str]] = {
    name: {"queue": INBOX_QUEUES[kind]} for kind, names in _ROUTED.items() for name in names
}
# Any other notification task (by its name's prefix) is a notification too.
CELERY_TASK_ROUTES["inbox.notifications.*"] = {"queue": INBOX_QUEUES["notifications"]}
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")

CHANNEL_LAYERS: dict[str, dict[str, Any]] = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {"hosts": [REDIS_URL], "prefix": CHANNELS_PREFIX},
    }
}

# --- Auth, API --------------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/inbox/"
LOGOUT_REDIRECT_URL = "login"

REST_FRAMEWORK = {
    # The token class first: DRF answers a failed authentication 401 with its WWW-Authenticate (the first class's
    # header; the session class has none, which made it a 403). A request without a token falls through to the
    # session, CSRF and all.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "inbox.api_tokens.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "inbox.core.errors.exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Approval Inbox API",
    "DESCRIPTION": "Where AG-UI agents park their interrupts and people decide them.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # Deep links put an <a> inside each operation's toggle button (axe: nested-interactive).
    "SWAGGER_UI_SETTINGS": {"deepLinking": False},
}

# --- Static, i18n -----------------------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"  # created by the `config` app's ready hook (collectstatic fills it)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

# Serve static files straight from the app folders (no collectstatic step needed for `make run` or tests).
WHITENOISE_USE_FINDERS = env_bool("WHITENOISE_USE_FINDERS", True)
WHITENOISE_AUTOREFRESH = DEBUG

# By default nothing is sent: each e-mail is written to a file under EMAIL_FILE_PATH, with one line in the
# sending process's output (config/devmail.py). Production names a real backend (docs/configuration.md).
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "config.devmail.EmailBackend")
EMAIL_FILE_PATH = env_str("EMAIL_FILE_PATH", str(VAR_DIR / "mail"))
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "inbox@localhost")
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
# A mail server that accepts the connection and then says nothing must not hold a notice's lease for ever.
EMAIL_TIMEOUT = env_float("EMAIL_TIMEOUT", 10.0)

# --- The product's own knobs ------------------------------------------------------------------
INBOX_INGEST_MAX_BYTES = env_int("INBOX_INGEST_MAX_BYTES", 1024 * 1024)
INBOX_MAX_INTERRUPTS_PER_RUN = env_int("INBOX_MAX_INTERRUPTS_PER_RUN", 100)
INBOX_EXPIRE_SWEEP_SECONDS = env_float("INBOX_EXPIRE_SWEEP_SECONDS", 2.0)
INBOX_REMINDER_LEAD_SECONDS = env_int("INBOX_REMINDER_LEAD_SECONDS", 600)
# How often beat fires the escalation rules that are due and hands away people's items to their delegates.
INBOX_ESCALATION_SWEEP_SECONDS = env_float("INBOX_ESCALATION_SWEEP_SECONDS", 2.0)
INBOX_RESUME_BACKOFF_BASE = env_float("INBOX_RESUME_BACKOFF_BASE", 2.0)
INBOX_RESUME_BACKOFF_CAP = env_float("INBOX_RESUME_BACKOFF_CAP", 300.0)
INBOX_AGENT_CONNECT_TIMEOUT = env_float("INBOX_AGENT_CONNECT_TIMEOUT", 5.0)
INBOX_AGENT_READ_TIMEOUT = env_float("INBOX_AGENT_READ_TIMEOUT", 60.0)
# Runs started from the inbox that are still asking their agent, at most: per person, and per agent started on.
# One more is refused with 429 and Retry-After (these seconds).
INBOX_STARTS_IN_FLIGHT_PER_USER = env_int("INBOX_STARTS_IN_FLIGHT_PER_USER", 5)
INBOX_STARTS_IN_FLIGHT_PER_AGENT = env_int("INBOX_STARTS_IN_FLIGHT_PER_AGENT", 20)
INBOX_START_RETRY_AFTER_SECONDS = env_int("INBOX_START_RETRY_AFTER_SECONDS", 5)
INBOX_WEBHOOK_BACKOFF_BASE = env_float("INBOX_WEBHOOK_BACKOFF_BASE", 2.0)
INBOX_WEBHOOK_BACKOFF_CAP = env_float("INBOX_WEBHOOK_BACKOFF_CAP", 300.0)
INBOX_WEBHOOK_TIMEOUT = env_float("INBOX_WEBHOOK_TIMEOUT", 10.0)
INBOX_DIGEST_SECONDS = env_float("INBOX_DIGEST_SECONDS", 3600.0)
# Notices (e-mails and webhook calls, inbox.teams.outbox): a claimed row's lease (longer than one send: the webhook
# and mail timeouts), its retries with capped, jittered backoff until the retry window closes, the grace after which
# a due row whose queue message was lost is queued again, and how long a channel fails before /healthz is degraded.
INBOX_NOTICE_LEASE_SECONDS = env_float("INBOX_NOTICE_LEASE_SECONDS", 60.0)
INBOX_NOTICE_RETRY_WINDOW_SECONDS = env_float("INBOX_NOTICE_RETRY_WINDOW_SECONDS", 6 * 3600.0)
INBOX_NOTICE_BACKOFF_BASE = env_float("INBOX_NOTICE_BACKOFF_BASE", INBOX_WEBHOOK_BACKOFF_BASE)
INBOX_NOTICE_BACKOFF_CAP = env_float("INBOX_NOTICE_BACKOFF_CAP", INBOX_WEBHOOK_BACKOFF_CAP)
INBOX_NOTICE_REQUEUE_GRACE_SECONDS = env_float("INBOX_NOTICE_REQUEUE_GRACE_SECONDS", 10.0)
INBOX_NOTICE_FAILING_DEGRADED_SECONDS = env_float("INBOX_NOTICE_FAILING_DEGRADED_SECONDS", 300.0)
# New runs are announced together, by one task this long after the first of them is stored (a burst of runs is
# one e-mail per person and agent).
INBOX_ANNOUNCE_DELAY_SECONDS = env_float("INBOX_ANNOUNCE_DELAY_SECONDS", 1.0)
# A run still unannounced this long after it was stored lost its notification task; beat announces it.
INBOX_ANNOUNCE_GRACE_SECONDS = env_float("INBOX_ANNOUNCE_GRACE_SECONDS", 15.0)
# An agent's conformance observation that a web process wrote less than this long ago is not written again by
# it (inbox.conformance.recorder.save): "last seen" and its example run are up to this far behind.
INBOX_CONFORMANCE_REFRESH_SECONDS = env_float("INBOX_CONFORMANCE_REFRESH_SECONDS", 60.0)

# --- Reliability: leases, bounded agent replies, retries, recovery, health (rel) ---
# A resume being sent holds a lease its worker renews every RENEW seconds; beat requeues only expired leases.
INBOX_RESUME_LEASE_SECONDS = env_float("INBOX_RESUME_LEASE_SECONDS", 15.0)
INBOX_RESUME_LEASE_RENEW_SECONDS = env_float("INBOX_RESUME_LEASE_RENEW_SECONDS", 5.0)
# Transport retries go on (capped backoff) for this long, or until the run's earliest expiresAt.
INBOX_RESUME_RETRY_WINDOW_SECONDS = env_float("INBOX_RESUME_RETRY_WINDOW_SECONDS", 3600.0)
# A resume is not sent when an interrupt expires within this margin of the send (transfer time).
INBOX_RESUME_EXPIRY_MARGIN_SECONDS = env_float("INBOX_RESUME_EXPIRY_MARGIN_SECONDS", 2.0)
# A decision is refused (409) when its run's first expiresAt is closer than this: the time the resume needs to be
# queued, claimed and sent with the margin above. Never less than INBOX_RESUME_EXPIRY_MARGIN_SECONDS.
INBOX_DECISION_SEND_MARGIN_SECONDS = env_float("INBOX_DECISION_SEND_MARGIN_SECONDS", 10.0)
# A person may undo a decision for this long (the resume waits for it); 0 turns undo off. The window is shortened
# so that the resume still leaves DECISION_SEND_MARGIN before the run's first expiresAt.
INBOX_UNDO_SECONDS = env_float("INBOX_UNDO_SECONDS", 10.0)
# How often beat requeues expired leases, pending resumes and unannounced runs whose queue message was lost.
INBOX_RECOVERY_SWEEP_SECONDS = env_float("INBOX_RECOVERY_SWEEP_SECONDS", 5.0)
# A queued or running policy backtest without progress for this long lost its worker or its queue message: the
# recovery sweep queues it again (inbox/policies/backtest.py). Reading one chunk of items takes well under it.
INBOX_BACKTEST_STALL_SECONDS = env_float("INBOX_BACKTEST_STALL_SECONDS", 300.0)
# A pending resume this overdue whose message is no longer in the broker (inbox.core.queue) is queued again.
INBOX_RESUME_REQUEUE_GRACE_SECONDS = env_float("INBOX_RESUME_REQUEUE_GRACE_SECONDS", 10.0)
# How long the broker-side mark of a queued message lives if no worker receives it (inbox.core.queue): a message
# waiting longer than this is taken for lost and its row queued again once.
INBOX_QUEUE_MARK_SECONDS = env_float("INBOX_QUEUE_MARK_SECONDS", 3600.0)
# /healthz calls a queue degraded when its oldest message has waited longer than this (config/health.py).
INBOX_QUEUE_DEGRADED_SECONDS = env_float("INBOX_QUEUE_DEGRADED_SECONDS", 60.0)
# What the inbox reads from an agent (resumes, inbox-started runs): an overall deadline and byte caps.
INBOX_AGENT_STREAM_DEADLINE = env_float("INBOX_AGENT_STREAM_DEADLINE", 120.0)
INBOX_AGENT_REPLY_MAX_BYTES = env_int("INBOX_AGENT_REPLY_MAX_BYTES", 20 * 1024 * 1024)
INBOX_AGENT_LINE_MAX_BYTES = env_int("INBOX_AGENT_LINE_MAX_BYTES", 4 * 1024 * 1024)
INBOX_AGENT_REPLY_MAX_EVENTS = env_int("INBOX_AGENT_REPLY_MAX_EVENTS", 20_000)
# Workers and beat record a heartbeat this often; /healthz calls one missing for 3 periods down.
INBOX_HEARTBEAT_SECONDS = env_float("INBOX_HEARTBEAT_SECONDS", 5.0)
# How many workers /healthz expects (fewer alive: degraded). 0: every worker heard from within the window below
# (a worker that stops cleanly removes its heartbeat; one that dies is missed until the window has passed).
INBOX_EXPECTED_WORKERS = env_int("INBOX_EXPECTED_WORKERS", 0)
INBOX_WORKER_EXPECTED_WINDOW_SECONDS = env_float("INBOX_WORKER_EXPECTED_WINDOW_SECONDS", 600.0)
# /healthz waits at most this long for a database connection (the web processes' pool waits DB_POOL_TIMEOUT).
INBOX_HEALTH_DATABASE_TIMEOUT = env_float("INBOX_HEALTH_DATABASE_TIMEOUT", 0.8)
# Beat records its heartbeat from its scheduler's tick (config/heartbeat.py); workers from a thread.
CELERY_BEAT_SCHEDULER = "config.heartbeat:HeartbeatScheduler"
# Retry-After of the 503 answered while the database or Redis is unreachable.
INBOX_UNAVAILABLE_RETRY_AFTER = env_int("INBOX_UNAVAILABLE_RETRY_AFTER", 5)
# Innermost, so it sees a view's exception first: a database or Redis outage answers 503, not 500.
MIDDLEWARE.append("config.unavailable.DependencyDownMiddleware")
# Before anything reads the session or the user: during a database outage pages answer 503 at once.
MIDDLEWARE.insert(
    MIDDLEWARE.index("whitenoise.middleware.WhiteNoiseMiddleware") + 1, "config.unavailable.DatabaseOutageMiddleware"
)
SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"] = [
    "drf_spectacular.hooks.postprocess_schema_enums",
    "config.unavailable.document_503",
]

CELERY_BEAT_SCHEDULE: dict[str, dict[str, Any]] = {
    "expire-stale-items": {"task": "inbox.tasks.expire_stale_items", "schedule": INBOX_EXPIRE_SWEEP_SECONDS},
    "requeue-stuck-resumes": {"task": "inbox.tasks.requeue_stuck_resumes", "schedule": INBOX_RECOVERY_SWEEP_SECONDS},
    "send-expiry-reminders": {"task": "inbox.tasks.send_expiry_reminders", "schedule": 30.0},
    "wake-snoozed-items": {"task": "inbox.tasks.wake_snoozed_items", "schedule": 30.0},
    "send-digests": {"task": "inbox.notifications.send_digests", "schedule": INBOX_DIGEST_SECONDS},
    "notify-missed-runs": {"task": "inbox.notifications.notify_missed_runs", "schedule": INBOX_RECOVERY_SWEEP_SECONDS},
    "sweep-notices": {"task": "inbox.notifications.sweep_notices", "schedule": INBOX_RECOVERY_SWEEP_SECONDS},
    "requeue-stalled-backtests": {
        "task": "inbox.tasks.requeue_stalled_backtests",
        "schedule": INBOX_RECOVERY_SWEEP_SECONDS,
    },
    "escalate-open-items": {"task": "inbox.notifications.escalate", "schedule": INBOX_ESCALATION_SWEEP_SECONDS},
}

LOGGING: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"quiet_probes": {"()": "config.logfilters.QuietProbes"}},  # no line per /healthz 503
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "INFO"},
        "httpx": {"level": "WARNING"},
        "django.request": {"filters": ["quiet_probes"]},
    },
}

# --- Security hardening (sec) ---------------------------------------------------------------------
# What people and agents may send, and how much work checking it may take (docs/security.md).
INBOX_DECISION_MAX_BYTES = env_int("INBOX_DECISION_MAX_BYTES", 256 * 1024)
INBOX_VALIDATION_MAX_STEPS = env_int("INBOX_VALIDATION_MAX_STEPS", 200_000)
INBOX_VALIDATION_MAX_SECONDS = env_float("INBOX_VALIDATION_MAX_SECONDS", 2.0)
# Every request body, any endpoint: refused by config.body_limit before Django reads it.
INBOX_REQUEST_MAX_BYTES = env_int("INBOX_REQUEST_MAX_BYTES", max(INBOX_INGEST_MAX_BYTES, 2 * 1024 * 1024))
DATA_UPLOAD_MAX_MEMORY_SIZE = INBOX_REQUEST_MAX_BYTES
# A decision link (e-mail, webhook) works at most this many days after it was made (inbox/decisions/links.py).
INBOX_DECISION_LINK_MAX_AGE_DAYS = env_float("INBOX_DECISION_LINK_MAX_AGE_DAYS", 7.0)
# Seconds from a request's start within which its whole body must arrive (config.body_limit), else 408.
INBOX_REQUEST_BODY_TIMEOUT = env_float("INBOX_REQUEST_BODY_TIMEOUT", 30.0)

# Production transport: set these behind TLS (docs/operations.md); `check --deploy` is then clean.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", False)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", False)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
_PROXY_SSL_HEADER = env_str("SECURE_PROXY_SSL_HEADER")  # e.g. "X-Forwarded-Proto": trust it saying "https"
if _PROXY_SSL_HEADER:
    SECURE_PROXY_SSL_HEADER = ("HTTP_" + _PROXY_SSL_HEADER.upper().replace("-", "_"), "https")
# The ingest and the health check are called by machines over whatever scheme the proxy passes on.
SECURE_REDIRECT_EXEMPT = [r"^healthz"]

# Login brute force: django-axes locks a username from an IP address after this many failures.
INSTALLED_APPS += ["axes", "drf_spectacular_sidecar"]
MIDDLEWARE += ["axes.middleware.AxesMiddleware"]
MIDDLEWARE.insert(
    MIDDLEWARE.index("django.middleware.common.CommonMiddleware") + 1, "inbox.core.middleware.RejectUnstorableText"
)
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "inbox.teams.backends.PasswordBackend",
]
AXES_FAILURE_LIMIT = env_int("INBOX_LOGIN_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = env_float("INBOX_LOGIN_COOLOFF_MINUTES", 15.0) / 60  # hours
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False
LOGGING["loggers"]["axes"] = {"level": "WARNING"}
# The client's address (lockout, throttles): the socket's, unless a setting names the reverse proxies in front
# (agents/addresses.py). uvicorn is started with --no-proxy-headers so it never rewrites the socket's address.
INBOX_TRUSTED_PROXY_COUNT = env_int("INBOX_TRUSTED_PROXY_COUNT", 0)
INBOX_TRUSTED_PROXIES = env_list("INBOX_TRUSTED_PROXIES", [])  # networks, e.g. "10.0.0.0/8,192.168.1.5"
AXES_CLIENT_IP_CALLABLE = "agents.addresses.client_address"
# Agent endpoints on non-public addresses are refused (agents/endpoints.py) unless in one of these networks. The
# embedded default (make run: the demo agent on 127.0.0.1) allows loopback; with DATABASE_URL, none by default.
INBOX_AGENT_ALLOWED_NETWORKS = env_list(
    "INBOX_AGENT_ALLOWED_NETWORKS", [] if DATABASE_URL else ["127.0.0.0/8", "::1/128"]
)
for _network in INBOX_TRUSTED_PROXIES + INBOX_AGENT_ALLOWED_NETWORKS:
    try:
        ipaddress.ip_network(_network, strict=False)
    except ValueError:
        raise ImproperEnv(
            f"{_network!r} (INBOX_TRUSTED_PROXIES, INBOX_AGENT_ALLOWED_NETWORKS) is not an IP network"
        ) from None
REST_FRAMEWORK["NUM_PROXIES"] = INBOX_TRUSTED_PROXY_COUNT

# API throttles (rates as DRF writes them: "30/min"); counted in the cache below.
INBOX_FAILED_AUTH_RATE = env_str("INBOX_FAILED_AUTH_RATE", "30/min")  # failed token logins per client IP
INBOX_INGEST_RATE = env_str("INBOX_INGEST_RATE", "6000/min")  # POST /api/v1/runs per agent
REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] = {"failed_auth": INBOX_FAILED_AUTH_RATE, "ingest": INBOX_INGEST_RATE}
# The API reads JSON only: a form body is 415 (the pages, not the API, take forms).
REST_FRAMEWORK["DEFAULT_PARSER_CLASSES"] = ["inbox.api.json_body.SafeJSONParser"]
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    # Shared by every process (Redis): the API throttles' counters, so a limit holds however many web processes
    # there are, and the mark of an announcement queued and not yet started (inbox.teams.notifications).
    "shared": {
        "BACKEND": "config.redis_cache.ProcessRedisCache",  # one pool per process, not a connection per request
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": CHANNELS_PREFIX + "-shared",
    },
}

# API docs: Swagger UI served from the project (drf-spectacular-sidecar), never from a CDN.
SPECTACULAR_SETTINGS.update(
    {
        "SWAGGER_UI_DIST": "SIDECAR",
        "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
        "REDOC_DIST": "SIDECAR",
    }
)

# --- Single sign-on: OpenID Connect (pol) ---
# SSO is on when OIDC_ISSUER is set; the provider's endpoints come from its discovery document.
OIDC_ISSUER = env_str("OIDC_ISSUER")
OIDC_RP_CLIENT_ID = env_str("OIDC_CLIENT_ID")
OIDC_RP_CLIENT_SECRET = env_str("OIDC_CLIENT_SECRET")
OIDC_RP_SIGN_ALGO = env_str("OIDC_SIGN_ALGO", "RS256")
OIDC_RP_SCOPES = env_str("OIDC_SCOPES", "openid email profile groups")
OIDC_PROVIDER_NAME = env_str("OIDC_PROVIDER_NAME", "single sign-on")
# The claim team membership follows (mapped per team in the admin: SSO → Team claim mappings).
OIDC_GROUPS_CLAIM = env_str("OIDC_GROUPS_CLAIM", "groups")
OIDC_TIMEOUT = env_float("OIDC_TIMEOUT", 10.0)
OIDC_USE_PKCE = env_bool("OIDC_USE_PKCE", True)
OIDC_STORE_ID_TOKEN = True  # for logging out at the provider too
OIDC_AUTHENTICATE_CLASS = "inbox.web.sso.SSOAuthenticate"
OIDC_CALLBACK_CLASS = "inbox.web.sso.SSOCallback"
LOGIN_REDIRECT_URL_FAILURE = "/accounts/login/?sso=failed"
# Local passwords: on for the embedded default; INBOX_LOCAL_LOGIN=0 leaves SSO as the only way in.
INBOX_LOCAL_LOGIN = env_bool("INBOX_LOCAL_LOGIN", True)
# django-axes' backend goes first, so a locked-out username is refused before any password is checked.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "inbox.sso.backend.InboxOIDCBackend"] + (
    ["inbox.teams.backends.PasswordBackend"] if INBOX_LOCAL_LOGIN else []
)

# --- Outcomes in the API (ui) ---
# Two models have a field named "outcome" (a run's and an item's): name their enums apart in the OpenAPI schema.
SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"] = {
    **SPECTACULAR_SETTINGS.get("ENUM_NAME_OVERRIDES", {}),  # type: ignore[dict-item]
    "ItemOutcomeEnum": "inbox.models.InboxItem.Outcome",
    "RunOutcomeEnum": "inbox.models.Run.Outcome",
    "ItemStatusEnum": "inbox.models.InboxItem.Status",
    "PolicyActionEnum": "inbox.models.policies.Policy.Action",
    "BacktestStateEnum": "inbox.models.policies.PolicyBacktest.State",
    "PolicyMatchOutcomeEnum": "inbox.models.policies.PolicyMatch.Outcome",
}

# --- Database connection pool (perf) ----------------------------------------------------------
# Every web process keeps a pool of PostgreSQL connections (Django's native psycopg pool). Under ASGI each
# request runs on a thread of its own; the pool hands it a connection and takes it back when the request
# ends, so a request does not pay for a new connection and kept connections cannot pile up. The pool is per
# process and opened lazily; Celery workers and beat drop it before they fork (config/celery.py), so a pool is
# never shared across fork.
DB_POOL = env_bool("DB_POOL", True)
DB_POOL_MIN = env_int("DB_POOL_MIN", 2)
DB_POOL_MAX = env_int("DB_POOL_MAX", 16)
DB_POOL_TIMEOUT = env_float("DB_POOL_TIMEOUT", 10.0)
if DB_POOL and DATABASES["default"]["ENGINE"].endswith("postgresql"):
    DATABASES["default"]["CONN_MAX_AGE"] = 0  # the pool keeps the connections; Django must not as well
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": DB_POOL_MIN,
        "max_size": max(DB_POOL_MIN, DB_POOL_MAX),
        "timeout": DB_POOL_TIMEOUT,
    }
# --- live front end, websockets and CSP (htmx) ---
# The channel layer blocks on Redis for channels-redis's BRPOP timeout while a socket is idle, and redis-py 8's
# default socket timeout is no longer than that: an idle consumer's read would time out and its socket die.
# Reads must be allowed to outlast the blocking pop: the socket timeout is kept above it (and still finite, so
# a Redis that vanished without closing the connection is noticed).
CHANNELS_BLOCKING_READ_SECONDS = 5  # inbox.live.layer.InboxChannelLayer.brpop_timeout
CHANNELS_REDIS_SOCKET_TIMEOUT = env_float("CHANNELS_REDIS_SOCKET_TIMEOUT", 10.0)
if CHANNELS_REDIS_SOCKET_TIMEOUT <= CHANNELS_BLOCKING_READ_SECONDS + 1:
    raise ImproperEnv(
        f"CHANNELS_REDIS_SOCKET_TIMEOUT must be above {CHANNELS_BLOCKING_READ_SECONDS + 1} s: the channel layer "
        f"blocks {CHANNELS_BLOCKING_READ_SECONDS} s on Redis while a socket is idle"
    )
CHANNEL_LAYERS["default"]["BACKEND"] = "inbox.live.layer.InboxChannelLayer"
CHANNEL_LAYERS["default"]["CONFIG"]["hosts"] = [
    {
        "address": REDIS_URL,
        "socket_timeout": CHANNELS_REDIS_SOCKET_TIMEOUT,
        "socket_connect_timeout": env_float("CHANNELS_REDIS_CONNECT_TIMEOUT", 5.0),
        "retry_on_timeout": False,
    }
]
# How far back a page that reconnects looks for changes it may have missed (covers commits that took this
# long after their audit row was written); within it the page's fragments are rendered afresh.
INBOX_LIVE_RESYNC_MARGIN_SECONDS = env_float("INBOX_LIVE_RESYNC_MARGIN_SECONDS", 10.0)
# Pushes that reach one socket within this window are rendered together (a burst of 100 new items is a
# few renders, not 100).
INBOX_LIVE_DEBOUNCE_SECONDS = env_float("INBOX_LIVE_DEBOUNCE_SECONDS", 0.1)

INSTALLED_APPS += ["django_htmx", "csp"]
MIDDLEWARE.insert(MIDDLEWARE.index("django.middleware.security.SecurityMiddleware") + 1, "csp.middleware.CSPMiddleware")
MIDDLEWARE.append("django_htmx.middleware.HtmxMiddleware")
MIDDLEWARE.append("inbox.sso.middleware.ProviderFormActionMiddleware")  # inside CSPMiddleware: see its docstring

# Content-Security-Policy: scripts and styles only from this site, no inline code, no inline style attributes.
_SELF = "'self'"
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [_SELF],
        "script-src": [_SELF],
        "style-src": [_SELF],
        "img-src": [_SELF, "data:"],
        "font-src": [_SELF],
        "connect-src": [_SELF],
        "object-src": ["'none'"],
        "base-uri": [_SELF],
        "form-action": [_SELF],
        "frame-ancestors": [_SELF],
        **({"report-uri": [env_str("CSP_REPORT_URI")]} if env_str("CSP_REPORT_URI") else {}),
    }
}

# The audit log's hash chain (docs/audit.md): the key that signs its head, purge checkpoints and exports (by default
# derived from SECRET_KEY; set it to keep signatures valid across a SECRET_KEY rotation), how often new events are
# sealed, and how many days of events to keep (0: all of them).
INBOX_AUDIT_SIGNING_KEY = (
    env_str("INBOX_AUDIT_SIGNING_KEY") or hashlib.sha256(f"audit:{SECRET_KEY}".encode()).hexdigest()
)
INBOX_AUDIT_SEAL_SECONDS = env_float("INBOX_AUDIT_SEAL_SECONDS", 5.0)
INBOX_AUDIT_RETENTION_DAYS = env_int("INBOX_AUDIT_RETENTION_DAYS", 0)
CELERY_BEAT_SCHEDULE["seal-audit-log"] = {"task": "inbox.tasks.seal_audit_log", "schedule": INBOX_AUDIT_SEAL_SECONDS}
CELERY_BEAT_SCHEDULE["purge-audit-log"] = {"task": "inbox.tasks.purge_audit_log", "schedule": 3600.0}

# Last, once every entry is in the schedule: a sweep's message not started within its period is dropped by the
# worker that takes it (the next one does its work), so a worker that was behind catches up without running each
# sweep once per period it missed.
for _entry in CELERY_BEAT_SCHEDULE.values():
    _entry["options"] = {"expires": float(_entry["schedule"])}
