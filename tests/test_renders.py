"""The renders under docs/: each names where it came from, shows that code exactly, and carries no raw HTML.

A render (``pipeline.run.runner.render_notebook``) is Markdown made from an executed notebook: each code cell
becomes a fenced ```` ```python ```` block holding its source exactly, its outputs follow (text indented,
tables as Markdown, images as links). Papermill adds one code cell, ``# Parameters``, right after the cell
tagged ``parameters``; it is not in the notebook and is left out of every comparison.

Its first line names the notebook, the commit it ran at and a hash of its code cells
(``pipeline.run.runner.render_header``). Renders cheap to remake (the demo runs', both of 06's) must show today's
notebook; a reference render of 01-05 needs 46 hours of training to remake, so it may be older, and then its
first line says so. Whenever git history is at hand, the notebook at the named commit must have exactly the
render's code.
"""

from __future__ import annotations

import difflib
import re
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest

from pipeline.run.render_tables import markdown_table
from pipeline.run.runner import OLDER, code_cells, code_cells_hash, render_notebook
from pipeline.store.layout import DOCS_DIR, NOTEBOOKS_DIR, REPO_ROOT, RunLayout
from pipeline.store.runinfo import git_commit

NOTEBOOK_NAMES = {path.stem for path in NOTEBOOKS_DIR.glob("0*.ipynb")}
COMMITTED = sorted(path for path in DOCS_DIR.rglob("*.md") if path.stem in NOTEBOOK_NAMES)
INJECTED = "# Parameters\n"
FENCE = re.compile(r"^```")
RAW_HTML = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(\s[^<>]*)?/?>")
INLINE_CODE = re.compile(r"`[^`\n]*`")
HEADER = re.compile(
    r"\*Render of notebooks/(?P<name>\w+)\.ipynb at (?:commit (?P<commit>[0-9a-f]{7,40})(?P<dirty>\+dirty)?"
    r"|an unrecorded commit), code cells sha256:(?P<digest>[0-9a-f]{16})\.(?P<older>" + re.escape(OLDER) + r")?\*"
)
REFERENCE_STEPS = ("01", "02", "03", "04", "05")  # a reference run's notebooks: remade only by retraining


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


def shown_code(markdown: str) -> list[str]:
    """The notebook's code cells as a render shows them: its code blocks without the one papermill injected."""
    blocks = rendered_code(markdown)
    injected = [i for i, block in enumerate(blocks) if block.startswith(INJECTED)]
    return [block for i, block in enumerate(blocks) if i not in injected[:1]]


def todays_code(name: str) -> list[str]:
    return code_cells(nbformat.read(str(NOTEBOOKS_DIR / f"{name}.ipynb"), as_version=4))


def may_be_older(render: Path) -> bool:
    """A reference run's render of 01-05: remade only by retraining, so it may show an older notebook."""
    return render.parent.name.startswith("reference-") and render.stem[:2] in REFERENCE_STEPS


def code_difference(render: Path) -> str | None:
    """Where a render's code differs from its notebook's current code cells; None if it does not."""
    expected, shown = todays_code(render.stem), shown_code(render.read_text(encoding="utf-8"))
    if shown == expected:
        return None
    if len(shown) != len(expected):
        return f"{len(shown)} code cells shown, the notebook has {len(expected)}"
    i = next(i for i, (a, b) in enumerate(zip(shown, expected)) if a != b)
    diff = "\n".join(
        difflib.unified_diff(expected[i].splitlines(), shown[i].splitlines(), "notebook", "render", lineterm="", n=1)
    )
    return f"code cell {i} differs:\n{diff[:2000]}"


def header_of(render: Path) -> re.Match[str] | None:
    return HEADER.fullmatch(render.read_text(encoding="utf-8").split("\n", 1)[0])


def header_problem(render: Path) -> str | None:
    """What is wrong with a render's first line (its form, its notebook, the hash of its code); None if nothing."""
    header = header_of(render)
    if header is None:
        return "its first line does not name its notebook, commit and code hash as render_header writes them"
    if header["name"] != render.stem:
        return f"its first line names notebooks/{header['name']}.ipynb, not notebooks/{render.stem}.ipynb"
    digest = code_cells_hash(shown_code(render.read_text(encoding="utf-8")))
    if header["digest"] != digest:
        return f"its code blocks hash to {digest}, not the {header['digest']} its first line names (edited by hand?)"
    return None


def age_problem(render: Path) -> str | None:
    """A render that must show today's notebook and does not, or whose first line says 'older' wrongly."""
    difference, header = code_difference(render), header_of(render)
    says_older = bool(header and header["older"])
    if difference is not None and not may_be_older(render):
        return f"it was not rendered from today's notebooks/{render.stem}.ipynb ({difference})"
    if difference is not None and not says_older:
        return f"its code differs from today's notebook ({difference}) but its first line does not say{OLDER}"
    if difference is None and says_older:
        return "its first line says it is older than today's notebook, but its code is today's"
    return None


def git(*args: str) -> subprocess.CompletedProcess[str] | None:
    """git's answer in the repository, or None where there is no git."""
    try:
        return subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    except OSError:
        return None


def missing_history(commit: str) -> str | None:
    """Why this checkout cannot show ``commit`` (no git, no repository, a shallow clone without it); None if it can."""
    inside = git("rev-parse", "--is-inside-work-tree")
    if inside is None or inside.returncode != 0:
        return "no git repository here"
    if git("cat-file", "-e", f"{commit}^{{commit}}").returncode == 0:
        return None
    shallow = git("rev-parse", "--is-shallow-repository").stdout.strip() == "true"
    return f"commit {commit} is beyond this shallow clone's history" if shallow else None


def history_problem(render: Path) -> str | None:
    """Where the notebook at the render's named commit has other code than the render shows; None if none."""
    header = header_of(render)
    if header is None or header["commit"] is None:
        return "its first line names no commit: render it in a git checkout (make docs)"
    commit, path = header["commit"], f"notebooks/{render.stem}.ipynb"
    shown = git("show", f"{commit}:{path}")
    if shown is None or shown.returncode != 0:
        return f"`git show {commit}:{path}` fails ({shown.stderr.strip()[:200] if shown else 'no git'})"
    if code_cells(nbformat.reads(shown.stdout, as_version=4)) == shown_code(render.read_text(encoding="utf-8")):
        return None
    dirty = (
        " (it was rendered from uncommitted code: commit the notebook, then render again)" if header["dirty"] else ""
    )
    return f"{path} at commit {commit} has other code cells than the render shows{dirty}"


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
    return f"docs/{path.relative_to(DOCS_DIR)}" if path.is_relative_to(DOCS_DIR) else str(path)


def _skip_without_history(render: Path) -> None:
    header = header_of(render)
    why = missing_history(header["commit"]) if header and header["commit"] else None
    if why:
        pytest.skip(f"{_relative(render)}: {why}")


@pytest.mark.parametrize("render", COMMITTED, ids=_relative)
def test_every_committed_render_begins_with_its_notebook_commit_and_the_hash_of_its_code(render: Path) -> None:
    problem = header_problem(render)
    assert problem is None, f"{_relative(render)}: {problem}; restore it from git or re-render it (make docs)"


@pytest.mark.parametrize("render", COMMITTED, ids=_relative)
def test_the_notebook_at_each_renders_commit_has_exactly_the_code_it_shows(render: Path) -> None:
    _skip_without_history(render)
    problem = history_problem(render)
    assert problem is None, f"{_relative(render)}: {problem}"


@pytest.mark.parametrize("render", COMMITTED, ids=_relative)
def test_renders_cheap_to_remake_show_todays_notebook_and_only_older_ones_say_so(render: Path) -> None:
    problem = age_problem(render)
    remake = "make reference-figures && make docs" if render.stem.startswith("06") else "make docs"
    assert problem is None, f"{_relative(render)}: {problem}; re-render it ({remake})"


@pytest.mark.parametrize("render", COMMITTED, ids=_relative)
def test_no_committed_render_carries_raw_html(render: Path) -> None:
    tags = raw_html(render.read_text(encoding="utf-8"))
    assert not tags, f"{_relative(render)} carries raw HTML ({len(tags)} tags, first {tags[:3]}); re-render it"


def test_the_code_comparison_sees_an_edited_cell_and_skips_the_injected_parameters(tmp_path: Path) -> None:
    cells = nbformat.read(str(NOTEBOOKS_DIR / "01_masking.ipynb"), as_version=4).cells
    code = [cell for cell in cells if cell.cell_type == "code"]
    parameters = next(i for i, cell in enumerate(code) if "parameters" in cell.metadata.get("tags", []))
    expected = [cell.source for cell in code]
    blocks = [*expected[: parameters + 1], INJECTED + 'preset = "smoke"\n', *expected[parameters + 1 :]]
    render = tmp_path / "01_masking.md"
    render.write_text("".join(f"\n```python\n{block}\n```\n\n    output\n" for block in blocks), encoding="utf-8")
    assert code_difference(render) is None
    blocks[-1] += "\nprint('edited')"
    render.write_text("".join(f"\n```python\n{block}\n```\n" for block in blocks), encoding="utf-8")
    assert "differs" in code_difference(render)


def _copy(render: str, tmp_path: Path, into: str | None = None) -> Path:
    """A committed render copied into ``tmp_path``, in a folder of the same name unless ``into`` names another."""
    source = DOCS_DIR / render
    copy = tmp_path / (into or source.parent.name) / source.name
    copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, copy)
    return copy


def _edit_last_block(render: Path) -> None:
    text = render.read_text(encoding="utf-8")
    at = text.rindex("\n```\n")
    render.write_text(text[:at] + "\nprint('edited by hand')" + text[at:], encoding="utf-8")


def test_a_hand_edited_code_block_no_longer_matches_the_hash_in_the_first_line(tmp_path: Path) -> None:
    render = _copy("demo-en/01_masking.md", tmp_path)
    assert header_problem(render) is None
    _edit_last_block(render)
    assert "hash to" in header_problem(render)
    render.write_text(render.read_text(encoding="utf-8").split("\n", 2)[2], encoding="utf-8")  # no first line
    assert "first line" in header_problem(render)


def test_a_render_whose_code_is_not_its_named_commits_fails_the_history_check(tmp_path: Path) -> None:
    render = _copy("demo-en/01_masking.md", tmp_path)
    _skip_without_history(render)
    assert history_problem(render) is None
    _edit_last_block(render)
    text = render.read_text(encoding="utf-8")
    header = HEADER.match(text)
    render.write_text(text.replace(header["digest"], code_cells_hash(shown_code(text)), 1), encoding="utf-8")
    assert header_problem(render) is None, "the edit and its new hash agree"
    assert "other code cells" in history_problem(render), "yet the notebook at that commit never had that code"


def test_only_reference_renders_of_01_to_05_may_be_older_and_then_their_first_line_says_so(tmp_path: Path) -> None:
    older = "reference/reference-en-seed1/03_static_vectors.md"
    assert code_difference(DOCS_DIR / older) is not None, "a reference render older than today's notebook"
    assert age_problem(_copy(older, tmp_path)) is None
    assert "today's notebook" in age_problem(_copy(older, tmp_path, into="demo-en"))  # a demo render must be current
    unsaid = _copy(older, tmp_path, into="reference-es")
    unsaid.write_text(unsaid.read_text(encoding="utf-8").replace(OLDER, "", 1), encoding="utf-8")
    assert "does not say" in age_problem(unsaid)
    current = _copy("reference/reference-es/04_pretraining.md", tmp_path)
    assert age_problem(current) is None
    current.write_text(current.read_text(encoding="utf-8").replace(".*\n", f".{OLDER}*\n", 1), encoding="utf-8")
    assert "its code is today's" in age_problem(current)


def _executed(tmp_path: Path, name: str, notebook: nbformat.NotebookNode) -> Path:
    """``notebook`` as papermill leaves it: a cell tagged injected-parameters after the one tagged parameters, and
    the kernel's language (a render fences code as ```` ```python ```` only where the notebook names it)."""
    notebook.metadata["language_info"] = {"name": "python"}
    tagged = [i for i, cell in enumerate(notebook.cells) if "parameters" in cell.metadata.get("tags", [])]
    injected = nbformat.v4.new_code_cell(INJECTED + 'preset = "smoke"\n', metadata={"tags": ["injected-parameters"]})
    notebook.cells.insert(tagged[0] + 1, injected)
    executed = tmp_path / f"{name}.ipynb"
    executed.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, str(executed))
    return executed


def test_render_notebook_names_the_commit_of_todays_code_and_older_code_by_its_commit(tmp_path: Path) -> None:
    today = nbformat.read(str(NOTEBOOKS_DIR / "02_tokenizer.ipynb"), as_version=4)
    render = render_notebook(_executed(tmp_path / "now", "02_tokenizer", today), tmp_path / "docs-now")
    header = header_of(render)
    assert header_problem(render) is None and not header["older"]
    commit = git_commit()
    assert (header["commit"], bool(header["dirty"])) == (
        (commit[:12], commit.endswith("+dirty")) if commit else (None, False)
    )
    history = git("log", "--format=%H", "--", "notebooks/02_tokenizer.ipynb")
    commits = history.stdout.split() if history is not None and history.returncode == 0 else []
    first = commits[-1] if commits else None
    older = nbformat.reads(git("show", f"{first}:notebooks/02_tokenizer.ipynb").stdout, as_version=4) if first else None
    if older is None or code_cells(older) == todays_code("02_tokenizer"):
        pytest.skip("this checkout's git history holds no older code of notebooks/02_tokenizer.ipynb")
    old = render_notebook(_executed(tmp_path / "old", "02_tokenizer", older), tmp_path / "docs-old")
    assert header_problem(old) is None and header_of(old)["older"] and code_difference(old) is not None
    assert history_problem(old) is None, "the commit named for older code has that code"


def test_an_html_table_becomes_a_markdown_table_with_its_highlight_in_bold() -> None:
    styler = (
        '<style type="text/css">\n#T_1_row0_col1 {\n  background-color: yellow;\n}\n</style>\n'
        '<table id="T_1"><thead><tr><th class="blank level0">&nbsp;</th><th>a_b</th><th>c</th></tr></thead>'
        '<tbody><tr><th>x</th><td id="T_1_row0_col0">&lt;unk&gt; | *</td><td id="T_1_row0_col1">0.9</td>'
        "</tr></tbody></table>"
    )
    assert markdown_table(styler) == "|  | a_b | c |\n| --- | --- | --- |\n| x | \\<unk\\> \\| \\* | **0.9** |\n"
    frame = (
        '<div><table border="1" class="dataframe"><thead><tr><th></th><th>n</th></tr>'
        "<tr><th>part</th><th></th></tr></thead><tbody><tr><th>train</th><td>3</td></tr></tbody></table></div>"
    )
    assert markdown_table(frame) == "| part | n |\n| --- | --- |\n| train | 3 |\n"
    assert markdown_table("<b>not a table</b>") is None
    spanned = (
        '<table><thead><tr><th colspan="2">a<br/>b</th></tr></thead>'
        "<tbody><tr><td>1</td><td>x<br>y</td></tr></tbody></table>"
    )  # a line break is a space; a span repeats
    assert markdown_table(spanned) == "| a b | a b |\n| --- | --- |\n| 1 | x y |\n"


@pytest.mark.notebook
@pytest.mark.parametrize("name", ["01_masking", "02_tokenizer"])
def test_a_fresh_render_shows_the_current_code_and_its_tables_as_markdown(
    name, smoke_step, smoke_run_dir, tmp_path
) -> None:
    smoke_step(name)
    render = render_notebook(RunLayout(smoke_run_dir).executed(name), tmp_path)
    assert code_difference(render) is None and header_problem(render) is None
    markdown = render.read_text(encoding="utf-8")
    assert raw_html(markdown) == []
    assert re.search(r"^\| --- \|", markdown, re.M), "no table was rendered as Markdown"
