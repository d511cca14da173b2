"""Headless Chromium for the report's browser test: which browser, and why
none can run. Debian's `chromium` package, driven by Playwright for Python
through `executable_path` (plots/README.md, "The page in a browser": why
Playwright's own browser download is never used, and --no-sandbox as root).

    with browser.chromium() as b:     # raises Unavailable(reason)
        page = b.new_page()
"""

import contextlib
import os
import shutil
from pathlib import Path

DEBIAN_CHROMIUM = Path("/usr/bin/chromium")
INSTALL_HINT = "install Debian's chromium, or run make deps-test as root (it apt-get installs chromium)"


class Unavailable(Exception):
    """No browser can run here; str() says why and what to do."""


def chromium_path() -> Path | None:
    """Debian's /usr/bin/chromium, else `chromium` on PATH, else None."""
    if DEBIAN_CHROMIUM.is_file() and os.access(DEBIAN_CHROMIUM, os.X_OK):
        return DEBIAN_CHROMIUM
    found = shutil.which("chromium")
    return Path(found) if found else None


def first_line(error: Exception) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__


def launch_error(error: Exception) -> str:
    """The browser's own first error line, from the browser log that
    Playwright appends to a failed launch ("[pid=N][err] <line>"), past the
    D-Bus complaints Chromium prints on every start without a session bus;
    else the error's first line (only "Target ... has been closed")."""
    for line in str(error).splitlines():
        _, err, text = line.partition("][err] ")
        if err and text.strip() and ":ERROR:dbus/" not in text:
            return text.strip()
    return first_line(error)


@contextlib.contextmanager
def chromium():
    """A headless Chromium (a Playwright Browser), closed on exit; raises
    Unavailable with the reason when Playwright or the browser is missing or
    the browser does not start."""
    try:
        from playwright.sync_api import Error, sync_playwright
    except ImportError as e:
        raise Unavailable(f"playwright is not importable ({e}): run make venv "
                          "(ci/deps --python)") from e
    path = chromium_path()
    if path is None:
        raise Unavailable(f"no chromium at {DEBIAN_CHROMIUM} or on PATH: {INSTALL_HINT}")
    try:
        driver = sync_playwright().start()
    except (Error, OSError) as e:
        raise Unavailable(f"playwright's driver did not start: {first_line(e)}") from e
    try:
        try:
            browser = driver.chromium.launch(executable_path=str(path), headless=True)
        except Error as e:
            raise Unavailable(f"{path} did not start: {launch_error(e)}") from e
        try:
            yield browser
        finally:
            browser.close()
    finally:
        driver.stop()
