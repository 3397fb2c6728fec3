"""The report's HTML: tables, the page frame and its style, and inlining the images of a page
into it (`--self-contained`: one file to attach to an incident ticket)."""

from __future__ import annotations

import base64
import html
import math
import re
from pathlib import Path
from typing import Any

STYLE = """body{font-family:system-ui,sans-serif;margin:1.5em;max-width:110em;color:#111}
table{border-collapse:collapse;margin:.5em 0}
.table-scroll{max-width:100%;overflow-x:auto}
td,th{border:1px solid #bbb;padding:2px 6px;font-size:90%;text-align:left;vertical-align:top}
th{background:#eee}img{max-width:100%;height:auto}
.side-by-side{display:flex;flex-wrap:wrap;gap:1.5em;align-items:flex-start}
.side-by-side>section{flex:1 1 40em;min-width:0;overflow-x:auto}
@media print{body{margin:0}.side-by-side{display:block}img{page-break-inside:avoid}}"""


def counted(count: int, noun: str) -> str:
    """`1 line`, `2 lines`, `1,000 lines`: a count that agrees with its noun."""
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {noun}s"


def cell(value: Any) -> str:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:,.1f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, list):
        return html.escape(", ".join(f"{t['trigger']} ({t['count']})" for t in value))
    return "" if value is None else html.escape(str(value))


def html_table(headers: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{cell(v)}</td>" for v in r) + "</tr>" for r in rows)
    # A table wider than the window scrolls inside its box instead of being cut off at the edge.
    return f'<div class="table-scroll"><table><tr>{head}</tr>{body}</table></div>'


def page(title: str, body: str) -> str:
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>{STYLE}</style></head><body>
{body}
</body></html>
"""


IMAGE_SOURCE = re.compile(r'<img src="([^":/]+\.png)"')


def inline_images(text: str, directory: Path) -> str:
    """The page with every local PNG it shows embedded as a data: URI."""

    def embedded(match: re.Match[str]) -> str:
        data = base64.b64encode((directory / match[1]).read_bytes()).decode("ascii")
        return f'<img src="data:image/png;base64,{data}"'

    return IMAGE_SOURCE.sub(embedded, text)
