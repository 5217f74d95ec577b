"""A run folder holds one run: its first step fixes what the run is, and nothing else may write there.

The identity is what makes two runs different experiments: preset, language, seed, corpus, and, for the
main job, the step cap and the vectors file. It is written to ``identity.json`` (pipeline.layout) by the
first notebook or job that uses the folder. A later one that asks for another identity is refused, with
both named, so a French tokenizer never meets an English model and a cheap trial never empties a finished
run. ``--force`` (the main job) replaces a run on purpose.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping

from pipeline.layout import RunLayout


class IdentityMismatch(ValueError):
    """The folder holds a run of another configuration; the message names both and the way out."""


def read_identity(layout: RunLayout) -> dict[str, Any] | None:
    """The identity the folder's first step wrote (None: a new folder, or one from before identities)."""
    try:
        text = layout.identity.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        found = json.loads(text)
    except json.JSONDecodeError:
        return None  # a write cut short: the next claim writes it whole
    return found if isinstance(found, dict) else None


def _describe(identity: Mapping[str, Any]) -> str:
    return ", ".join(f"{key}={identity[key]}" for key in sorted(identity))


def claim_identity(layout: RunLayout, identity: Mapping[str, Any], force: bool = False) -> None:
    """Write ``identity`` to a new folder, or check it against the one there.

    Only the keys both sides name are compared (a notebook run by hand knows preset, language, seed and
    corpus, the main job also the step cap and the vectors); new keys are added. ``force`` replaces the record.
    """
    wanted = {key: (None if value is None else str(value)) for key, value in identity.items()}
    found = read_identity(layout) or {}
    differing = sorted(key for key in wanted.keys() & found.keys() if wanted[key] != found[key])
    if differing and not force:
        raise IdentityMismatch(
            f"{layout.root} holds another run ({_describe(found)}); this one asks for "
            f"{', '.join(f'{key}={wanted[key]}' for key in differing)}. Use another folder (--out, or run_dir in a "
            "notebook), or replace that run on purpose with the main job's --force")
    merged = dict(wanted) if force else {**found, **wanted}
    if merged == found:
        return
    layout.root.mkdir(parents=True, exist_ok=True)
    temporary = Path(f"{layout.identity}.tmp-{os.getpid()}")
    temporary.write_text(json.dumps(merged, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(temporary, layout.identity)
