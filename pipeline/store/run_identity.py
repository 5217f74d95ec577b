"""A run folder holds one run: its first step fixes what the run is (``identity.json``), and one writer at a time
may write there. A run asking for another identity is refused, both named, so a French tokenizer never meets an
English model and a cheap trial never empties a finished run; the main job's ``--force`` replaces a run on purpose.
Every way in takes the same locks (:func:`folder_lock`, :func:`claim_step_by_hand`; docs/architecture.md).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping

from pipeline.store.fingerprints import finished_with, mark_started, started_with, without_paths
from pipeline.store.layout import RECORD_MARK, STEP_FOLDERS, RunLayout, lock_of, read_json, record_holding, stamp_of
from pipeline.store.staging import written_whole

JOB_FOLDER_ENV = "PIPELINE_JOB_FOLDER"  # the run folder a job holds, told to the kernels it starts

# What a step's parameters hold of the identity: every step's the first four, notebook 03's the vectors, 04's the cap.
IDENTITY_KEYS = ("preset", "lang", "seed", "corpus", "vectors", "max_steps")


class IdentityMismatch(ValueError):
    """The folder holds a run of another configuration; the message names both and the way out."""


class RecordNotARun(ValueError):
    """The folder is (or lies in) a record: it keeps what regenerates figures and is never run or trained in."""


def refuse_records(folder: Path) -> None:
    """RecordNotARun, before anything is written, if ``folder`` is or lies in a record (it holds RECORD_MARK)."""
    if (record := record_holding(folder)) is not None:
        raise RecordNotARun(f"{folder} is in the record {record} (it holds {RECORD_MARK}): nothing runs or trains in "
                            "a record. Give a run folder instead (--out runs, or run_dir in a notebook); to redraw "
                            f"figures from the record: python -m pipeline.job --figures-from {record} --figures FOLDER")


def recorded_identity(layout: RunLayout) -> dict[str, Any]:
    """What the folder holds: its ``identity.json``, else, for a folder from before ``identity.json``, the parameters
    its finished steps recorded in their stamps, so a run made by an older version is protected like any other."""
    if found := read_json(layout.identity):  # None: a new folder, one from before identities, or a write cut short
        return found
    found = {}
    for step in STEP_FOLDERS:  # a step not finished, or a stamp cut short, says nothing about the run
        params = (read_json(stamp_of(layout.step(step))) or {}).get("params")
        if isinstance(params, dict):
            found |= {key: params[key] for key in IDENTITY_KEYS if key in params and key not in found}
    return _strings(found)


def _strings(identity: Mapping[str, Any]) -> dict[str, str | None]:
    return {key: (None if value is None else str(value)) for key, value in identity.items()}


def identity_conflict(layout: RunLayout, identity: Mapping[str, Any]) -> str | None:
    """Why a run of ``identity`` may not use this folder (None: it may). Only the keys both sides name are compared,
    and paths never (:func:`pipeline.store.fingerprints.without_paths`): the step fingerprints compare inputs by
    content."""
    wanted, found = _strings(identity), recorded_identity(layout)
    free_wanted, free_found = without_paths(wanted), without_paths(found)
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
    refuse_records(layout.root)
    if not force and (conflict := identity_conflict(layout, identity)):
        raise IdentityMismatch(conflict)
    merged = _strings(identity) if force else {**recorded_identity(layout), **_strings(identity)}
    if merged == (read_json(layout.identity) or {}):  # a write cut short reads as none: written whole again
        return
    layout.root.mkdir(parents=True, exist_ok=True)
    with written_whole(layout.identity, tmp=Path(f"{layout.identity}.tmp-{os.getpid()}"),
                       rerun="the folder is left as it was") as tmp:
        tmp.write_text(json.dumps(merged, indent=2, sort_keys=True) + "\n", encoding="utf-8")


class FolderInUse(ValueError):
    """Another process holds the folder's lock; the message names it (pid, host, since, command)."""


@contextmanager
def folder_lock(folder: Path, name: str = "job") -> Iterator[None]:
    """Hold ``folder/.<name>.lock`` for the duration; a second holder stops at once, told who holds it (written
    beside the lock). An OS file lock: released when the process ends, even by ``kill -9``, so none goes stale."""
    from filelock import FileLock, Timeout

    folder = Path(folder)
    refuse_records(folder)
    file, owner = lock_of(folder, name)
    folder.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(file))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        holder = read_json(owner) or {}
        who = (f"pid {holder['pid']} on {holder['host']} since {holder['since']}: {' '.join(holder['argv'])}"
               if {"pid", "host", "since", "argv"} <= holder.keys() else "holder unknown")
        where = folder if name == "job" else folder / name
        raise FolderInUse(f"another job is using {where} ({who}); wait for it to finish (a notebook's kernel: shut "
                          "it down), or use another folder (--out, or run_dir in a notebook)") from None
    owner.write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "argv": sys.argv,
                                 "since": time.strftime("%Y-%m-%d %H:%M:%S")}))
    try:
        yield
    finally:
        owner.unlink(missing_ok=True)
        lock.release()


_HELD_LOCKS, _HELD = ExitStack(), set[Path]()  # the step locks this process holds until it ends, and their folders


def claim_step_by_hand(step_folder: Path, who: str) -> None:
    """Before a notebook run by hand or ``train_cli`` writes a run's step folder: refuse while a job runs there, hold
    the step's lock for the rest of this process, and mark the step started, not finished, so ``--check`` and the
    job rerun it. Nothing under the job (it holds the folder), nor outside a run folder (no identity.json)."""
    step_folder = Path(step_folder).resolve()
    refuse_records(step_folder)
    run = step_folder.parent
    if step_folder in _HELD or not RunLayout(run).identity.is_file() or refuse_while_a_job_runs(run):
        return
    _HELD_LOCKS.enter_context(folder_lock(run, step_folder.name))
    _HELD.add(step_folder)
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
