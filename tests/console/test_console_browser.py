"""The console in a real browser: headless Debian Chromium (``/usr/bin/chromium`` driven through
``/usr/bin/chromedriver`` by Selenium) over the demo's stores, with hostile names in the fake ERPs.

Every page is checked against the stores it shows, for errors in the browser's console and for a
label on every form field; the erase flow runs end to end and the Audit page shows it as stored. A
name or id with markup shows as text and runs nothing. ``CONSOLE_SCREENSHOTS=DIR`` saves a PNG of
each page there (the docs' screenshots are made so).
"""

from __future__ import annotations

import os
import re
import shlex
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import pytest
from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from connector.testing.hostile import HOSTILE_ID, HOSTILE_NAME

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
ACUMATICA = "acme-acumatica"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's stores (20 customers per fake ERP), with hostile names."""
    data = tmp_path_factory.mktemp("console-demo") / "demo"
    subprocess.run(
        [sys.executable, "-m", "connector.cli", "demo", "--data-dir", str(data), "--customers", "20",
         "--hostile-names"],
        check=True, capture_output=True, timeout=180, env=_env(),
    )  # fmt: skip
    return data


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONNECTOR_")}
    return {**env, "CONNECTOR_CONVERSATIONS__ENABLED": "false", **extra}


def _config(demo: Path) -> str:
    return str(demo / "mcp-server.toml")


@pytest.fixture(scope="module")
def console(demo: Path) -> Iterator[str]:
    """``connector console`` on a free loopback port; yields its base URL."""
    process = subprocess.Popen(
        [sys.executable, "-m", "connector.cli", "console", "--port", "0"],
        stderr=subprocess.PIPE, text=True, env=_env(CONNECTOR_CONFIG_FILE=_config(demo)),
    )  # fmt: skip
    assert process.stderr is not None
    line = process.stderr.readline()
    found = re.search(r"serving (http://\S+)/", line)
    assert found, line
    try:
        yield found.group(1)
    finally:
        process.terminate()
        process.wait(timeout=20)


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    assert CHROMIUM.exists() and CHROMEDRIVER.exists(), (
        "apt-get install chromium chromium-driver (.ci/run does)"
    )
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1400,1000",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def db(demo: Path) -> sqlite3.Connection:
    return sqlite3.connect(demo / "connector.sqlite3")


def visit(browser: WebDriver, url: str, shot: str | None = None) -> None:
    """Open a page and check it: no error in the browser console, nothing hostile ran, a label for
    every form field; ``shot`` names its screenshot."""
    browser.get(url)
    _check(browser, shot)


def _check(browser: WebDriver, shot: str | None) -> None:
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018
    assert browser.execute_script("return window.hostile === undefined")
    for field in browser.find_elements(By.CSS_SELECTOR, "input:not([type=hidden]), select, textarea"):
        field_id = field.get_attribute("id")
        assert field_id, field.get_attribute("outerHTML")
        assert browser.find_elements(By.CSS_SELECTOR, f'label[for="{field_id}"]'), field_id
    folder = os.environ.get("CONSOLE_SCREENSHOTS")
    if shot and folder:
        height = browser.execute_script("return document.body.scrollHeight")
        browser.set_window_size(1400, min(max(height + 40, 600), 2400))
        Path(folder).mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(Path(folder) / f"{shot}.png"))
        browser.set_window_size(1400, 1000)


def text(browser: WebDriver, css: str) -> str:
    return browser.find_element(By.CSS_SELECTOR, css).text


def test_every_page_shows_the_stores_escaped_and_erases_end_to_end(
    demo: Path, console: str, browser: WebDriver
) -> None:
    with db(demo) as conn:
        streams = conn.execute(
            "SELECT COUNT(*) FROM (SELECT DISTINCT tenant, stream FROM sync_run)"
        ).fetchone()[0]
        last_customer_run = conn.execute(
            "SELECT id, records_read FROM sync_run WHERE tenant = ? AND stream = 'Customer'"
            " ORDER BY id DESC LIMIT 1",
            (ACUMATICA,),
        ).fetchone()
        customer, session = conn.execute(
            "SELECT customer_id, session_id FROM work_session WHERE tenant = ? ORDER BY id LIMIT 1",
            (ACUMATICA,),
        ).fetchone()
        name = conn.execute(
            "SELECT name FROM party WHERE tenant = ? AND kind = 'customer' AND external_id = ?",
            (ACUMATICA, customer),
        ).fetchone()[0]
        open_docs = conn.execute(
            "SELECT COUNT(*) FROM document WHERE tenant = ? AND party_kind = 'customer'"
            " AND party_external_id = ? AND is_open AND deleted_at IS NULL",
            (ACUMATICA, customer),
        ).fetchone()[0]
        cases = conn.execute(
            "SELECT case_id FROM episodic_entry WHERE tenant = ? AND customer_id = ?", (ACUMATICA, customer)
        ).fetchall()
        fact = conn.execute("SELECT content FROM learned_fact WHERE customer_id = ?", (customer,)).fetchone()[
            0
        ]
        hostile = conn.execute(
            "SELECT COUNT(*) FROM party WHERE kind = 'customer' AND name LIKE '%<script>%'"
        ).fetchone()[0]
        other = conn.execute(
            "SELECT customer_id FROM episodic_entry WHERE tenant = ? AND customer_id != ? LIMIT 1",
            (ACUMATICA, customer),
        ).fetchone()[0]
    assert hostile == 3  # one renamed in each ERP, one with a hostile id too

    # Sync: one row per stream, the last run's counts as stored, a chart each; a run's detail
    visit(browser, f"{console}/sync", "sync")
    rows = browser.find_elements(By.CSS_SELECTOR, "#streams tbody tr")
    assert len(rows) == streams
    row = browser.find_element(
        By.CSS_SELECTOR, f'#streams tr[data-tenant="{ACUMATICA}"][data-stream="Customer"]'
    )
    assert row.find_element(By.CSS_SELECTOR, "td.read").text == f"{last_customer_run[1]:,}"
    assert len(browser.find_elements(By.CSS_SELECTOR, "#streams svg.chart")) == streams
    row.find_element(By.LINK_TEXT, f"run {last_customer_run[0]}").click()
    _check(browser, "sync-run")
    assert text(browser, 'td[data-field="records_read"]') == str(last_customer_run[1])

    # Customers: a search by name finds the hostile customers, shown as text
    visit(browser, f"{console}/customers?" + urlencode({"q": "traders"}), "customers")
    names = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#found td.name")]
    assert HOSTILE_NAME in names and f"{HOSTILE_NAME} (id)" in names
    assert HOSTILE_ID in [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#found td a")]
    browser.find_element(By.LINK_TEXT, HOSTILE_ID).click()
    _check(browser, None)
    assert (
        text(browser, "#customer-id") == HOSTILE_ID
        and text(browser, "#customer-name") == f"{HOSTILE_NAME} (id)"
    )

    # One customer's memory, against the stores
    visit(browser, f"{console}/customer?" + urlencode({"tenant": ACUMATICA, "id": customer}), "customer")
    assert text(browser, "#customer-name") == name
    assert f"Open documents ({open_docs})" in text(browser, "#documents h2")
    shown_cases = {
        e.get_attribute("data-case") for e in browser.find_elements(By.CSS_SELECTOR, "#cases tr[data-case]")
    }
    assert shown_cases == {c for (c,) in cases}
    assert browser.find_elements(By.CSS_SELECTOR, f'#sessions details[data-session="{session}"]')
    assert fact in text(browser, "#facts")
    assert text(browser, "#not-erased") == "Not erased."

    # Context playground: the same text the CLI line prints
    query = "Why was I charged twice?"
    visit(
        browser,
        f"{console}/context?"
        + urlencode({"tenant": ACUMATICA, "customer": customer, "query": query, "session": session}),
    )
    browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    _check(browser, "context")
    cli = text(browser, "#cli")
    assert cli.startswith(f"connector context {customer} ")
    page_text = browser.find_element(By.ID, "context-text").get_attribute("textContent")
    env = _env(CONNECTOR_CONFIG_FILE=_config(demo))
    printed = subprocess.run(
        [sys.executable, "-m", "connector.cli", *shlex.split(cli)[1:]],
        check=True, capture_output=True, text=True, timeout=120, env=env,
    ).stdout  # fmt: skip
    assert _without_clock(page_text) == _without_clock(printed)
    assert browser.find_elements(By.CSS_SELECTOR, '#sections tr[data-section="past_cases"]')
    hit = browser.find_elements(By.CSS_SELECTOR, '#items tr[data-source^="case:"] td.lexical')
    assert hit and all(re.fullmatch(r"\d+\.\d{3}", h.text) for h in hit)

    # Erase: a wrong confirmation erases nothing; the right one erases and reports
    visit(browser, f"{console}/erase?" + urlencode({"tenant": ACUMATICA, "customer": other}), "erase")
    browser.find_element(By.ID, "confirm").send_keys(other + "X")
    browser.find_element(By.CSS_SELECTOR, "#erase-form button").click()
    _check(browser, None)
    assert "Not erased: type the customer id" in text(browser, "#erase-form p.error")
    with db(demo) as conn:
        assert (
            conn.execute("SELECT COUNT(*) FROM episodic_entry WHERE customer_id = ?", (other,)).fetchone()[0]
            > 0
        )
    browser.find_element(By.ID, "confirm").clear()
    browser.find_element(By.ID, "confirm").send_keys(other)
    browser.find_element(By.CSS_SELECTOR, "#erase-form button").click()
    _check(browser, "erase-report")
    assert text(browser, '#report tr[data-store="episodic_entries"] td.num') != "0"
    with db(demo) as conn:
        assert (
            conn.execute("SELECT COUNT(*) FROM episodic_entry WHERE customer_id = ?", (other,)).fetchone()[0]
            == 0
        )
    visit(browser, f"{console}/customer?" + urlencode({"tenant": ACUMATICA, "id": other}))
    assert "erased" in text(browser, "#erasure")

    # Audit: the form's filters give the events as stored, newest first (the erase just done too)
    visit(browser, f"{console}/audit", "audit")
    browser.find_element(By.ID, "action").send_keys("console.erase")
    browser.find_element(By.ID, "customer").send_keys(other)
    browser.find_element(By.CSS_SELECTOR, "form[role=search] button[type=submit]").click()
    _check(browser, None)
    with db(demo) as conn:
        stored = conn.execute(
            "SELECT who, action, tenant, customer_id, outcome FROM audit_event"
            " WHERE action = 'console.erase' AND customer_id = ? ORDER BY at DESC, id DESC",
            (other,),
        ).fetchall()
    shown = [
        tuple(cell.text for cell in row.find_elements(By.CSS_SELECTOR, "td")[1:])
        for row in browser.find_elements(By.CSS_SELECTOR, "#events tbody tr")
    ]
    assert shown == [tuple(v or "—" for v in event) for event in stored]
    assert ("loopback", "console.erase", ACUMATICA, other, "ok") in shown


def _without_clock(context: str) -> str:
    """The context without its first section's clock line (a minute may pass between the builds)."""
    return re.sub(r"\d{4}-\d\d-\d\d \(\w+\), \d\d:\d\d UTC", "TODAY", context).strip()
