"""The presets every notebook accepts, and one check so an unknown name fails the same way.

Each module keeps the numbers of its own step in a ``dict[str, <Config>]`` keyed by these names
(for example ``helpers.pretrain.PRESETS``), so a reader finds a step's settings beside its code.
"""

from __future__ import annotations

from typing import Mapping, TypeVar

PRESET_NAMES: tuple[str, ...] = ("smoke", "demo", "reference", "paper")
PRESET_HELP = (
    "smoke: seconds, for tests; demo: a few minutes on a 2-core CPU; "
    "reference: long enough on a 2-core CPU for BERT_TINY to leave the unigram plateau; "
    "paper: the paper's full configuration, meant for a GPU"
)

T = TypeVar("T")


def check_preset(name: str) -> str:
    """Return ``name`` if it is a known preset, else raise a ValueError that lists the choices."""
    if name not in PRESET_NAMES:
        raise ValueError(f"unknown preset {name!r}; choose one of {', '.join(PRESET_NAMES)} ({PRESET_HELP})")
    return name


def pick(table: Mapping[str, T], name: str) -> T:
    """Look a preset up in a module's table with the shared error message."""
    return table[check_preset(name)]
