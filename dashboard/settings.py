"""Settings from the environment (twelve-factor); defaults suit a local `make run`.

DJANGO_SECRET_KEY   secret key; generated once into var/secret_key when unset
DJANGO_DEBUG        "1" for debug pages (default off)
DJANGO_ALLOWED_HOSTS comma-separated (default 127.0.0.1,localhost,[::1])
DATABASE_URL        e.g. postgres://u:p@host/db (default SQLite at var/dashboard.sqlite3)
REDIS_URL           the channel layer and Celery's broker (default redis://127.0.0.1:6379/0)
DASHBOARD_VAR_DIR   where local state lives (default var/ at the repository root)
DASHBOARD_PLATFORM_STATUS_FILE  `make run`'s process status, shown on the overview
                    (default platform-status.json in DASHBOARD_VAR_DIR)
DASHBOARD_SECRETS_DIRS  directories (os.pathsep-separated) that `file:` secret references
                    may name files in (default secrets/ in DASHBOARD_VAR_DIR)
DASHBOARD_CLUSTER_SECRETS_KEY  Fernet key encrypting clusters' SASL passwords and TLS keys
                    at rest (default: derived from the secret key)
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import dj_database_url

ROOT = Path(__file__).resolve().parents[1]
BASE_DIR = ROOT
VAR_DIR = Path(os.environ.get("DASHBOARD_VAR_DIR", ROOT / "var"))
# A cluster's `file:` secret reference must name a file in one of these: the secret key, the
# database and any other readable file stay out of reach of whoever registers a cluster.
SECRETS_DIRS = [
    Path(p) for p in os.environ.get("DASHBOARD_SECRETS_DIRS", "").split(os.pathsep) if p
] or [VAR_DIR / "secrets"]


def _flag(name: str, default: bool = False) -> bool:
    return os.environ.get(name, "1" if default else "0").lower() in ("1", "true", "yes", "on")


def _secret_key() -> str:
    if key := os.environ.get("DJANGO_SECRET_KEY"):
        return key
    path = VAR_DIR / "secret_key"
    if not path.exists():
        VAR_DIR.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_urlsafe(50))
    return path.read_text().strip()


SECRET_KEY = _secret_key()
# Encrypts clusters' SASL passwords and TLS keys in the database (a Fernet key,
# `Fernet.generate_key()`); unset: derived from SECRET_KEY (dashboard/core/cluster_secrets.py).
CLUSTER_SECRETS_KEY = os.environ.get("DASHBOARD_CLUSTER_SECRETS_KEY", "")
DEBUG = _flag("DJANGO_DEBUG")
ALLOWED_HOSTS = os.environ.get("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]").split(",")
CSRF_TRUSTED_ORIGINS = [
    origin for origin in os.environ.get("DJANGO_CSRF_TRUSTED_ORIGINS", "").split(",") if origin
]

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
    "drf_spectacular_sidecar",
    "channels",
    "django_celery_beat",
    "dashboard.core",
    "dashboard.api",
    "dashboard.live",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "dashboard.urls"
ASGI_APPLICATION = "dashboard.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [ROOT / "dashboard" / "templates"],
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

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{VAR_DIR / 'dashboard.sqlite3'}"),
        conn_max_age=60,
    )
}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # Channels consumers, the collector and requests write concurrently; wait for the lock.
    DATABASES["default"].setdefault("OPTIONS", {})["timeout"] = 20
    DATABASES["default"]["CONN_MAX_AGE"] = 0
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
# Failed sign-ins: free ones per user name and address, then a delay doubling per failure.
AUTHENTICATION_BACKENDS = ["dashboard.core.login_throttle.ThrottledModelBackend"]
LOGIN_THROTTLE_FREE_FAILURES = 5
LOGIN_THROTTLE_BASE_DELAY_S = 1.0
LOGIN_THROTTLE_MAX_DELAY_S = 900.0
LOGIN_REDIRECT_URL = "overview"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
# Browser libraries come from npm (dashboard/assets/package.json, installed by platform/setup
# into dashboard/assets/node_modules), served under static/vendor/, never copied into the repo.
STATICFILES_DIRS = [
    ROOT / "dashboard" / "static",
    ("vendor/uplot", ROOT / "dashboard" / "assets" / "node_modules" / "uplot" / "dist"),
]
STATIC_ROOT = VAR_DIR / "static"

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {"hosts": [REDIS_URL], "capacity": 1000, "expiry": 10},
    }
}
CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = REDIS_URL
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_TIMEZONE = TIME_ZONE
CELERY_TASK_IGNORE_RESULT = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Lag and throughput history: sampled this often by beat, kept this long.
HISTORY_INTERVAL_S = float(os.environ.get("DASHBOARD_HISTORY_INTERVAL_S", "30"))
HISTORY_RETENTION_DAYS = int(os.environ.get("DASHBOARD_HISTORY_RETENTION_DAYS", "7"))
CELERY_BEAT_SCHEDULE = {
    # Installed into django-celery-beat's tables by the DatabaseScheduler at start.
    "record-history": {"task": "tasks.history.record_history", "schedule": HISTORY_INTERVAL_S},
    # Spark loads whose Celery worker died end failed (tasks/spark_reconcile.py).
    "reconcile-spark-loads": {
        "task": "tasks.spark_reconcile.reconcile_spark_loads",
        "schedule": float(os.environ.get("SPARK_RECONCILE_S", "30")),
    },
}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Token first: anonymous API callers get 401 with WWW-Authenticate, not 403.
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["dashboard.api.permissions.ClusterRole"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "dashboard.api.errors.exception_handler",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "brokerd platform REST admin",
    "DESCRIPTION": "Confluent REST Proxy v3 resource layout, plus replica HW/LEO, segments, "
    "record browsing and test produce.",
    "VERSION": "3.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    # Swagger UI from the drf-spectacular-sidecar package: no CDN, nothing copied.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
}

# Kafka access from the web process: timeouts keep a dead broker from hanging a page.
KAFKA_REQUEST_TIMEOUT_S = float(os.environ.get("DASHBOARD_KAFKA_TIMEOUT_S", "10"))
# Written by `make run`'s supervisor (platform/launch.py): the local platform's processes,
# shown on the overview of the cluster the file names (dashboard/live/platform_status.py).
PLATFORM_STATUS_FILE = Path(
    os.environ.get("DASHBOARD_PLATFORM_STATUS_FILE", VAR_DIR / "platform-status.json")
)
# The collector polls each watched cluster about this often.
COLLECTOR_INTERVAL_S = float(os.environ.get("DASHBOARD_COLLECTOR_INTERVAL_S", "1.0"))

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("DJANGO_LOG_LEVEL", "INFO")},
    "loggers": {"kazoo": {"level": "WARNING"}, "daphne": {"level": "WARNING"}},
}
