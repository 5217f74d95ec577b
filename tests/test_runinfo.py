"""What a run records about the code that produced it: named when git can say, an error when git hangs."""

from __future__ import annotations

import re
import subprocess

import pytest

from pipeline import runinfo


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


def test_a_run_names_the_cpu_model_and_the_kernels_torch_chose(tmp_path) -> None:
    import torch

    info = runinfo.environment("cpu")
    assert info["cpu_kernels"] == torch.backends.cpu.get_cpu_capability()
    assert info["cpu_model"] == runinfo.cpu_model() and info["cpu_model"]
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Test 1234\n")
    assert runinfo.cpu_model(cpuinfo) == "Intel(R) Xeon(R) Test 1234"
    assert runinfo.cpu_model(tmp_path / "missing") in (runinfo.platform.processor(), runinfo.platform.machine())
