"""Morphology of the paper's seven languages on one content: LibreOffice's help pages
(pipeline.corpora.parallel_help), the
paragraphs that all seven have translated, each language's training split. Not a timing.

Per language: a cased WordPiece tokenizer trained with the project's own code (helpers.tokenizer.train_wordpiece, as
notebook 02 does) on that split, then pipeline.corpora.morphology's row over the first --sample-words words, the largest
vocabulary the split supports at min_frequency 2 (helpers.tokenizer.vocab_ceiling), and the share of a page's tokens
that the paper's per-document truncation to 128 tokens cuts off.

The paper's 30,000-token vocabulary cannot be trained on this text: at min_frequency 2 its English split supports
under 10,000 tokens, and train_wordpiece refuses a vocabulary that falls short of 90 % of the size asked. So every
language gets the same smaller size (--vocab-size, 8,000 by default), which every split fills.

    .venv/bin/python -m benchmarks.morphology     # about a CPU minute once the .debs were read (3 minutes, once)

Writes benchmarks/results/morphology_libreoffice.csv, one row per language, with the commit it ran at.
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path
from typing import Any, Sequence

from helpers import tokenizer as tk
from pipeline.corpora import parallel_help as ph
from pipeline.corpora.data import CorpusSpec, load_corpus
from pipeline.corpora.morphology import morphology, words_of
from pipeline.store.layout import REPO_ROOT
from pipeline.store.runinfo import git_commit

RESULTS = REPO_ROOT / "benchmarks" / "results" / "morphology_libreoffice.csv"
SEQ_LEN = 128  # the paper's: [CLS] + 126 tokens + [SEP] per document


def measure(lang: str, texts: list[str], vocab_size: int, sample_words: int) -> dict[str, Any]:
    """One language's row: the morphology measures with its own tokenizer, its vocabulary ceiling, truncation."""
    started = time.process_time()
    tokenizer = tk.train_wordpiece(texts, vocab_size=vocab_size, min_frequency=2, show_progress=False)
    lengths = tk.encoded_lengths(tokenizer, texts)
    row = morphology(lang, texts, tokenizer, sample_words)
    row.update(pages=len(texts), vocab_ceiling_mf2=tk.vocab_ceiling(texts, min_frequency=2),
               tokens_cut_at_128=float((lengths - SEQ_LEN).clip(min=0).sum() / lengths.sum()),
               cpu_seconds=round(time.process_time() - started, 1))
    return row


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vocab-size", type=int, default=8_000)
    parser.add_argument("--sample-words", type=int, help="default: the shortest language's words, in thousands")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    corpus = CorpusSpec("libreoffice", langs=ph.LANGS)
    texts = {lang: load_corpus(corpus, lang, "train").texts for lang in ph.LANGS}
    shortest = min(sum(1 for _ in words_of(t)) for t in texts.values())
    sample = args.sample_words or shortest // 1000 * 1000
    commit = git_commit()
    rows = [{**measure(lang, texts[lang], args.vocab_size, sample), "commit": commit} for lang in ph.LANGS]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows({k: round(v, 6) if isinstance(v, float) else v for k, v in row.items()} for row in rows)
    for row in rows:
        print(", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
