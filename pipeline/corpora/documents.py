"""What every corpus loader returns and shares: :class:`Corpus`, :class:`LabelledSet`, the checks and the splits.
The loaders (:mod:`pipeline.corpora.data`, :mod:`pipeline.corpora.files`, :mod:`pipeline.corpora.online`) import from
here, not each other."""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Iterable, Mapping, Sequence

EVAL_FRACTION = 0.05  # the evaluation share: of the embedded articles, and the default for local files
AG_NEWS_LABELS = ("World", "Sports", "Business", "Sci/Tech")


@dataclass
class Corpus:
    """Unlabelled documents plus where they came from."""

    texts: list[str]
    lang: str
    source: str
    split: str
    name: str
    licence: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.texts)

    def n_words(self) -> int:
        """Whitespace-separated words, the unit the paper's corpus sizes use."""
        return sum(len(t.split()) for t in self.texts)


@dataclass(kw_only=True)
class LabelledSet(Corpus):
    """Documents with integer labels; ``label_names[i]`` names label ``i``."""

    labels: list[int]
    label_names: list[str]


def check_choice(what: str, value: Any, choices: Sequence[str], hint: str = "") -> None:
    if value not in choices:
        raise ValueError(f"unknown {what} {value!r}; choose one of: {', '.join(choices)}{hint}")


def check_max_docs(max_docs: int | None) -> None:
    if max_docs is not None and (isinstance(max_docs, bool) or not isinstance(max_docs, int) or max_docs < 1):
        raise ValueError(f"max_docs must be a positive whole number of documents or None, got {max_docs!r}")


def check_fraction(name: str, value: float) -> None:
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must lie strictly between 0 and 1, got {value}")


def as_text(value: Any) -> str:
    return "" if value is None else str(value)


def take(items: Iterable[Any], max_docs: int | None) -> list[Any]:
    """The first ``max_docs`` items (all when None; checked once, in ``data._load``); a stream is read no further."""
    return list(itertools.islice(items, max_docs))


def stable_fraction(key: str, seed: int, purpose: str = "") -> float:
    """A number in [0, 1) fixed by (purpose, seed, key) on every machine: a split by it, unlike a shuffled index,
    moves no other article when one is added or removed; another ``purpose`` gives an independent number."""
    digest = hashlib.sha256(f"{purpose}{seed}:{key}".encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def stratified_split(keys: Sequence[str], labels: Sequence[Any], held_out: float,
                     seed: int) -> tuple[list[int], list[int]]:
    """Per-class hash ranking: each class gives round(held_out * size) items (at least one, when it
    has two or more) to the held-out part, so every class is in both parts in the same proportion."""
    by_class: dict[Any, list[int]] = {}
    for i, label in enumerate(labels):
        by_class.setdefault(label, []).append(i)
    kept, held = [], []
    for members in by_class.values():
        ranked = sorted(members, key=lambda i: (stable_fraction(keys[i], seed), i))
        n_held = max(1, round(held_out * len(members))) if len(members) > 1 else 0
        held.extend(ranked[:n_held])
        kept.extend(ranked[n_held:])
    return sorted(kept), sorted(held)


def hash_order(indices: Iterable[int], keys: Sequence[str], seed: int) -> list[int]:
    """Indices in a fixed pseudo-random order, so 'the first N' is a spread-out sample, not the A's."""
    return sorted(indices, key=lambda i: (stable_fraction(keys[i], seed, purpose="order:"), i))


def three_way_partition(keys: Sequence[str], labels: Sequence[Any], test_fraction: float,
                        seed: int) -> Mapping[str, tuple[int, ...]]:
    """Indices into ``keys`` in three read-only parts: 'probe_test' takes ``test_fraction`` of each label
    (hash-ranked), 'eval' EVAL_FRACTION of all from the rest (an independent hash), 'train' the others; each in hash
    order, so its first N are a fair sample. A key's part depends on the key, never on its position."""
    rest, test = stratified_split(keys, labels, test_fraction, seed)
    share = EVAL_FRACTION / (1 - test_fraction)  # of the rest, so EVAL_FRACTION of all
    held = {i for i in rest if stable_fraction(keys[i], seed, purpose="eval:") < share}
    parts = {"train": [i for i in rest if i not in held], "eval": held, "probe_test": test}
    return MappingProxyType({name: tuple(hash_order(part, keys, seed)) for name, part in parts.items()})
