"""The system's headless Chromium driven through Selenium, for the inspector's browser tests and screenshots.

Only an installed browser is used (Debian's ``chromium`` and ``chromium-driver``): nothing is downloaded, and
every flag that would make the browser reach the network on its own is off.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
DRIVER_CANDIDATES = ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver")
FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--disable-dev-shm-usage", "--hide-scrollbars",
         "--window-size=1280,800")


def find_browser() -> tuple[str, str] | None:
    """(chromium, chromedriver) paths, or None when either is missing."""
    browser = os.environ.get("REMEM_CHROMIUM") or next((p for p in CHROMIUM_CANDIDATES if Path(p).exists()), None)
    driver = os.environ.get("REMEM_CHROMEDRIVER") or next((p for p in DRIVER_CANDIDATES if Path(p).exists()), None)
    return (browser, driver) if browser and driver else None


def missing_reason() -> str | None:
    """Why the browser cannot run here, or None."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    if find_browser() is None:
        return "no system Chromium: apt-get install chromium chromium-driver"
    return None


class Browser:
    """One headless Chromium with a fresh profile, 1280x800 viewport; ``close`` removes the profile."""

    def __init__(self, width: int = 1280, height: int = 800) -> None:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        found = find_browser()
        if found is None:
            raise RuntimeError(missing_reason() or "no browser")
        browser, driver = found
        self.profile = tempfile.mkdtemp(prefix="remem-chromium-")
        opts = webdriver.ChromeOptions()
        opts.binary_location = browser
        for flag in (*FLAGS, f"--user-data-dir={self.profile}"):
            opts.add_argument(flag)
        self.driver: Any = webdriver.Chrome(service=Service(executable_path=driver), options=opts)
        self.driver.set_page_load_timeout(30)
        self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                    {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def close(self) -> None:
        try:
            self.driver.quit()
        finally:
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


__all__ = ["Browser", "find_browser", "missing_reason"]
