"""A run folder holds one run: its first step fixes what the run is, and one writer at a time may write there.

The identity is what makes two runs different experiments: preset, language, seed, corpus, and, for the
main job, the step cap and the vectors file. It is written to ``identity.json`` (pipeline.layout) by the
first notebook or job that uses the folder. A later one that asks for another identity is refused, with
both named, so a French tokenizer never meets an English model and a cheap trial never empties a finished
run. ``--force`` (the main job) replaces a run on purpose.

Every way in takes the same locks (:class:`folder_lock`): the job holds ``.job.lock`` for the whole run and each
step's ``.<step>.lock`` while it runs the step; a notebook run by hand (JupyterLab, papermill) or ``train_cli``
holds the lock of the step it writes until its process ends, and marks that step started, never finished
(:func:`hold_step`), so neither ``--check`` nor a record takes its files for the job's.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any, Mapping

from pipeline.fingerprints import finished_with, input_kind, mark_started, started_with
from pipeline.layout import STEP_FOLDERS, RunLayout, lock_of, stamp_of

JOB_FOLDER_ENV = "PIPELINE_JOB_FOLDER"  # the run folder a job holds, told to the kernels it starts

IDENTITY_KEYS = ("preset", "lang", "seed", "corpus")  # what every step's parameters hold
STEP_IDENTITY_KEYS = {"static": ("vectors",), "pretrain": ("max_steps",)}  # and what one step's hold


class IdentityMismatch(ValueError):
    """The folder holds a run of another configuration; the message names both and the way out."""


def read_identity(layout: RunLayout) -> dict[str, Any] | None:
    """The identity the folder's first step wrote (None: a new folder, or one from before identities)."""
    try:
        found = json.loads(layout.identity.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return None  # a new folder, or a write cut short: the next claim writes it whole
    return found if isinstance(found, dict) else None


def recorded_identity(layout: RunLayout) -> dict[str, Any]:
    """What the folder holds: its ``identity.json``, else, for a folder from before ``identity.json``, the parameters
    its finished steps recorded in their stamps, so a run made by an older version is protected like any other."""
    found = read_identity(layout)
    if found:
        return found
    found = {}
    for step in STEP_FOLDERS:
        try:
            params = json.loads(stamp_of(layout.step(step)).read_text(encoding="utf-8")).get("params")
        except (OSError, ValueError, AttributeError):
            continue  # not finished, or a stamp cut short: it says nothing about the run
        if isinstance(params, dict):
            for key in (*IDENTITY_KEYS, *STEP_IDENTITY_KEYS.get(step, ())):
                if key in params:
                    found.setdefault(key, params[key])
    return _strings(found)


def _strings(identity: Mapping[str, Any]) -> dict[str, str | None]:
    return {key: (None if value is None else str(value)) for key, value in identity.items()}


def _where_free(identity: Mapping[str, Any]) -> dict[str, Any]:
    """What a folder's run is, not where its inputs lie: a files corpus by its kind, a vectors file by being one.
    Their content is the step fingerprints' business (pipeline.fingerprints): a changed input reruns its steps."""
    free = {**identity, "corpus": input_kind(identity.get("corpus"))}
    if free.get("vectors") not in (None, "None"):
        free["vectors"] = "a file"
    return free


def identity_conflict(layout: RunLayout, identity: Mapping[str, Any]) -> str | None:
    """Why a run of ``identity`` may not use this folder (None: it may). Only the keys both sides name are compared
    (a notebook run by hand knows preset, language, seed and corpus; the main job also the step cap and vectors),
    and paths never: a corpus or vectors file at a new path is compared by content, step by step."""
    wanted, found = _strings(identity), recorded_identity(layout)
    free_wanted, free_found = _where_free(wanted), _where_free(found)
    differing = sorted(key for key in wanted.keys() & found.keys() if free_wanted[key] != free_found[key])
    if not differing:
        return None
    described = ", ".join(f"{key}={found[key]}" for key in sorted(found))
    return (f"{layout.root} holds another run ({described}); this one asks for "
            f"{', '.join(f'{key}={wanted[key]}' for key in differing)}. Use another folder (--out, or run_dir in a "
            "notebook), or replace that run on purpose with the main job's --force")


def claim_identity(layout: RunLayout, identity: Mapping[str, Any], force: bool = False) -> None:
    """Write ``identity`` to a new folder, or check it against the run there (:func:`identity_conflict`); new keys
    are added. ``force`` replaces the record."""
    conflict = None if force else identity_conflict(layout, identity)
    if conflict:
        raise IdentityMismatch(conflict)
    wanted, found = _strings(identity), read_identity(layout) or {}
    merged = dict(wanted) if force else {**recorded_identity(layout), **wanted}
    if merged == found:
        return
    layout.root.mkdir(parents=True, exist_ok=True)
    temporary = Path(f"{layout.identity}.tmp-{os.getpid()}")
    temporary.write_text(json.dumps(merged, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(temporary, layout.identity)


class FolderInUse(ValueError):
    """Another process holds the folder's lock; the message names it (pid, host, since, command)."""


class folder_lock:  # noqa: N801 - used as a context manager, reads like `with folder_lock(path):`
    """Hold ``folder/.<name>.lock`` for the duration; a second holder stops at once, told who holds it.

    An OS file lock (``filelock``), released when the process ends, even by ``kill -9``, so no stale lock outlives
    its holder. The holder writes who it is beside the lock for the message.
    """

    def __init__(self, folder: Path, name: str = "job") -> None:
        self.folder, self.name = Path(folder), name
        self.file, self.owner = lock_of(folder, name)

    def __enter__(self) -> "folder_lock":
        from filelock import FileLock, Timeout

        self.folder.mkdir(parents=True, exist_ok=True)
        self._lock = FileLock(str(self.file))
        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            where = self.folder if self.name == "job" else self.folder / self.name
            raise FolderInUse(f"another job is using {where} ({self._holder()}); wait for it to finish (a "
                              "notebook's kernel: shut it down), or use another folder (--out, or run_dir in a "
                              "notebook)") from None
        owner = {"pid": os.getpid(), "host": socket.gethostname(), "argv": sys.argv,
                 "since": time.strftime("%Y-%m-%d %H:%M:%S")}
        self.owner.write_text(json.dumps(owner))
        return self

    def _holder(self) -> str:
        try:
            owner = json.loads(self.owner.read_text())
            return f"pid {owner['pid']} on {owner['host']} since {owner['since']}: {' '.join(owner['argv'])}"
        except (OSError, ValueError, KeyError):
            return "holder unknown"

    def __exit__(self, *exc: Any) -> None:
        self.owner.unlink(missing_ok=True)
        self._lock.release()


_HELD: dict[Path, folder_lock] = {}  # the step locks this process holds until it ends


def hold_step(step_folder: Path, who: str) -> None:
    """Before a notebook run by hand or ``train_cli`` writes a step folder of a run: refuse while a job runs there,
    hold the step's lock for the rest of this process, and mark the step started, not finished, so that ``--check``
    says it reruns and the job runs it again. Nothing under the job (it holds the folder and stamps the step), and
    nothing outside a run folder (no identity.json)."""
    step_folder = Path(step_folder).resolve()
    run = step_folder.parent
    if step_folder in _HELD or not RunLayout(run).identity.is_file() or refuse_while_a_job_runs(run):
        return
    _HELD[step_folder] = folder_lock(run, step_folder.name).__enter__()
    step_folder.mkdir(parents=True, exist_ok=True)
    # Started with the fingerprint it last finished (or started) with: the job reruns the step, but in place, so a
    # pretraining step resumes from its identity-checked checkpoints instead of starting from an empty folder.
    mark_started(step_folder, finished_with(step_folder) or started_with(step_folder), by_hand=who)


def refuse_while_a_job_runs(run: Path) -> bool:
    """FolderInUse if a job holds ``run``; True if this process is a kernel that job started (told so, it passes)."""
    if os.environ.get(JOB_FOLDER_ENV) == str(Path(run).resolve()):
        return True
    with folder_lock(run):
        return False
