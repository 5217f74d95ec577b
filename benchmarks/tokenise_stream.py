"""Streaming tokenisation at the paper's scale: shard writing and the tokenizer trainer's ``##`` pass.

Writes a local .jsonl of 500,000 documents (the embedded English training text, replicated), then
measures, each in a fresh process so that peak memory (``ru_maxrss``) belongs to one task:

* ``shards``: ``pipeline.train.shards.write_shards`` over the whole file (documents per second, peak memory);
* ``pieces``: ``helpers.tokenizer.continuation_pieces`` (the trainer-based ``##`` pass) over the file;
* ``pieces_loop``: the old per-word Python loop, on the first ``--loop-docs`` documents only; its
  time for the whole file is extrapolated linearly and labelled as such.

Usage: ``.venv/bin/python benchmarks/tokenise_stream.py`` (a few minutes on 2 cores); writes
``benchmarks/results/tokenise_stream.json``. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RESULT = ROOT / "benchmarks" / "results" / "tokenise_stream.json"


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def read_jsonl(path: Path, limit: int | None = None) -> Iterator[str]:
    with open(path, encoding="utf-8") as handle:
        for line in itertools.islice(handle, limit):
            yield json.loads(line)["text"]


def write_corpus(path: Path, n_docs: int) -> int:
    from pipeline.corpora.data import EMBEDDED, load_corpus

    texts = load_corpus(EMBEDDED, "en", "train").texts
    with open(path, "w", encoding="utf-8") as handle:
        for i in range(n_docs):
            handle.write(json.dumps({"text": texts[i % len(texts)]}) + "\n")
    return len(texts)


def pieces_word_by_word(backend, texts) -> list[str]:
    """The ``##`` pass before this change: one Python iteration per pre-tokenised word."""
    chars: set[str] = set()
    for text in texts:
        if isinstance(text, str) and text.strip():
            for word, _ in backend.pre_tokenizer.pre_tokenize_str(backend.normalizer.normalize_str(text)):
                chars.update(word[1:])
    return sorted("##" + c for c in chars)


def measure(task: str, corpus: Path, tokenizer_dir: Path, n_docs: int, work: Path) -> dict:
    """Run one task in this process; return its time and memory."""
    from helpers import tokenizer as tk
    from pipeline.train import shards

    before = peak_mib()
    started, cpu = time.perf_counter(), time.process_time()
    if task == "shards":
        import torch  # noqa: F401  (imported once before timing; pipeline.train.shards uses it for the evaluation mask)

        tok = tk.load_tokenizer(tokenizer_dir)
        before = peak_mib()
        started, cpu = time.perf_counter(), time.process_time()
        manifest = shards.write_shards(tok, read_jsonl(corpus), work / "shards", progress=False)
        detail = {"sequences": manifest["sequences"], "shards": len(manifest["shards"]),
                  "shard_size": manifest["shard_size"]}
    elif task == "pieces":
        detail = {"pieces": len(tk.continuation_pieces(tk.build_untrained(), read_jsonl(corpus, n_docs)))}
    else:
        detail = {"pieces": len(pieces_word_by_word(tk.build_untrained(), read_jsonl(corpus, n_docs)))}
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu
    return {"task": task, "documents": n_docs, "seconds": round(seconds, 2), "cpu_seconds": round(cpu_seconds, 2),
            "docs_per_second": round(n_docs / seconds), "peak_rss_mib": round(peak_mib(), 1),
            "rss_before_task_mib": round(before, 1), **detail}


def child(task: str, corpus: Path, tokenizer_dir: Path, n_docs: int, work: Path) -> dict:
    out = subprocess.run([sys.executable, __file__, "--task", task, "--corpus", str(corpus), "--tokenizer",
                          str(tokenizer_dir), "--docs", str(n_docs), "--work", str(work)],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=500_000)
    parser.add_argument("--loop-docs", type=int, default=50_000, help="documents for the old per-word loop")
    parser.add_argument("--task", choices=("shards", "pieces", "pieces_loop"))
    parser.add_argument("--corpus", type=Path)
    parser.add_argument("--tokenizer", type=Path)
    parser.add_argument("--work", type=Path)
    args = parser.parse_args()
    if args.task:  # the child process
        print(json.dumps(measure(args.task, args.corpus, args.tokenizer, args.docs, args.work)))
        return 0

    from helpers import tokenizer as tk
    from pipeline.corpora.data import EMBEDDED, load_corpus

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        corpus = work / "docs.jsonl"
        distinct = write_corpus(corpus, args.docs)
        tok = tk.train_wordpiece(load_corpus(EMBEDDED, "en", "train").texts, 30_000, show_progress=False)
        tk.save_tokenizer(tok, work / "tokenizer")
        results = {task: child(task, corpus, work / "tokenizer", n, work)
                   for task, n in (("shards", args.docs), ("pieces", args.docs), ("pieces_loop", args.loop_docs))}
        size_mb = corpus.stat().st_size / 1e6
    loop = results["pieces_loop"]
    extrapolated = loop["seconds"] * args.docs / loop["documents"]
    report = {
        "what": "streaming tokenisation of a local .jsonl: uint16 shard writing and the tokenizer trainer's ## pass",
        "corpus": {"documents": args.docs, "distinct_documents": distinct, "megabytes": round(size_mb, 1),
                   "made_from": "the embedded English training text (pipeline.corpora.data.load_corpus), replicated"},
        "tokenizer": "cased WordPiece, 30,000 entries, trained on the embedded English training split",
        "shards": results["shards"],
        "pieces_trainer_pass": results["pieces"],
        "pieces_per_word_loop_sample": loop,
        "pieces_per_word_loop_extrapolated": {
            "label": f"EXTRAPOLATED linearly from {loop['documents']:,} documents, not measured on all",
            "documents": args.docs, "seconds": round(extrapolated, 1),
            "speedup_of_trainer_pass": round(extrapolated / results["pieces"]["seconds"], 2),
        },
        "machine": {"python": platform.python_version(), "cpus": __import__("os").cpu_count(),
                    "note": "wall-clock on a shared machine; peak memory is ru_maxrss of the task's own process"},
    }
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
