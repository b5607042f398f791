"""`manage.py eval`: run the scenario suite as real sessions and score the investigations."""

from __future__ import annotations

import json
import logging
import sys
import time
from contextlib import nullcontext
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from agents.config import ConfigError, load_config
from evals.database import eval_database
from evals.fixtures import ScenarioError
from evals.report import ProgressBar, json_lines, summary, table
from evals.runconfig import REFERENCE, write_run_config
from evals.runner import in_process_worker, run
from evals.scenario import load_all, select
from tarsy.config import set_config


class Command(BaseCommand):
    help = ("Run the eval scenarios (evals/scenarios) as real sessions and score them. Without --provider each "
            "scenario plays its scripted reference run, which must pass; with --provider NAME that LLM provider "
            "investigates every scenario.")

    def add_arguments(self, parser):
        parser.add_argument("--provider", default=REFERENCE,
                            help=f"an LLM provider of the configuration, e.g. demo or google-default "
                                 f"(default: {REFERENCE}, each scenario's reference run)")
        parser.add_argument("--scenario", action="append", metavar="GLOB",
                            help="scenario names (glob) under evals/scenarios, or a scenario folder, or a folder of "
                                 "scenarios; repeatable (default: all)")
        parser.add_argument("--repeat", type=int, default=1, metavar="K", help="runs per scenario (pass@k, pass^k)")
        parser.add_argument("--concurrency", type=int, default=4, metavar="N", help="sessions in flight")
        parser.add_argument("--json", dest="json_file", metavar="FILE",
                            help="write one JSON line per run, then the totals")
        parser.add_argument("--config-dir", metavar="DIR",
                            help="where to write the run's configuration (default: DATA_DIR/evals/config-PROVIDER)")
        parser.add_argument("--no-worker", action="store_true",
                            help="run no worker in this process: external workers started with "
                                 "TARSY_CONFIG_DIR=<config dir> run the sessions")
        parser.add_argument("--judge", default="", metavar="PROVIDER",
                            help="also judge each run with this LLM provider and the product's scoring rubric, and "
                                 "report its agreement with the deterministic verdict (which stays the pass/fail)")
        parser.add_argument("--into-main-db", action="store_true",
                            help="write the eval sessions into the main database (default: a database of their own, "
                                 "<name>_eval, created and migrated when missing)")
        parser.add_argument("--run-timeout", type=float, default=None, metavar="S",
                            help="score a session as failed when unfinished this long (default: session timeout + 60)")

    def handle(self, *args, provider, scenario, repeat, concurrency, json_file, config_dir, no_worker, run_timeout,
               into_main_db, judge, **options):
        if repeat < 1 or concurrency < 1:
            raise CommandError("--repeat and --concurrency must be at least 1")
        directory = Path(config_dir) if config_dir else settings.DATA_DIR / "evals" / f"config-{provider}"
        try:
            scenarios = load_all(select(scenario))
            plan = write_run_config(directory, scenarios, provider=provider, concurrency=concurrency,
                                    base_dir=settings.TARSY_CONFIG_DIR or None)
            config = load_config(plan.config_dir)
        except (ScenarioError, ConfigError) as exc:
            raise CommandError("\n".join(exc.problems)) from exc
        if judge and judge not in config.llm_providers:
            known = ", ".join(sorted(config.llm_providers))
            raise CommandError(f"--judge {judge}: unknown LLM provider (known: {known})")
        set_config(config)
        main = connections["default"].settings_dict["NAME"]
        with nullcontext(main) if into_main_db else eval_database() as database:
            self.stderr.write(f"Eval sessions go to database {database}")
            self._run(plan, config, provider=provider, repeat=repeat, concurrency=concurrency, json_file=json_file,
                      no_worker=no_worker, run_timeout=run_timeout, database=str(database),
                      scenarios=len(scenarios), verbosity=options["verbosity"], judge=judge)

    def _run(self, plan, config, *, provider, repeat, concurrency, json_file, no_worker, run_timeout, database,
             scenarios, verbosity, judge):
        if verbosity < 2:  # the table and the progress bar say what matters; -v 2 shows the pipeline
            logging.getLogger("tarsy").setLevel(logging.WARNING)
        if no_worker:
            self.stderr.write(f"Waiting for workers started with TARSY_CONFIG_DIR={plan.config_dir} on database "
                              f"{database}")
        timeout = run_timeout or config.defaults.session_timeout + 60
        with nullcontext() if no_worker else in_process_worker(concurrency), \
                ProgressBar(len(plan.plans) * repeat, f"eval {provider}") as bar:
            started = time.monotonic()
            results = run(plan, repeat=repeat, concurrency=concurrency, run_timeout=timeout, on_result=bar.advance,
                          judge_provider=judge)
            wall_s = time.monotonic() - started
        totals = summary(results, scenarios=scenarios, repeat=repeat, provider=provider, wall_s=wall_s,
                         database=database, judge=judge)
        self.stdout.write(table(results, totals, terminal=sys.stdout.isatty()), ending="")
        if json_file:
            Path(json_file).write_text(json_lines(results, totals))
        self.stdout.write(json.dumps(totals))
        if provider == REFERENCE and totals["passed"] != totals["runs"]:
            raise CommandError("a reference run did not pass: the scenario, the harness or the pipeline is broken")
