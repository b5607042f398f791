"""Django system check: an invalid configuration stops `manage.py` commands with every problem listed."""

from django.core.checks import Error, register

from .config import ConfigError, get_config


@register()
def config_check(app_configs, **kwargs):
    try:
        get_config()
    except ConfigError as exc:
        return [Error(problem, id="tarsy.E001") for problem in exc.problems]
    return []
