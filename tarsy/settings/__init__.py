"""TARSy's settings, one module per process role; each entry point names its own in DJANGO_SETTINGS_MODULE.

- `base`: what every process shares, from the environment (management commands, the `tarsy` MCP server)
- `web`: the ASGI server (tarsy.asgi; `manage.py serve` and `runserver`)
- `worker`: Celery worker and beat (tarsy.celery)
- `test`: the test run (pytest's configuration in pyproject.toml)
"""

import os

from django.core.exceptions import ImproperlyConfigured

if os.environ.get("DJANGO_SETTINGS_MODULE") == __name__:  # the single module of earlier releases
    raise ImproperlyConfigured(f"DJANGO_SETTINGS_MODULE={__name__} names no settings: unset it (each entry point "
                               f"names its role's) or name one of {__name__}.base, .web, .worker")
