"""How rich a language's word forms are, measured on the same content in every language (a parallel text such as
:mod:`pipeline.corpora.parallel_help`), to set beside the gain static vectors bring: the paper finds it largest for
morphologically rich languages. Words are runs of letters (digits and punctuation are not words); the type-token ratio
is taken over the first ``sample_words`` words of each language, since it falls as a text grows and is comparable only
between samples of one length."""

from __future__ import annotations

import re
from itertools import islice
from typing import Any, Iterable, Iterator, Mapping

from helpers.tokenizer import CONTINUATION_PREFIX

WORD = re.compile(r"[^\W\d_]+")  # a run of letters, in any script


def words_of(texts: Iterable[str]) -> Iterator[str]:
    """The words of ``texts`` in order, as written (case kept: a cased tokenizer sees them so)."""
    for text in texts:
        yield from WORD.findall(text)


def morphology(lang: str, texts: Iterable[str], tokenizer: Any, sample_words: int,
               manifest: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One row per language: ``words`` (all of ``texts``), then over the first ``sample_words`` words: ``types``
    (distinct lower-cased forms), ``type_token_ratio``, ``pieces_per_word`` (WordPiece tokens a word costs) and
    ``continuation_share`` (the share of those pieces that are ``##`` pieces). ``manifest``: notebook 03's static
    manifest, for ``vector_share``, the share of the vocabulary that starts from a static vector (``n_found`` /
    ``vocab_size``). Refuses a text shorter than the sample, which would not compare with the other languages."""
    texts = list(texts)
    words = sum(1 for _ in words_of(texts))
    if words < sample_words or sample_words < 1:
        raise ValueError(f"{lang}: the text has {words:,} words, fewer than the sample of {sample_words:,}; give every "
                         "language the same positive sample_words, at most the shortest text's words")
    sample = list(islice(words_of(texts), sample_words))
    counts: dict[str, int] = {}
    for word in sample:
        counts[word] = counts.get(word, 0) + 1
    distinct = list(counts)
    ids = tokenizer(distinct, add_special_tokens=False, return_attention_mask=False,
                    return_token_type_ids=False)["input_ids"]
    pieces = continued = 0
    for word, row in zip(distinct, ids):
        pieces += counts[word] * len(row)
        continued += counts[word] * sum(t.startswith(CONTINUATION_PREFIX) for t in tokenizer.convert_ids_to_tokens(row))
    types = len({word.lower() for word in sample})
    row_out = {"lang": lang, "words": words, "sample_words": sample_words, "types": types,
               "type_token_ratio": types / sample_words, "pieces_per_word": pieces / sample_words,
               "continuation_share": continued / pieces, "vocab_size": len(tokenizer)}
    if manifest is not None:
        row_out["vector_share"] = manifest["n_found"] / manifest["vocab_size"]
    return row_out
