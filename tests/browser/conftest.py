"""Browser tests: Debian's Chromium driven by Playwright against uvicorn (as in production) + a real Celery worker.

Chromium comes from the OS (`apt-get install chromium`); Playwright cannot download browsers here.
Without /usr/bin/chromium these tests skip, unless TARSY_REQUIRE_SERVICES=1 (then they fail).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.integration.conftest import config_dir, scripted_config, worker  # noqa: F401  (shared fixtures)
from tests.support.processes import Proc, start_server

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
ARTIFACTS = Path(__file__).parent / "artifacts"
TOOLS_SERVER = Path(__file__).resolve().parents[1] / "fakes" / "mcp_servers" / "tools_server.py"


def pytest_collection_modifyitems(config, items):
    if os.path.exists(CHROMIUM):
        return
    for item in items:
        if item.get_closest_marker("browser"):
            if os.environ.get("TARSY_REQUIRE_SERVICES") == "1":
                item.fixturenames.insert(0, "_chromium_required")
            else:
                item.add_marker(pytest.mark.skip(reason=f"needs Chromium at {CHROMIUM} (apt-get install chromium)"))


@pytest.fixture
def _chromium_required():
    pytest.fail(f"TARSY_REQUIRE_SERVICES=1 but {CHROMIUM} is missing (apt-get install chromium)")


def tools_server_config() -> dict:
    """The test MCP server (echo, add, …) over stdio, for agents that call tools."""
    return {"transport": {"type": "stdio", "command": sys.executable, "args": [str(TOOLS_SERVER), "stdio"]}}


@pytest.fixture
def web(tmp_path, config_dir):  # noqa: F811
    """Factory: the production web server serving tarsy.asgi on a free port; returns the base URL once it answers."""
    started: list[Proc] = []

    def start() -> str:
        proc, base = start_server(tmp_path, config_dir)
        started.append(proc)
        return base

    yield start
    for proc in started:
        proc.stop()


@pytest.fixture
def browser():
    """A headless Chromium; pages record console errors and uncaught exceptions in `page.problems`."""
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread: tests read state through the API, not the ORM.
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield chromium
        finally:
            chromium.close()


def open_page(browser, width: int = 1280, height: int = 800):
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.problems = []
    page.on("console", lambda m: m.type == "error" and not m.text.startswith("Failed to load resource")
            and page.problems.append(f"console: {m.text}"))
    page.on("response", lambda r: r.status >= 400 and page.problems.append(f"HTTP {r.status}: {r.url}"))
    page.on("pageerror", lambda e: page.problems.append(f"pageerror: {e}"))
    page.on("dialog", lambda d: (page.problems.append(f"dialog: {d.message}"), d.dismiss()))
    page.set_default_timeout(20_000)
    return page


def wait_until(page, expression: str, arg=None, timeout: float = 20_000) -> None:
    """Until a JavaScript function of `arg` is truthy in the page. Playwright's wait_for_function compiles its
    predicate with `new Function`, which the dashboard's Content-Security-Policy (no 'unsafe-eval') refuses;
    `evaluate` runs through the DevTools protocol, outside the page's policy."""
    from tests.support.processes import wait_for

    wait_for(lambda: page.evaluate(expression, arg), timeout=timeout / 1000, interval=0.1, message=expression)


def shot(page, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
