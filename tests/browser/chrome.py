"""A headless Debian Chromium driven through Debian's chromedriver, and what its console said.

Both paths are given explicitly: with a driver path in the ``Service`` and a browser binary in
the options, Selenium never runs Selenium Manager, so a test run never downloads a browser or a
driver. Without the packages (``scripts/system-deps.sh`` installs them) the tests skip with a
reason; on CI (``CI=true``) they fail instead, so a missing browser cannot turn the suite green.
"""
from __future__ import annotations

import importlib.util
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, List, Pattern, Sequence

from testkit.skips import missing

CHROMIUM = Path(os.environ.get("EDGE_APP_CHROMIUM", "/usr/bin/chromium"))
CHROMEDRIVER = Path(os.environ.get("EDGE_APP_CHROMEDRIVER", "/usr/bin/chromedriver"))
WINDOW_SIZE = (1400, 1000)

# --no-sandbox: the tests run as root in CI containers, where Chromium's sandbox cannot start.
# The rest keep a test browser from phoning home or updating itself behind the tests' back.
CHROMIUM_FLAGS = (
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage",
)


def require_chromium() -> None:
    """Skip (fail on CI) unless Debian's chromium and chromium-driver are installed."""
    absent = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
    problem = f"{' and '.join(absent)} missing (run scripts/system-deps.sh)" if absent else None
    if problem is None and importlib.util.find_spec("selenium") is None:
        problem = "selenium is not installed (pip install -e '.[dev]')"
    if problem:
        missing(f"browser tests need Chromium: {problem}")


def start_chromium(user_data_dir: Path, log_path: Path):
    """A new headless Chromium with a fresh profile, keeping every console message."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={user_data_dir}")
    options.add_argument(f"--window-size={WINDOW_SIZE[0]},{WINDOW_SIZE[1]}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(executable_path=str(CHROMEDRIVER), log_output=str(log_path))
    return webdriver.Chrome(service=service, options=options)


@dataclass(frozen=True)
class ConsoleEntry:
    level: str
    source: str
    message: str

    def __str__(self) -> str:
        return f"{self.level} [{self.source}] {self.message}"


class ConsoleLog:
    """The browser console, read after every test; a test declares the errors it provokes.

    Chromium reports a failed request (a 400 answer to a refused edit, say) as a SEVERE console
    entry of source ``network``. A test that provokes one on purpose says so with :meth:`allow`,
    for that test only; every other SEVERE entry is a defect of the page.
    """

    def __init__(self, driver) -> None:
        self._driver = driver
        self._allowed: List[Pattern[str]] = []

    def allow(self, pattern: str) -> None:
        """Accept SEVERE entries matching the regular expression ``pattern`` until :meth:`reset`."""
        self._allowed.append(re.compile(pattern))

    def reset(self) -> None:
        self._allowed.clear()

    def read(self) -> List[ConsoleEntry]:
        """Everything logged since the last read (the driver hands each entry out once)."""
        return [ConsoleEntry(e.get("level", ""), e.get("source", ""), e.get("message", ""))
                for e in self._driver.get_log("browser")]

    def errors(self, entries: Iterable[ConsoleEntry]) -> List[ConsoleEntry]:
        return [e for e in entries if e.level == "SEVERE" and not any(p.search(e.message) for p in self._allowed)]


def describe(entries: Sequence[ConsoleEntry]) -> str:
    return "\n".join(str(e) for e in entries) or "(nothing)"
