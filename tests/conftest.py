"""Shared fixtures. Service-backed tests (marker `services`) need DATABASE_URL and REDIS_URL; without
them they are skipped with a reason — or fail when TARSY_REQUIRE_SERVICES=1 (CI). Database tests without the
marker run on whichever database the settings give: PostgreSQL with the services, SQLite without."""

from __future__ import annotations

import os

import pytest
from django.db import connections

HAVE_SERVICES = bool(os.environ.get("DATABASE_URL") and os.environ.get("REDIS_URL"))
REQUIRE_SERVICES = os.environ.get("TARSY_REQUIRE_SERVICES") == "1"


def pytest_collection_modifyitems(config, items):
    if HAVE_SERVICES:
        return
    for item in items:
        if item.get_closest_marker("services"):
            if REQUIRE_SERVICES:
                item.fixturenames.insert(0, "_services_required")
            else:
                item.add_marker(pytest.mark.skip(reason="needs PostgreSQL and Redis: set DATABASE_URL and REDIS_URL"))


@pytest.fixture
def _services_required():
    pytest.fail("TARSY_REQUIRE_SERVICES=1 but DATABASE_URL / REDIS_URL are not set")


@pytest.fixture(autouse=True)
def _fresh_config():
    """Every test starts from the configuration on disk (built-ins unless TARSY_CONFIG_DIR is set)."""
    from tarsy.config import set_config

    set_config(None)
    yield
    set_config(None)


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix, _connection_options):
    """The test databases are created (and dropped) without the settings' connection options: on a loaded
    machine CREATE DATABASE and the migrations of parallel test processes outlast the statement timeout that
    bounds the application's statements. The tests themselves run with the options (django_db_setup below)."""
    for alias in _connection_options:
        connections[alias].settings_dict["OPTIONS"].pop("options")


@pytest.fixture(scope="session")
def _connection_options():
    return {alias: connections[alias].settings_dict["OPTIONS"]["options"] for alias in connections
            if "options" in connections[alias].settings_dict.get("OPTIONS", {})}


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, _connection_options):
    """pytest-django's, with the connection options back on for the tests, and off again for the teardown."""
    for alias, options in _connection_options.items():
        connections[alias].close()  # the next connection is opened with the options
        connections[alias].settings_dict["OPTIONS"]["options"] = options
    yield
    for alias in _connection_options:
        connections[alias].close()
        connections[alias].settings_dict["OPTIONS"].pop("options")
