"""Celery reads Django's CELERY_ settings once (tarsy.celery.DjangoCelerySettings), with the same meaning."""

from __future__ import annotations

from django.conf import settings

from tarsy.celery import DjangoCelerySettings, app


def test_celery_sees_every_celery_setting_of_django():
    assert app.conf.task_default_queue == settings.CELERY_TASK_DEFAULT_QUEUE
    assert app.conf.task_acks_late is True and app.conf.task_reject_on_worker_lost is True
    assert app.conf.worker_prefetch_multiplier == settings.CELERY_WORKER_PREFETCH_MULTIPLIER
    assert app.conf.broker_transport_options == settings.CELERY_BROKER_TRANSPORT_OPTIONS
    # Read by Celery's Django fixup under its Django name: without it every task would reconnect to PostgreSQL.
    assert app.conf.get("CELERY_DB_REUSE_MAX") == settings.CELERY_DB_REUSE_MAX
    assert app.conf.result_backend is None


def test_no_setting_name_makes_a_worker_warn_at_start():
    """A worker warns about pre-4.0 names when its settings come from a mapping, as they do now."""
    assert app.conf.deprecated_settings == set()


def test_the_mapping_holds_only_celery_settings():
    names = set(DjangoCelerySettings())
    assert names and all(name.startswith("CELERY_") for name in names)
    assert "CELERY_BROKER_URL" in names and "SECRET_KEY" not in names
