"""Training fastText word vectors here, on the corpus the tokenizer saw (the offline stand-in for cc.LANG.300).

fastText's threads update the weights without locks, so only ``thread=1`` gives the same vectors twice, and it takes
no seed: our ``seed`` shuffles the order of the documents instead (0 keeps the corpus order). It shows no progress
with one thread, so training prints the time to expect (:func:`estimate_seconds`). ``fasttext`` is imported only
where a model is trained, so the rest of the package imports without it.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import re
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable, Iterator

import numpy as np

from helpers.presets import FastTextSettings
from helpers.static_vectors import WordVectors

EOS = "</s>"  # fastText's line-end marker: not a word, so never a row of the vectors

# Corpus words x epochs per second (one thread, dim 300, 5 negatives, window 5), measured by
# benchmarks/fasttext_settings.py on the embedded English text; only for the time estimate printed before training.
WORDS_PER_SECOND = {("skipgram", True): 38_000.0, ("skipgram", False): 56_000.0,
                    ("cbow", True): 72_000.0, ("cbow", False): 290_000.0}


# With one thread, fastText 0.9.3 initialises only the first tenth of its input matrix and trains the rest from
# whatever the allocation held: reused heap gave 'Encountered NaN' or other vectors. While fastText trains, glibc
# fills each new allocation with M_PERTURB's complement, 0xFF ^ 0xFF = 0, so those rows start at zero as fresh
# pages do (other C libraries have no such switch).
M_PERTURB = -6  # mallopt's parameter number (glibc malloc.h)


@contextlib.contextmanager
def zeroed_allocations() -> Iterator[None]:
    """Every malloc inside the block returns zeroed memory (glibc; elsewhere nothing changes)."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError, TypeError):
        yield
        return
    mallopt(M_PERTURB, 0xFF)
    try:
        yield
    finally:
        mallopt(M_PERTURB, 0)


def fasttext_args(settings: FastTextSettings, threads: int = 1) -> dict[str, Any]:
    """Keyword arguments for ``fasttext.train_unsupervised`` (``threads=1`` for identical reruns)."""
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    return {"model": settings.model, "dim": settings.dim, "epoch": settings.epochs, "minCount": settings.min_count,
            "minn": settings.minn if settings.subwords else 0, "maxn": settings.maxn, "neg": settings.neg,
            "ws": settings.ws, "lr": settings.lr, "bucket": settings.bucket, "thread": threads}


def estimate_seconds(n_words: int, settings: FastTextSettings, threads: int = 1) -> float:
    """Expected training time from the measured rates above (a guide, not a promise)."""
    rate = WORDS_PER_SECOND[(settings.model, settings.subwords)]
    cost = (settings.neg + 1) / 6 * settings.ws / 5 * settings.dim / 300
    return max(1.0, n_words * settings.epochs * cost / (rate * threads))


def pretokenize(text: str) -> list[str]:
    """Split text into words as the BERT tokenizer does before WordPiece (cased, accents kept), so fastText learns
    vectors for exactly the strings a whole-word token can be ("Paris", ",", "1889"): what Equation 3 looks up."""
    normalizer, pre_tokenizer = _bert_pretokenizer()
    return [w for piece in _pieces(text) for w, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(piece))]


PIECE_CHARS = 1_000_000  # a longer document is pre-tokenised a piece at a time
_SPACE = re.compile(r"\s")


def _pieces(text: str) -> Iterable[str]:
    """``text`` cut at whitespace into pieces of about PIECE_CHARS characters: the same words, bounded memory (one
    100 MB line took about 10 GB as (word, offsets) pairs). A longer run without whitespace is cut at the limit."""
    start = 0
    while len(text) - start > PIECE_CHARS:
        space = _SPACE.search(text, start + PIECE_CHARS, start + 2 * PIECE_CHARS)
        cut = space.start() if space else start + PIECE_CHARS
        yield text[start:cut]
        start = cut
    yield text[start:]


@functools.cache
def _bert_pretokenizer() -> tuple[Any, Any]:
    from tokenizers import normalizers, pre_tokenizers

    return (normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=False,
                                       lowercase=False),
            pre_tokenizers.BertPreTokenizer())


# fastText cuts lines at MAX_LINE_SIZE (1024) words anyway (src/dictionary.h): writing a long document as lines of
# that many words trains on the same windows, and a 100 MB document never becomes one 100 MB line.
MAX_LINE_WORDS = 1024


def write_training_text(texts: Iterable[str], path: Path, seed: int = 0) -> tuple[int, int]:
    """One pre-tokenised document per line(s), in an order shuffled by ``seed`` (0: as given). Returns (docs, words)."""
    documents = [[" ".join(words[i:i + MAX_LINE_WORDS]) for i in range(0, len(words), MAX_LINE_WORDS)]
                 for words in map(pretokenize, texts) if words]
    if not documents:
        raise ValueError("no words to train fastText on: the corpus is empty; check the corpus source and max_docs")
    if seed:
        documents = [documents[i] for i in np.random.default_rng(seed).permutation(len(documents))]
    lines = [line for document in documents for line in document]
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(documents), sum(line.count(" ") + 1 for line in lines)


def train_fasttext(texts: Iterable[str], settings: FastTextSettings, seed: int = 0, tmp_dir: str | Path | None = None,
                   progress: bool = True) -> Any:
    """fastText trained on ``texts`` (pre-tokenised like BERT, case kept); same texts + seed -> same vectors."""
    with tempfile.TemporaryDirectory(dir=tmp_dir, prefix="fasttext-") as tmp:
        corpus = Path(tmp) / "corpus.txt"
        _, n_words = write_training_text(texts, corpus, seed)
        return train_on_file(corpus, settings, n_words, progress=progress)


def train_on_file(path: str | Path, settings: FastTextSettings, n_words: int, threads: int = 1,
                  progress: bool = True) -> Any:
    """``fasttext.train_unsupervised`` on a prepared file of ``n_words`` words, with the expected and the taken time."""
    import fasttext

    if progress:
        print(f"training fastText ({settings.label()}) on {n_words:,} words and punctuation marks (split off as "
              f"BERT's pre-tokenizer does, so more than the whitespace-separated words notebook 02 counts): "
              f"about {estimate_seconds(n_words, settings, threads):.0f} s")
    started = time.perf_counter()
    try:
        with zeroed_allocations():
            model = fasttext.train_unsupervised(input=str(path), **fasttext_args(settings, threads), verbose=0)
    except (RuntimeError, ValueError) as err:
        if "empty vocabulary" in str(err).lower():
            raise ValueError(f"fastText found no word occurring {settings.min_count}+ times in the corpus; "
                             "lower min_count or give it more text") from err
        if "nan" in str(err).lower():
            raise ValueError(f"fastText's training diverged (NaN) at lr={settings.lr:g}: lower lr (on a 100-line "
                             "corpus, lr 0.05 to 2 trained and 10 diverged)") from err
        raise
    if progress:
        print(f"fastText trained in {time.perf_counter() - started:.0f} s")
    return model


def vectors_from_model(model: Any, top_n: int | None = None, source: str = "the fastText model") -> WordVectors:
    """The model's ``top_n`` most frequent words (its dictionary is sorted by count) and their vectors, as the .vec
    fastText writes would hold them; ``source`` names the model (its .bin file) in the error."""
    words = [w for w in model.get_words(on_unicode_error="replace") if w != EOS][:top_n]
    if not words:
        raise ValueError(f"{source} has no words in its dictionary; give vectors of a model trained on text")
    return WordVectors(words, np.stack([model.get_word_vector(w) for w in words]).astype(np.float32))
