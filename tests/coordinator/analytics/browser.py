"""Headless Chromium for the report tests: load a page, let a small script read what the browser
rendered (every image's natural width, every section), and take a screenshot.

Driven by Chromium's own flags (`--headless --dump-dom`, `--screenshot`); no WebDriver. The script
is added to a copy of the page in the same directory, so the page loads its images exactly as a
person's browser would; it writes its findings into the DOM that `--dump-dom` prints.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

PROBE = """<script>
window.addEventListener("load", () => {
  const images = [...document.images].map(i => ({src: i.getAttribute("src").slice(0, 60),
    complete: i.complete, naturalWidth: i.naturalWidth}));
  const sections = [...document.querySelectorAll("section[id]")].map(s => s.id);
  const root = document.documentElement;
  const overflow = root.scrollWidth - root.clientWidth;
  const out = document.createElement("pre");
  out.id = "browser-probe";
  out.textContent = JSON.stringify({images, sections, title: document.title, overflow});
  document.body.appendChild(out);
});
</script>"""
PROBE_OUTPUT = re.compile(r'<pre id="browser-probe">(.*?)</pre>', re.S)
TIMEOUT_S = 120


def chromium() -> str | None:
    """The browser binary: $CHROMIUM, or Debian's `chromium` (scripts/ensure-chromium)."""
    return os.environ.get("CHROMIUM") or shutil.which("chromium")


@dataclass(frozen=True)
class Rendered:
    """What the browser rendered: each image (src, complete, naturalWidth), the section ids."""

    images: list[dict[str, object]]
    sections: list[str]
    title: str
    overflow: int = 0
    """How many pixels the page is wider than the window (0: nothing cut off at the right)."""


def _run(binary: str, *args: str) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="report-chromium-") as profile:
        return subprocess.run(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             f"--user-data-dir={profile}", "--virtual-time-budget=5000", *args],
            capture_output=True, text=True, timeout=TIMEOUT_S, check=True,
        )  # fmt: skip


def render(binary: str, page: Path, *, width: int = 1400) -> Rendered:
    """Load `page` in headless Chromium, `width` pixels wide, and report what it rendered."""
    probe = page.with_name(f".probe-{page.name}")
    text = page.read_text(encoding="utf-8")
    probe.write_text(text.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    try:
        done = _run(binary, "--dump-dom", f"--window-size={width},1000", probe.resolve().as_uri())
    finally:
        probe.unlink()
    found = PROBE_OUTPUT.search(done.stdout)
    if found is None:
        raise AssertionError(f"the probe did not run: {done.stdout[-500:]} {done.stderr[-1500:]}")
    data = json.loads(found[1].replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<"))
    return Rendered(data["images"], data["sections"], data["title"], data["overflow"])


def screenshot(
    binary: str, page: Path, path: Path, *, width: int = 1280, height: int = 2400
) -> Path:
    """A PNG of `page` as a `width` x `height` window shows it."""
    _run(binary, f"--screenshot={path.resolve()}", f"--window-size={width},{height}",
         page.resolve().as_uri())  # fmt: skip
    return path
