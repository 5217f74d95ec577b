"""The content of a step's input files, as SHA-256, so a file replaced at the same path reruns the step.

A step's parameters name its input files by path (``corpus='files:/data/c4'``, ``vectors='/v/cc.en.300.bin'``);
a path says nothing about what is in the file now. :func:`input_files` finds those files in the parameters and
:func:`content_digest` hashes them, a file or a whole folder. Reading gigabytes of C4 on every ``--check``
would be slow, so each file's digest is kept in ``<run>/.input-hashes.json`` under its size and modification
time, and read again only when either changes. A finished step records the digests in its stamp (a folder's with
one digest per file), so ``--check`` can name the input, and the file in a folder, that changed.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Mapping

from pipeline.layout import INPUT_HASHES_NAME

CACHE_NAME = INPUT_HASHES_NAME  # inside the run folder: a run writes nowhere else
BLOCK = 1 << 20
PATH_KINDS = ("files:", "sib200:")  # an input named by where it lies: 'files:/data/c4', 'sib200:/copies/sib200'


def input_kind(value: Any) -> Any:
    """'files:/data/c4' -> 'files': what an input is, without where it lies (its digest says what it holds).

    The one place a path is taken out of a run's description: the step fingerprints, identity.json and the
    checkpoint key all call it, so a run folder or an input moved whole stays the same run. Other values pass.
    """
    return value.split(":", 1)[0] if isinstance(value, str) and value.startswith(PATH_KINDS) else value


def input_files(params: Mapping[str, Any]) -> dict[str, Path]:
    """The files or folders a step's parameters name as inputs: a ``files:`` corpus, a vectors file, a labelled set
    (``files:PATH``, or ``sib200:PATH``, a local copy of SIB-200)."""
    found: dict[str, Path] = {}
    for name in ("corpus", "labelled"):
        value = params.get(name)
        if isinstance(value, str) and value.startswith(PATH_KINDS):
            found[name] = Path(value.split(":", 1)[1])
    if params.get("vectors"):
        found["vectors"] = Path(params["vectors"])
    return found


def _file_digest(path: Path, cache: dict[str, Any]) -> str:
    stat = path.stat()
    key = str(path.resolve())
    known = cache.get(key)
    if isinstance(known, dict) and known.get("size") == stat.st_size and known.get("mtime_ns") == stat.st_mtime_ns:
        return str(known.get("sha256"))
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(BLOCK):
            digest.update(block)
    cache[key] = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": digest.hexdigest()}
    return cache[key]["sha256"]


def folder_digests(path: Path, cache: dict[str, Any]) -> dict[str, str]:
    """{relative name: SHA-256} of every file the corpus reader reads under the folder ``path`` (symlinked folders
    followed, each real folder once, hidden files left out: pipeline.files.walk_folder), in name order."""
    from pipeline.files import walk_folder  # the reader's own walk, so the digest covers exactly what is read

    return {file.relative_to(path).as_posix(): _file_digest(file, cache) for file in walk_folder(Path(path))[0]}


def content_digest(path: Path, cache: dict[str, Any]) -> str:
    """SHA-256 of a file, or of a folder's files (their relative names and digests, in order); 'missing' if absent."""
    path = Path(path)
    if path.is_file():
        return _file_digest(path, cache)
    if not path.is_dir():
        return "missing"
    return _digest_of_folder(folder_digests(path, cache))


def _digest_of_folder(files: Mapping[str, str]) -> str:
    digest = hashlib.sha256()
    for name, sha in files.items():
        digest.update(f"{name}:{sha}\n".encode())
    return digest.hexdigest()


def read_cache(run_dir: Path) -> dict[str, Any]:
    try:
        cache = json.loads((Path(run_dir) / CACHE_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # no cache yet, or a damaged one: the files are read again
    return cache if isinstance(cache, dict) else {}


def write_cache(run_dir: Path, cache: Mapping[str, Any]) -> None:
    """Keep the digests for the next check (written whole, then renamed; only inside an existing run folder).

    The cache only saves time: a folder that cannot be written to (read-only, a full disk) keeps none.
    """
    if not Path(run_dir).is_dir():
        return
    temporary = Path(run_dir) / f"{CACHE_NAME}.{os.getpid()}.tmp"
    try:
        temporary.write_text(json.dumps(cache, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(temporary, Path(run_dir) / CACHE_NAME)
    except OSError:
        temporary.unlink(missing_ok=True)


def _digest_entry(path: Path, cache: dict[str, Any]) -> dict[str, Any]:
    """{path, sha256}, and for a folder {files: {name: sha256}} too, so a check can name the file that changed."""
    if Path(path).is_dir():
        files = folder_digests(path, cache)
        return {"path": str(path), "sha256": _digest_of_folder(files), "files": files}
    return {"path": str(path), "sha256": content_digest(path, cache)}


def input_digests(params: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """{name: {path, sha256[, files]}} for every input file or folder the parameters name (the run folder's cache)."""
    run_dir = Path(params["run_dir"]) if params.get("run_dir") else None
    cache = read_cache(run_dir) if run_dir else {}
    before = json.dumps(cache, sort_keys=True)
    digests = {name: _digest_entry(path, cache) for name, path in sorted(input_files(params).items())}
    if run_dir and json.dumps(cache, sort_keys=True) != before:
        write_cache(run_dir, cache)
    return digests


def identity_of(digests: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """What a fingerprint hashes of the digests: each input's content hash, never its path (an identical file at
    a new path is the same input; a folder's file list adds nothing: its hash covers the files)."""
    return {name: entry["sha256"] for name, entry in digests.items()}


def _changed_files(then: Mapping[str, Any], now: Mapping[str, Any], shown: int = 3) -> str:
    """': a.txt changed, b.txt added, c.txt removed' between two folder digests ('' when either has no file list)."""
    before, after = then.get("files"), now.get("files")
    if not isinstance(before, dict) or not isinstance(after, dict):
        return ""
    changes = [f"{name} {'removed' if name not in after else 'added' if name not in before else 'changed'}"
               for name in sorted(set(before) | set(after)) if before.get(name) != after.get(name)]
    more = f" and {len(changes) - shown} more" if len(changes) > shown else ""
    return f": {', '.join(changes[:shown])}{more}" if changes else ""


def changed_inputs(recorded: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """One line per input whose content differs from what a finished step recorded, naming a folder's files."""
    lines = []
    for name, now in current.items():
        then = recorded.get(name)
        if not isinstance(then, dict) or then.get("sha256") != now["sha256"]:
            was = str(then.get("sha256"))[:12] if isinstance(then, dict) else "not recorded"
            files = _changed_files(then, now) if isinstance(then, dict) else ""
            lines.append(f"input {name} {now['path']} changed (sha256 {was} -> {now['sha256'][:12]}){files}")
    return lines
