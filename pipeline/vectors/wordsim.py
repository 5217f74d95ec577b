"""Word-similarity benchmarks: how well cosine similarity of word vectors ranks word pairs as people do.

Two English sets, read (offline, nothing of gensim imported) from the pinned ``gensim`` package's test data, which
redistributes both unchanged apart from a comment header (gensim: LGPL-2.1):

* **WordSim-353** (``wordsim353.tsv``): 353 pairs rated 0-10 for *relatedness* by 13-16 people. Source:
  L. Finkelstein, E. Gabrilovich, Y. Matias, E. Rivlin, Z. Solan, G. Wolfman, E. Ruppin, "Placing Search in
  Context: The Concept Revisited", ACM TOIS 20(1), 2002; the WordSimilarity-353 Test Collection, distributed by
  its authors (gabrilovich.com/resources/data/wordsim353) for free research use, without a named licence; please
  cite the paper.
* **SimLex-999** (``simlex999.txt``): 999 pairs rated 0-10 for *similarity* proper (related but unlike pairs such
  as clothes-closet score low). Source: F. Hill, R. Reichart, A. Korhonen, "SimLex-999: Evaluating Semantic Models
  with (Genuine) Similarity Estimation", Computational Linguistics 41(4), 2015; distributed by its authors
  (fh295.github.io/simlex.html) for free research use, without a named licence; please cite the paper.

The score is Spearman's rho of human ratings against cosines over the pairs with both words found (the *coverage*),
with a bootstrap 95 % interval: how much it would move with another draw of such pairs.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import Any, Mapping, NamedTuple, Sequence

import numpy as np

from helpers.stats import bootstrap_draws, percentile_interval

BENCHMARKS: dict[str, str] = {"wordsim353": "gensim/test/test_data/wordsim353.tsv",
                              "simlex999": "gensim/test/test_data/simlex999.txt"}
TITLES = {"wordsim353": "WordSim-353", "simlex999": "SimLex-999"}
N_BOOTSTRAP = 1000


class Pair(NamedTuple):
    first: str
    second: str
    human: float


def load_pairs(name: str) -> list[Pair]:
    """The benchmark's word pairs and mean human ratings ('#' lines are comments)."""
    if name not in BENCHMARKS:
        raise ValueError(f"unknown benchmark {name!r}; choose one of {', '.join(BENCHMARKS)}")
    try:
        path = Path(importlib.metadata.distribution("gensim").locate_file(BENCHMARKS[name]))
    except importlib.metadata.PackageNotFoundError:
        raise FileNotFoundError(f"{TITLES[name]} is read from the gensim package's test data, but gensim is not "
                                "installed; install the project's pinned dependencies (pip install -e .)") from None
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from the installed gensim; reinstall gensim (its wheel ships it)")
    pairs = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) < 3:
            raise ValueError(f"{path}, line {lineno}: expected 'word1<TAB>word2<TAB>score', got {line!r}")
        pairs.append(Pair(fields[0], fields[1], float(fields[2])))
    return pairs


def word_index(words: Sequence[str]) -> dict[str, int]:
    """word -> row, plus each lower-cased word -> its most frequent case variant: the benchmarks are lower-case
    ('paris') while our vectors keep case."""
    last_first = list(enumerate(words))[::-1]  # so a word's first (most frequent) row is the one kept
    return {**{word.lower(): row for row, word in last_first}, **{word: row for row, word in last_first}}


def find(index: Mapping[str, int], word: str) -> int | None:
    """The row of ``word``: exact, else any case variant (see :func:`word_index`)."""
    return index.get(word, index.get(word.lower()))


def cosines(matrix: np.ndarray, rows_a: np.ndarray, rows_b: np.ndarray) -> np.ndarray:
    a, b = np.asarray(matrix[rows_a], np.float64), np.asarray(matrix[rows_b], np.float64)
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return np.einsum("ij,ij->i", a, b) / np.maximum(norms, 1e-12)


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    from scipy.stats import spearmanr

    return float(spearmanr(x, y).statistic)


def evaluate(words: Sequence[str], matrix: np.ndarray, name: str, n_bootstrap: int = N_BOOTSTRAP,
             seed: int = 0) -> dict[str, Any]:
    """Spearman of cosine vs human rating on one benchmark, its coverage and a bootstrap 95 % interval."""
    index = word_index(words)
    rows = [(find(index, p.first), find(index, p.second), p.human) for p in load_pairs(name)]
    kept = [row for row in rows if None not in row[:2]]
    result: dict[str, Any] = {"benchmark": name, "pairs": len(rows), "found": len(kept),
                              "coverage": len(kept) / len(rows), "spearman": float("nan"),
                              "ci_low": float("nan"), "ci_high": float("nan")}
    if len(kept) < 3:
        return result
    rows_a, rows_b, human = (np.array(col) for col in zip(*kept))
    sims = cosines(np.asarray(matrix), rows_a, rows_b)
    result["spearman"] = spearman(human, sims)
    # each resample of (human rating, cosine) rows, shape (k, pairs, 2), gives one rho
    draws = bootstrap_draws(np.column_stack([human, sims]), lambda resamples: np.array(
        [spearman(pairs[:, 0], pairs[:, 1]) for pairs in resamples]), draws=n_bootstrap, seed=seed)
    result["ci_low"], result["ci_high"] = percentile_interval(draws)
    return result


def word_similarity(words: Sequence[str], matrix: np.ndarray, n_bootstrap: int = N_BOOTSTRAP,
                    seed: int = 0) -> dict[str, dict[str, Any]]:
    return {name: evaluate(words, matrix, name, n_bootstrap, seed) for name in BENCHMARKS}


def word_similarity_rows(results: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """A table for the notebook: one row per (vectors, benchmark) from {label: :func:`word_similarity`'s result}."""
    return [{"vectors": label, "benchmark": TITLES[name], "spearman": round(res["spearman"], 3),
             "95% interval": f"{res['ci_low']:.3f} to {res['ci_high']:.3f}",
             "pairs found": f"{res['found']} of {res['pairs']}"}
            for label, by_benchmark in results.items() for name, res in by_benchmark.items()]
