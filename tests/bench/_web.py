"""daphne with an optional database-connection override (`python -m tests.bench._web <daphne args>`).

TARSY_BENCH_WEB_CONN_MAX_AGE=N sets CONN_MAX_AGE of the web process only, to compare the shipped
persistent connections with per-request ones under concurrent load; unset, this is plain daphne.
"""

from __future__ import annotations

import os


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tarsy.settings")
    override = os.environ.get("TARSY_BENCH_WEB_CONN_MAX_AGE")
    if override is not None:
        from django.conf import settings

        settings.DATABASES["default"]["CONN_MAX_AGE"] = int(override)
    from daphne.cli import CommandLineInterface

    CommandLineInterface.entrypoint()


if __name__ == "__main__":
    main()
