"""fastText word vectors aligned to a WordPiece vocabulary: the paper's Equation 3 (notebook 03).

Mištera & Král give token ``t`` the pretrained vector ``E(t)`` when ``t`` is one of the 300,000 most
frequent fastText words, and a fallback ``f(t)`` (zeros, in their best setting) otherwise; the
vectors are first normalised and mean-centred (Artetxe et al. 2016). Notebook 03 writes the two
parts the paper describes, :func:`normalise` and :func:`equation_3`, in its cells; :func:`align`
runs them and adds the options the paper does not use (``##`` pieces, case, random fallback, scale).

Everything here takes and returns arrays in memory. Training fastText is in
``pipeline.vectors.fasttext_training``, the plots in ``plots.static_vectors``; the machinery reads and
downloads vector files (``pipeline.vectors.vector_files``), scores word similarity (``pipeline.vectors.wordsim``) and
saves the alignment into a run folder (``pipeline.vectors.static_files``).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, Sequence

import numpy as np

from helpers.presets import (
    CASE_MODES,
    FALLBACKS,
    PAPER_NORMALISATION,
    PAPER_TOP_N,
    PIECE_MODES,
    SCALES,
    check_choice,
    parse_steps,
)
from helpers.tokenizer import CONTINUATION_PREFIX as PIECE_PREFIX
from helpers.tokenizer import SPECIAL_TOKENS

BERT_INIT_STD = 0.02  # BertConfig.initializer_range: the std of a randomly initialised embedding


# --------------------------------------------------------------------------------------------
# Containers
# --------------------------------------------------------------------------------------------


@dataclass
class WordVectors:
    """Words in frequency order and their vectors (row i belongs to ``words[i]``).

    ``normalisation`` and ``means`` remember how the matrix was normalised, so a vector made later
    (a fastText subword vector for a ``##`` piece) can get exactly the same transformation; ``source``: the file.
    """

    words: list[str]
    matrix: np.ndarray
    normalisation: tuple[str, ...] = ()
    means: tuple[np.ndarray, ...] = ()
    source: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        self.matrix = np.asarray(self.matrix, dtype=np.float32)
        if self.matrix.ndim != 2:
            raise ValueError(f"the vector matrix must be 2-D (words x dim), got shape {self.matrix.shape}")
        if len(self.words) != self.matrix.shape[0]:
            raise ValueError(f"{len(self.words)} words but {self.matrix.shape[0]} vectors")

    def __len__(self) -> int:
        return len(self.words)

    @property
    def dim(self) -> int:
        return int(self.matrix.shape[1])

    def transform(self, rows: np.ndarray) -> np.ndarray:
        """Apply this matrix's normalisation (with its fitted means) to new vectors."""
        out, _ = _apply_steps(np.atleast_2d(np.asarray(rows, dtype=np.float32)), self.normalisation, self.means)
        return out


@dataclass
class Alignment:
    """The initial token-embedding matrix (row i = token id i) and which rows came from fastText."""

    matrix: np.ndarray
    found: np.ndarray
    report: dict[str, Any] = field(default_factory=dict)

    @property
    def vocab_size(self) -> int:
        return int(self.matrix.shape[0])

    @property
    def dim(self) -> int:
        return int(self.matrix.shape[1])


def check_dim(dim: int, hidden_size: int) -> None:
    """Refuse vectors whose dimension differs from the model's hidden size (Section 3.1's second problem).

    The paper sets hidden_size = 300 = fastText's dimension instead of adding a learned projection.
    """
    if dim != hidden_size:
        raise ValueError(
            f"the word vectors have {dim} dimensions but the model's hidden size is {hidden_size}; "
            f"set hidden_size={dim} in the model config (the paper raised BERT_TINY's 128 to 300 for this) "
            f"or use {hidden_size}-dimensional vectors"
        )


# --------------------------------------------------------------------------------------------
# Normalisation (Artetxe et al. 2016), as notebook 03 shows it
# --------------------------------------------------------------------------------------------


def unit_length(matrix: np.ndarray) -> np.ndarray:
    """Divide every row by its length: a frequent word's long vector no longer outweighs a rare one's."""
    lengths = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.maximum(lengths, 1e-12)  # an all-zero row stays zero


def mean_center(matrix: np.ndarray) -> np.ndarray:
    """Subtract the mean vector, one mean per dimension, computed over every row given."""
    return matrix - matrix.mean(axis=0, dtype=np.float64).astype(matrix.dtype)


def normalise(matrix: np.ndarray) -> np.ndarray:
    """Section 4.2: 'normalized and mean-centered': unit length first, then centred (float32)."""
    return mean_center(unit_length(np.asarray(matrix, dtype=np.float32)))


def _apply_steps(matrix: np.ndarray, steps: Sequence[str],
                 means: Sequence[np.ndarray] | None = None) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """Any order of 'unit'/'center' steps; fit each mean on ``matrix`` unless ``means`` gives them."""
    out = np.asarray(matrix, dtype=np.float32)
    given = list(means) if means is not None else None
    fitted: list[np.ndarray] = []
    for step in parse_steps(steps):
        if step == "unit":
            out = unit_length(out)
        else:
            if given is None:
                mean = out.mean(axis=0, dtype=np.float64).astype(np.float32)
            elif given:
                mean = np.asarray(given.pop(0), dtype=np.float32)
            else:
                raise ValueError("fewer fitted means than 'center' steps")
            fitted.append(mean)
            out = out - mean
    return out, tuple(fitted)


def normalise_steps(matrix: np.ndarray, steps: str | Sequence[str] = PAPER_NORMALISATION) -> np.ndarray:
    """:func:`normalise` generalised to any order of steps (e.g. 'unit,center,unit', a later recipe)."""
    if np.asarray(matrix).ndim != 2:
        raise ValueError(f"expected a 2-D matrix (words x dim), got shape {np.asarray(matrix).shape}")
    return _apply_steps(matrix, steps)[0]


def normalise_vectors(vectors: WordVectors, steps: str | Sequence[str] = PAPER_NORMALISATION) -> WordVectors:
    """Normalise the whole loaded top-N matrix (means over all N words, before any token is selected)."""
    if vectors.normalisation:
        raise ValueError(f"these vectors are already normalised ({vectors.normalisation}); normalise the raw ones")
    steps = parse_steps(steps)
    if steps == PAPER_NORMALISATION:  # the notebook's function, plus the fitted mean for later vectors
        unit = unit_length(vectors.matrix)
        mean = unit.mean(axis=0, dtype=np.float64).astype(np.float32)
        return WordVectors(vectors.words, normalise(vectors.matrix), steps, (mean,), vectors.source)
    matrix, means = _apply_steps(vectors.matrix, steps)
    return WordVectors(vectors.words, matrix, steps, means, vectors.source)


def matrix_stats(matrix: np.ndarray, seed: int = 0, n_pairs: int = 20_000) -> dict[str, float]:
    """Numbers that show what a normalisation did: row lengths, column means, spread, cosine of random pairs."""
    m = np.asarray(matrix, dtype=np.float64)
    norms = np.linalg.norm(m, axis=1)
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, len(m), size=(2, n_pairs))
    cos = np.einsum("ij,ij->i", m[a], m[b]) / np.maximum(norms[a] * norms[b], 1e-12)
    return {
        "mean_row_norm": float(norms.mean()),
        "max_abs_column_mean": float(np.abs(m.mean(axis=0)).max()),
        "mean_cosine_random_pairs": float(cos[a != b].mean()),
        "element_std": float(m.std()),
        "element_std_vs_bert_init": float(m.std() / BERT_INIT_STD),
    }


def normalisation_table(matrix: np.ndarray,
                        orders: Sequence[str] = ("", "unit", "unit,center", "center,unit", "unit,center,unit"),
                        seed: int = 0) -> list[dict[str, Any]]:
    """:func:`matrix_stats` after each normalisation order, to show that the order matters."""
    return [{"steps": order or "raw", **matrix_stats(normalise_steps(matrix, order), seed)} for order in orders]


# --------------------------------------------------------------------------------------------
# Alignment: Equation 3, as notebook 03 shows it, then the options
# --------------------------------------------------------------------------------------------


def equation_3(vocab: Mapping[str, int], vectors: WordVectors,
               top_n: int = PAPER_TOP_N) -> tuple[np.ndarray, np.ndarray]:
    """e_t = E(t) if token t is one of the ``top_n`` most frequent fastText words, else f(t) = 0.

    Returns the (vocab_size x dim) matrix, row i for token id i, and which rows were found.
    """
    row_of: dict[str, int] = {}
    for row, word in enumerate(vectors.words[:top_n]):  # most frequent first: a repeat keeps its first row
        row_of.setdefault(word, row)
    matrix = np.zeros((len(vocab), vectors.dim), dtype=np.float32)  # f(t) = 0 for every token not found
    found = np.zeros(len(vocab), dtype=bool)
    for token, token_id in vocab.items():
        if token in SPECIAL_TOKENS or token.startswith(PIECE_PREFIX):
            continue  # [CLS], ##ing ...: not words, so never looked up
        row = row_of.get(token)  # exact, case-sensitive
        if row is not None:
            matrix[token_id] = vectors.matrix[row]  # E(t)
            found[token_id] = True
    return matrix, found


class SubwordModel(Protocol):
    """What the 'subword' option needs from a fastText model (the fasttext package's model has it)."""

    def get_word_vector(self, word: str) -> np.ndarray: ...

    def get_dimension(self) -> int: ...


def vocab_of(tokenizer: Mapping[str, int] | Any) -> dict[str, int]:
    """token -> id from a vocabulary dict or a tokenizer with ``get_vocab``, ids checked to be 0..n-1."""
    vocab = dict(tokenizer) if isinstance(tokenizer, Mapping) else dict(tokenizer.get_vocab())
    ids = sorted(vocab.values())
    if ids != list(range(len(vocab))):
        raise ValueError(f"token ids must be 0..{len(vocab) - 1} without gaps or repeats "
                         f"(got {len(vocab)} tokens with ids up to {ids[-1] if ids else None})")
    return vocab


def vocab_fingerprint(tokenizer: Mapping[str, int] | Any) -> str:
    """SHA-256 of the tokens in id order: two vocabularies of equal size but different tokens differ here.

    Saved in the alignment's manifest and in the prepared pretraining data, so a matrix built for
    one tokenizer is never copied into a model trained with another (the shapes alone would agree).
    """
    vocab = dict(tokenizer) if isinstance(tokenizer, Mapping) else dict(tokenizer.get_vocab())
    ordered = sorted(vocab.items(), key=lambda item: item[1])
    return hashlib.sha256("\n".join(f"{i}\t{t}" for t, i in ordered).encode("utf-8")).hexdigest()


def align(tokenizer_vocab: Mapping[str, int] | Any, vectors: WordVectors, fallback: str = "zero",
          pieces: str = "skip", case: str = "exact", scale: str | None = None, random_std: float = BERT_INIT_STD,
          seed: int = 0, bin_model: SubwordModel | None = None, top_n: int = PAPER_TOP_N) -> Alignment:
    """The initial token-embedding matrix: :func:`equation_3`, then the options (defaults: the paper's).

    * ``case='lower_fallback'``: a whole word missing exactly is looked up lowercased;
    * ``##x`` pieces: 'skip' (the paper), 'strip' (look ``x`` up as a word) or 'subword'
      (``bin_model.get_word_vector('##x')``, prefix kept as WECHSEL does, then normalised like ``vectors``);
    * ``fallback='random'``: tokens still without a vector get N(0, ``random_std``) instead of zeros;
    * ``scale='bert'`` rescales the found rows to a per-element std of 0.02, BERT's init std
      (Kim et al. 2024 find the scale of copied embeddings matters); the paper does not rescale.
    """
    check_choice("fallback", fallback, FALLBACKS)
    check_choice("pieces", pieces, PIECE_MODES)
    check_choice("case", case, CASE_MODES)
    check_choice("scale", scale, SCALES)
    if pieces == "subword" and bin_model is None:
        raise ValueError("pieces='subword' needs a fastText model with subword vectors: pass bin_model= "
                         "(vector_files.read_bin(path) or the model trained here)")
    if bin_model is not None and bin_model.get_dimension() != vectors.dim:
        raise ValueError(f"bin_model has dimension {bin_model.get_dimension()}, the vectors {vectors.dim}")
    vocab = vocab_of(tokenizer_vocab)
    matrix, found = equation_3(vocab, vectors, top_n)
    counts = _fill_options(vocab, vectors, matrix, found, pieces, case, bin_model, top_n)
    if not found.any():  # every row would be the fallback: the model would start from nothing it was given
        raise ValueError(f"none of the {len(vocab)} vocabulary tokens has a vector in {vectors.source or 'the vectors'}"
                         "; check the language / file: its words must be words of the tokenizer's language")
    factor = _rescale(matrix, found, scale)
    missing = ~found
    if fallback == "random" and missing.any():
        rng = np.random.default_rng(seed)
        matrix[missing] = rng.normal(0.0, random_std, size=(int(missing.sum()), vectors.dim)).astype(np.float32)
    report = {
        "vocab_size": len(vocab), "dim": vectors.dim, "n_vectors": min(len(vectors), top_n),
        "normalisation": list(vectors.normalisation),
        "fallback": fallback, "random_std": random_std if fallback == "random" else None,
        "pieces": pieces, "case": case, "scale": scale, "scale_factor": factor,
        "n_found": int(found.sum()), "n_found_words": counts["word_exact"] + counts["word_lower"],
        "n_found_pieces": counts["piece_exact"] + counts["piece_lower"] + counts["piece_subword"],
        "n_missing": int(missing.sum()), "by_source": counts,
        "found_element_std": float(matrix[found].std()) if found.any() else None,
        "vocab_sha256": vocab_fingerprint(vocab),
    }
    return Alignment(matrix, found, report)


def _fill_options(vocab: Mapping[str, int], vectors: WordVectors, matrix: np.ndarray, found: np.ndarray,
                  pieces: str, case: str, bin_model: SubwordModel | None, top_n: int) -> dict[str, int]:
    """Fill, in place, the rows the options add to Equation 3; count where every row came from."""
    row_of: dict[str, int] = {}
    for row, word in enumerate(vectors.words[:top_n]):
        row_of.setdefault(word, row)
    counts = dict.fromkeys(("special", "word_exact", "word_lower", "word_missing", "piece_exact", "piece_lower",
                            "piece_subword", "piece_missing"), 0)
    subword_ids: list[int] = []
    for token, tid in vocab.items():
        is_piece = token.startswith(PIECE_PREFIX)
        kind = "piece" if is_piece else "word"
        if token in SPECIAL_TOKENS:
            counts["special"] += 1
        elif found[tid]:
            counts["word_exact"] += 1
        elif is_piece and pieces == "subword":
            subword_ids.append(tid)
        elif is_piece and pieces == "skip":
            counts["piece_missing"] += 1
        else:
            word = token[len(PIECE_PREFIX):] if is_piece else token
            row, how = row_of.get(word), "exact"
            if row is None and case == "lower_fallback" and word.lower() != word:
                row, how = row_of.get(word.lower()), "lower"
            if row is None:
                counts[f"{kind}_missing"] += 1
                continue
            matrix[tid], found[tid] = vectors.matrix[row], True
            counts[f"{kind}_{how}"] += 1
    if subword_ids:
        id_to_token = {i: t for t, i in vocab.items()}
        raw = np.stack([bin_model.get_word_vector(id_to_token[i]) for i in subword_ids])  # type: ignore[union-attr]
        matrix[subword_ids] = vectors.transform(raw)
        found[subword_ids] = np.any(matrix[subword_ids] != 0, axis=1)
        counts["piece_subword"] = int(found[subword_ids].sum())
        counts["piece_missing"] += len(subword_ids) - counts["piece_subword"]
    return counts


def _rescale(matrix: np.ndarray, found: np.ndarray, scale: str | None) -> float:
    """Scale found rows in place so their per-element std is BERT_INIT_STD; returns the factor used."""
    if scale is None or not found.any():
        return 1.0
    std = float(matrix[found].std())
    if std == 0:
        return 1.0
    factor = BERT_INIT_STD / std
    matrix[found] *= factor
    return factor


def compare_piece_options(tokenizer_vocab: Mapping[str, int] | Any, vectors: WordVectors,
                          bin_model: SubwordModel | None = None) -> list[dict[str, Any]]:
    """Found counts for each way of treating ``##`` pieces and case (subword only with a model)."""
    options = [("skip", "exact"), ("strip", "exact"), ("skip", "lower_fallback"), ("strip", "lower_fallback")]
    if bin_model is not None:
        options.insert(2, ("subword", "exact"))
    rows = []
    for pieces, case in options:
        rep = align(tokenizer_vocab, vectors, pieces=pieces, case=case, bin_model=bin_model).report
        rows.append({"pieces": pieces, "case": case, "n_found": rep["n_found"],
                     "n_found_words": rep["n_found_words"], "n_found_pieces": rep["n_found_pieces"],
                     "share_of_vocab": rep["n_found"] / rep["vocab_size"]})
    return rows


def aligned_words(alignment: Alignment, tokenizer_vocab: Mapping[str, int] | Any) -> tuple[list[str], np.ndarray]:
    """(tokens that found a vector, their rows): the aligned matrix as word vectors, for benchmarks."""
    vocab = vocab_of(tokenizer_vocab)
    ids = np.flatnonzero(alignment.found)
    id_to_token = {i: t for t, i in vocab.items()}
    return [id_to_token[int(i)] for i in ids], alignment.matrix[ids]


# --------------------------------------------------------------------------------------------
# Analysis: coverage by frequency, nearest neighbours, Table 1
# --------------------------------------------------------------------------------------------


def token_frequencies(tokenizer: Any, texts: Sequence[str], batch_size: int = 1000) -> np.ndarray:
    """How often each token id occurs in ``texts`` (no [CLS]/[SEP]).

    WordPiece ids are not frequency ranks (the vocabulary is ordered by merges and alphabet), so
    coverage by frequency needs counts from the text itself.
    """
    backend = getattr(tokenizer, "backend_tokenizer", tokenizer)
    counts = np.zeros(backend.get_vocab_size(), dtype=np.int64)
    for start in range(0, len(texts), batch_size):
        encodings = backend.encode_batch(list(texts[start:start + batch_size]), add_special_tokens=False)
        ids = np.fromiter((i for enc in encodings for i in enc.ids), dtype=np.int64)
        counts += np.bincount(ids, minlength=counts.size)[: counts.size]
    return counts


def frequency_order(frequencies: np.ndarray, seed: int = 0) -> np.ndarray:
    """Token ids from most to least frequent; ties in a seeded random order.

    Many rare tokens share a count, and breaking those ties by id would group them the way the
    WordPiece trainer happened to number them (pieces together, words together), drawing spikes
    into a coverage-by-rank plot that say nothing about frequency.
    """
    freqs = np.asarray(frequencies)
    tiebreak = np.random.default_rng(seed).permutation(freqs.size)
    return np.lexsort((tiebreak, -freqs))


def coverage_by_rank(found: np.ndarray, bucket: int = 1000,
                     frequencies: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(first rank of each bucket, share of its tokens with a vector), ranks by corpus frequency when given."""
    found = np.asarray(found, dtype=bool)
    if bucket < 1:
        raise ValueError(f"bucket must be at least 1, got {bucket}")
    if frequencies is not None and len(frequencies) != found.size:
        raise ValueError(f"{len(frequencies)} frequencies for {found.size} tokens")
    ordered = found[frequency_order(frequencies)] if frequencies is not None else found
    starts = np.arange(0, ordered.size, bucket)
    shares = np.array([ordered[s:s + bucket].mean() for s in starts])
    return starts, shares


def text_coverage(found: np.ndarray, frequencies: np.ndarray) -> float:
    """Share of running-text tokens whose embedding starts from a fastText vector."""
    freqs = np.asarray(frequencies, dtype=np.float64)
    total = freqs.sum()
    if total == 0:
        raise ValueError("the frequencies are all zero")
    return float(freqs[np.asarray(found, dtype=bool)].sum() / total)


def nearest_neighbours(words: Sequence[str], matrix: np.ndarray, query: str, k: int = 5) -> list[tuple[str, float]]:
    """The ``k`` words with the highest cosine similarity to ``query`` (itself excluded)."""
    try:
        q = list(words).index(query)
    except ValueError:
        raise ValueError(f"{query!r} is not among the {len(words)} words") from None
    m = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(m, axis=1)
    sims = m @ m[q] / np.maximum(norms * norms[q], 1e-12)
    sims[q] = -np.inf
    best = np.argpartition(-sims, min(k, len(sims) - 1))[:k]
    best = best[np.argsort(-sims[best])]
    return [(words[i], float(sims[i])) for i in best]


QUERY_WORDS: dict[str, tuple[str, ...]] = {
    "en": ("king", "Paris", "river", "music", "France", "1990"),
    "fr": ("roi", "Paris", "fleuve", "musique", "France", "1990"),
    "es": ("rey", "Madrid", "río", "música", "España", "1990"),
}


def neighbour_table(named: Mapping[str, WordVectors], queries: Sequence[str], k: int = 5) -> list[dict[str, str]]:
    """One row per query word present in every matrix: its neighbours under each named version."""
    indexes = {name: set(v.words) for name, v in named.items()}
    rows = []
    for query in queries:
        if not all(query in idx for idx in indexes.values()):
            continue
        row = {"query": query}
        for name, vec in named.items():
            row[name] = ", ".join(f"{w} ({s:.2f})" for w, s in nearest_neighbours(vec.words, vec.matrix, query, k))
        rows.append(row)
    return rows


def shares_spelling(a: str, b: str, n: int = 3) -> bool:
    """True when two words share a character n-gram (fastText's subword unit), ignoring case."""
    a, b = a.lower(), b.lower()
    return bool({a[i:i + n] for i in range(len(a) - n + 1)} & {b[i:i + n] for i in range(len(b) - n + 1)})


def neighbour_summary(named: Mapping[str, WordVectors], queries: Sequence[str], k: int = 5) -> list[dict[str, Any]]:
    """Per version: mean cosine of the k nearest neighbours and the share of them that share spelling."""
    rows = []
    for name, vec in named.items():
        known = set(vec.words)
        pairs = [(q, w, sim) for q in queries if q in known
                 for w, sim in nearest_neighbours(vec.words, vec.matrix, q, k)]
        rows.append({"vectors": name, "neighbours": len(pairs),
                     "mean cosine": float(np.mean([s for _, _, s in pairs])) if pairs else math.nan,
                     "share spelled alike": float(np.mean([shares_spelling(q, w) for q, w, _ in pairs]))
                     if pairs else math.nan})
    return rows


def table1_rows(lang: str, n_found: int, vocab_size: int, setting: str) -> list[dict[str, Any]]:
    """Our found count beside the paper's Table 1 count for the same language (a different setting)."""
    from helpers.paper_values import VECTORS_FOUND

    paper = VECTORS_FOUND.get(lang)
    return [
        {"run": f"ours ({setting})", "lang": lang, "vocab_size": vocab_size, "n_found": n_found,
         "share": n_found / vocab_size},
        {"run": f"paper (cc.{lang}.300, C4 tokenizer)", "lang": lang, "vocab_size": 30_000,
         "n_found": paper, "share": paper / 30_000 if paper else math.nan},
    ]
