"""Seed, device and the environment that produced a result, recorded next to it; argparse types that check them.

No heavy imports at module level: a GPU machine may lack all but torch and numpy; a first cell imports quickly."""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import hashlib
import importlib.metadata
import logging
import os
import platform
import random
import re
import subprocess
from pathlib import Path
from typing import Any, Callable, TypeVar

from helpers import presets
from pipeline.store.layout import REPO_ROOT

RECORDED_PACKAGES = ("torch", "transformers", "tokenizers", "numpy", "datasets", "fasttext", "scikit-learn",
                     "matplotlib", "papermill")
SEED_LIMIT = 2**32  # numpy's and torch's seeds are below it


def check_seed(seed: object) -> int:
    """``seed`` if it is an integer in [0, 2**32), the range every generator here accepts, else a ValueError."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < SEED_LIMIT:
        raise ValueError(f"a seed must be an integer from 0 to {SEED_LIMIT - 1:,} (numpy's and torch's range), "
                         f"got {seed!r}")
    return seed


def set_seed(seed: int) -> None:
    """Seed Python, numpy and torch so a notebook rerun gives the same numbers."""
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


T = TypeVar("T")


def checked(check: Callable[[str], T]) -> Callable[[str], T]:
    """``check`` as an argparse type: its ValueError's message becomes the command line's error."""
    def argument(text: str) -> T:
        try:
            return check(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None
    return argument


def setting_argument(name: str, number: bool = False, low: int = 1) -> Callable[[str], float | int]:
    """A TrainConfig setting as an argparse type, checked by the presets' own rules while parsing (an integer of at
    least ``low``, or with ``number`` a float in ``name``'s range): a bad value stops the command line, not training."""
    def parse(text: str) -> float | int:
        if number:
            return presets.check_number(name, float(text))
        try:
            value = int(text)
        except ValueError:
            raise ValueError(f"{name} must be an integer, got {text!r}") from None
        return presets.check_count(name, value, low)
    return checked(parse)


def pick_device(prefer: str = "auto") -> str:
    """'cuda' when a GPU is present (or asked for), else 'cpu'; a clear error for a name torch cannot use here
    (auto, cpu, cuda or cuda:N) or for CUDA asked for but absent."""
    if not re.fullmatch(r"auto|cpu|cuda(:[0-9]+)?", str(prefer)):
        raise ValueError(f"unknown device {prefer!r}; choose auto, cpu, cuda or cuda:N")
    import torch

    if prefer == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if prefer.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device {prefer!r} was asked for but torch sees no CUDA GPU on this machine; use --device "
                         "cpu or auto, or install the CUDA build of torch (README, 'GPU installs')")
    if prefer.startswith("cuda:") and int(prefer[5:]) >= torch.cuda.device_count():
        raise ValueError(f"device {prefer!r} was asked for but torch sees {torch.cuda.device_count()} GPU(s), "
                         "numbered from 0")
    return prefer


# pick_device's checks as an argparse type: a wrong --device stops the command line, not notebook 04 an hour later
device_argument = checked(lambda text: text if text in ("auto", "cpu") else pick_device(text))

GIT_TIMEOUT_S = 300  # a loaded machine took over 10 s; a silent None then left a run with no provenance


def git_output(*args: str) -> str | None:
    """git's output in the repository, or None where there is no git or no repository; an error if git hangs."""
    try:
        return subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, check=True,
                              timeout=GIT_TIMEOUT_S).stdout
    except subprocess.TimeoutExpired as error:
        raise RuntimeError(f"`git {' '.join(args)}` in {REPO_ROOT} took over {GIT_TIMEOUT_S} s, so the code that "
                           "produced this result cannot be named; run it again when the machine is less busy "
                           "(a result is never recorded without its provenance)") from error
    except (OSError, subprocess.CalledProcessError):
        return None


_REFRESHED: set[Path] = set()  # repositories whose index stamps this process refreshed


def _changed(*pathspec: str) -> bool | None:
    """Whether tracked files under ``pathspec`` differ from HEAD in content, as git's clean filters see it: `git
    status` calls a notebook saved with outputs modified although nbstripout makes it equal to HEAD, and every run
    after a JupyterLab session would be stamped +dirty and refused as a record."""
    # Refresh the index's stamps first (once per process, so the index is locked once), as `git status` does: else
    # every diff of a fresh clone ran nbstripout on all its "racily clean" notebooks (12-14 s a call; 4 ms after).
    if REPO_ROOT not in _REFRESHED:
        git_output("update-index", "-q", "--refresh")  # fails harmlessly on modified files or a locked index
        _REFRESHED.add(REPO_ROOT)
    names = git_output("diff", "--no-ext-diff", "--name-only", "HEAD", "--", *pathspec)
    return None if names is None else bool(names.strip())


def git_commit() -> str | None:
    """HEAD, with '+dirty' when tracked files outside figures/ and docs/ have uncommitted changes; None outside git."""
    sha = git_output("rev-parse", "HEAD")
    # figures/ and docs/ hold regenerated outputs, not code: 06 and the renders rewriting them leave a run clean.
    dirty = _changed(".", ":!figures", ":!docs")
    if sha is None or dirty is None:
        return None
    return sha.strip() + ("+dirty" if dirty else "")


CODE_PATHS = ("helpers", "plots", "exercises", "pipeline", "evidence", "notebooks", "pyproject.toml")


def code_version() -> str | None:
    """A hash of the project's code as committed (CODE_PATHS' git objects at HEAD), '+dirty' when any of it has
    uncommitted changes; None outside git. Unlike the commit, it survives later commits that leave the code alone,
    so figures/provenance.json regenerates byte for byte from a fresh clone of a later commit."""
    listing = git_output("ls-tree", "HEAD", "--", *CODE_PATHS)
    dirty = _changed(*CODE_PATHS)
    untracked = git_output("ls-files", "--others", "--exclude-standard", "--", *CODE_PATHS)
    if listing is None or dirty is None or untracked is None:
        return None
    digest = hashlib.sha256(listing.encode()).hexdigest()[:16]
    return digest + ("+dirty" if dirty or untracked.strip() else "")


def package_versions(names: tuple[str, ...] = RECORDED_PACKAGES) -> dict[str, str | None]:
    """Installed versions of the packages that shape results (None where a package is missing)."""
    versions: dict[str, str | None] = dict.fromkeys(names)
    for name in names:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            versions[name] = importlib.metadata.version(name)
    return versions


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's model name (Linux's /proc/cpuinfo, else what platform knows): float sums differ across CPUs."""
    with contextlib.suppress(OSError):
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def environment(device: str | None = None) -> dict[str, Any]:
    """Everything worth writing beside a metric: when, where, with what code and packages; with a ``device``, its
    name (e.g. 'NVIDIA H100 80GB HBM3' or 'cpu (x86_64, 2 threads)') and the vector instruction set torch's CPU
    kernels use here (e.g. AVX512): another one sums in another order."""
    info: dict[str, Any] = {
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), "git_commit": git_commit(),
        "code_version": code_version(), "python": platform.python_version(), "platform": platform.platform(),
        "cpu_count": os.cpu_count(), "cpu_model": cpu_model(), "packages": package_versions()}
    if device is None:
        return info
    import torch

    name = (torch.cuda.get_device_name(torch.device(device)) if device.startswith("cuda") and torch.cuda.is_available()
            else f"cpu ({platform.machine()}, {torch.get_num_threads()} threads)")
    return {**info, "cpu_kernels": torch.backends.cpu.get_cpu_capability(), "device": device, "device_name": name}


def quiet_libraries() -> None:
    """Silence library chatter that says nothing about this notebook (weight-loading bars, info logs; the kernel's
    own TCP warning is silenced where the kernel starts, ``--IPKernelApp.log_level=ERROR``)."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    import transformers  # after the variables: huggingface_hub reads them as it is imported

    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    logging.getLogger("papermill").setLevel(logging.WARNING)
