"""Seed, device and the environment that produced a result, recorded next to it.

Kept free of heavy imports at module level: the GPU machines have torch and numpy but may lack
the rest, and a notebook's first cell should import quickly.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib.metadata
import os
import platform
import random
import subprocess
from typing import Any

from pipeline.layout import REPO_ROOT

RECORDED_PACKAGES = (
    "torch", "transformers", "tokenizers", "numpy", "datasets", "fasttext", "scikit-learn",
    "matplotlib", "papermill",
)


def set_seed(seed: int) -> None:
    """Seed Python, numpy and torch (where installed) so a notebook rerun gives the same numbers."""
    random.seed(seed)
    try:
        import numpy as np

        np.random.seed(seed)
    except ImportError:  # pragma: no cover - numpy is always there in this project
        pass
    try:
        import torch

        torch.manual_seed(seed)
    except ImportError:  # pragma: no cover
        pass


def check_device(name: str) -> str:
    """Refuse a device name torch cannot use here, before any work is done: auto, cpu, cuda or cuda:N."""
    text = str(name)
    if text in ("auto", "cpu", "cuda") or (text.startswith("cuda:") and text[5:].isdigit()):
        return text
    raise ValueError(f"unknown device {name!r}; choose auto, cpu, cuda or cuda:N")


def device_argument(text: str) -> str:
    """:func:`check_device` as an argparse ``type``: a wrong ``--device`` stops the command line at once."""
    try:
        return check_device(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def pick_device(prefer: str = "auto") -> str:
    """'cuda' when a GPU is present (or asked for), else 'cpu'; a clear error if CUDA is asked for but absent."""
    import torch

    check_device(prefer)
    if prefer == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if prefer.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device {prefer!r} was asked for but torch sees no CUDA GPU; use 'cpu' or 'auto'")
    return prefer


def git_commit() -> str | None:
    """HEAD, with '+dirty' when tracked files outside figures/ have uncommitted changes; None outside git."""
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True,
                             text=True, check=True, timeout=10).stdout.strip()
        # figures/ holds regenerated outputs, not code: notebook 06 rewriting it must not mark its own run dirty.
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!figures"],
                               cwd=REPO_ROOT, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return sha + ("+dirty" if dirty else "")


def package_versions(names: tuple[str, ...] = RECORDED_PACKAGES) -> dict[str, str | None]:
    """Installed versions of the packages that shape results (None where a package is missing)."""
    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def device_description(device: str) -> str:
    """Human-readable device name, e.g. 'NVIDIA H100 80GB HBM3' or 'cpu (x86_64, 2 threads)'."""
    import torch

    if device.startswith("cuda") and torch.cuda.is_available():
        return torch.cuda.get_device_name(torch.device(device))
    return f"cpu ({platform.machine()}, {torch.get_num_threads()} threads)"


def environment(device: str | None = None) -> dict[str, Any]:
    """Everything worth writing beside a metric: when, where, with what code and packages."""
    info: dict[str, Any] = {
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "git_commit": git_commit(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "packages": package_versions(),
    }
    if device is not None:
        info["device"] = device
        info["device_name"] = device_description(device)
    return info
