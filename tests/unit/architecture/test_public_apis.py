"""The product reaches its frameworks through public APIs only: no uvicorn internals, no custom database backend,
no override of a framework's private method or property, no fork of Django's request handler, no edit of compiled
SQL, no read of a queryset's SQL tree or of a connection's backend operations; and no module of the product takes
another's private names.

The checks (tests/unit/architecture/public_apis.py) are first shown to catch each kind in a small made-up source,
then run on tarsy/, agents/ and controllers/.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from .public_apis import problems, python_files

ROOT = Path(__file__).resolve().parents[3]
PRODUCT = (ROOT / "tarsy", ROOT / "agents", ROOT / "controllers")


def _found(source: str) -> list[str]:
    return sorted(what for _, what in problems(textwrap.dedent(source)))


# ---- the checks catch what they look for ------------------------------------------------------------------------

@pytest.mark.parametrize("source", [
    "from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol\n",
    "import uvicorn.protocols.http.h11_impl as h11\n",
])
def test_an_import_of_uvicorns_protocol_modules_is_found(source):
    assert _found(source) == ["imports uvicorn.protocols"]


def test_a_custom_database_engine_or_backend_class_is_found():
    assert _found("""
        DATABASES = {"default": {"ENGINE": "tarsy.db.postgresql"}}
        DATABASES["default"]["ENGINE"] = "my.backend"
        from django.db.backends.postgresql import base
        class DatabaseWrapper(base.DatabaseWrapper):
            pass
    """) == ["custom database backend 'my.backend'", "custom database backend 'tarsy.db.postgresql'",
             "custom database backend class DatabaseWrapper"]
    assert _found('DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3"}}\n') == []


def test_an_override_of_a_frameworks_private_method_is_found_and_a_helper_of_our_own_is_not():
    assert _found("""
        from kombu.transport import redis
        from django.core.management.base import BaseCommand
        class Channel(redis.Channel):
            def _create_client(self, asynchronous=False):
                return None
        class Nested(Channel):
            def _get_pool(self, asynchronous=False):
                return None
        class Command(BaseCommand):
            def _print_banner(self):  # ours: BaseCommand has no such method
                pass
            def handle(self, *args, **options):
                pass
    """) == ["Channel._create_client overrides a framework's private method",
             "Nested._get_pool overrides a framework's private method"]


def test_a_fork_of_djangos_request_handler_is_found():
    assert _found("""
        from django.core.handlers.asgi import ASGIHandler
        class Handler(ASGIHandler):
            async def handle(self, scope, receive, send):
                pass
    """) == ["Handler.handle forks Django's request handler"]


def test_compiler_internals_and_string_edits_of_compiled_sql_are_found():
    assert _found("""
        from django.db.models.query import get_related_populators
        def claim(queryset):
            sql, params = queryset.query.get_compiler(using="default").as_sql()
            return sql.replace("FROM t", "FROM claimed t"), params
        def hydrate(compiler):
            return compiler.klass_info, compiler.get_converters([])
    """) == ["claim edits compiled SQL as a string", "edits SQL text with str.replace",
             "uses the query compiler's get_compiler", "uses the query compiler's get_converters",
             "uses the query compiler's get_related_populators", "uses the query compiler's klass_info"]
    assert _found("""
        def claimed_rows(sql, table):
            return "WITH claimed AS (UPDATE …) " + sql.replace(f"FROM {table} ", f"FROM claimed {table} ", 1)
    """) == ["edits SQL text with str.replace"]
    assert _found("""
        from django.db.models import Func
        class Upper(Func):
            def as_sql(self, compiler, connection, **extra):
                sql, params = super().as_sql(compiler, connection, **extra)
                return sql.replace("UPPER", "upper"), params
    """) == []


def test_a_read_of_a_querysets_sql_tree_is_found():
    assert _found("""
        def filter(self, qs, value):
            ordered = super().filter(qs, value)
            return ordered.order_by(*ordered.query.order_by, "-created_at")
    """) == ["reads the queryset's query.order_by"]
    assert _found("def reordered(qs):\n    return qs.order_by('-created_at') if not qs.ordered else qs\n") == []


def test_a_use_of_the_connections_backend_operations_is_found():
    assert _found("""
        from django.db import connection, connections
        quote = connection.ops.quote_name
        table = connections["default"].ops.quote_name("t")
        quote = schema_editor.connection.ops.quote_name
    """) == ["uses the database connection's ops"] * 3
    assert _found("from django.db import connection\nvendor = connection.vendor\n") == []


def test_an_override_of_a_frameworks_property_is_found_and_a_property_of_our_own_is_not():
    assert _found("""
        from rest_framework import serializers
        class SharedFieldsSerializer(serializers.Serializer):
            @property
            def fields(self):
                return type(self).__dict__["_shared_fields"]
        class AlertSerializer(SharedFieldsSerializer):
            @property
            def headline(self):
                return "ours"
            def get_fields(self):
                return super().get_fields()
    """) == ["SharedFieldsSerializer.fields overrides a framework's property"]


def test_a_private_name_of_another_module_of_the_product_is_found():
    assert _found("""
        from tarsy.api.auth import _token
        from agents.mcp import client
        from .sessions import _claim
        def later():
            from ..streaming import _fanout, publish
        from django.db.models import _something_of_djangos
    """) == ["takes the private name _claim from .sessions", "takes the private name _fanout from ..streaming",
             "takes the private name _token from tarsy.api.auth"]


# ---- the product --------------------------------------------------------------------------------------------

def test_the_product_uses_its_frameworks_through_public_apis_only():
    found = [f"{path.relative_to(ROOT)}:{line}: {what}" for path in python_files(*PRODUCT)
             for line, what in problems(path.read_text())]
    assert found == []
