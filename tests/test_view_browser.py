"""``recordio view`` in a real browser: Debian's headless Chromium driven by Selenium through Debian's
chromedriver, against the app served by uvicorn on 127.0.0.1 (skipped without them)."""

import os
import re
import shutil
import socket
import threading
import time
from urllib.parse import quote

import pytest

pytestmark = pytest.mark.browser

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
    pytest.skip("needs Debian's chromium and chromium-driver", allow_module_level=True)
pytest.importorskip("selenium")
pytest.importorskip("uvicorn")
pytest.importorskip("starlette")

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

import recordio
from recordio.tools.__main__ import main
from test_view import ROWS, SCRIPT, write_dataset

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-dev-shm-usage", "--window-size=1280,900"]


class Served:
    """The app for ``path`` served by uvicorn in a thread on a free port of 127.0.0.1."""

    def __init__(self, path, **options):
        import uvicorn

        from recordio.view import create_app

        self.app = create_app(path, **options)
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(self.app, log_level="warning", access_log=False))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, daemon=True)
        self.thread.start()

    def close(self):
        self.server.should_exit = True
        self.thread.join(30)


@pytest.fixture(scope="module")
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ARGS:
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return write_dataset(str(tmp_path_factory.mktemp("browse")))


@pytest.fixture(scope="module")
def site(dataset):
    served = Served(dataset)
    yield served
    served.close()


def wait(driver, test, seconds=30):
    return WebDriverWait(driver, seconds, poll_frequency=0.1).until(lambda d: test(d))


def arrive(driver, navigate):
    """Runs ``navigate`` (a ``get`` or a click that leaves the page) and waits until the next document
    has replaced the current one and finished loading: chromedriver can return from ``get`` (and a
    click returns at once) while the old document is still shown or the new one is still parsing,
    which on a busy machine left a test looking at a page without its rows."""
    driver.execute_script("document.documentElement.dataset.left = '1'")
    navigate()
    wait(driver, lambda d: d.execute_script(
        "return document.readyState === 'complete' && document.documentElement.dataset.left === undefined"))


def visit(driver, url):
    arrive(driver, lambda: driver.get(url))


def text(driver, css):
    return driver.find_element(By.CSS_SELECTOR, css).text


def facet_link(driver, field, value):
    """The link of ``value`` in ``field``'s facet, once the page has loaded the facets."""
    xpath = f"//section[@data-field='{field}']//a[@class='facet-value' and text()='{value}']"
    return wait(driver, lambda d: (d.find_elements(By.XPATH, xpath) or [None])[0])


def test_the_overview_loads_and_verifies(browser, site):
    visit(browser, site.url + "/")
    assert text(browser, "#total-rows") == "60"
    fields = [row.find_element(By.TAG_NAME, "td").text for row in browser.find_elements(By.CSS_SELECTOR, "#schema tbody tr")]
    assert fields == list(recordio.FileReader(site.app.state.source.path).schema)
    assert len(browser.find_elements(By.CSS_SELECTOR, "#shards tbody tr")) == 2
    browser.find_element(By.ID, "verify").click()
    wait(browser, lambda d: text(d, "#verify-status").startswith(("OK", "problems")))
    assert text(browser, "#verify-status") == "OK: 2 shard(s) verified"
    assert browser.execute_script("const p = document.getElementById('verify-progress'); return p.value === p.max")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#verify-results tbody tr")) == 2


@pytest.mark.parametrize("view", ["", "?view=grid"])
def test_thumbnails_decode(browser, site, view):
    visit(browser, site.url + "/rows" + view)
    assert len(browser.find_elements(By.CSS_SELECTOR, "img.thumb")) == 50
    wait(browser, lambda d: d.execute_script("return [...document.images].every(i => i.complete)"))
    widths = browser.execute_script("return [...document.querySelectorAll('img.thumb')].map(i => i.naturalWidth)")
    assert all(w > 0 for w in widths), widths


@pytest.mark.parametrize("field, op, value", [("label", "=", "3"), ("split", "=", "val"), ("label", ">=", "5"),
                                              ("label", "in", "1,2")])
def test_a_filter_gives_the_count_recordio_count_gives(browser, site, dataset, capsys, field, op, value):
    visit(browser, site.url + "/rows")
    Select(browser.find_element(By.ID, "filter-field")).select_by_visible_text(field)
    Select(browser.find_element(By.ID, "filter-op")).select_by_visible_text(op)
    browser.find_element(By.ID, "filter-value").send_keys(value)
    arrive(browser, browser.find_element(By.ID, "filter-add").click)
    assert "where=" in browser.current_url
    shown = int(text(browser, "#match-count"))
    if op == "=":
        assert main(["count", dataset, "--where", f"{field}={value}"]) == 0
        assert shown == int(capsys.readouterr().out)
    keep = {">=": lambda r: r[field] >= int(value), "in": lambda r: str(r[field]) in value.split(","),
            "=": lambda r: str(r[field]) == value}[op]
    assert shown == sum(map(keep, ROWS))
    rows = [int(e.text) for e in browser.find_elements(By.CSS_SELECTOR, "a.row-link")]
    assert rows == [i for i, r in enumerate(ROWS) if keep(r)][:50]


def test_a_facet_click_filters(browser, site):
    visit(browser, site.url + "/rows")
    link = facet_link(browser, "label", "4")
    count = int(link.find_element(By.XPATH, "..").text.split()[-1])
    arrive(browser, link.click)
    assert "where=label%3D4" in browser.current_url
    assert int(text(browser, "#match-count")) == count == sum(r["label"] == 4 for r in ROWS)
    labels = {e.text for e in browser.find_elements(By.CSS_SELECTOR, "#rows td[data-field=label]")}
    assert labels == {"4"}
    arrive(browser, facet_link(browser, "split", "val").click)
    assert "where=split%3Dval" in browser.current_url
    assert int(text(browser, "#match-count")) == sum(r["label"] == 4 and r["split"] == "val" for r in ROWS)


def test_the_row_url_shows_that_row_and_keeps_the_filter(browser, site):
    visit(browser, site.url + "/row/41?where=" + quote("label=6"))
    assert text(browser, "#row-title") == "Row 41"
    cells = {tr.find_element(By.TAG_NAME, "th").text: tr.find_element(By.TAG_NAME, "td")
             for tr in browser.find_elements(By.CSS_SELECTOR, "#row tr")}
    assert cells["name"].text == "row 41" and cells["label"].text == str(ROWS[41]["label"])
    assert browser.find_element(By.ID, "next").get_attribute("href").endswith("/row/42?where=label%3D6")
    arrive(browser, browser.find_element(By.ID, "back").click)
    assert "/rows?" in browser.current_url
    assert int(text(browser, "#match-count")) == sum(r["label"] == 6 for r in ROWS)
    visit(browser, site.url + "/rows")
    browser.find_element(By.ID, "jump-row").send_keys("17")
    arrive(browser, browser.find_element(By.ID, "jump-go").click)
    assert browser.current_url.endswith("/row/17")
    assert text(browser, "#row-title") == "Row 17"


@pytest.mark.parametrize("url", ["/rows", "/row/3", "/rows?view=grid", "/rows?where=" + quote("split=<b>test</b>")])
def test_a_script_string_never_runs(browser, site, url):
    visit(browser, site.url + url)
    wait(browser, lambda d: d.execute_script("return document.readyState") == "complete"
         and not d.find_elements(By.CSS_SELECTOR, "#facets[data-src]"))
    assert browser.execute_script("return window.__pwned === undefined && window.__svg === undefined")
    if url == "/row/3":
        assert SCRIPT in text(browser, "#row")
    assert not browser.find_elements(By.TAG_NAME, "b")


def test_a_remote_dataset_pages(browser, tmp_path):
    from recordio.tools.remote_servers import RangeServer

    folder = tmp_path / "remote"
    write_dataset(str(folder))
    with RangeServer(folder) as http:
        site = Served(http.url + "/data.mindrecord0", cache_dir=str(tmp_path / "cache"))
        try:
            visit(browser, site.url + "/rows?limit=20")
            assert text(browser, "#match-count") == "60"
            arrive(browser, browser.find_element(By.ID, "next").click)
            assert "offset=20" in browser.current_url
            assert [int(e.text) for e in browser.find_elements(By.CSS_SELECTOR, "a.row-link")] == list(range(20, 40))
            wait(browser, lambda d: d.execute_script("return [...document.images].every(i => i.complete)"))
            assert all(w > 0 for w in browser.execute_script(
                "return [...document.querySelectorAll('img.thumb')].map(i => i.naturalWidth)"))
            arrive(browser, facet_link(browser, "label", "2").click)
            assert "where=label%3D2" in browser.current_url
            assert int(text(browser, "#match-count")) == sum(r["label"] == 2 for r in ROWS)
        finally:
            site.close()
