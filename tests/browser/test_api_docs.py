"""/api/docs/ in a real browser: Swagger UI draws the API with no console error (its Content-Security-Policy
included) and the server logs no schema warning."""

from __future__ import annotations

import pytest

from tests.browser.conftest import open_page, shot, wait_until
from tests.support.configdir import write_config

pytestmark = [pytest.mark.services, pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_api_docs_draw_without_errors(web, browser, config_dir):
    write_config(config_dir)
    base = web()
    page = open_page(browser)
    page.goto(f"{base}/api/docs/")
    wait_until(page, "() => document.querySelectorAll('.opblock').length > 20")
    shot(page, "api-docs")
    assert "/api/v1/alerts" in page.content()
    assert page.problems == []
