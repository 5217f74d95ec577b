"""The renders under docs/: each shows its notebook's current code, and none carries raw HTML.

A render (``pipeline.runner.render_notebook``) is Markdown made from an executed notebook: each code cell
becomes a fenced ```` ```python ```` block holding its source exactly, its outputs follow (text indented,
tables as Markdown, images as links). Papermill adds one code cell, ``# Parameters``, right after the cell
tagged ``parameters``; it is not in the notebook and is left out of the comparison.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path

import nbformat
import pytest

from pipeline.layout import DOCS_DIR, NOTEBOOKS_DIR, RunLayout
from pipeline.render_tables import markdown_table
from pipeline.runner import render_notebook

NOTEBOOK_NAMES = {path.stem for path in NOTEBOOKS_DIR.glob("0*.ipynb")}
COMMITTED = sorted(path for path in DOCS_DIR.rglob("*.md") if path.stem in NOTEBOOK_NAMES)
INJECTED = "# Parameters\n"
FENCE = re.compile(r"^```")
RAW_HTML = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(\s[^<>]*)?/?>")
INLINE_CODE = re.compile(r"`[^`\n]*`")


def rendered_code(markdown: str) -> list[str]:
    """Each code cell's source in a render: the text between a line ```` ```python ```` and the next ```` ``` ````."""
    blocks, current = [], None
    for line in markdown.split("\n"):
        if current is None:
            if line == "```python":
                current = []
        elif line == "```":
            blocks.append("\n".join(current))
            current = None
        else:
            current.append(line)
    assert current is None, "a ```python block is never closed"
    return blocks


def notebook_code(notebook: Path) -> tuple[list[str], int | None]:
    """The notebook's code cells, and the index among them of the one tagged ``parameters`` (None if none)."""
    cells = [cell for cell in nbformat.read(str(notebook), as_version=4).cells if cell.cell_type == "code"]
    tagged = [i for i, cell in enumerate(cells) if "parameters" in cell.get("metadata", {}).get("tags", [])]
    return [cell.source for cell in cells], (tagged[0] if tagged else None)


def code_difference(render: Path) -> str | None:
    """Where a render's code differs from its notebook's current code cells; None if it does not."""
    expected, parameters = notebook_code(NOTEBOOKS_DIR / f"{render.stem}.ipynb")
    shown = rendered_code(render.read_text(encoding="utf-8"))
    if parameters is not None and len(shown) > parameters + 1 and shown[parameters + 1].startswith(INJECTED):
        del shown[parameters + 1]
    if shown == expected:
        return None
    if len(shown) != len(expected):
        return f"{len(shown)} code cells shown, the notebook has {len(expected)}"
    i = next(i for i, (a, b) in enumerate(zip(shown, expected)) if a != b)
    diff = "\n".join(difflib.unified_diff(expected[i].splitlines(), shown[i].splitlines(), "notebook", "render",
                                          lineterm="", n=1))
    return f"code cell {i} differs:\n{diff[:2000]}"


def raw_html(markdown: str) -> list[str]:
    """HTML tags in a render's prose and displayed outputs (not in code blocks, indented text or inline code)."""
    found, in_fence = [], False
    for line in markdown.split("\n"):
        if FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and not line.startswith(("    ", "\t")):
            found += [m.group(0) for m in RAW_HTML.finditer(INLINE_CODE.sub("", line))]
    return found


def _relative(path: Path) -> str:
    return str(path.relative_to(DOCS_DIR))


@pytest.mark.parametrize("render", COMMITTED, ids=_relative)
def test_every_committed_render_shows_its_notebooks_current_code(render: Path) -> None:
    difference = code_difference(render)
    assert difference is None, (f"docs/{_relative(render)} was not rendered from today's "
                                f"notebooks/{render.stem}.ipynb ({difference}); re-render it (make docs)")


@pytest.mark.parametrize("render", COMMITTED, ids=_relative)
def test_no_committed_render_carries_raw_html(render: Path) -> None:
    tags = raw_html(render.read_text(encoding="utf-8"))
    assert not tags, f"docs/{_relative(render)} carries raw HTML ({len(tags)} tags, first {tags[:3]}); re-render it"


def test_the_code_comparison_sees_an_edited_cell_and_skips_the_injected_parameters(tmp_path: Path) -> None:
    expected, parameters = notebook_code(NOTEBOOKS_DIR / "01_masking.ipynb")
    assert parameters is not None
    blocks = [*expected[:parameters + 1], INJECTED + 'preset = "smoke"\n', *expected[parameters + 1:]]
    render = tmp_path / "01_masking.md"
    render.write_text("".join(f"\n```python\n{block}\n```\n\n    output\n" for block in blocks), encoding="utf-8")
    assert code_difference(render) is None
    blocks[-1] += "\nprint('edited')"
    render.write_text("".join(f"\n```python\n{block}\n```\n" for block in blocks), encoding="utf-8")
    assert "differs" in code_difference(render)


def test_an_html_table_becomes_a_markdown_table_with_its_highlight_in_bold() -> None:
    styler = ('<style type="text/css">\n#T_1_row0_col1 {\n  background-color: yellow;\n}\n</style>\n'
              '<table id="T_1"><thead><tr><th class="blank level0">&nbsp;</th><th>a_b</th><th>c</th></tr></thead>'
              '<tbody><tr><th>x</th><td id="T_1_row0_col0">&lt;unk&gt; | *</td><td id="T_1_row0_col1">0.9</td>'
              '</tr></tbody></table>')
    assert markdown_table(styler) == "|  | a_b | c |\n| --- | --- | --- |\n| x | \\<unk\\> \\| \\* | **0.9** |\n"
    frame = ('<div><table border="1" class="dataframe"><thead><tr><th></th><th>n</th></tr>'
             '<tr><th>part</th><th></th></tr></thead><tbody><tr><th>train</th><td>3</td></tr></tbody></table></div>')
    assert markdown_table(frame) == "| part | n |\n| --- | --- |\n| train | 3 |\n"
    assert markdown_table("<b>not a table</b>") is None
    spanned = ('<table><thead><tr><th colspan="2">a<br/>b</th></tr></thead>'
               '<tbody><tr><td>1</td><td>x<br>y</td></tr></tbody></table>')  # a line break is a space; a span repeats
    assert markdown_table(spanned) == "| a b | a b |\n| --- | --- |\n| 1 | x y |\n"


@pytest.mark.notebook
@pytest.mark.parametrize("name", ["01_masking", "02_tokenizer"])
def test_a_fresh_render_shows_the_current_code_and_its_tables_as_markdown(name, smoke_step, smoke_run_dir,
                                                                          tmp_path) -> None:
    smoke_step(name)
    render = render_notebook(RunLayout(smoke_run_dir).executed(name), tmp_path)
    assert code_difference(render) is None
    markdown = render.read_text(encoding="utf-8")
    assert raw_html(markdown) == []
    assert re.search(r"^\| --- \|", markdown, re.M), "no table was rendered as Markdown"
