"""Each HTML table a render displays (a pandas DataFrame or Styler) as a Markdown table, so the render carries no
raw HTML and reads the same on any viewer. A Styler's highlighted cells (a background colour in its ``<style>``
block, as ``highlight_max`` writes) are shown in bold; every other style is dropped."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

HTML_MIME = "text/html"
MARKDOWN_MIME = "text/markdown"
# escaped with a backslash, so a cell's text is shown as it is (an underscore inside a word never emphasises)
MARKDOWN_SPECIAL = re.compile(r"[\\`*<>|]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
HIGHLIGHTED = re.compile(r"((?:#\w+\s*,?\s*)+)\{[^}]*background", re.S)


class _Tables(HTMLParser):
    """The rows of every table in an HTML fragment: (in the header?, [(text, colspan, element id)])."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[tuple[bool, list[tuple[str, int, str]]]] = []
        self.style = ""
        self._where: list[str] = []
        self._cell: list[str] | None = None
        self._attrs: dict[str, str | None] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._where.append(tag)
        if tag == "tr":
            self.rows.append(("thead" in self._where, []))
        elif tag in ("td", "th"):
            self._cell, self._attrs = [], dict(attrs)
        elif tag == "br" and self._cell is not None:
            self._cell.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self.rows:
            text = " ".join("".join(self._cell).split())
            self.rows[-1][1].append((text, int(self._attrs.get("colspan") or 1), self._attrs.get("id") or ""))
            self._cell = None
        if tag in self._where:
            del self._where[len(self._where) - 1 - self._where[::-1].index(tag):]

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        elif self._where and self._where[-1] == "style":
            self.style += data


def markdown_table(html: str) -> str | None:
    """One Markdown table for an HTML fragment holding exactly one table; None for anything else."""
    if html.count("<table") != 1:
        return None
    parsed = _Tables()
    parsed.feed(html)
    highlighted = {name.strip().lstrip("#") for selectors in HIGHLIGHTED.findall(parsed.style)
                   for name in selectors.split(",") if name.strip()}
    rows = []
    for in_header, cells in parsed.rows:
        row = []
        for text, span, element_id in cells:
            text = MARKDOWN_SPECIAL.sub(r"\\\g<0>", text)
            row += [f"**{text}**" if text and element_id in highlighted else text] * span
        rows.append((in_header, row))
    if not rows:
        return None
    header_rows = [row for in_header, row in rows if in_header] or [rows[0][1]]
    body = [row for in_header, row in rows if not in_header] if any(h for h, _ in rows) else [r for _, r in rows[1:]]
    width = max(len(row) for row in header_rows + body)
    padded = [row + [""] * (width - len(row)) for row in header_rows]
    header = [" ".join(dict.fromkeys(part for part in column if part)) for column in zip(*padded)]
    lines = [header, ["---"] * width] + [row + [""] * (width - len(row)) for row in body]
    return "\n".join("| " + " | ".join(line) + " |" for line in lines) + "\n"


def tables_as_markdown(notebook: Any) -> Any:
    """The notebook with each output's HTML table replaced by its Markdown table (other HTML left alone)."""
    for cell in notebook.cells:
        for output in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            data = output.get("data", {})
            html = data.get(HTML_MIME)
            table = markdown_table("".join(html) if isinstance(html, list) else html) if html else None
            if table is not None:
                del data[HTML_MIME]
                data[MARKDOWN_MIME] = table
    return notebook
