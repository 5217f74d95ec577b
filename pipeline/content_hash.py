"""The content of a step's input files, as SHA-256, so a file replaced at the same path reruns the step.

A step's parameters name its input files by path (``corpus='files:/data/c4'``, ``vectors='/v/cc.en.300.bin'``);
a path says nothing about what is in the file now. :func:`input_files` finds those files in the parameters and
:func:`content_digest` hashes them, a file or a whole folder. Reading gigabytes of C4 on every ``--check``
would be slow, so each file's digest is kept in ``<run>/.input-hashes.json`` under its size and modification
time, and read again only when either changes.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Mapping

CACHE_NAME = ".input-hashes.json"  # inside the run folder: a run writes nowhere else
BLOCK = 1 << 20


def input_files(params: Mapping[str, Any]) -> dict[str, Path]:
    """The files or folders a step's parameters name as inputs: a ``files:`` corpus, a vectors file, a labelled set
    (``files:PATH``, or ``sib200:PATH``, a local copy of SIB-200)."""
    found: dict[str, Path] = {}
    for name in ("corpus", "labelled"):
        value = params.get(name)
        if isinstance(value, str) and value.startswith(("files:", "sib200:")):
            found[name] = Path(value.split(":", 1)[1])
    if params.get("vectors"):
        found["vectors"] = Path(params["vectors"])
    return found


def _file_digest(path: Path, cache: dict[str, Any]) -> str:
    stat = path.stat()
    key = str(path.resolve())
    known = cache.get(key)
    if known and known["size"] == stat.st_size and known["mtime_ns"] == stat.st_mtime_ns:
        return known["sha256"]
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(BLOCK):
            digest.update(block)
    cache[key] = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": digest.hexdigest()}
    return cache[key]["sha256"]


def content_digest(path: Path, cache: dict[str, Any]) -> str:
    """SHA-256 of a file, or of a folder's files (their relative names and digests, in order); 'missing' if absent."""
    path = Path(path)
    if path.is_file():
        return _file_digest(path, cache)
    if not path.is_dir():
        return "missing"
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(f"{file.relative_to(path).as_posix()}:{_file_digest(file, cache)}\n".encode())
    return digest.hexdigest()


def read_cache(run_dir: Path) -> dict[str, Any]:
    try:
        cache = json.loads((Path(run_dir) / CACHE_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # no cache yet, or a damaged one: the files are read again
    return cache if isinstance(cache, dict) else {}


def write_cache(run_dir: Path, cache: Mapping[str, Any]) -> None:
    """Keep the digests for the next check (written whole, then renamed; only inside an existing run folder)."""
    if not Path(run_dir).is_dir():
        return
    temporary = Path(run_dir) / f"{CACHE_NAME}.{os.getpid()}.tmp"
    temporary.write_text(json.dumps(cache, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(temporary, Path(run_dir) / CACHE_NAME)


def input_digests(params: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """{name: {path, sha256}} for every input file the parameters name, using the run folder's cache."""
    run_dir = Path(params["run_dir"]) if params.get("run_dir") else None
    cache = read_cache(run_dir) if run_dir else {}
    before = json.dumps(cache, sort_keys=True)
    digests = {name: {"path": str(path), "sha256": content_digest(path, cache)}
               for name, path in sorted(input_files(params).items())}
    if run_dir and json.dumps(cache, sort_keys=True) != before:
        write_cache(run_dir, cache)
    return digests


def changed_inputs(recorded: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """One line per input whose content differs from what a finished step recorded."""
    lines = []
    for name, now in current.items():
        then = recorded.get(name)
        if then is None or then.get("sha256") != now["sha256"]:
            was = then["sha256"][:12] if then else "not recorded"
            lines.append(f"input {name} {now['path']} changed (sha256 {was} -> {now['sha256'][:12]})")
    return lines
