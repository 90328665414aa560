"""The Snakemake report as a person sees it: rendered in headless Chromium.

Chromium is driven through the DevTools protocol over ``--remote-debugging-pipe``
(JSON messages separated by NUL bytes on file descriptors 3 and 4), so console
messages arrive with their level and uncaught exceptions as events — no
browser-automation package needed.  Skips, saying why, without a Chromium.
"""

import base64
import contextlib
import io
import json
import os
import re
import select
import shutil
import subprocess
import time

import numpy as np
import pytest
from PIL import Image

from conftest import TINY, run_snakemake, write_config
from locpriv.frontier import TRUST_MODELS

pytestmark = [pytest.mark.workflow, pytest.mark.heavy]

CHROMIUM = next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)
WIDTH, HEIGHT = 1280, 900


class Browser:
    """One headless Chromium page, spoken to over the DevTools pipe."""

    def __init__(self, profile, timeout: float = 60.0):
        to_browser, self._write = os.pipe()
        self._read, from_browser = os.pipe()

        def wire():  # in the child: our pipe ends become its fds 3 (commands in) and 4 (replies out)
            high_in, high_out = os.dup2(to_browser, 100), os.dup2(from_browser, 101)
            os.dup2(high_in, 3)
            os.dup2(high_out, 4)

        self.proc = subprocess.Popen(
            [
                CHROMIUM,
                "--headless",
                "--disable-gpu",
                "--no-sandbox",
                "--no-first-run",
                "--remote-debugging-pipe",
                "--disable-background-networking",
                "--disable-dev-shm-usage",
                "--hide-scrollbars",
                f"--user-data-dir={profile}",
                "about:blank",
            ],
            preexec_fn=wire,
            close_fds=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser)
        os.close(from_browser)
        self.timeout, self._buffer, self._id, self.events = timeout, b"", 0, []
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable", page=True)
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False},
            page=True,
        )

    def _message(self, deadline):
        while b"\0" not in self._buffer:
            if not select.select([self._read], [], [], max(0.0, deadline - time.monotonic()))[0]:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self._read, 1 << 20)
            if not chunk:
                raise EOFError("Chromium closed the DevTools pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method, params=None, page=False):
        self._id += 1
        message = {"id": self._id, "method": method, "params": params or {}}
        if page:
            message["sessionId"] = self.session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._message(deadline)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
            self.events.append(reply)

    def wait_for(self, method):
        deadline = time.monotonic() + self.timeout
        while not any(e.get("method") == method for e in self.events):
            self.events.append(self._message(deadline))

    def evaluate(self, expression):
        result = self.send(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}, page=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression!r}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def poll(self, expression, what, timeout=30.0):
        deadline = time.monotonic() + timeout
        while not self.evaluate(expression):
            if time.monotonic() > deadline:
                raise AssertionError(f"the report never showed {what}")
            time.sleep(0.25)

    def screenshot(self) -> np.ndarray:
        data = self.send("Page.captureScreenshot", {"format": "png"}, page=True)["data"]
        return np.asarray(Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB"), dtype=float) / 255

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and browser log errors seen so far."""
        out = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
                out.append("console: " + " ".join(str(a.get("value", a.get("description"))) for a in params["args"]))
            elif method == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                out.append("exception: " + details.get("exception", {}).get("description", details["text"]))
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                out.append(f"log: {params['entry']['text']} ({params['entry'].get('url', '')})")
        return out

    def close(self):
        with contextlib.suppress(EOFError, TimeoutError):
            self.send("Browser.close")
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._read)
        os.close(self._write)


def _not_blank(pixels: np.ndarray) -> tuple[float, float]:
    """(fraction of pixels that are not near-white, std of the grey levels)."""
    grey = pixels.mean(axis=2)
    return float((grey < 0.9).mean()), float(grey.std())


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    if CHROMIUM is None:
        pytest.skip("no Chromium on PATH (Debian: apt-get install chromium; .ci/run installs it when it can)")
    wd = tmp_path_factory.mktemp("report")
    config = {
        **TINY,
        "plots": {"dpi": 80},
        "experiments": {
            "density": {
                "datasets": ["gauss9"],
                "reps": 1,
                "mechanisms": {
                    "fedkde": {"n": [600], "h": 0.55},
                    "zero": {"n": [600]},
                    "privtree": {"n": [600], "epsilon": [2]},
                    "dp_heatmap": {"n": [600], "epsilon": [2]},
                },
            }
        },
    }
    write_config(wd, config)
    run_snakemake(wd, "--cores", "2")
    made = run_snakemake(wd, "--report", "report.html")
    (wd / "report.log").write_text(made.stdout + made.stderr)
    return wd


def test_report_opens_on_the_recommendation_without_console_errors(report):
    """The first page a reader sees holds the answer: the recommendation table, in view."""
    browser = Browser(report / "profile")
    try:
        browser.send("Page.navigate", {"url": (report / "report.html").as_uri()}, page=True)
        browser.wait_for("Page.loadEventFired")
        browser.poll("document.querySelector('table.lp-table') !== null", "the recommendation table")
        text = browser.evaluate("document.body.innerText")
        table = browser.evaluate("""(() => {
            const t = document.querySelector('table.lp-table'), r = t.getBoundingClientRect();
            return {top: r.top, left: r.left, bottom: r.bottom, right: r.right, rows: t.tBodies[0].rows.length,
                    head: [...t.tHead.rows[0].cells].map(c => c.textContent.trim()),
                    first: [...t.tBodies[0].rows[0].cells].map(c => c.innerText.trim())}; })()""")
        messages = browser.evaluate("document.querySelectorAll('.system-message').length")
        landing = browser.screenshot()
        # kept beside the report: the test's reader looks at it
        Image.fromarray((landing * 255).astype(np.uint8)).save(report / "landing.png")
        errors = browser.errors()
    finally:
        browser.close()
    assert errors == [], errors
    assert messages == 0, "a caption or the landing text did not render as reStructuredText"
    assert "Which mechanism gives the most useful map" in text and text.index("1. Frontier") < text.index("2. Summary")
    # one row per dataset x N x level (gauss9, N = 600, three levels), a column per trust model present
    assert table["head"][:3] == ["dataset", "N", "adversary's expected error at least"]
    trusts = table["head"][3:]  # in the frontier's order; the fixture's mechanisms span these at least
    assert trusts == [t for t in TRUST_MODELS if t in trusts] and {"distributed", "central"} <= set(trusts)
    assert table["rows"] == 3 and table["first"][:2] == ["gauss9", "600"]
    assert table["top"] < HEIGHT and table["left"] < WIDTH, f"the table is off the first screen: {table}"
    assert _not_blank(landing)[1] > 0.02, "the landing page rendered blank"


def test_tables_are_shown_not_downloaded_and_job_parameters_read_plainly(report):
    log = (report / "report.log").read_text()
    assert not re.findall(r".*(?:Warning|WARNING/|ERROR/).*", log), "snakemake --report warned"
    html = (report / "report.html").read_text()
    results = json.loads(re.search(r"var results = (\{.*?\});\n", html, re.S).group(1))
    names = {r["name"]: r for r in results.values()}
    assert {"recommendation.html", "frontier.html", "runs.html", "ingest.html", "audit.html"} <= set(names)
    assert all(names[n]["mime_type"] == "text/html" for n in names if n.endswith(".html"))
    assert not [n for n in names if n.endswith((".csv", ".parquet"))], "a table the report can only download"
    params = {n: r["job_properties"]["params"] for n, r in names.items()}
    assert not [n for n, p in params.items() if re.search(r"\b[0-9a-f]{16}\b", p)], "a code hash in job parameters"
    assert not [n for n, p in params.items() if re.search(r"\d\.\d*0000000\d|\d\.\d*9999999\d", p)], params
    assert "source of locpriv.frontier" in params["frontier.png"]


def test_frontier_figure_opens_from_its_section(report, tmp_path):
    browser = Browser(tmp_path / "profile")
    try:
        browser.send("Page.navigate", {"url": (report / "report.html").as_uri()}, page=True)
        browser.wait_for("Page.loadEventFired")
        browser.poll("document.body.innerText.includes('1. Frontier')", "the '1. Frontier' section")
        # open the frontier figure as a reader would: its section in the menu, then the figure's "show" icon
        assert (
            browser.evaluate("""(() => {
            const hit = [...document.querySelectorAll('a')].filter(e => e.textContent.trim() === '1. Frontier');
            if (hit.length) hit[0].click();
            return hit.length; })()""")
            == 1
        )
        browser.poll(
            "[...document.querySelectorAll('tr')].some(r => r.textContent.trim() === 'results/plots/frontier.png')",
            "the frontier figure's row",
        )
        browser.evaluate("""(() => {
            const row = [...document.querySelectorAll('tr')]
                .filter(r => r.textContent.trim() === 'results/plots/frontier.png')[0];
            row.querySelector('a').click(); })()""")
        browser.poll("[...document.images].some(i => i.complete && i.naturalWidth > 300)", "the frontier image")
        box = browser.evaluate("""(() => {
            const img = [...document.images].filter(i => i.naturalWidth > 300)
                .sort((a, b) => b.width * b.height - a.width * a.height)[0];
            const r = img.getBoundingClientRect();
            return [r.left, r.top, r.right, r.bottom, img.naturalWidth, img.naturalHeight]; })()""")
        shot = browser.screenshot()
        Image.fromarray((shot * 255).astype(np.uint8)).save(report / "frontier-view.png")
        errors = browser.errors()
    finally:
        browser.close()
    assert errors == [], errors
    left, top, right, bottom = (int(round(v)) for v in box[:4])
    left, top = max(left, 0), max(top, 0)
    right, bottom = min(right, WIDTH), min(bottom, HEIGHT)
    assert right - left > 300 and bottom - top > 100, f"frontier figure drawn too small: {box}"
    inked, spread = _not_blank(shot[top:bottom, left:right])
    # a matplotlib figure with axes, dots and a front: some ink, not a flat colour (a blank one gives 0, 0)
    assert inked > 0.02 and spread > 0.05, (inked, spread)


def test_frontier_png_itself_is_not_blank(report):
    """The figure file behind the report: axes and points, not an empty canvas."""
    pixels = np.asarray(Image.open(report / "results/plots/frontier.png").convert("RGB"), dtype=float) / 255
    inked, spread = _not_blank(pixels)
    assert inked > 0.02 and spread > 0.05, (inked, spread)
    # dots are coloured (one colour per mechanism), unlike the black axes and text
    saturation = pixels.max(axis=2) - pixels.min(axis=2)
    assert (saturation > 0.3).mean() > 1e-4
