"""The dashboard in headless Chromium: it loads, shows the numbers the API returns, explains a page.

Needs Debian's ``chromium`` at /usr/bin/chromium (scripts/test.sh installs it); driven by
Playwright's Python package, never a browser Playwright downloads. Fails, never skips, without it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import httpx
import pytest

from freshcrawl.service.rest import create_app
from tests.integration.rest_server import TOKEN, make_service, populate, replan, running

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium and chromium-driver (scripts/test.sh does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


def test_dashboard_shows_the_api_numbers_and_explains_a_page(browser, tmp_path):
    service = make_service(str(tmp_path / "crawl.db"))
    try:
        app = create_app(service, token=TOKEN)
        with running(app) as base:
            now = time.time()
            populate(base, n_hosts=4, per_host=5, now=now)
            replan(service, now)
            history = app.state.history
            for t in (now - 3000, now - 2000, now - 1000):
                history.sample(now=t)  # a few samples to draw a line through
            status = httpx.get(base + "/status").json()
            hosts = httpx.get(base + "/hosts", params={"limit": 15}).json()
            ex = httpx.get(base + "/explain", params={"url": "http://h1.test/p0"}).json()

            page = browser.new_page(viewport={"width": 1280, "height": 1100})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            outside: list[str] = []
            page.on("request", lambda r: None if r.url.startswith(base) else outside.append(r.url))
            page.goto(base + "/")
            page.wait_for_function("document.getElementById('n-pages').dataset.value !== undefined")

            assert page.text_content("#n-pages") == str(status["n_pages"]) == "20"
            assert page.text_content("#n-hosts") == str(status["hosts"])
            assert page.text_content("#freshness") == f"{100 * status['estimated_freshness']:.1f}%"
            assert float(page.get_attribute("#freshness", "data-value")) == pytest.approx(
                status["estimated_freshness"])
            assert page.text_content("#budget-in-use") == f"{status['budget_in_use']:,.0f} / {status['budget']:,.0f}"
            n_visits = sum(status["observations"].values())
            assert page.text_content("#n-visits") == f"{n_visits} ({status['observations']['changed']})"
            # plots: a freshness line through the samples, a bar per host
            assert page.locator("#freshness-svg path").count() == 1
            assert page.locator("#freshness-svg circle").count() >= 4
            assert page.locator("#hosts-svg rect.host-bar").count() == len(hosts["hosts"]) == 4
            over = httpx.get(base + "/overdue", params={"limit": 20}).json()
            assert page.locator("#overdue-table tbody tr").count() == max(1, len(over["pages"]))

            page.fill("#explain-url", "http://h1.test/p0")
            page.click("#explain-form button")
            page.wait_for_selector("#explain-delta")
            assert page.is_visible("#explain-panel")
            assert page.text_content("#explain-title") == "http://h1.test/p0"
            delta = page.text_content("#explain-delta")
            lo, hi = ex["delta_interval"]
            assert delta.startswith(f"{ex['delta_hat']:.4g}"[:4]) and "95% interval" in delta
            assert page.locator("#explain-observations tbody tr").count() == len(ex["observations"]) == 3
            assert page.locator("#observations-svg circle").count() == 3
            assert "host cap" in page.text_content("#explain-limits")
            post = ex["rate_posterior"]  # how uncertain the page's rate is, and what the plan made of it
            assert page.text_content("#explain-posterior").startswith(f"{post['mean']:.4g}"[:4])
            assert "host prior" in page.text_content("#explain-posterior")
            assert page.text_content("#explain-plan") == post["summary"]
            shot = Path(os.environ.get("FRESHCRAWL_SCREENSHOT_DIR", tmp_path)) / "dashboard.png"
            page.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 10_000

            # an unknown URL: the panel says so instead of failing
            page.fill("#explain-url", "http://nowhere.test/")
            page.click("#explain-form button")
            page.wait_for_selector("#explain-error")
            assert "is not in crawl" in page.text_content("#explain-error")
            assert not errors, errors
            assert not outside, outside  # nothing fetched from anywhere else
            page.close()
    finally:
        service.close()
