"""Headless Chromium from Debian's packages, driven by Selenium through Debian's matching chromedriver.

`ensure_chromium()` installs `chromium` and `chromium-driver` with apt-get when they are missing (idempotent:
nothing is run when both binaries are there) and returns why it could not, so the browser tests skip with
that reason, shown in the test summary, only when Chromium really cannot be installed. Nothing is downloaded
by Selenium itself: the driver's path is given, so Selenium Manager never runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
PACKAGES = ("chromium", "chromium-driver")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
INSTALL_TIMEOUT_S = 1200

_lock = threading.Lock()
_outcome: list[str | None] = []


def _present() -> bool:
    return CHROMIUM.exists() and CHROMEDRIVER.exists()


def ensure_chromium() -> str | None:
    """None when Chromium and its driver are ready; otherwise why they are not (the skip reason)."""
    with _lock:
        if not _outcome:
            _outcome.append(_install())
        return _outcome[0]


def _install() -> str | None:
    try:
        import selenium  # noqa: F401 - a dev dependency (scripts/setup.sh --dev installs it)
    except ImportError:
        return "selenium is not installed in this environment (run scripts/setup.sh --dev)"
    if _present():
        return None
    apt = shutil.which("apt-get")
    if apt is None:
        return f"Chromium is not installed ({CHROMIUM}, {CHROMEDRIVER}) and there is no apt-get to install it"
    if os.geteuid() != 0:
        return f"Chromium is not installed and installing it needs root: sudo apt-get install -y {' '.join(PACKAGES)}"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in ([apt, "update"], [apt, "install", "-y", "--no-install-recommends", *PACKAGES]):
        try:
            done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return f"`{' '.join(command)}` did not finish within {INSTALL_TIMEOUT_S} s"
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            return f"`{' '.join(command)}` failed ({done.returncode}): {' | '.join(tail)}"
    return None if _present() else f"apt-get installed {PACKAGES} but {CHROMIUM} or {CHROMEDRIVER} is still missing"


def new_driver(width: int = 1280, height: int = 900):  # noqa: ANN201 - selenium's WebDriver
    """A fresh headless Chromium with its own profile directory (removed by `quit_driver`)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    profile = tempfile.mkdtemp(prefix="memhub-chromium-")
    for flag in (*FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.memhub_profile = profile  # type: ignore[attr-defined]
    driver.set_page_load_timeout(60)
    # The page's own size, whatever the headless window adds around it (screenshots are exactly this).
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}
    )
    return driver


def submit_and_wait(driver, button, url_part: str, timeout_s: float = 30.0) -> None:  # noqa: ANN001
    """Click a form's submit button and wait until the browser has loaded a new page at a URL containing ``url_part``.

    The old page must go first: a form that posts from /check to /check already "has" the URL before the
    answer arrives, and reading the page then found elements of the old one, gone a moment later."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    old_page = driver.find_element(By.TAG_NAME, "html")
    button.click()
    wait = WebDriverWait(driver, timeout_s)
    wait.until(lambda d: _gone(old_page))
    wait.until(lambda d: url_part in d.current_url and d.execute_script("return document.readyState") == "complete")


def _gone(element) -> bool:  # noqa: ANN001 - a Selenium WebElement
    """True once ``element``'s document has been replaced.

    Selenium's staleness_of knows only StaleElementReferenceException; Chromium, asked in the middle of a
    navigation, answers "Node with given id does not belong to the document" as a plain WebDriverException."""
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException

    try:
        element.is_enabled()
    except StaleElementReferenceException:
        return True
    except WebDriverException as err:
        if "does not belong to the document" in str(err):
            return True
        raise
    return False


def quit_driver(driver) -> None:  # noqa: ANN001
    profile = getattr(driver, "memhub_profile", None)
    try:
        driver.quit()
    finally:
        if profile:
            shutil.rmtree(profile, ignore_errors=True)


@contextmanager
def headless_browser(width: int = 1280, height: int = 900) -> Iterator[object]:
    """A headless Chromium for one module's tests (installed with apt-get on first use), quit afterwards. A machine
    where it cannot be installed skips the browser tests, saying why."""
    problem = ensure_chromium()
    if problem:
        pytest.skip(f"browser tests need headless Chromium: {problem}")
    driver = new_driver(width, height)
    try:
        yield driver
    finally:
        quit_driver(driver)
