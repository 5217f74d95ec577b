"""Train, save, load and describe the per-language WordPiece tokenizer (notebook 02).

Notebook 02 first counts a few WordPiece merges by hand on a toy word list (``split_word`` ...
``next_merge``, shown in the notebook's cells), then hands the real corpus to the trainer.

The paper trains one cased WordPiece tokenizer of 30,000 tokens per language on 5 million C4
examples (Mištera & Král, Section 4). Training uses Hugging Face ``tokenizers`` (fast, in Rust);
the result is wrapped as a ``transformers`` fast tokenizer so every later notebook loads it with
``AutoTokenizer.from_pretrained(dir)``.

Never build the tokenizer from a vocab file with ``BertTokenizerFast(vocab_file=...)``: in
transformers 5 that silently yields a 5-token vocabulary which maps every word to [UNK].
Everything here goes through ``tokenizer.json``.

Training in tokenizers 0.23 is not reproducible on its own (upstream issue huggingface/tokenizers#1794):
the trainer creates the single-character ``##`` pieces while iterating over a hash map, so their ids,
and with them the tie-breaks between equally frequent merges, change from run to run (measured: two
trainings on the English demo text differed in 22 of 30,000 tokens and in the ids of 9,671). We hand
the trainer those pieces up front, in sorted order, as extra special tokens (ids are then fixed), and
remove them from the added-token list afterwards so they stay ordinary vocabulary entries. The pieces
are found by the trainer itself (a throwaway pass that stops before the first merge), so the words
are counted in Rust and never looped over in Python. The saved ``tokenizer.json`` is still the
artefact of record: later steps load it and never retrain. Plots live in ``plots.tokenizer``.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Sequence

import numpy as np

if TYPE_CHECKING:  # transformers is slow to import; only the functions that need it import it
    from transformers import PreTrainedTokenizerFast

SPECIAL_TOKENS: tuple[str, ...] = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")  # ids 0..4
SPECIAL_ROLES: dict[str, str] = {
    "pad_token": "[PAD]", "unk_token": "[UNK]", "cls_token": "[CLS]", "sep_token": "[SEP]", "mask_token": "[MASK]",
}
CONTINUATION_PREFIX = "##"
MODEL_MAX_LENGTH = 128  # the paper's maximum sequence length (Table 4)
MIN_VOCAB_SHARE = 0.9  # below this share of the asked size, the corpus is too small for the vocabulary
UNLIMITED_VOCAB = 10_000_000  # asked size that only the corpus itself can stop
PROBE_SENTENCE = "The Eiffel Tower in Paris was completed in 1889 by Gustave Eiffel's company."


# --------------------------------------------------------------------------------------------
# WordPiece merges by hand, on a toy word list (notebook 02 shows these cells)
# --------------------------------------------------------------------------------------------

Words = dict[tuple[str, ...], int]  # a word split into its current pieces -> how often the word occurs


def split_word(word: str) -> tuple[str, ...]:
    """The starting split: the first character alone, every later one marked as a continuation (``##``)."""
    return (word[0], *(CONTINUATION_PREFIX + c for c in word[1:]))


def count_pieces_and_pairs(words: Words) -> tuple[Counter, Counter]:
    """How often each piece and each pair of neighbouring pieces occurs, every word weighted by its count."""
    pieces: Counter = Counter()
    pairs: Counter = Counter()
    for split, n in words.items():
        for piece in split:
            pieces[piece] += n
        for pair in zip(split, split[1:]):
            pairs[pair] += n
    return pieces, pairs


def wordpiece_scores(pieces: Counter, pairs: Counter) -> dict[tuple[str, str], float]:
    """WordPiece's score count(ab) / (count(a) * count(b)): high when a and b occur mostly together."""
    return {(a, b): n / (pieces[a] * pieces[b]) for (a, b), n in pairs.items()}


def next_merge(words: Words, by: str = "score") -> tuple[str, str]:
    """The pair merged next: highest WordPiece ``score``, or highest raw ``frequency`` (what BPE does)."""
    pieces, pairs = count_pieces_and_pairs(words)
    ranking = wordpiece_scores(pieces, pairs) if by == "score" else pairs
    return max(sorted(ranking), key=ranking.__getitem__)  # sorted: a tie goes to the alphabetically first pair


def merge_pair(words: Words, pair: tuple[str, str]) -> Words:
    """Every occurrence of ``pair`` becomes one piece; the second half's ``##`` is dropped (w + ##alk = walk)."""
    merged = pair[0] + pair[1].removeprefix(CONTINUATION_PREFIX)
    out: Words = {}
    for split, n in words.items():
        new, i = [], 0
        while i < len(split):
            if split[i:i + 2] == pair:
                new.append(merged)
                i += 2
            else:
                new.append(split[i])
                i += 1
        out[tuple(new)] = n
    return out


# --------------------------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------------------------


class _CountingTexts:
    """Pass documents through to the trainer while counting them, so a one-shot stream works too."""

    def __init__(self, texts: Iterable[str]) -> None:
        self._texts = texts
        self.n_docs = 0
        self.n_words = 0

    def __iter__(self) -> Iterator[str]:
        for text in self._texts:
            if not isinstance(text, str):
                raise TypeError(f"documents must be strings, got {type(text).__name__}")
            if text.strip():
                self.n_docs += 1
                self.n_words += len(text.split())
                yield text


def build_untrained(lowercase: bool = False) -> Any:
    """The BERT pipeline around an empty WordPiece model: normaliser, pre-tokeniser, [CLS]/[SEP], decoder."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]", continuing_subword_prefix=CONTINUATION_PREFIX))
    # Uncased follows BERT uncased: lowercase and strip accents. Cased keeps both (the paper's choice).
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                strip_accents=lowercase, lowercase=lowercase)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    ids = {t: i for i, t in enumerate(SPECIAL_TOKENS)}
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", ids["[CLS]"]), ("[SEP]", ids["[SEP]"])],
    )
    tok.decoder = decoders.WordPiece(prefix=CONTINUATION_PREFIX)
    return tok


def wrap_fast(backend: Any) -> "PreTrainedTokenizerFast":
    """A transformers fast tokenizer around a trained ``tokenizers.Tokenizer``, specials and max length set."""
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_object=backend, model_max_length=MODEL_MAX_LENGTH, **SPECIAL_ROLES)


def _train_backend(texts: Iterable[str], vocab_size: int, lowercase: bool, min_frequency: int,
                   show_progress: bool) -> tuple[Any, _CountingTexts]:
    """Train the WordPiece model; return it with the document and word counts of what it saw."""
    from tokenizers import trainers

    if isinstance(texts, str):
        raise TypeError("texts must be an iterable of documents, not one string; wrap it in a list")
    if vocab_size <= len(SPECIAL_TOKENS):
        raise ValueError(f"vocab_size must exceed the {len(SPECIAL_TOKENS)} special tokens, got {vocab_size}")
    if min_frequency < 1:
        raise ValueError(f"min_frequency must be at least 1, got {min_frequency}")
    backend = build_untrained(lowercase)
    texts = texts if isinstance(texts, Sequence) else list(texts)  # read twice: pieces, then training
    pieces = continuation_pieces(backend, texts)
    trainer = trainers.WordPieceTrainer(
        vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=[*SPECIAL_TOKENS, *pieces],
        continuing_subword_prefix=CONTINUATION_PREFIX, show_progress=show_progress,
    )
    counted = _CountingTexts(texts)
    backend.train_from_iterator(iter(counted), trainer=trainer, length=len(texts))
    if counted.n_docs == 0:
        raise ValueError("the training corpus is empty (no non-empty documents); check the corpus source and max_docs")
    return _only_real_specials(backend), counted


def continuation_pieces(backend: Any, texts: Iterable[str], batch_size: int = 1_000) -> list[str]:
    """Sorted ``##c`` for every character that occurs after the first one of a pre-tokenised word.

    Exactly the pieces the trainer would otherwise create in hash-map order (see the module notes).
    A throwaway copy of the pipeline is trained with ``vocab_size=0``: the trainer counts the words
    (in Rust, batch by batch) and creates every ``##c`` piece before its first merge, where it stops.
    """
    from tokenizers import Tokenizer, trainers

    scratch = Tokenizer.from_str(backend.to_str())
    trainer = trainers.WordPieceTrainer(vocab_size=0, special_tokens=[], show_progress=False,
                                        continuing_subword_prefix=CONTINUATION_PREFIX)
    scratch.train_from_iterator(_batches(texts, batch_size), trainer=trainer)
    return sorted(t for t in scratch.get_vocab() if t.startswith(CONTINUATION_PREFIX))


def _batches(texts: Iterable[str], size: int) -> Iterator[list[str]]:
    """Documents in lists of ``size``, so the trainer receives few large calls instead of many small ones."""
    batch: list[str] = []
    for text in texts:
        if not isinstance(text, str):
            raise TypeError(f"documents must be strings, got {type(text).__name__}")
        batch.append(text)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _only_real_specials(backend: Any) -> Any:
    """Drop the seeded ``##c`` pieces from the added tokens; they keep their ids in the vocabulary."""
    import json

    from tokenizers import Tokenizer

    spec = json.loads(backend.to_str())
    spec["added_tokens"] = [t for t in spec["added_tokens"] if t["content"] in SPECIAL_TOKENS]
    return Tokenizer.from_str(json.dumps(spec))


def train_wordpiece(texts: Iterable[str], vocab_size: int = 30_000, lowercase: bool = False,
                    min_frequency: int = 2, show_progress: bool = True) -> "PreTrainedTokenizerFast":
    """Train a BERT-style WordPiece tokenizer; refuse a corpus too small for ``vocab_size``.

    A vocabulary that stops far short of the asked size would silently change the model's
    embedding matrix and parameter count, so it is an error rather than a warning.
    """
    backend, counted = _train_backend(texts, vocab_size, lowercase, min_frequency, show_progress)
    reached = backend.get_vocab_size()
    if reached < MIN_VOCAB_SHARE * vocab_size:
        raise ValueError(
            f"the trained vocabulary has only {reached:,} tokens, far fewer than the {vocab_size:,} asked for: "
            f"the corpus ({counted.n_docs:,} documents, {counted.n_words:,} words) is too small at "
            f"min_frequency={min_frequency}. Ask for a smaller vocab_size (about {reached:,} or less), "
            "lower min_frequency, or train on a bigger corpus."
        )
    return wrap_fast(backend)


def vocab_ceiling(texts: Iterable[str], min_frequency: int = 2, lowercase: bool = False) -> int:
    """The largest vocabulary the corpus supports at ``min_frequency``: train with no size limit.

    Merges stop once no pair occurs ``min_frequency`` times, so this is how far the asked size
    may go before :func:`train_wordpiece` refuses.
    """
    backend, _ = _train_backend(texts, UNLIMITED_VOCAB, lowercase, min_frequency, show_progress=False)
    return backend.get_vocab_size()


# --------------------------------------------------------------------------------------------
# Saving and loading
# --------------------------------------------------------------------------------------------


def check_specials(tok: "PreTrainedTokenizerFast") -> None:
    """Raise unless ``tok`` is fast and has the five specials at ids 0..4 in their roles."""
    if not getattr(tok, "is_fast", False):
        raise ValueError(f"expected a fast tokenizer (backed by tokenizer.json), got {type(tok).__name__}")
    for role, token in SPECIAL_ROLES.items():
        if getattr(tok, role, None) != token:
            raise ValueError(f"the tokenizer's {role} is {getattr(tok, role, None)!r}, expected {token!r}")
    ids = tok.convert_tokens_to_ids(list(SPECIAL_TOKENS))
    if ids != list(range(len(SPECIAL_TOKENS))):
        raise ValueError(f"special tokens {SPECIAL_TOKENS} have ids {ids}, expected 0..{len(SPECIAL_TOKENS) - 1}")


def load_tokenizer(directory: str | Path) -> "PreTrainedTokenizerFast":
    """Load a tokenizer saved by :func:`save_tokenizer` (or any save_pretrained folder with tokenizer.json)."""
    from transformers import AutoTokenizer

    path = Path(directory).expanduser()
    if not path.is_dir():
        raise FileNotFoundError(f"no tokenizer folder at {path}; run notebooks/02_tokenizer.ipynb to create it")
    if not (path / "tokenizer.json").is_file():
        raise FileNotFoundError(
            f"{path} has no tokenizer.json; it is not a saved fast tokenizer. Rerun notebooks/02_tokenizer.ipynb "
            "(do not rebuild it from vocab.txt: BertTokenizerFast(vocab_file=...) maps every word to [UNK])"
        )
    tok = AutoTokenizer.from_pretrained(str(path))
    check_specials(tok)
    return tok


def save_tokenizer(tok: "PreTrainedTokenizerFast", out_dir: str | Path) -> Path:
    """``save_pretrained`` then reload and compare, so a broken save fails here and not three notebooks later."""
    check_specials(tok)
    path = Path(out_dir)
    path.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(str(path))
    reloaded = load_tokenizer(path)
    if reloaded.get_vocab() != tok.get_vocab():
        raise RuntimeError(f"the tokenizer reloaded from {path} has a different vocabulary "
                           f"({len(reloaded)} vs {len(tok)} entries)")
    before, after = tok(PROBE_SENTENCE)["input_ids"], reloaded(PROBE_SENTENCE)["input_ids"]
    if before != after:
        raise RuntimeError(f"the tokenizer reloaded from {path} encodes the probe sentence differently: "
                           f"{after} instead of {before}")
    if reloaded.model_max_length != tok.model_max_length:
        raise RuntimeError(f"model_max_length changed on reload: {reloaded.model_max_length} vs {tok.model_max_length}")
    return path


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------


def _texts(texts: Iterable[str]) -> list[str]:
    out = [t for t in texts if t and t.strip()]
    if not out:
        raise ValueError("no non-empty texts to measure")
    return out


def _ids(tok: "PreTrainedTokenizerFast", texts: list[str], specials: bool) -> list[list[int]]:
    """Batched encoding, never truncated; verbose=False silences the too-long warning we measure on purpose."""
    return tok(texts, add_special_tokens=specials, truncation=False, verbose=False,
               return_attention_mask=False, return_token_type_ids=False)["input_ids"]


def unk_rate(tok: "PreTrainedTokenizerFast", texts: Iterable[str]) -> float:
    """Share of [UNK] among the tokens of ``texts`` ([CLS]/[SEP] not counted): text the model cannot see."""
    ids = _ids(tok, _texts(texts), specials=False)
    total = sum(len(row) for row in ids)
    if total == 0:
        raise ValueError("the texts encode to no tokens")
    unk = tok.unk_token_id
    return sum(row.count(unk) for row in ids) / total


def fertility(tok: "PreTrainedTokenizerFast", texts: Iterable[str]) -> float:
    """Tokens per whitespace word: how many of the 128 positions one word of text costs."""
    texts = _texts(texts)
    words = sum(len(t.split()) for t in texts)
    tokens = sum(len(row) for row in _ids(tok, texts, specials=False))
    return tokens / words


def continuation_share(tok: "PreTrainedTokenizerFast") -> float:
    """Share of vocabulary entries that continue a word (start with ##), specials excluded."""
    specials = set(tok.all_special_tokens)
    entries = [t for t in tok.get_vocab() if t not in specials]
    if not entries:
        raise ValueError("the tokenizer has no entries besides its special tokens")
    return sum(t.startswith(CONTINUATION_PREFIX) for t in entries) / len(entries)


def encoded_lengths(tok: "PreTrainedTokenizerFast", texts: Iterable[str]) -> np.ndarray:
    """Tokens per document including [CLS] and [SEP], without truncation."""
    return np.array([len(row) for row in _ids(tok, _texts(texts), specials=True)], dtype=np.int64)


def share_over_limit(lengths: Sequence[int] | np.ndarray, limit: int = MODEL_MAX_LENGTH) -> float:
    """Share of documents longer than ``limit`` tokens, i.e. cut when sequences are truncated."""
    arr = np.asarray(lengths)
    if arr.size == 0:
        raise ValueError("no lengths given")
    return float(np.mean(arr > limit))


def is_lowercase(tok: "PreTrainedTokenizerFast") -> bool:
    """Whether the tokenizer's normaliser lowercases (read from the pipeline, not from a flag kept beside it)."""
    normalizer = tok.backend_tokenizer.normalizer
    return normalizer is not None and normalizer.normalize_str("A") == "a"


def tokenizer_report(tok: "PreTrainedTokenizerFast", eval_texts: Iterable[str],
                     limit: int = MODEL_MAX_LENGTH) -> dict[str, Any]:
    """The numbers notebook 02 shows and writes to report.json, for one tokenizer on held-out text."""
    texts = _texts(eval_texts)
    lengths = encoded_lengths(tok, texts)
    cont = continuation_share(tok)
    return {
        "vocab_size": len(tok),
        "lowercase": is_lowercase(tok),
        "unk_rate": unk_rate(tok, texts),
        "fertility": fertility(tok, texts),
        "continuation_share": cont,
        "whole_word_share": 1.0 - cont,
        "n_eval_docs": len(texts),
        "n_eval_words": sum(len(t.split()) for t in texts),
        "mean_length": float(lengths.mean()),
        "median_length": float(np.median(lengths)),
        "max_length": int(lengths.max()),
        "limit": limit,
        "share_over_limit": share_over_limit(lengths, limit),
    }


def tokenize_examples(toks: Mapping[str, "PreTrainedTokenizerFast"], sentences: Sequence[str]) -> list[dict[str, str]]:
    """Rows (sentence, then one column per tokenizer) of the tokens each tokenizer makes, for display."""
    return [{"sentence": s, **{name: " ".join(tok.tokenize(s)) for name, tok in toks.items()}} for s in sentences]
