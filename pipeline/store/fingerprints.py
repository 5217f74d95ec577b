"""What a step's result depends on, as one hash, and the stamps that record it: cell sources (never outputs: a
notebook saved by JupyterLab reruns nothing), parameters without paths (a moved runs folder reruns nothing), the
project modules imported, inputs by content (cached by size and mtime; a finished step records them, a folder's one
per file, so ``--check`` names what changed), upstream stamps."""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import os
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from pipeline.run.notebook_sync import cell_source, notebook_cells
from pipeline.store.layout import INPUT_HASHES_NAME, PROJECT_PACKAGES, REPO_ROOT, read_json, stamp_of, started_of
from pipeline.store.staging import written_whole

if TYPE_CHECKING:
    from pipeline.run.steps import Step

FOLDER_PARAMETERS = ("run_dir", "out_dir", "run_dirs")  # absolute folders: left out of the fingerprint
# An input named by where it lies: 'files:/data/c4', 'sib200:/copies/sib200', 'libreoffice@en,cs:/debs'.
PATH_KINDS = ("files:", "sib200:", "libreoffice:", "libreoffice@")


def _has_path(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(PATH_KINDS) and ":" in value


def input_kind(value: Any) -> Any:
    """'files:/data/c4' -> 'files': what an input is, not where it lies; the one place a path leaves a run's
    description (fingerprints, identity.json, run.json's identity), so a folder moved whole is the same run."""
    return value.split(":", 1)[0] if _has_path(value) else value


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text[:12] + "..." if isinstance(value, str) and len(value) == 64 else text


def differences(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """'key: old -> new' for every key whose value differs (nested records are compared key by key)."""
    found = []
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key), after.get(key)
        if isinstance(old, Mapping) and isinstance(new, Mapping):
            found += [f"{key}.{d}" for d in differences(old, new)]
        elif old != new:
            found.append(f"{key}: {_short(old)} -> {_short(new)}")
    return found


def input_files(params: Mapping[str, Any]) -> dict[str, Path]:
    """The files or folders a step's parameters name as inputs: a ``files:`` or ``libreoffice:`` corpus, a vectors
    file, a labelled set (``files:PATH``, or ``sib200:PATH``, a local copy of SIB-200)."""
    found = {name: Path(params[name].split(":", 1)[1]) for name in ("corpus", "labelled")
             if _has_path(params.get(name))}
    return found | ({"vectors": Path(params["vectors"])} if params.get("vectors") else {})


def _file_digest(path: Path, cache: dict[str, Any]) -> str:
    stat, key = path.stat(), str(path.resolve())
    known = cache.get(key)
    if isinstance(known, dict) and known.get("size") == stat.st_size and known.get("mtime_ns") == stat.st_mtime_ns:
        return str(known.get("sha256"))
    with open(path, "rb") as handle:
        sha = hashlib.file_digest(handle, "sha256").hexdigest()
    cache[key] = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": sha}
    return sha


def folder_digests(path: Path, cache: dict[str, Any]) -> dict[str, str]:
    """{relative name: SHA-256} of every file the corpus reader reads under the folder ``path`` (symlinked folders
    followed, each real folder once, hidden files left out: pipeline.corpora.files.walk_folder), in name order."""
    from pipeline.corpora.files import walk_folder  # the reader's own walk, so the digest covers exactly what is read

    return {file.relative_to(path).as_posix(): _file_digest(file, cache) for file in walk_folder(Path(path))[0]}


def _digest_entry(path: Path, cache: dict[str, Any]) -> dict[str, Any]:
    """{path, sha256}, and a folder's {files: {name: sha256}} (its sha256 hashes those), or sha256 'missing'."""
    path = Path(path)
    if not path.is_dir():
        return {"path": str(path), "sha256": _file_digest(path, cache) if path.is_file() else "missing"}
    files = folder_digests(path, cache)
    sha = hashlib.sha256("".join(f"{name}:{digest}\n" for name, digest in files.items()).encode()).hexdigest()
    return {"path": str(path), "sha256": sha, "files": files}


def content_digest(path: Path, cache: dict[str, Any]) -> str:
    """SHA-256 of a file, or of a folder's files; 'missing' if absent."""
    return _digest_entry(path, cache)["sha256"]


def input_digests(params: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """{name: {path, sha256[, files]}} of every input the parameters name, through the run folder's cache, which
    only saves time: a folder that cannot be written to (read-only, a full disk) keeps none."""
    cache_file = Path(params["run_dir"]) / INPUT_HASHES_NAME if params.get("run_dir") else None
    cache = (read_json(cache_file) if cache_file else None) or {}  # none yet, or a damaged one: files read again
    before = json.dumps(cache, sort_keys=True)
    digests = {name: _digest_entry(path, cache) for name, path in sorted(input_files(params).items())}
    if cache_file and cache_file.parent.is_dir() and json.dumps(cache, sort_keys=True) != before:
        partial = cache_file.with_name(f"{INPUT_HASHES_NAME}.{os.getpid()}.tmp")
        with suppress(OSError), written_whole(cache_file, tmp=partial) as tmp:
            tmp.write_text(json.dumps(cache, indent=1, sort_keys=True), encoding="utf-8")
    return digests


def _changed_files(then: Mapping[str, Any], now: Mapping[str, Any], shown: int = 3) -> str:
    """': a.txt changed, b.txt added, c.txt removed' between two folder digests ('' without both file lists)."""
    before, after = then.get("files"), now.get("files")
    if not isinstance(before, dict) or not isinstance(after, dict):
        return ""
    changes = [f"{name} {'removed' if name not in after else 'added' if name not in before else 'changed'}"
               for name in sorted(set(before) | set(after)) if before.get(name) != after.get(name)]
    more = f" and {len(changes) - shown} more" if len(changes) > shown else ""
    return f": {', '.join(changes[:shown])}{more}" if changes else ""


def changed_inputs(step_folder: Path, params: dict[str, Any]) -> list[str]:
    """Why a step would rerun because of its input files: one line per input whose content is not the one its
    finished stamp recorded, naming a folder's files (none without a finished stamp)."""
    if (stamp := read_json(stamp_of(step_folder))) is None:
        return []
    lines = []
    for name, now in input_digests(params).items():
        then = stamp.get("inputs", {}).get(name)
        if not isinstance(then, dict) or then.get("sha256") != now["sha256"]:
            was = str(then.get("sha256"))[:12] if isinstance(then, dict) else "not recorded"
            files = _changed_files(then, now) if isinstance(then, dict) else ""
            lines.append(f"input {name} {now['path']} changed (sha256 {was} -> {now['sha256'][:12]}){files}")
    return lines


def notebook_sources(notebook: Path) -> list[tuple[str, str]]:
    """(cell type, source) of every cell: what a student edits, never outputs, counts or metadata."""
    return [(cell.get("cell_type", ""), cell_source(cell)) for cell in notebook_cells(notebook)]


def module_file(module: str) -> Path | None:
    """The file of a project module ('helpers.claims' -> helpers/claims.py), None if there is none."""
    base = REPO_ROOT.joinpath(*module.split("."))
    return next((c for c in (base.with_suffix(".py"), base / "__init__.py") if c.is_file()), None)


@functools.lru_cache(maxsize=1024)
def imported_project_modules(source: str) -> frozenset[str]:
    """The project names ``source`` imports anywhere (lazy imports too): ``from m import x`` names m and m.x, a
    module only if its file exists (:func:`project_modules` checks). Cached: parsing again per step took seconds."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.split(".")[0] in PROJECT_PACKAGES)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in PROJECT_PACKAGES:
            found.update([node.module, *(f"{node.module}.{alias.name}" for alias in node.names)])
    return frozenset(found)


def project_modules(step: Step) -> list[str]:
    """Every project module the step's notebook imports, directly or through other project modules."""
    code = "\n".join("\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in src.splitlines())
                     for kind, src in notebook_sources(step.notebook) if kind == "code")  # magics: no Python
    todo = sorted(imported_project_modules(code) | {"helpers"})
    seen: set[str] = set()
    while todo:
        module = todo.pop()
        if module in seen or (file := module_file(module)) is None:
            continue  # seen, or a name imported from a module, not a module
        seen.add(module)
        todo.extend(module.rsplit(".", i)[0] for i in range(1, module.count(".") + 1))  # plots.x runs plots/__init__.py
        todo.extend(imported_project_modules(file.read_text(encoding="utf-8")))
    return sorted(seen)


def without_paths(params: Any) -> Any:
    """Parameters, or an identity, without absolute folders or input paths (an input's content enters through its
    digest): how step fingerprints, identity.json and run.json's identity (where a files corpus written by older
    code with its path reads as ``files``) are all compared. Anything but a mapping passes."""
    if not isinstance(params, Mapping):
        return params
    kept = {k: v for k, v in params.items() if k not in FOLDER_PARAMETERS}
    for name in input_files(params):
        kept[name] = input_kind(params[name]) if name != "vectors" else "file"
    if "run_dirs" in params:
        kept["run_dirs"] = [Path(d).name for d in params["run_dirs"]]
    return kept


def fingerprint(step: Step, params: dict[str, Any], upstream: Sequence[Path] = (), files: Sequence[Path] = ()) -> str:
    """Notebook cell sources, path-free parameters, imported modules' code, the inputs' content hashes (never their
    paths: a folder's file list adds nothing, its hash covers the files), upstream fingerprints, and the content of
    ``files`` (absent ones count as absent): 06's are the record files of every run, so an edited record reruns it."""
    digest = hashlib.sha256()
    digest.update(json.dumps(notebook_sources(step.notebook)).encode())
    digest.update(json.dumps(without_paths(params), sort_keys=True, default=str).encode())
    for module in project_modules(step):
        digest.update(module.encode())
        digest.update(module_file(module).read_bytes())
    contents = {name: entry["sha256"] for name, entry in input_digests(params).items()}
    digest.update(json.dumps(contents, sort_keys=True).encode())
    for folder in upstream:
        digest.update(f"{Path(folder).name}:{finished_with(folder) or 'missing'}".encode())
    for path in files:
        digest.update(f"{Path(path).name}:{content_digest(Path(path), {})}".encode())
    return digest.hexdigest()


UNREADABLE_STAMP = "the stamp {path} cannot be read ({err}); the step counts as not finished and reruns"


def finished_with(step_folder: Path) -> str | None:
    """The fingerprint the step in ``step_folder`` last finished with (None if it never finished)."""
    return (read_json(stamp_of(step_folder), UNREADABLE_STAMP) or {}).get("fingerprint")


def started_with(step_folder: Path) -> str | None:
    return (read_json(started_of(step_folder), UNREADABLE_STAMP) or {}).get("fingerprint")


def is_up_to_date(step_folder: Path, key: str) -> bool:
    return finished_with(step_folder) == key


def mark_started(step_folder: Path, key: str | None, **more: Any) -> None:
    """Record that the step starts with fingerprint ``key``, and remove its finished stamp: a step that fails now
    must not look finished later."""
    stamp_of(step_folder).unlink(missing_ok=True)
    started_of(step_folder).write_text(json.dumps({"fingerprint": key, **more}))


def mark_finished(step_folder: Path, key: str, seconds: float, params: dict[str, Any], **more: Any) -> None:
    """The finished stamp: the fingerprint, how long the step took, its parameters and anything else worth keeping."""
    stamp = {"fingerprint": key, "seconds": round(seconds, 1), "params": params, **more}
    stamp_of(step_folder).write_text(json.dumps(stamp, indent=2))


def copy_fingerprint(step_folder: Path, into: Path) -> None:
    """A stamp holding only the fingerprint (parameters name local folders), for a record of a finished step."""
    key = finished_with(step_folder)
    if key is not None:
        Path(into).mkdir(parents=True, exist_ok=True)
        stamp_of(into).write_text(json.dumps({"fingerprint": key}) + "\n")


# What must agree between the two runs of one comparison (run.json "identity").
IDENTITY_FIELDS = ("lang", "seed", "preset", "corpus", "max_steps", "data_fingerprint", "tokenizer_fingerprint",
                   "train_config_hash")

def pair_mismatch(tiny_info: dict[str, Any], ft_info: dict[str, Any]) -> str | None:
    """What differs between BERT_TINY's and BERT_FT's run.json beyond the initialisation; None for a fair pair.
    A run.json without an "identity" block (written by older code), or none, cannot show that they agree."""
    pair = {"BERT_TINY": tiny_info, "BERT_FT": ft_info}
    if lacking := [label for label, info in pair.items() if not isinstance(info.get("identity"), dict)]:
        return (f"no identity block in the run.json of {' and '.join(lacking)} (written by older code, or not found): "
                "train the pair again")
    found = differences(*(without_paths({k: info["identity"].get(k) for k in IDENTITY_FIELDS})
                          for info in pair.values()))
    # the kind of initialisation, 'random' or 'static', as run.json records it ("init": {"kind": ...})
    tiny_init, ft_init = (info["init"].get("kind") if isinstance(info.get("init"), dict) else None
                          for info in pair.values())
    if tiny_init not in (None, "random"):
        found.append(f"BERT_TINY was initialised from {tiny_init!r}, not at random")
    if ft_init == "random":
        found.append("BERT_FT was initialised at random, not from static vectors")
    return "; ".join(found) or None
