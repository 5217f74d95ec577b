"""What a run records about the code that produced it: named when git can say, an error when git hangs."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from pipeline.store import runinfo


def test_the_commit_and_code_version_of_this_checkout_are_named() -> None:
    assert re.fullmatch(r"[0-9a-f]{40}(\+dirty)?", runinfo.git_commit() or "")
    assert re.fullmatch(r"[0-9a-f]{16}(\+dirty)?", runinfo.code_version() or "")


def test_a_git_that_hangs_is_an_error_that_names_the_command_not_a_silent_none(monkeypatch) -> None:
    def hanging(args, **kwargs):
        raise subprocess.TimeoutExpired(args, kwargs["timeout"])

    monkeypatch.setattr(runinfo.subprocess, "run", hanging)
    for name_the_code in (runinfo.git_commit, runinfo.code_version):
        with pytest.raises(RuntimeError, match=r"`git .*` .* took over 300 s"):
            name_the_code()


def test_outside_a_repository_the_code_is_unnamed(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(runinfo, "REPO_ROOT", tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    assert runinfo.git_commit() is None and runinfo.code_version() is None


def _repository_with_a_stripped_notebook(root) -> None:
    """A repository laid out like this one: notebooks/ under nbstripout, a helpers/ module, one commit."""
    import sys

    import nbformat

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)

    git("init", "-q")
    for key, value in (("user.email", "t@example.org"), ("user.name", "t"), ("filter.nbstripout.smudge", "cat"),
                       ("filter.nbstripout.clean", f"{sys.executable} -m nbstripout"),
                       ("filter.nbstripout.required", "true")):
        git("config", key, value)
    (root / ".gitattributes").write_text("notebooks/*.ipynb filter=nbstripout\n")
    (root / "notebooks").mkdir()
    (root / "helpers").mkdir()
    (root / "helpers" / "taught.py").write_text("x = 1\n")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print('hi')")])
    nbformat.write(notebook, root / "notebooks" / "01.ipynb")
    git("add", ".")
    git("commit", "-qm", "one")


def test_a_notebook_saved_with_outputs_in_jupyterlab_leaves_the_checkout_clean(monkeypatch, tmp_path) -> None:
    """git status calls the saved notebook modified (its size changed); its content through nbstripout is HEAD's."""
    import nbformat

    _repository_with_a_stripped_notebook(tmp_path)
    monkeypatch.setattr(runinfo, "REPO_ROOT", tmp_path)
    path = tmp_path / "notebooks" / "01.ipynb"
    notebook = nbformat.read(path, as_version=4)
    notebook.cells[0].outputs = [nbformat.v4.new_output("stream", text="hi\n" * 100)]
    notebook.cells[0].execution_count = 1
    nbformat.write(notebook, path)
    status = subprocess.run(["git", "status", "--porcelain"], cwd=tmp_path, capture_output=True, text=True).stdout
    assert "01.ipynb" in status  # the case: git status alone would stamp every later run +dirty
    assert not runinfo.git_commit().endswith("+dirty")
    assert not runinfo.code_version().endswith("+dirty")


def test_a_changed_cell_a_changed_module_or_a_new_module_is_dirty(monkeypatch, tmp_path) -> None:
    import nbformat

    _repository_with_a_stripped_notebook(tmp_path)
    monkeypatch.setattr(runinfo, "REPO_ROOT", tmp_path)
    path = tmp_path / "notebooks" / "01.ipynb"
    notebook = nbformat.read(path, as_version=4)
    notebook.cells[0].source = "print('changed')"
    nbformat.write(notebook, path)
    assert runinfo.git_commit().endswith("+dirty") and runinfo.code_version().endswith("+dirty")
    subprocess.run(["git", "checkout", "--", "notebooks"], cwd=tmp_path, check=True)
    assert not runinfo.code_version().endswith("+dirty")
    (tmp_path / "helpers" / "taught.py").write_text("x = 2\n")
    assert runinfo.git_commit().endswith("+dirty") and runinfo.code_version().endswith("+dirty")
    subprocess.run(["git", "checkout", "--", "helpers"], cwd=tmp_path, check=True)
    (tmp_path / "helpers" / "new.py").write_text("y = 1\n")  # untracked code changes what the code is
    assert runinfo.code_version().endswith("+dirty")


def test_regenerated_figures_and_docs_leave_the_commit_clean_and_a_readme_edit_does_not(monkeypatch, tmp_path) -> None:
    """figures/ and docs/ are what the jobs write: rewriting them must not stamp the job's own runs +dirty."""
    _repository_with_a_stripped_notebook(tmp_path)
    for folder in ("figures", "docs"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "out.md").write_text("before\n")
    (tmp_path / "README.md").write_text("read me\n")
    subprocess.run(["git", "add", "."], cwd=tmp_path, check=True)
    subprocess.run(["git", "commit", "-qm", "outputs"], cwd=tmp_path, check=True)
    monkeypatch.setattr(runinfo, "REPO_ROOT", tmp_path)
    for folder in ("figures", "docs"):
        (tmp_path / folder / "out.md").write_text("regenerated\n")
    assert not runinfo.git_commit().endswith("+dirty")
    (tmp_path / "README.md").write_text("edited\n")
    assert runinfo.git_commit().endswith("+dirty")


def test_a_run_names_the_cpu_model_and_the_kernels_torch_chose(tmp_path) -> None:
    import torch

    info = runinfo.environment("cpu")
    assert info["cpu_kernels"] == torch.backends.cpu.get_cpu_capability()
    assert info["cpu_model"] == runinfo.cpu_model() and info["cpu_model"]
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Test 1234\n")
    assert runinfo.cpu_model(cpuinfo) == "Intel(R) Xeon(R) Test 1234"
    assert runinfo.cpu_model(tmp_path / "missing") in (runinfo.platform.processor(), runinfo.platform.machine())



def test_naming_the_code_refreshes_a_fresh_clones_stamps_so_later_diffs_run_no_filter(monkeypatch, tmp_path) -> None:
    """A fresh clone's notebooks are racily clean: `git diff` alone ran the clean filter on each at every call
    (nbstripout: 12-14 s a call, at each run.json); one index refresh makes later calls read the stamps only."""
    import time

    def git(cwd, *args: str) -> str:
        return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout

    source, clone, calls = tmp_path / "source", tmp_path / "clone", tmp_path / "filter-calls"
    (source / "notebooks").mkdir(parents=True)
    git(source, "init", "-q")
    git(source, "config", "user.email", "t@example.org")
    git(source, "config", "user.name", "t")
    (source / ".gitattributes").write_text("notebooks/*.ipynb filter=counted\n")
    for n in range(3):
        (source / "notebooks" / f"0{n}.ipynb").write_text(f'{{"cells": {n}}}\n')
    git(source, "add", ".")
    git(source, "commit", "-qm", "one")
    git(tmp_path, "clone", "-q", str(source), str(clone))
    # A clone's checkout and index usually share a second, which makes its files racily clean; a slow machine can
    # straddle a second (CI once saw 2 of 3), so the index is stamped no later than the earliest file, as git does.
    earliest = min((clone / "notebooks" / f"0{n}.ipynb").stat().st_mtime_ns for n in range(3))
    os.utime(clone / ".git" / "index", ns=(earliest, earliest))
    git(clone, "config", "filter.counted.clean", f"sh -c 'echo call >> {calls}; cat'")
    git(clone, "config", "filter.counted.required", "true")
    time.sleep(1.1)  # git's stamps are whole seconds: an index written now is later than the files
    monkeypatch.setattr(runinfo, "REPO_ROOT", clone)
    assert not runinfo.code_version().endswith("+dirty")
    assert calls.read_text().count("call") >= 3  # the filter ran: the case is real
    calls.unlink()
    git(clone, "diff", "--name-only", "HEAD")
    assert not calls.exists()
