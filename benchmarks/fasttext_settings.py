"""Which fastText settings give the best word vectors on the embedded English text, and at what cost?

Trains fastText (dim 300, min_count 2, one thread so every run is exactly repeatable) on the
embedded English training split, pre-tokenised like BERT, once per setting, and scores the raw
vectors of the fastText vocabulary on WordSim-353 and SimLex-999 (pipeline.vectors.wordsim). The settings
compare epochs, character n-grams (3-6, or none: maxn=0), negatives (5, 10) and skipgram vs CBOW.

    .venv/bin/python -m benchmarks.fasttext_settings            # all settings: about 20 CPU minutes
    .venv/bin/python -m benchmarks.fasttext_settings --only sg-3ep-ng36 cbow-30ep-nosub

Writes benchmarks/results/fasttext_settings.csv (one row per setting, appended as each finishes)
and figures/vector_quality.csv + .md (a column per benchmark, a row per language and setting).
"""

from __future__ import annotations

import argparse
import csv
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Sequence

from pipeline.store.runinfo import REPO_ROOT
from pipeline.vectors import wordsim
from pipeline.vectors.fasttext_training import FastTextSettings, train_on_file, vectors_from_model, write_training_text

RESULTS = REPO_ROOT / "benchmarks" / "results" / "fasttext_settings.csv"
FIGURE_CSV = REPO_ROOT / "figures" / "vector_quality.csv"

S = FastTextSettings
SETTINGS: dict[str, FastTextSettings] = {
    "sg-3ep-ng36": S(epochs=3),  # the previous demo setting
    "sg-5ep-nosub": S(epochs=5, maxn=0),
    "sg-10ep-nosub": S(epochs=10, maxn=0),
    "sg-10ep-ng36": S(epochs=10),
    "cbow-10ep-ng36": S(model="cbow", epochs=10),
    "cbow-20ep-nosub": S(model="cbow", epochs=20, maxn=0),
    "cbow-30ep-nosub": S(model="cbow", epochs=30, maxn=0),  # the demo setting
    "cbow-40ep-nosub": S(model="cbow", epochs=40, maxn=0),
    "cbow-60ep-nosub": S(model="cbow", epochs=60, maxn=0),
    "cbow-20ep-nosub-neg10": S(model="cbow", epochs=20, maxn=0, neg=10),
    "cbow-40ep-nosub-neg10": S(model="cbow", epochs=40, maxn=0, neg=10),  # the reference setting
}
COLUMNS = ["lang", "setting", "model", "epochs", "minn", "maxn", "neg", "threads", "train_seconds",
           "train_cpu_seconds", "n_words", "wordsim353", "wordsim353_ci", "wordsim353_pairs", "simlex999",
           "simlex999_ci", "simlex999_pairs"]


def measure(name: str, settings: FastTextSettings, corpus_file: Path, n_words: int, lang: str = "en") -> dict[str, Any]:
    started, cpu = time.perf_counter(), time.process_time()
    model = train_on_file(corpus_file, settings, n_words, threads=1, progress=False)
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu
    vectors = vectors_from_model(model)
    row: dict[str, Any] = {"lang": lang, "setting": name, **{k: v for k, v in asdict(settings).items() if k in COLUMNS},
                           "threads": 1, "train_seconds": round(seconds, 1), "train_cpu_seconds": round(cpu_seconds, 1),
                           "n_words": len(vectors)}
    for bench, res in wordsim.word_similarity(vectors.words, vectors.matrix).items():
        row[bench] = round(res["spearman"], 3)
        row[f"{bench}_ci"] = f"{res['ci_low']:.3f}-{res['ci_high']:.3f}"
        row[f"{bench}_pairs"] = f"{res['found']}/{res['pairs']}"
    return row


def read_rows(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def write_rows(rows: Sequence[dict[str, Any]], path: Path) -> None:
    """Merge ``rows`` into the CSV at ``path`` (a setting measured again replaces its old row), in SETTINGS order."""
    merged = {(r["lang"], r["setting"]): r for r in read_rows(path)}
    merged.update({(r["lang"], r["setting"]): r for r in rows})
    order = list(SETTINGS)
    ordered = sorted(merged.values(), key=lambda r: (r["lang"], order.index(r["setting"])
                                                      if r["setting"] in order else len(order)))
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(ordered)


def write_figure_table(results: Path = RESULTS, out: Path = FIGURE_CSV) -> None:
    """figures/vector_quality.csv + .md: a row per language and setting, a column per benchmark."""
    rows = read_rows(results)
    keep = ["lang", "setting", "model", "epochs", "minn", "maxn", "neg", "train_seconds", "train_cpu_seconds",
            "wordsim353", "wordsim353_ci", "wordsim353_pairs", "simlex999", "simlex999_ci", "simlex999_pairs"]
    table = [{k: r[k] for k in keep} for r in rows]
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=keep)
        writer.writeheader()
        writer.writerows(table)
    lines = [
        "# Quality of the fastText vectors trained here (word similarity, Spearman)",
        "",
        "fastText trained on the embedded English training split (pre-tokenised like BERT, "
        f"{rows[0]['n_words'] if rows else '?'} words kept at min_count 2), dim 300, one thread "
        "(deterministic), by `benchmarks/fasttext_settings.py`. Scores are over the fastText vocabulary "
        "(raw vectors); the interval is a bootstrap 95 % interval over the pairs found. `cpu s` is the "
        "training's CPU time (one thread: the wall time on an idle core); `wall s` was measured while "
        "other jobs shared the 2 cores. French and Spanish have no word-similarity set at hand offline, "
        "so they have no rows.",
        "",
        "| lang | setting | model | epochs | n-grams | negatives | cpu s | wall s | WordSim-353 | SimLex-999 |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    from helpers.presets import DEMO_FASTTEXT, REFERENCE_FASTTEXT

    chosen = {name: role for role, settings in (("demo", DEMO_FASTTEXT), ("reference", REFERENCE_FASTTEXT))
              for name, s in SETTINGS.items() if s == settings}
    for r in rows:
        grams = f"{r['minn']}-{r['maxn']}" if int(r["maxn"]) else "none"
        r = {**r, "setting": f"{r['setting']} (**{chosen[r['setting']]}**)" if r["setting"] in chosen else r["setting"]}
        lines.append(f"| {r['lang']} | {r['setting']} | {r['model']} | {r['epochs']} | {grams} | {r['neg']} | "
                     f"{r['train_cpu_seconds']} | {r['train_seconds']} | {r['wordsim353']} ({r['wordsim353_ci']}; "
                     f"{r['wordsim353_pairs']}) | {r['simlex999']} ({r['simlex999_ci']}; {r['simlex999_pairs']}) |")
    lines += ["", "**demo** (`helpers.presets.DEMO_FASTTEXT`, the `demo` preset): the best score within about "
              "90 s of training on one thread. **reference** (`REFERENCE_FASTTEXT`, for the CPU reference runs): "
              "at least 0.50 on WordSim-353 within about 5 minutes."]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", choices=list(SETTINGS), help="settings to run (default: all)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--table-only", action="store_true", help="only rewrite figures/vector_quality.* from --out")
    args = parser.parse_args(argv)
    if args.table_only:
        write_figure_table(args.out)
        return 0
    from pipeline.corpora.data import EMBEDDED, load_corpus

    corpus = load_corpus(EMBEDDED, lang="en", split="train")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="fasttext-bench-") as tmp:
        corpus_file = Path(tmp) / "corpus.txt"
        n_docs, n_words = write_training_text(corpus.texts, corpus_file, seed=0)
        print(f"training text: {n_docs:,} documents, {n_words:,} words", flush=True)
        for name in args.only or list(SETTINGS):
            rows.append(measure(name, SETTINGS[name], corpus_file, n_words))
            print(rows[-1], flush=True)
            write_rows(rows, args.out)
    if args.out == RESULTS:
        write_figure_table(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
