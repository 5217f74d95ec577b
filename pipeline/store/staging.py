"""Files written whole: one through a temporary beside it (:func:`written_whole`), or a set staged in a hidden
folder and moved into place once every one is written, so a failure part-way leaves the previous set whole (never
new tables beside old figures). A staging folder is removed on leaving; one a killed process left, by the next writer.
"""

from __future__ import annotations

import errno
import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator


def staging_name(name: str, pid: int | str) -> str:
    return f".{name}.incoming-{pid}"


@contextmanager
def staged(parent: Path, name: str) -> Iterator[Path]:
    """An empty staging folder ``parent/.<name>.incoming-<pid>``, removed on leaving, however that happens; those
    whose process is gone are removed first."""
    parent = Path(parent)
    for abandoned in parent.glob(staging_name(name, "*")):
        try:
            os.kill(int(abandoned.name.rsplit("-", 1)[-1]), 0)  # alive, or (PermissionError) another user's
        except ProcessLookupError:
            shutil.rmtree(abandoned, ignore_errors=True)
        except (PermissionError, ValueError):  # ValueError: the name ends in no process number
            pass
    staging = parent / staging_name(name, os.getpid())
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        yield staging
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def move_into(staging: Path, target: Path) -> None:
    """Every file under ``staging`` into the same place under ``target``, each replaced in one step."""
    target.mkdir(parents=True, exist_ok=True)
    for path in sorted(p for p in staging.rglob("*") if p.is_file()):
        destination = target / path.relative_to(staging)
        destination.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, destination)


def remove_files(folder: Path, names: Iterable[str]) -> list[Path]:
    """The plain files ``names`` directly in ``folder`` removed (a name with a folder part is never followed)."""
    removed = [folder / name for name in sorted(set(names)) if Path(name).name == name and not name.startswith(".")]
    removed = [path for path in removed if path.is_file() and not path.is_symlink()]
    for path in removed:
        path.unlink()
    return removed


@contextmanager
def written_whole(path: Path, what: str = "write", tmp: Path | None = None,
                  rerun: str = "training resumes from the last checkpoint") -> Iterator[Path]:
    """A temporary path to write ``path``'s new content to; it replaces ``path`` only once written whole. Any
    failure (a full disk, Ctrl-C) removes it; a full disk says which folder needs space and what a rerun does."""
    path = Path(path)
    tmp = tmp or path.with_name(f".{path.stem}.partial{path.suffix}")
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException as err:
        tmp.unlink(missing_ok=True)
        if isinstance(err, OSError) and err.errno == errno.ENOSPC:
            raise OSError(err.errno, f"no space left to {what} {path}: free space on that disk (in {path.parent}), "
                                     f"then run the same command again; {rerun}") from err
        raise


@contextmanager
def set_aside(folder: Path) -> Iterator[Path]:
    """Move ``folder`` aside (``.NAME.previous``) while its new content is made: put back if that fails or is
    stopped, deleted once it succeeds, so a bad new input never costs the finished result."""
    previous = folder.with_name(f".{folder.name}.previous")
    shutil.rmtree(previous, ignore_errors=True)  # left by a run killed while it made the new content
    os.replace(folder, previous)
    try:
        yield previous
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(previous, folder)
        raise
    shutil.rmtree(previous, ignore_errors=True)
