"""Each HTML table a render displays (a pandas DataFrame or Styler) as a Markdown table, so the render carries no
raw HTML and reads the same on any viewer. A Styler's highlighted cells (a background colour in its ``<style>``
block, as ``highlight_max`` writes) are shown in bold; every other style is dropped."""

from __future__ import annotations

import re
from typing import Any

from bs4 import BeautifulSoup

HTML_MIME = "text/html"
MARKDOWN_MIME = "text/markdown"
# escaped with a backslash, so a cell's text is shown as it is (an underscore inside a word never emphasises)
MARKDOWN_SPECIAL = re.compile(r"[\\`*<>|]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
HIGHLIGHTED = re.compile(r"((?:#\w+\s*,?\s*)+)\{[^}]*background", re.S)


def markdown_table(html: str) -> str | None:
    """One Markdown table for an HTML fragment holding exactly one table; None for anything else."""
    if html.count("<table") != 1:
        return None
    soup = BeautifulSoup(html, "html.parser")
    for line_break in soup.find_all("br"):
        line_break.replace_with(" ")
    style = "".join(tag.get_text() for tag in soup.find_all("style"))
    highlighted = {name.strip().lstrip("#") for selectors in HIGHLIGHTED.findall(style)
                   for name in selectors.split(",") if name.strip()}
    rows = []
    for tr in soup.find_all("tr"):
        row = []
        for cell in tr.find_all(("td", "th")):
            text = MARKDOWN_SPECIAL.sub(r"\\\g<0>", " ".join(cell.get_text().split()))
            shown = f"**{text}**" if text and cell.get("id", "") in highlighted else text
            row += [shown] * int(cell.get("colspan") or 1)
        rows.append((tr.find_parent("thead") is not None, row))
    if not rows:
        return None
    n_header = sum(in_header for in_header, _ in rows) or 1  # the <thead> rows (they come first), else the first row
    width = max(len(row) for _, row in rows)
    padded = [row + [""] * (width - len(row)) for _, row in rows]
    header = [" ".join(dict.fromkeys(part for part in column if part)) for column in zip(*padded[:n_header])]
    lines = [header, ["---"] * width, *padded[n_header:]]
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
