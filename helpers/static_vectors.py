"""fastText word vectors aligned to a WordPiece vocabulary: the paper's Equation 3 (notebook 03).

Mištera & Král give token ``t`` the pretrained vector ``E(t)`` when ``t`` is one of the 300,000 most
frequent fastText words, and a fallback ``f(t)`` (zeros, in their best setting) otherwise. The vectors
are first normalised and mean-centred as in Artetxe et al. 2016. This module does each part:

* sources of vectors, all giving a :class:`WordVectors` in frequency order: a published ``.vec`` /
  ``.vec.gz`` (:func:`read_vec`, :func:`download_vectors`), a fastText ``.bin`` (:func:`read_bin`), or
  vectors trained here on the corpus (:func:`train_fasttext`, the offline default);
* :func:`normalise` (``unit`` then ``center``);
* :func:`align` (Equation 3, with options for ``##`` pieces, case, the fallback and the scale);
* :func:`save_aligned` / :func:`load_aligned`, the hand-over to pretraining.

Only the standard library and numpy are imported at module level: :func:`load_aligned` runs on GPU
machines that have no fasttext, datasets or matplotlib. Everything else is imported where it is used.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Protocol, Sequence

import numpy as np

SPECIAL_TOKENS: tuple[str, ...] = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
PIECE_PREFIX = "##"
BERT_INIT_STD = 0.02  # BertConfig.initializer_range: the std of a randomly initialised embedding
PAPER_TOP_N = 300_000  # Section 4.2: vectors looked up among the 300,000 most frequent words
PAPER_NORMALISATION: tuple[str, ...] = ("unit", "center")

NORMALISATION_STEPS = ("unit", "center")
FALLBACKS = ("zero", "random")
PIECE_MODES = ("skip", "strip", "subword")
CASE_MODES = ("exact", "lower_fallback")
SCALES = (None, "bert")
SOURCES = ("train", "published")

CC_URL = "https://dl.fbaipublicfiles.com/fasttext/vectors-crawl/cc.{lang}.300.vec.gz"
CC_PAGE = "https://fasttext.cc/docs/en/crawl-vectors.html"
DEFAULT_CACHE = Path(".cache/fasttext")

EMBEDDINGS_FILE = "embeddings.npy"
FOUND_FILE = "found.npy"
MANIFEST_FILE = "manifest.json"


# --------------------------------------------------------------------------------------------
# Containers and presets
# --------------------------------------------------------------------------------------------


def _check_choice(what: str, value: Any, choices: Sequence[Any]) -> None:
    if value not in choices:
        raise ValueError(f"unknown {what} {value!r}; choose one of: {', '.join(map(repr, choices))}")


def parse_steps(steps: str | Sequence[str]) -> tuple[str, ...]:
    """'unit,center' or ('unit', 'center') -> ('unit', 'center'); unknown steps are an error."""
    parts = tuple(s.strip() for s in (steps.split(",") if isinstance(steps, str) else steps) if s.strip())
    for step in parts:
        if step not in NORMALISATION_STEPS:
            raise ValueError(f"unknown normalisation step {step!r}; use a sequence of {NORMALISATION_STEPS}, "
                             "e.g. 'unit,center' (the paper) or 'unit,center,unit'")
    return parts


@dataclass
class WordVectors:
    """Words in frequency order and their vectors (row i belongs to ``words[i]``).

    ``normalisation`` and ``means`` remember how the matrix was normalised, so a vector made later
    (a fastText subword vector for a ``##`` piece) can get exactly the same transformation.
    """

    words: list[str]
    matrix: np.ndarray
    normalisation: tuple[str, ...] = ()
    means: tuple[np.ndarray, ...] = ()

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

    def index(self) -> dict[str, int]:
        """word -> row; a repeated word keeps its first (most frequent) row."""
        out: dict[str, int] = {}
        for i, word in enumerate(self.words):
            out.setdefault(word, i)
        return out

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


@dataclass(frozen=True)
class VectorsConfig:
    """One preset's choices for notebook 03.

    ``source`` is 'train' (fastText trained here on the corpus, offline) or 'published'
    (cc.LANG.300.vec.gz). ``bucket`` is fastText's number of hashed subword rows: its default of
    2,000,000 costs 2.4 GB at dim 300, so the local presets use fewer (more hash collisions between
    character n-grams, which only matter for the ``subword`` option), never fewer than
    :func:`clean_bucket` allows.
    """

    source: str
    dim: int = 300
    epochs: int = 5
    min_count: int = 2
    top_n: int = PAPER_TOP_N
    max_docs: int | None = None
    normalisation: tuple[str, ...] = PAPER_NORMALISATION
    fallback: str = "zero"
    pieces: str = "skip"
    case: str = "exact"
    scale: str | None = None
    model: str = "skipgram"
    bucket: int = 2_000_000

    def __post_init__(self) -> None:
        _check_choice("source", self.source, SOURCES)
        _check_choice("fallback", self.fallback, FALLBACKS)
        _check_choice("pieces", self.pieces, PIECE_MODES)
        _check_choice("case", self.case, CASE_MODES)
        _check_choice("scale", self.scale, SCALES)
        parse_steps(self.normalisation)


PRESETS: dict[str, VectorsConfig] = {
    # A few hundred documents, one epoch: seconds. dim stays 300 because the smoke model's hidden size is 300.
    "smoke": VectorsConfig(source="train", epochs=1, max_docs=300, bucket=100_000),
    # The whole embedded training split (~740k English words), skipgram, one thread (deterministic).
    # 3 epochs, not fastText's 5: on one thread an epoch takes 25-45 s on the 2-core machine, and 5 would
    # blow the notebook's 150 s budget (5 epochs: 221 s measured under load; 3 epochs: 87 s).
    "demo": VectorsConfig(source="train", epochs=3, max_docs=None, bucket=200_000),
    # The paper: published cc.LANG.300 vectors, top 300,000 words, unit + center, zero fallback, no pieces.
    "paper": VectorsConfig(source="published"),
}


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
# Reading published vectors
# --------------------------------------------------------------------------------------------


def _open_text(path: Path) -> Any:
    """Open .vec or .vec.gz as UTF-8 text, splitting lines on '\\n' only (what fastText writes).

    Universal-newline mode would also end a line at a stray '\\r', shifting every line number after it.
    """
    if path.suffix == ".gz":
        import gzip

        return gzip.open(path, "rt", encoding="utf-8", errors="replace", newline="\n")
    return path.open("r", encoding="utf-8", errors="replace", newline="\n")


def _parse_header(line: str, path: Path) -> tuple[int, int]:
    parts = line.split()
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise ValueError(
            f"{path}: line 1 should be the fastText header 'n_words dim' (two integers), got {line.strip()[:80]!r}; "
            "is this a fastText .vec file?"
        )
    n_words, dim = int(parts[0]), int(parts[1])
    if n_words < 1 or dim < 1:
        raise ValueError(f"{path}: header says {n_words} words of dimension {dim}; both must be positive")
    return n_words, dim


def read_vec(path: str | Path, top_n: int | None = PAPER_TOP_N, expected_dim: int | None = None) -> WordVectors:
    """The first ``top_n`` words of a fastText text file (.vec or .vec.gz): its most frequent words.

    Each line is split on single ASCII spaces, which is how fastText writes them: a word never
    contains an ASCII space but may contain other odd characters (no-break space, U+2028), which
    ``str.split()`` would wrongly split on. Splitting every field (rather than ``rsplit`` of the last
    ``dim``) also catches a line with too many values. The trailing space fastText writes is ignored.
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(
            f"no vector file at {path}; download cc.LANG.300.vec.gz from {CC_PAGE} "
            "(download_vectors(lang) does it), or train vectors locally with preset 'demo'"
        )
    if top_n is not None and top_n < 1:
        raise ValueError(f"top_n must be a positive number of words, got {top_n}")
    with _open_text(path) as fh:
        header = fh.readline()
        if not header:
            raise ValueError(f"{path} is empty; expected a fastText .vec file starting with 'n_words dim'")
        n_words, dim = _parse_header(header, path)
        if expected_dim is not None and dim != expected_dim:
            raise ValueError(
                f"{path} holds {dim}-dimensional vectors (header) but {expected_dim} were expected; "
                f"use the cc.LANG.{expected_dim} vectors or a model whose hidden size is {dim}"
            )
        n_read = n_words if top_n is None else min(n_words, top_n)
        words: list[str] = []
        matrix = np.empty((n_read, dim), dtype=np.float32)
        for i in range(n_read):
            line = fh.readline()
            lineno = i + 2
            if not line:
                raise ValueError(f"{path} ends at line {lineno - 1}, but its header promises {n_words} words "
                                 f"(reading {n_read}); the file is truncated, download it again")
            fields = line.rstrip("\r\n").rstrip(" ").split(" ")
            if len(fields) != dim + 1 or not fields[0]:
                raise ValueError(f"{path}, line {lineno}: got {len(fields)} fields, expected {dim + 1} "
                                 f"(a word and {dim} numbers); the file is damaged or not a .vec file")
            try:
                matrix[i] = fields[1:]
            except ValueError as err:
                raise ValueError(f"{path}, line {lineno}: a value is not a number ({err})") from None
            words.append(fields[0])
    return WordVectors(words, matrix)


def download_vectors(lang: str, cache_dir: str | Path = DEFAULT_CACHE, progress: bool = True,
                     url: str | None = None, timeout: float = 60.0) -> Path:
    """Fetch cc.LANG.300.vec.gz into ``cache_dir`` (once) and return its path.

    The file (about 1.3 GB for English) is written to a ``.part`` file and renamed only when
    complete, so an interrupted download never looks like a cached one.
    """
    import urllib.request

    if not re.fullmatch(r"[a-z]{2,3}", lang):
        raise ValueError(f"lang must be a fastText language code such as 'en' or 'cs', got {lang!r}")
    url = url or CC_URL.format(lang=lang)
    dest = Path(cache_dir).expanduser() / f"cc.{lang}.300.vec.gz"
    if dest.is_file():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            total = response.headers.get("Content-Length") if getattr(response, "headers", None) else None
            _copy_with_progress(response, part, int(total) if total else None, progress, dest.name)
        part.replace(dest)
    except BaseException as err:
        part.unlink(missing_ok=True)
        if isinstance(err, (KeyboardInterrupt, SystemExit)):
            raise
        raise ConnectionError(
            f"could not download {url} ({type(err).__name__}: {err}). Offline alternatives: copy "
            f"cc.{lang}.300.vec.gz (from {CC_PAGE}) to {dest} or pass vectors_path=..., or use preset "
            "'demo' / 'smoke', which train fastText vectors locally on the corpus"
        ) from err
    return dest


def _copy_with_progress(response: Any, part: Path, total: int | None, progress: bool, name: str) -> None:
    from tqdm.auto import tqdm

    with part.open("wb") as out, tqdm(total=total, unit="B", unit_scale=True, desc=f"download {name}",
                                      disable=not progress) as bar:
        while chunk := response.read(1 << 20):
            out.write(chunk)
            bar.update(len(chunk))


# --------------------------------------------------------------------------------------------
# fastText models: a .bin, or trained here
# --------------------------------------------------------------------------------------------


class SubwordModel(Protocol):
    """What this module needs from a fastText model (``fasttext.FastText._FastText`` has it all)."""

    def get_words(self, include_freq: bool = ..., on_unicode_error: str = ...) -> Any: ...

    def get_word_vector(self, word: str) -> np.ndarray: ...

    def get_dimension(self) -> int: ...


def read_bin(path: str | Path, expected_dim: int | None = None) -> SubwordModel:
    """Load a fastText ``.bin`` model; unlike a .vec it also gives vectors to unseen strings (subwords).

    Returns the fasttext package's own model object: ``get_words()`` lists words in frequency
    order (use :func:`vectors_from_model` for the top N) and ``get_word_vector`` builds a vector
    for any string from its character n-grams.
    """
    import fasttext

    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"no fastText model at {path}; download cc.LANG.300.bin.gz from {CC_PAGE} "
                                "and gunzip it, or train one with train_fasttext")
    model = fasttext.load_model(str(path))
    if expected_dim is not None and model.get_dimension() != expected_dim:
        raise ValueError(f"{path} has {model.get_dimension()}-dimensional vectors, expected {expected_dim}")
    return model


EOS = "</s>"


def vectors_from_model(model: SubwordModel, top_n: int | None = PAPER_TOP_N) -> WordVectors:
    """The model's ``top_n`` most frequent words and their vectors, as a .vec file would hold them.

    fastText's dictionary is sorted by count, so ``get_words`` is in frequency order; a word's
    vector is ``get_word_vector`` (word row averaged with its n-gram rows), as in the .vec fastText writes.
    """
    # '</s>' is fastText's line-end marker, not a word: no token can match it, so it is left out.
    words = [w for w in model.get_words(on_unicode_error="replace") if w != EOS]
    if top_n is not None:
        words = words[:top_n]
    if not words:
        raise ValueError("the fastText model has no words")
    matrix = np.stack([model.get_word_vector(w) for w in words]).astype(np.float32)
    return WordVectors(words, matrix)


def pretokenize(text: str) -> list[str]:
    """Split text into words the way the BERT tokenizer does before WordPiece.

    BertNormalizer (cased, accents kept) plus BertPreTokenizer: whitespace and every punctuation
    character separate words. fastText trained on these words learns vectors for exactly the
    strings a whole-word WordPiece token can be ("Paris", ",", "1889"), which is what Equation 3 looks up.
    """
    normalizer, pre_tokenizer = _bert_pretokenizer()
    return [w for w, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(text))]


def _bert_pretokenizer() -> tuple[Any, Any]:
    from tokenizers import normalizers, pre_tokenizers

    return (normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=False,
                                       lowercase=False),
            pre_tokenizers.BertPreTokenizer())


def write_training_text(texts: Iterable[str], path: Path) -> tuple[int, int]:
    """One pre-tokenised document per line (fastText reads a line end as a sentence end). Returns (docs, words)."""
    n_docs = n_words = 0
    with path.open("w", encoding="utf-8") as fh:
        for text in texts:
            words = pretokenize(text)
            if words:
                fh.write(" ".join(words) + "\n")
                n_docs += 1
                n_words += len(words)
    if n_docs == 0:
        raise ValueError("no words to train fastText on: the corpus is empty; check the corpus source and max_docs")
    return n_docs, n_words


# fasttext 0.9.3 initialises only ``thread`` tenths of its input matrix (one tenth per thread) and
# leaves the rest as allocated, uninitialised memory. With thread=1 that is 90% of the rows: small
# matrices then start from heap garbage (runs differ, or diverge to "Encountered NaN"). A matrix
# over glibc's largest mmap threshold (32 MiB) is always fresh, zeroed pages, so the buckets are
# raised until the matrix is at least this big: the uninitialised rows are then reliably zero.
MIN_INPUT_MATRIX_BYTES = 64 * 2**20


def clean_bucket(bucket: int, dim: int) -> int:
    """``bucket`` raised so the hashed n-gram rows alone fill MIN_INPUT_MATRIX_BYTES (see above)."""
    return max(bucket, -(-MIN_INPUT_MATRIX_BYTES // (4 * dim)))


def fasttext_params(dim: int = 300, epochs: int = 5, min_count: int = 2, seed: int = 0, model: str = "skipgram",
                    bucket: int = 2_000_000) -> dict[str, Any]:
    """fastText arguments for training here.

    ``thread=1`` because Hogwild threads make runs differ. fastText's generator (minstd_rand)
    treats seeds 0 and 1 alike, so our seed s is passed as s + 1: seeds 0, 1, 2 give different runs.
    """
    _check_choice("fastText model", model, ("skipgram", "cbow"))
    if dim < 1 or epochs < 1 or min_count < 1:
        raise ValueError(f"dim, epochs and min_count must be positive, got {dim}, {epochs}, {min_count}")
    return {"model": model, "dim": dim, "epoch": epochs, "minCount": min_count, "seed": seed + 1, "thread": 1,
            "bucket": clean_bucket(bucket, dim), "minn": 3, "maxn": 6, "ws": 5, "neg": 5, "lr": 0.05}


def train_fasttext(texts: Iterable[str], dim: int = 300, epochs: int = 5, min_count: int = 2, seed: int = 0,
                   model: str = "skipgram", tmp_dir: str | Path | None = None, bucket: int = 2_000_000,
                   progress: bool = True) -> SubwordModel:
    """Train fastText on ``texts`` (pre-tokenised like BERT, case kept), deterministically.

    Same texts + same seed -> identical vectors: one thread, and an input matrix big enough to
    start from zeroed memory (see MIN_INPUT_MATRIX_BYTES).
    """
    params = fasttext_params(dim, epochs, min_count, seed, model, bucket)
    with tempfile.TemporaryDirectory(dir=tmp_dir, prefix="fasttext-") as tmp:
        corpus = Path(tmp) / "corpus.txt"
        write_training_text(texts, corpus)
        try:
            return _train_with_progress({"input": str(corpus), **params}, progress)
        except (RuntimeError, ValueError) as err:
            if "empty vocabulary" in str(err).lower():
                raise ValueError(f"fastText found no word occurring {min_count}+ times in the corpus; "
                                 "lower min_count or give it more text") from err
            if "nan" in str(err).lower():
                raise ValueError("fastText training produced NaN: with a tiny or very repetitive corpus, "
                                 "subsampling leaves it almost no training pairs; give it more (varied) text") from err
            raise


def _train_unsupervised(args: dict[str, Any]) -> SubwordModel:
    """``fasttext.train_unsupervised`` with ``seed`` passed through.

    fasttext 0.9.3's ``train_unsupervised`` rejects a ``seed`` keyword although the C++ trainer
    uses one (for the initial matrix and each thread's sampler); this repeats its last four lines
    with the seed included. The package version is pinned in pyproject.toml.
    """
    from fasttext import FastText as ft

    built = ft._build_args({**ft.unsupervised_default, **args}, set(args))
    model = ft._FastText(args=built)
    ft.fasttext.train(model.f, built)
    model.set_args(model.f.getArgs())
    return model


_PROGRESS = re.compile(rb"Progress:\s*([0-9.]+)%.*?avg\.loss:\s*([0-9.]+)")


def _train_with_progress(args: dict[str, Any], progress: bool) -> SubwordModel:
    """Run ``train_unsupervised`` with a tqdm bar fed by fastText's own progress report.

    fastText prints its progress to the C-level stderr, which a notebook does not show. While
    training (which releases the GIL) file descriptor 2 goes into a pipe that a thread reads and
    turns into bar updates; it is restored afterwards, also on error. Written here because
    fasttext offers no progress callback.
    """
    if not progress:
        return _train_unsupervised({**args, "verbose": 0})
    from tqdm.auto import tqdm

    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):
        return _train_unsupervised({**args, "verbose": 0})
    read_fd, write_fd = os.pipe()
    bar_file = os.fdopen(os.dup(saved), "w") if sys.stderr is sys.__stderr__ else sys.stderr
    bar = tqdm(total=100.0, desc=f"fastText {args['model']} ({args['epoch']} epochs)", unit="%",
               bar_format="{l_bar}{bar}| {n:.1f}/100% [{elapsed}<{remaining}{postfix}]", file=bar_file)

    def pump() -> None:
        tail = b""
        while chunk := os.read(read_fd, 65536):
            tail = (tail + chunk)[-400:]
            hits = _PROGRESS.findall(tail)
            try:
                if hits:
                    bar.set_postfix_str(f"loss {float(hits[-1][1]):.3f}", refresh=False)
                    bar.update(max(0.0, float(hits[-1][0]) - bar.n))  # redraws at most every mininterval
            except Exception:  # noqa: BLE001 - a display glitch must never stop the pipe being drained
                pass

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        os.dup2(write_fd, 2)
        model = _train_unsupervised({**args, "verbose": 2})
    finally:
        os.dup2(saved, 2)
        os.close(write_fd)
        reader.join()
        os.close(read_fd)
        os.close(saved)
        bar.close()
        if bar_file is not sys.stderr:
            bar_file.close()
    return model


# --------------------------------------------------------------------------------------------
# Normalisation (Artetxe et al. 2016)
# --------------------------------------------------------------------------------------------


def _apply_steps(matrix: np.ndarray, steps: Sequence[str],
                 means: Sequence[np.ndarray] | None = None) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """Normalise; fit each 'center' mean on ``matrix`` unless ``means`` gives them.

    Rows that are all zero stay zero and are left out of the means: they carry no direction, and
    centring would otherwise turn them into minus the mean.
    """
    out = np.array(matrix, dtype=np.float32, copy=True)
    zero = ~np.any(out != 0, axis=1)
    fitted: list[np.ndarray] = []
    given = list(means) if means is not None else None
    for step in parse_steps(steps):
        if step == "unit":
            norms = np.linalg.norm(out, axis=1, keepdims=True)
            np.divide(out, norms, out=out, where=norms > 0)
        else:  # center: subtract the per-dimension mean
            if given is not None:
                if not given:
                    raise ValueError("fewer fitted means than 'center' steps")
                mean = np.asarray(given.pop(0), dtype=np.float32)
            else:
                kept = out[~zero]
                mean = (kept.mean(axis=0, dtype=np.float64) if len(kept) else np.zeros(out.shape[1])).astype(np.float32)
            fitted.append(mean)
            out -= mean
            out[zero] = 0.0
    return out, tuple(fitted)


def normalise(matrix: np.ndarray, steps: str | Sequence[str] = PAPER_NORMALISATION) -> np.ndarray:
    """Unit-length rows, then subtract the per-dimension mean (the paper's 'normalized and mean-centered').

    Order matters: after centring the rows are no longer unit length, and after a final 'unit'
    the means are no longer exactly zero. Returns a new float32 matrix.
    """
    if np.asarray(matrix).ndim != 2:
        raise ValueError(f"expected a 2-D matrix (words x dim), got shape {np.asarray(matrix).shape}")
    return _apply_steps(matrix, steps)[0]


def normalise_vectors(vectors: WordVectors, steps: str | Sequence[str] = PAPER_NORMALISATION) -> WordVectors:
    """Normalise the whole loaded top-N matrix (means over all N words, before any token is selected)."""
    if vectors.normalisation:
        raise ValueError(f"these vectors are already normalised ({vectors.normalisation}); normalise the raw ones")
    steps = parse_steps(steps)
    matrix, means = _apply_steps(vectors.matrix, steps)
    return WordVectors(vectors.words, matrix, steps, means)


def matrix_stats(matrix: np.ndarray) -> dict[str, float]:
    """Numbers that show what a normalisation did: row lengths, column means, per-element spread."""
    m = np.asarray(matrix, dtype=np.float64)
    norms = np.linalg.norm(m, axis=1)
    return {
        "mean_row_norm": float(norms.mean()),
        "max_abs_column_mean": float(np.abs(m.mean(axis=0)).max()),
        "element_std": float(m.std()),
        "element_std_vs_bert_init": float(m.std() / BERT_INIT_STD),
    }


def normalisation_table(matrix: np.ndarray,
                        orders: Sequence[str] = ("", "unit", "unit,center", "center,unit", "unit,center,unit")
                        ) -> list[dict[str, Any]]:
    """:func:`matrix_stats` after each normalisation order, to show that the order matters."""
    return [{"steps": order or "raw", **matrix_stats(normalise(matrix, order))} for order in orders]


# --------------------------------------------------------------------------------------------
# Alignment: Equation 3
# --------------------------------------------------------------------------------------------


def vocab_of(tokenizer: Mapping[str, int] | Any) -> tuple[dict[str, int], set[str]]:
    """(token -> id, special tokens) from a vocabulary dict or a tokenizer with ``get_vocab``."""
    if isinstance(tokenizer, Mapping):
        vocab = dict(tokenizer)
        specials = set(SPECIAL_TOKENS)
    else:
        vocab = dict(tokenizer.get_vocab())
        specials = set(SPECIAL_TOKENS) | set(getattr(tokenizer, "all_special_tokens", ()))
    ids = sorted(vocab.values())
    if ids != list(range(len(vocab))):
        raise ValueError(f"token ids must be 0..{len(vocab) - 1} without gaps or repeats "
                         f"(got {len(vocab)} tokens with ids up to {ids[-1] if ids else None})")
    return vocab, specials


def vocab_fingerprint(tokenizer: Mapping[str, int] | Any) -> str:
    """SHA-256 of the tokens in id order: two vocabularies of equal size but different tokens differ here.

    Saved in the alignment's manifest and in the prepared pretraining data, so a matrix built for
    one tokenizer is never copied into a model trained with another (the shapes alone would agree).
    """
    vocab = dict(tokenizer) if isinstance(tokenizer, Mapping) else dict(tokenizer.get_vocab())
    ordered = sorted(vocab.items(), key=lambda item: item[1])
    return hashlib.sha256("\n".join(f"{i}\t{t}" for t, i in ordered).encode("utf-8")).hexdigest()


def _lookup(word: str, index: Mapping[str, int], case: str) -> tuple[int | None, str]:
    row = index.get(word)
    if row is not None:
        return row, "exact"
    if case == "lower_fallback" and word.lower() != word:
        row = index.get(word.lower())
        if row is not None:
            return row, "lower"
    return None, ""


def align(tokenizer_vocab: Mapping[str, int] | Any, vectors: WordVectors, fallback: str = "zero",
          pieces: str = "skip", case: str = "exact", scale: str | None = None, random_std: float = BERT_INIT_STD,
          seed: int = 0, bin_model: SubwordModel | None = None) -> Alignment:
    """Build the initial token-embedding matrix (Equation 3).

    * whole-word tokens: ``E(t)`` when ``t`` is one of ``vectors.words`` (exactly, or lowercased
      with ``case='lower_fallback'``);
    * special tokens are never looked up;
    * ``##x`` pieces: 'skip' (the paper: they fall back), 'strip' (look up ``x`` as a word) or
      'subword' (``bin_model.get_word_vector('##x')``, prefix kept as WECHSEL does, then the same
      normalisation as ``vectors``);
    * the rest gets the fallback ``f(t)``: zeros (the paper's choice) or N(0, ``random_std``);
    * ``scale='bert'`` rescales the found rows so their per-element std is 0.02, BERT's init std
      (Kim et al. 2024 find the scale of copied embeddings matters); the paper does not rescale.
    """
    _check_choice("fallback", fallback, FALLBACKS)
    _check_choice("pieces", pieces, PIECE_MODES)
    _check_choice("case", case, CASE_MODES)
    _check_choice("scale", scale, SCALES)
    if pieces == "subword" and bin_model is None:
        raise ValueError("pieces='subword' needs a fastText model with subword vectors: pass bin_model= "
                         "(read_bin(path) or the model train_fasttext returned)")
    if bin_model is not None and bin_model.get_dimension() != vectors.dim:
        raise ValueError(f"bin_model has dimension {bin_model.get_dimension()}, the vectors {vectors.dim}")
    vocab, specials = vocab_of(tokenizer_vocab)
    index = vectors.index()
    matrix = np.zeros((len(vocab), vectors.dim), dtype=np.float32)
    found = np.zeros(len(vocab), dtype=bool)
    counts = {k: 0 for k in ("special", "word_exact", "word_lower", "word_missing", "piece_exact",
                             "piece_lower", "piece_subword", "piece_missing")}
    subword_ids: list[int] = []
    for token, tid in vocab.items():
        if token in specials:
            counts["special"] += 1
            continue
        is_piece = token.startswith(PIECE_PREFIX) and len(token) > len(PIECE_PREFIX)
        kind = "piece" if is_piece else "word"
        if is_piece and pieces == "skip":
            counts["piece_missing"] += 1
            continue
        if is_piece and pieces == "subword":
            subword_ids.append(tid)
            continue
        row, how = _lookup(token[len(PIECE_PREFIX):] if is_piece else token, index, case)
        if row is None:
            counts[f"{kind}_missing"] += 1
            continue
        matrix[tid] = vectors.matrix[row]
        found[tid] = True
        counts[f"{kind}_{how}"] += 1
    if subword_ids:
        id_to_token = {i: t for t, i in vocab.items()}
        raw = np.stack([bin_model.get_word_vector(id_to_token[i]) for i in subword_ids])  # type: ignore[union-attr]
        matrix[subword_ids] = vectors.transform(raw)
        found[subword_ids] = np.any(matrix[subword_ids] != 0, axis=1)
        counts["piece_subword"] = int(found[subword_ids].sum())
        counts["piece_missing"] += len(subword_ids) - counts["piece_subword"]
    factor = _rescale(matrix, found, scale)
    missing = ~found
    if fallback == "random" and missing.any():
        rng = np.random.default_rng(seed)
        matrix[missing] = rng.normal(0.0, random_std, size=(int(missing.sum()), vectors.dim)).astype(np.float32)
    n_pieces = counts["piece_exact"] + counts["piece_lower"] + counts["piece_subword"]
    report = {
        "vocab_size": len(vocab), "dim": vectors.dim, "n_vectors": len(vectors),
        "normalisation": list(vectors.normalisation),
        "fallback": fallback, "random_std": random_std if fallback == "random" else None,
        "pieces": pieces, "case": case, "scale": scale, "scale_factor": factor,
        "n_found": int(found.sum()), "n_found_words": counts["word_exact"] + counts["word_lower"],
        "n_found_pieces": n_pieces, "n_missing": int(missing.sum()), "by_source": counts,
        "found_element_std": float(matrix[found].std()) if found.any() else None,
        "vocab_sha256": vocab_fingerprint(vocab),
    }
    return Alignment(matrix, found, report)


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


# --------------------------------------------------------------------------------------------
# Saving and loading (numpy + json only: this runs on the GPU machines)
# --------------------------------------------------------------------------------------------


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    return value


def save_aligned(out_dir: str | Path, alignment: Alignment, manifest: Mapping[str, Any]) -> Path:
    """Write embeddings.npy (float32), found.npy (bool) and manifest.json; return the folder.

    The manifest gets the alignment's report merged in (counts, shape, options); a caller's value
    that contradicts the matrix (vocab_size, dim, n_found) is refused rather than saved.
    """
    matrix = np.asarray(alignment.matrix)
    found = np.asarray(alignment.found)
    _check_pair(matrix, found, "the alignment")
    derived = {"vocab_size": int(matrix.shape[0]), "dim": int(matrix.shape[1]), "n_found": int(found.sum())}
    for key, value in derived.items():
        if key in manifest and manifest[key] != value:
            raise ValueError(f"manifest says {key}={manifest[key]!r} but the alignment has {value}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    full = {**alignment.report, **manifest, **derived}
    np.save(out / EMBEDDINGS_FILE, matrix.astype(np.float32, copy=False))
    np.save(out / FOUND_FILE, found.astype(bool, copy=False))
    (out / MANIFEST_FILE).write_text(json.dumps(_jsonable(full), indent=2, ensure_ascii=False), encoding="utf-8")
    return out


def _check_pair(matrix: np.ndarray, found: np.ndarray, where: str) -> None:
    if matrix.ndim != 2:
        raise ValueError(f"{where}: the embedding matrix must be 2-D (vocab_size x dim), got shape {matrix.shape}")
    if found.ndim != 1 or found.shape[0] != matrix.shape[0]:
        raise ValueError(f"{where}: the found mask has shape {found.shape} but the matrix has {matrix.shape[0]} rows")


def load_aligned(directory: str | Path) -> Alignment:
    """Read what :func:`save_aligned` wrote, checking that the three files agree."""
    path = Path(directory).expanduser()
    hint = "run notebooks/03_static_vectors.ipynb to create it"
    if not path.is_dir():
        raise FileNotFoundError(f"no static-vector folder at {path}; {hint}")
    for name in (EMBEDDINGS_FILE, FOUND_FILE, MANIFEST_FILE):
        if not (path / name).is_file():
            raise FileNotFoundError(f"{path / name} is missing; {hint}")
    matrix = np.load(path / EMBEDDINGS_FILE, allow_pickle=False)
    found = np.load(path / FOUND_FILE, allow_pickle=False)
    manifest = json.loads((path / MANIFEST_FILE).read_text(encoding="utf-8"))
    _check_pair(matrix, found, str(path))
    if matrix.dtype != np.float32 or found.dtype != bool:
        raise ValueError(f"{path}: expected float32 embeddings and a bool mask, got {matrix.dtype} and {found.dtype}")
    actual = {"vocab_size": matrix.shape[0], "dim": matrix.shape[1], "n_found": int(found.sum())}
    for key, value in actual.items():
        if manifest.get(key) != value:
            raise ValueError(f"{path / MANIFEST_FILE} says {key}={manifest.get(key)!r} but the arrays give {value}; "
                             f"the folder mixes files from different runs: {hint} again")
    return Alignment(matrix, found, manifest)


# --------------------------------------------------------------------------------------------
# Getting vectors for a preset (what the notebook calls)
# --------------------------------------------------------------------------------------------


@dataclass
class VectorsSource:
    """Raw (not yet normalised) vectors, the fastText model if there is one, and how they were made."""

    vectors: WordVectors
    model: SubwordModel | None
    info: dict[str, Any]


def obtain_vectors(config: VectorsConfig, lang: str, seed: int = 0, vectors_path: str | Path | None = None,
                   corpus_source: str = "embedded", corpus_path: str | Path | None = None,
                   cache_dir: str | Path | None = None, progress: bool = True) -> VectorsSource:
    """Vectors for notebook 03: from ``vectors_path`` if given, else per ``config.source``.

    A ``.bin`` path gives a model (so the 'subword' option works); a ``.vec``/``.vec.gz`` gives words only.
    """
    if vectors_path is not None:
        path = Path(vectors_path).expanduser()
        if path.suffix == ".bin":
            model = read_bin(path, expected_dim=config.dim)
            return VectorsSource(vectors_from_model(model, config.top_n), model,
                                 {"source": "file", "vectors_path": str(path), "top_n": config.top_n})
        return VectorsSource(read_vec(path, config.top_n, config.dim), None,
                             {"source": "file", "vectors_path": str(path), "top_n": config.top_n})
    if config.source == "published":
        if cache_dir is None:  # the repository's .cache/, wherever the notebook runs from
            from helpers.runinfo import REPO_ROOT

            cache_dir = REPO_ROOT / DEFAULT_CACHE
        path = download_vectors(lang, cache_dir, progress)
        return VectorsSource(read_vec(path, config.top_n, config.dim), None,
                             {"source": "published", "vectors_path": str(path), "url": CC_URL.format(lang=lang),
                              "top_n": config.top_n})
    return _train_for_preset(config, lang, seed, corpus_source, corpus_path, progress)


def load_training_corpus(lang: str, corpus_source: str = "embedded", corpus_path: str | Path | None = None,
                         max_docs: int | None = None) -> Any:
    """The training split the vectors are trained on (and token frequencies counted on)."""
    from helpers.data import load_corpus

    options: dict[str, Any] = {"max_docs": max_docs}
    if corpus_source == "files":
        if corpus_path is None:
            raise ValueError("corpus_source='files' needs corpus_path (a .txt/.jsonl/.csv/.parquet file or folder)")
        options["path"] = corpus_path
    return load_corpus(corpus_source, lang=lang, split="train", **options)


def _train_for_preset(config: VectorsConfig, lang: str, seed: int, corpus_source: str,
                      corpus_path: str | Path | None, progress: bool) -> VectorsSource:
    corpus = load_training_corpus(lang, corpus_source, corpus_path, config.max_docs)
    started, cpu_started = time.perf_counter(), time.process_time()
    model = train_fasttext(corpus.texts, dim=config.dim, epochs=config.epochs, min_count=config.min_count,
                           seed=seed, model=config.model, bucket=config.bucket, progress=progress)
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    vectors = vectors_from_model(model, config.top_n)
    info = {
        "source": "train", "corpus": corpus.name, "corpus_source": corpus.source, "corpus_docs": len(corpus),
        "corpus_words": corpus.n_words(), "top_n": config.top_n, "n_model_words": len(model.get_words()),
        "fasttext": fasttext_params(config.dim, config.epochs, config.min_count, seed, config.model, config.bucket),
        "train_seconds": round(seconds, 1), "train_cpu_seconds": round(cpu_seconds, 1), "pretokenisation": "BertNormalizer(cased) + BertPreTokenizer",
    }
    return VectorsSource(vectors, model, info)


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
    "en": ("king", "Paris", "river", "music", "1990"),
    "fr": ("roi", "Paris", "fleuve", "musique", "1990"),
    "es": ("rey", "Madrid", "río", "música", "1990"),
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


def plot_scale(found_rows: np.ndarray, std: float = BERT_INIT_STD, ax: Any = None, seed: int = 0) -> Any:
    """Histogram of the copied vectors' elements beside BERT's N(0, 0.02) initialisation."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3.8))
    values = np.asarray(found_rows, dtype=np.float32).ravel()
    bert = np.random.default_rng(seed).normal(0.0, std, size=min(values.size, 1_000_000))
    top = float(np.percentile(np.abs(np.concatenate([values, bert])), 99.9))
    bins = np.linspace(-top, top, 120)
    ax.hist(values, bins=bins, density=True, alpha=0.6, label=f"copied fastText rows (std {values.std():.4f})")
    ax.hist(bert, bins=bins, density=True, alpha=0.6, label=f"BERT init N(0, {std}) (std {bert.std():.4f})")
    ax.set_xlabel("embedding element value")
    ax.set_ylabel("density")
    ax.set_title("Scale of the initial token embeddings")
    ax.legend()
    return ax


def plot_coverage(starts: np.ndarray, shares: np.ndarray, bucket: int, ax: Any = None, label: str | None = None) -> Any:
    """Share of tokens with a fastText vector per frequency-rank bucket."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3.8))
    ax.bar(starts, shares, width=bucket * 0.9, align="edge", label=label)
    ax.set_xlabel(f"token frequency rank in the corpus (buckets of {bucket:,})")
    ax.set_ylabel("share with a fastText vector")
    ax.set_ylim(0, 1)
    ax.set_title("Which tokens start from a pretrained vector")
    if label:
        ax.legend(loc="lower left")
    return ax


__all__ = [
    "Alignment", "PRESETS", "VectorsConfig", "VectorsSource", "WordVectors", "align", "check_dim",
    "compare_piece_options", "coverage_by_rank", "download_vectors", "load_aligned", "matrix_stats",
    "nearest_neighbours", "neighbour_table", "normalisation_table", "normalise", "normalise_vectors",
    "load_training_corpus", "obtain_vectors", "plot_coverage", "plot_scale", "pretokenize", "read_bin", "read_vec", "save_aligned", "table1_rows",
    "text_coverage", "token_frequencies", "train_fasttext", "vectors_from_model",
]
