"""TARSy's settings, one module per process role; each entry point names its own in DJANGO_SETTINGS_MODULE.

- `base`: what every process shares, from the environment (management commands, the `tarsy` MCP server)
- `web`: the ASGI server (tarsy.asgi; `manage.py serve` and `runserver`)
- `worker`: Celery worker and beat (tarsy.celery)
- `test`: the test run (pytest's configuration in pyproject.toml)
"""
