"""Settings of the example project: one module, no database, no apps.

For local use only (``python manage.py runserver``). A real deployment sets
DJANGO_SECRET_KEY and keeps DEBUG off. Do not add ``GZipMiddleware``: it
would hold the streamed events back until its buffer fills.
"""

import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "django-insecure-agentcore-example-only")
DEBUG = os.environ.get("DJANGO_DEBUG", "") == "1"
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "[::1]"]

INSTALLED_APPS: list[str] = []
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.common.CommonMiddleware",
]
ROOT_URLCONF = "chatsite.urls"
WSGI_APPLICATION = "chatsite.wsgi.application"
DATABASES: dict[str, dict[str, str]] = {}
USE_TZ = True
