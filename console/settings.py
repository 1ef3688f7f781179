"""Loadmaster console settings. Every deploy-time knob is read from the environment here and only
here (see docs/settings.md); the defaults run the embedded demo: SQLite, an SQLite-backed Celery
broker and simulated backends, with nothing else to install."""

from __future__ import annotations

import re
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from console.env import (
    database_from_url,
    env_bool,
    env_choice,
    env_int,
    env_list,
    env_str,
    local_secret_key,
)
from console.repair_policy import DEFAULT_POLICIES, policies_parse

BASE_DIR = Path(__file__).resolve().parent.parent
# Templates and static files: a wheel (`pip install .`, the Dockerfile) carries them in console/assets/
# (setup.py's build hook); a checkout and an editable install read them from the repository root.
_PACKAGED_ASSETS = Path(__file__).resolve().parent / "assets"
INSTALLED_FROM_WHEEL = _PACKAGED_ASSETS.is_dir()
ASSETS_DIR = _PACKAGED_ASSETS if INSTALLED_FROM_WHEEL else BASE_DIR
# Writable state lives beside manage.py in a checkout, and in the working directory when installed
# (never inside site-packages).
_STATE_BASE = Path.cwd() if INSTALLED_FROM_WHEEL else BASE_DIR
# Runtime state of the embedded default (SQLite database, broker, generated secret key).
VAR_DIR = Path(env_str("LOADMASTER_VAR_DIR", str(_STATE_BASE / "var")) or _STATE_BASE / "var")

DEBUG = env_bool("DEBUG", False)

_secret = env_str("SECRET_KEY")
if not _secret:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY must be set when DEBUG is off (the embedded demo sets DEBUG=1 and keeps a generated key in var/)"
        )
    _secret = local_secret_key(VAR_DIR / "secret_key")
SECRET_KEY = _secret

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "console.fleet",
    "console.buffers",
    "console.catalog",
    "console.overlays",
    "console.commitments",
    "console.telemetry",
    "console.control",
    "console.dashboards",
    "console.simulation",
    "console.alerts",
    "console.whatif",
    "console.history",
    "console.advisor",
    "console.replay",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # LOADMASTER_MAX_UPLOAD_BYTES for every body, before anything reads it.
    "console.upload_limits.RequestSizeLimitMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "console.access.LoginRequiredMiddleware",
    # Roles for every view and method in one place: unsafe methods need the operator role.
    "console.access.RoleMiddleware",
]

ROOT_URLCONF = "console.urls"
WSGI_APPLICATION = "console.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [ASSETS_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "console.access.role_context",
            ],
        },
    },
]

DATABASES = {
    "default": database_from_url(
        "DATABASE_URL", env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'loadmaster.sqlite3'}") or ""
    )
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# Sign-in throttling (console/throttling.py): this many failed passwords for one user name, or from
# one address, within LOADMASTER_LOGIN_LOCKOUT_SECONDS lock it out until that window ends (429).
LOADMASTER_LOGIN_FAILURES_PER_USER = env_int("LOADMASTER_LOGIN_FAILURES_PER_USER", 5, minimum=1)
LOADMASTER_LOGIN_FAILURES_PER_ADDRESS = env_int("LOADMASTER_LOGIN_FAILURES_PER_ADDRESS", 20, minimum=1)
LOADMASTER_LOGIN_LOCKOUT_SECONDS = env_int("LOADMASTER_LOGIN_LOCKOUT_SECONDS", 300, minimum=1)
# The cache holds the sign-in failure counts, so every web process must share it: a file cache in
# VAR_DIR (the processes of one machine) unless LOADMASTER_CACHE_URL names a Redis server (several).
_cache_url = env_str("LOADMASTER_CACHE_URL", "") or ""
CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": _cache_url}
          if _cache_url.startswith(("redis://", "rediss://", "unix://")) else
          {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache", "LOCATION": str(VAR_DIR / "cache")}}
if _cache_url and not _cache_url.startswith(("redis://", "rediss://", "unix://")):
    raise ImproperlyConfigured("LOADMASTER_CACHE_URL must be a redis://, rediss:// or unix:// URL")
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboards:overview"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [ASSETS_DIR / "static"]
# Where `manage.py collectstatic` writes (the Dockerfile runs it at build time); WhiteNoise serves it.
STATIC_ROOT = Path(env_str("LOADMASTER_STATIC_ROOT", "") or _STATE_BASE / "staticfiles")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# Serve static files straight from the finders, so the console works without collectstatic.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_SECURE = env_bool("SECURE_COOKIES", False)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE
X_FRAME_OPTIONS = "DENY"
# HTTPS behind a TLS-terminating proxy or ingress (docs/install.md): trust the header the
# proxy sets (e.g. X-Forwarded-Proto: https; only when the proxy overwrites it), redirect plain HTTP and
# send HSTS. `manage.py check --deploy` passes with these set.
_proxy_header = (env_str("SECURE_PROXY_SSL_HEADER", "") or "").strip()
if _proxy_header:
    if not re.fullmatch(r"[A-Za-z0-9-]+", _proxy_header):
        raise ImproperlyConfigured(f"SECURE_PROXY_SSL_HEADER={_proxy_header!r} is not a header name (e.g. X-Forwarded-Proto)")
    SECURE_PROXY_SSL_HEADER = ("HTTP_" + _proxy_header.upper().replace("-", "_"), "https")
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
# Prometheus scrapes pods over plain HTTP inside the cluster, with its bearer token: no redirect there.
SECURE_REDIRECT_EXEMPT = [r"^metrics$"]
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)

# Uploaded Karpenter YAML and cluster snapshots can be large, up to this many bytes per request body
# (all files and fields together; console/upload_limits.py answers 413 beyond it).
LOADMASTER_MAX_UPLOAD_BYTES = env_int("LOADMASTER_MAX_UPLOAD_BYTES", 32 * 1024 * 1024, minimum=1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = LOADMASTER_MAX_UPLOAD_BYTES
FILE_UPLOAD_MAX_MEMORY_SIZE = DATA_UPLOAD_MAX_MEMORY_SIZE

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Token first: an anonymous or bad-token request then gets 401 with WWW-Authenticate.
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["console.access.RolePermission"],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Loadmaster API",
    "DESCRIPTION": "NodePools, EC2NodeClasses, NodeClaims and the decision ledger of a Loadmaster-managed cluster.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["console.access.RolePermission"],
    # Swagger UI from the sidecar package's static files: no CDN is reachable from our machines.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
}

# Celery: the embedded default needs no server (kombu's SQLAlchemy transport on an SQLite file).
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", f"sqla+sqlite:///{VAR_DIR / 'celery-broker.sqlite3'}")
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TIMEZONE = "UTC"
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
# The beat schedule, in one place. Each entry says why it runs at that pace.
CELERY_BEAT_SCHEDULE = {
    # Liveness of the loops: the console shows when a worker last ran a task, so an operator
    # sees at once when beat or every worker is down.
    "heartbeat": {"task": "console.fleet.tasks.heartbeat", "schedule": 30.0},
    # AWS publishes new instance types and list prices rarely; twice a day catches them within hours.
    "refresh_catalog": {"task": "console.catalog.tasks.refresh_catalog", "schedule": 12 * 3600.0},
    # Spot prices move within the day; hourly keeps decisions close to what AWS bills.
    "refresh_spot_prices": {"task": "console.catalog.tasks.refresh_spot_prices", "schedule": 3600.0},
    # Pending pods → NodeClaims → CreateFleet. Karpenter batches pods for 1-10 s before it solves;
    # a 10 s beat gives the same batching and is the safety net under the `manage.py watch` trigger.
    "provision": {"task": "console.control.tasks.provision", "schedule": 10.0},
    # Launched → Registered → Initialized; a node registers within about a minute, so 10 s keeps
    # pods waiting at most one tick after their node is ready.
    "lifecycle": {"task": "console.control.tasks.lifecycle", "schedule": 10.0},
    # Spot interruption notices give two minutes; polling every 10 s leaves most of it for the drain.
    "interruption": {"task": "console.control.tasks.interruption", "schedule": 10.0},
    # Consolidation, drift, expiry: one action at a time, one step per tick (cordon, replace, wait
    # 15 s and re-validate, drain, delete), as Karpenter's disruption controller every 10 s.
    "disrupt": {"task": "console.control.tasks.disrupt", "schedule": 10.0},
    # One sample per minute per NodePool: cost, allocatable vs requested, pending pods and why —
    # what the dashboards and alerts read.
    "record_metrics": {"task": "console.control.tasks.record_metrics", "schedule": 60.0},
    # Alerts: check every rule against the samples record_metrics writes each minute.
    "evaluate_alerts": {"task": "console.alerts.tasks.evaluate_alerts", "schedule": 60.0},
    # Leaked instances cost money but are rare; every 2 minutes bounds the waste without API churn.
    "garbage_collect": {"task": "console.control.tasks.garbage_collect", "schedule": 120.0},
    # The simulated world (embedded default): instances boot, nodes register, the demo workloads
    # follow the compressed day, spot capacity is reclaimed. Does nothing with real backends.
    "simulation_tick": {"task": "console.simulation.tasks.tick", "schedule": 5.0},
    # Node repair (LOADMASTER_NODE_REPAIR; does nothing when off): tolerations are minutes long, so a 30 s
    # look at the nodes' conditions repairs a node within a tick of its toleration running out.
    "repair": {"task": "console.control.tasks.repair", "schedule": 30.0},
    # Capacity reservations (EC2NodeClass capacityReservationSelectorTerms): a minute keeps the free counts close to
    # EC2's, picks up a Capacity Block within a minute of it becoming active, and acts on an ending block well inside
    # the 10 minutes between Karpenter's 40-minute lead time and EC2's reclaim at 30 minutes before the end.
    "capacity_reservations": {"task": "console.control.tasks.capacity_reservations", "schedule": 60.0},
    # The history (console/history): the cluster diffed at the loops' pace (10 s is a departure's precision),
    # the prices in force checked every 5 minutes (they change at most hourly), retention pruned hourly.
    "history_observe": {"task": "console.history.tasks.observe", "schedule": 10.0},
    "history_record_prices": {"task": "console.history.tasks.record_prices", "schedule": 300.0},
    "history_prune": {"task": "console.history.tasks.prune", "schedule": 3600.0},
}

LOADMASTER_CLUSTER_NAME = env_str("LOADMASTER_CLUSTER_NAME", "demo") or "demo"

# Backends (see docs/loops.md, "Backends"). The embedded default simulates both the cluster and the cloud.
LOADMASTER_CLUSTER = env_choice("LOADMASTER_CLUSTER", "simulated", ("simulated", "kubernetes"))
LOADMASTER_CLOUD = env_choice("LOADMASTER_CLOUD", "simulated", ("simulated", "aws"))
LOADMASTER_KUBECONFIG = env_str("LOADMASTER_KUBECONFIG", "") or None
LOADMASTER_KUBE_CONTEXT = env_str("LOADMASTER_KUBE_CONTEXT", "") or None
LOADMASTER_AWS_REGION = env_str("AWS_REGION", env_str("AWS_DEFAULT_REGION", "us-east-1")) or "us-east-1"
LOADMASTER_AWS_ENDPOINT_URL = env_str("LOADMASTER_AWS_ENDPOINT_URL", "") or None
LOADMASTER_SQS_QUEUE_URL = env_str("LOADMASTER_SQS_QUEUE_URL", "") or None
LOADMASTER_KUBERNETES_VERSION = env_str("LOADMASTER_KUBERNETES_VERSION", "") or None
LOADMASTER_CLUSTER_ENDPOINT = env_str("LOADMASTER_CLUSTER_ENDPOINT", "") or None
LOADMASTER_CLUSTER_CA = env_str("LOADMASTER_CLUSTER_CA", "") or None
LOADMASTER_CLUSTER_SERVICE_CIDR = env_str("LOADMASTER_CLUSTER_SERVICE_CIDR", "10.100.0.0/16") or "10.100.0.0/16"
LOADMASTER_CATALOG_CACHE = env_str("LOADMASTER_CATALOG_CACHE", str(VAR_DIR / "catalog-cache"))
# /metrics: scrapers send "Authorization: Bearer <token>"; signed-in users always get through.
LOADMASTER_METRICS_TOKEN = env_str("LOADMASTER_METRICS_TOKEN", "") or ""
LOADMASTER_METRICS_PUBLIC = env_bool("LOADMASTER_METRICS_PUBLIC", False)
# Alerts: the key that encrypts stored Slack webhook URLs/tokens (empty: derived from SECRET_KEY;
# changing it makes stored secrets unreadable, and their channels disable themselves with that reason),
# and the console's public URL used for the buttons in Slack messages.
LOADMASTER_ENCRYPTION_KEY = env_str("LOADMASTER_ENCRYPTION_KEY", "") or ""
LOADMASTER_PUBLIC_URL = env_str("LOADMASTER_PUBLIC_URL", "http://localhost:8000")
# Hosts Slack channels may send to besides hooks.slack.com and slack.com (console/alerts/destinations.py).
LOADMASTER_SLACK_ALLOWED_HOSTS = env_list("LOADMASTER_SLACK_ALLOWED_HOSTS", [])
# How long an offering that failed for capacity is skipped before it is tried again (Karpenter: 3 min).
LOADMASTER_UNAVAILABLE_OFFERING_TTL = env_int("LOADMASTER_UNAVAILABLE_OFFERING_TTL", 180, minimum=1)
# Dashboards: minute samples are kept this many days once rolled up into hours (at least 8: the alerts'
# spend-spike rule reads the same hour of the last 7 days from minutes), and how long the pages and
# /metrics reuse one read of the live cluster (0: every request reads it).
LOADMASTER_METRICS_MINUTE_RETENTION_DAYS = env_int("LOADMASTER_METRICS_MINUTE_RETENTION_DAYS", 8, minimum=8)
LOADMASTER_HISTORY_DAYS = env_int("LOADMASTER_HISTORY_DAYS", 14, minimum=1)  # console/history retention
LOADMASTER_DASHBOARD_LIVE_SECONDS = env_int("LOADMASTER_DASHBOARD_LIVE_SECONDS", 30, minimum=0)
# Consolidation's repack move (Loadmaster's own, beyond Karpenter: k nodes replaced by several cheaper
# ones). Off: only Karpenter's methods run, in the loop, the previews and the snapshot replays.
LOADMASTER_CONSOLIDATION_REPACK = env_bool("LOADMASTER_CONSOLIDATION_REPACK", True)
# A NodePool requirement's minValues when a NodeClaim cannot keep it (Karpenter's MinValuesPolicy): Strict
# leaves the pods unschedulable on that pool, BestEffort relaxes the minimum. Read by the provision and disrupt
# loops, the previews and the snapshot replays.
LOADMASTER_MIN_VALUES_POLICY = env_choice("LOADMASTER_MIN_VALUES_POLICY", "Strict", ("Strict", "BestEffort"))
# Node repair (Karpenter's NodeRepair feature gate, off by default there too): a node whose condition matches a
# repair policy for longer than its toleration is force-terminated, unless more than 20% of its NodePool's nodes
# are unhealthy. The policies are the AWS provider's, plus (or overriding) LOADMASTER_NODE_REPAIR_POLICIES.
LOADMASTER_NODE_REPAIR = env_bool("LOADMASTER_NODE_REPAIR", False)
_repair_policies = env_str("LOADMASTER_NODE_REPAIR_POLICIES")
try:
    LOADMASTER_NODE_REPAIR_POLICIES = (DEFAULT_POLICIES if _repair_policies is None
                                       else policies_parse(_repair_policies))
except ValueError as _e:
    raise ImproperlyConfigured(f"LOADMASTER_NODE_REPAIR_POLICIES={_repair_policies!r} {_e}") from None

# The simulated cluster and cloud (console.simulation). Floats are read and checked by the app;
# a bad value fails `manage.py check` (simulation.E001).
LOADMASTER_SIM_SEED = env_int("LOADMASTER_SIM_SEED", 0)
LOADMASTER_SIM_DAY_SECONDS = env_int("LOADMASTER_SIM_DAY_SECONDS", 3600, minimum=60)  # 1 real hour = 1 simulated day
LOADMASTER_SIM_START_HOUR = env_str("LOADMASTER_SIM_START_HOUR", "6")
LOADMASTER_SIM_DEMO_WORKLOADS = env_bool("LOADMASTER_SIM_DEMO_WORKLOADS", True)
LOADMASTER_SIM_SPOT_INTERRUPTIONS_PER_HOUR = env_str("LOADMASTER_SIM_SPOT_INTERRUPTIONS_PER_HOUR", "0.02")
LOADMASTER_SIM_STATE_CHANGES_PER_HOUR = env_str("LOADMASTER_SIM_STATE_CHANGES_PER_HOUR", "0")
# Spot notice in real seconds; the default (2 minutes divided by the compression) is 5 s, shorter
# than the 10 s interruption poll, so the demo uses 30 s.
LOADMASTER_SIM_SPOT_NOTICE_SECONDS = env_str("LOADMASTER_SIM_SPOT_NOTICE_SECONDS", "30")
LOADMASTER_SIM_ICE_RATE = env_str("LOADMASTER_SIM_ICE_RATE", "0")
LOADMASTER_SIM_ICE_OFFERINGS = env_list("LOADMASTER_SIM_ICE_OFFERINGS", [])  # "type:zone:capacity" globs

if LOADMASTER_CLOUD == "simulated" and LOADMASTER_CLUSTER != "simulated":
    # Simulated instances never join a real cluster: every launch would time out and be terminated.
    raise ImproperlyConfigured("LOADMASTER_CLOUD=simulated needs LOADMASTER_CLUSTER=simulated")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
}
