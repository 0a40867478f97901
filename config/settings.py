"""Settings for Approval Inbox: one module, every knob read through config.env.

Nothing set gives the embedded default (SQLite and an embedded Redis under ``var/``). Production sets
``DATABASE_URL``, ``REDIS_URL``, ``SECRET_KEY``, ``ALLOWED_HOSTS`` and ``DEBUG=0``.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import dj_database_url

from config import embedded_redis
from config.env import ImproperEnv, env_bool, env_float, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("INBOX_VAR_DIR", str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)


def _secret_key() -> str:
    key = env_str("SECRET_KEY")
    if key:
        return key
    # The embedded default generates a key once and keeps it, so sessions survive restarts.
    path = VAR_DIR / "secret_key"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = _secret_key()
DEBUG = env_bool("DEBUG", True)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
SITE_URL = env_str("SITE_URL", f"http://127.0.0.1:{env_int('PORT', 8000)}")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "django_jsonform",
    "channels",
    "agents",
    "inbox",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
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
            "NAME": VAR_DIR / "db.sqlite3",
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
    REDIS_URL = embedded_redis.ensure_started(VAR_DIR)


def _celery_broker_url(url: str) -> str:
    # kombu spells a unix-socket Redis as redis+socket://
    return "redis+socket://" + url.removeprefix("unix://") if url.startswith("unix://") else url


CELERY_BROKER_URL = _celery_broker_url(REDIS_URL)
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_QUEUE", "inbox")
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")

CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {"hosts": [REDIS_URL], "prefix": env_str("CHANNELS_PREFIX", "inbox")},
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
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.TokenAuthentication",
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
}

# --- Static, i18n -----------------------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
STATIC_ROOT.mkdir(exist_ok=True)  # WhiteNoise warns at start-up when it is missing (collectstatic fills it)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

# Serve static files straight from the app folders (no collectstatic step needed for `make run` or tests).
WHITENOISE_USE_FINDERS = env_bool("WHITENOISE_USE_FINDERS", True)
WHITENOISE_AUTOREFRESH = DEBUG

EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "inbox@localhost")

# --- The product's own knobs ------------------------------------------------------------------
INBOX_INGEST_MAX_BYTES = env_int("INBOX_INGEST_MAX_BYTES", 1024 * 1024)
INBOX_MAX_INTERRUPTS_PER_RUN = env_int("INBOX_MAX_INTERRUPTS_PER_RUN", 100)
INBOX_EXPIRE_SWEEP_SECONDS = env_float("INBOX_EXPIRE_SWEEP_SECONDS", 10.0)
INBOX_REMINDER_LEAD_SECONDS = env_int("INBOX_REMINDER_LEAD_SECONDS", 600)
INBOX_RESUME_MAX_ATTEMPTS = env_int("INBOX_RESUME_MAX_ATTEMPTS", 6)
INBOX_RESUME_BACKOFF_BASE = env_float("INBOX_RESUME_BACKOFF_BASE", 2.0)
INBOX_RESUME_BACKOFF_CAP = env_float("INBOX_RESUME_BACKOFF_CAP", 300.0)
INBOX_RESUME_STUCK_SECONDS = env_int("INBOX_RESUME_STUCK_SECONDS", 120)
INBOX_AGENT_CONNECT_TIMEOUT = env_float("INBOX_AGENT_CONNECT_TIMEOUT", 5.0)
INBOX_AGENT_READ_TIMEOUT = env_float("INBOX_AGENT_READ_TIMEOUT", 60.0)
INBOX_WEBHOOK_MAX_RETRIES = env_int("INBOX_WEBHOOK_MAX_RETRIES", 6)
INBOX_WEBHOOK_BACKOFF_BASE = env_float("INBOX_WEBHOOK_BACKOFF_BASE", 2.0)
INBOX_WEBHOOK_BACKOFF_CAP = env_float("INBOX_WEBHOOK_BACKOFF_CAP", 300.0)
INBOX_WEBHOOK_TIMEOUT = env_float("INBOX_WEBHOOK_TIMEOUT", 10.0)
INBOX_DIGEST_SECONDS = env_float("INBOX_DIGEST_SECONDS", 3600.0)
# A run still unannounced this long after it was stored lost its notification task; beat announces it.
INBOX_ANNOUNCE_GRACE_SECONDS = env_float("INBOX_ANNOUNCE_GRACE_SECONDS", 60.0)

CELERY_BEAT_SCHEDULE = {
    "expire-stale-items": {"task": "inbox.tasks.expire_stale_items", "schedule": INBOX_EXPIRE_SWEEP_SECONDS},
    "requeue-stuck-resumes": {"task": "inbox.tasks.requeue_stuck_resumes", "schedule": 30.0},
    "send-expiry-reminders": {"task": "inbox.tasks.send_expiry_reminders", "schedule": 30.0},
    "send-digests": {"task": "inbox.notifications.send_digests", "schedule": INBOX_DIGEST_SECONDS},
    "notify-missed-runs": {"task": "inbox.notifications.notify_missed_runs", "schedule": 30.0},
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "INFO"}, "httpx": {"level": "WARNING"}},
}

# --- live front end, websockets and CSP (htmx) ---
# The channel layer blocks on Redis for channels-redis's BRPOP timeout (5 s) while a socket is idle; redis-py
# 8 gives every connection a 5 s socket timeout by default, so each idle consumer's read timed out and the
# socket died every ~5 s. Reads must be allowed to outlast the blocking pop: the socket timeout is kept above
# it (and still finite, so a Redis that vanished without closing the connection is noticed).
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
