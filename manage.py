#!/usr/bin/env python
"""Django's command-line utility for TARSy."""

import os
import sys

# The commands that serve the web run with the web process's settings (tarsy/settings/web.py); every other
# command with the settings all processes share.
WEB_COMMANDS = ("serve", "runserver")


def main() -> None:
    web = sys.argv[1:2] and sys.argv[1] in WEB_COMMANDS
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tarsy.settings.web" if web else "tarsy.settings.base")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
