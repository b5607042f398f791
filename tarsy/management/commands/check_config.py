"""`manage.py check_config [--config-dir DIR] [--offline]`: exit 0 when valid, else 1 with every problem.

Beyond the files, it asks each action server with a `dry_run` for its tools (unless --offline) and checks that
every dry-run argument is one the tool's input schema declares (agents.mcp.dry_run): a misnamed one would make
the real change. A server it cannot reach is a warning, not a failure: the check runs again wherever the server's
tools are listed."""

from __future__ import annotations

import sys
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from agents.config import ConfigError, load_config
from agents.config.registry import TarsyConfig
from agents.mcp.client import MCPError
from agents.mcp.dry_run import dry_run_problems
from agents.mcp.pool import MCPPool

DRY_RUN_CHECK_TIMEOUT_S = 30.0  # a server's start and listing; a stdio server spawned by npx may fetch a package


class Command(BaseCommand):
    help = ("Validate tarsy.yaml, llm-providers.yaml (or their .example files when absent) and skills/*/SKILL.md; "
            "print every problem as `file: key.path: reason`.")
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        parser.add_argument("--config-dir", default=settings.TARSY_CONFIG_DIR or None)
        parser.add_argument("--offline", action="store_true",
                            help="do not start or contact MCP servers (skips the dry-run argument check)")

    def handle(self, *args, config_dir=None, offline=False, **options):
        try:
            config = load_config(config_dir, allow_examples=True)
        except ConfigError as exc:
            for problem in exc.problems:
                self.stderr.write(problem)
            sys.exit(1)
        problems = [] if offline else self._dry_run_problems(config)
        if problems:
            for problem in problems:
                self.stderr.write(problem)
            sys.exit(1)
        where = config_dir or "(built-in defaults only)"
        self.stdout.write(f"Configuration OK: {where}")
        if config_dir:
            # A file that is absent was not read: its part of the configuration is the built-ins.
            present = [name for name in config.file_names.values() if (Path(config_dir) / name).is_file()]
            absent = [name for name in config.file_names.values() if name not in present]
            self.stdout.write(f"  files read: {', '.join(present) or 'none'}")
            if absent:
                self.stdout.write(f"  not present (built-ins used): {', '.join(absent)}")
            examples = [name for name in present if name.endswith(".example")]
            if examples:
                self.stdout.write(f"  note: {', '.join(examples)} checked in place of the missing "
                                  f"{', '.join(n.removesuffix('.example') for n in examples)}; TARSy itself reads "
                                  "only the real files (copy the examples to use them)")
        self.stdout.write(f"  chains: {', '.join(sorted(config.chains))}")
        self.stdout.write(f"  agents: {', '.join(sorted(config.agents))}")
        self.stdout.write(f"  LLM providers: {', '.join(sorted(config.llm_providers))} "
                          f"(default: {config.default_provider})")
        self.stdout.write(f"  MCP servers: {', '.join(sorted(config.mcp_servers))}")
        if config.checks:
            self.stdout.write("  checks: " + ", ".join(
                f"{c.name} ({c.schedule} on {c.chain}{'' if c.enabled else ', disabled'})" for c in config.checks))
        if config.skills:
            self.stdout.write(f"  skills: {', '.join(sorted(config.skills))}")
        for warning in config.warnings():
            self.stdout.write(f"  warning: {warning}")

    def _dry_run_problems(self, config: TarsyConfig) -> list[str]:
        """`tarsy.yaml: mcp_servers.<name>.dry_run.<tool>: why` for each dry run its server's schema refuses."""
        servers = {name: cfg for name, cfg in config.mcp_servers.items() if cfg.dry_run}
        if not servers:
            return []
        pool, problems = MCPPool(), []
        try:
            for name, cfg in sorted(servers.items()):
                try:
                    tools = pool.list_tools(name, cfg, timeout=DRY_RUN_CHECK_TIMEOUT_S)
                except MCPError as exc:
                    self.stdout.write(f"  warning: mcp_servers.{name}.dry_run not checked: cannot list the server's "
                                      f"tools ({exc.message})")
                    continue
                problems += [f"{config.file_names['tarsy']}: mcp_servers.{name}.dry_run.{tool}: {why}"
                             for tool, why in sorted(dry_run_problems(name, cfg, tools).items())]
        finally:
            pool.shutdown()
        return problems
