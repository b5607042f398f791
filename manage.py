#!/usr/bin/env python
"""Django's command-line utility for TARSy."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tarsy.settings")
    if sys.argv[1:2] == ["serve"]:
        os.environ["TARSY_ASGI"] = "1"  # a web process: settings give it pooled database connections
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
