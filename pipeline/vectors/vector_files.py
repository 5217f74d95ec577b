"""Where notebook 03's vectors come from: .vec/.vec.gz/.bin files, the published cc.LANG.300 download, or training here.

The paper uses only the 300,000 most frequent words (a .vec file's first lines), so every reader stops after ``top_n``
lines and the 1.2-1.3 GB cc.LANG.300.vec.gz is downloaded only that far. A damaged file is refused naming the file
and line: one ``nan`` row would spread to every aligned row through centring."""

from __future__ import annotations

import gzip
import json
import mmap
import re
import ssl
import struct
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from http.client import HTTPException
from pathlib import Path
from typing import IO, Any, Iterator

import numpy as np

from helpers.presets import PAPER_TOP_N, VectorsConfig
from helpers.static_vectors import WordVectors
from pipeline.corpora.data import CorpusSpec, load_corpus
from pipeline.corpora.files import gzip_checked
from pipeline.store.fingerprints import content_digest
from pipeline.store.layout import REPO_ROOT
from pipeline.store.staging import written_whole
from pipeline.vectors.fasttext_training import train_fasttext, vectors_from_model

CC_URL = "https://dl.fbaipublicfiles.com/fasttext/vectors-crawl/cc.{lang}.300.vec.gz"
CC_PAGE = "https://fasttext.cc/docs/en/crawl-vectors.html"
DEFAULT_CACHE = Path(".cache/fasttext")  # obtain_vectors puts it under the repository root
# Lines end at '\n' only (as fastText writes): a stray '\r' must not shift every line number after it.
TEXT = {"encoding": "utf-8", "errors": "replace", "newline": "\n"}


def iter_vec(fh: IO[str], where: str, top_n: int | None = PAPER_TOP_N,
             expected_dim: int | None = None) -> Iterator[Any]:
    """Yield the header ``(n_words, dim)``, then ``(fields, line)`` for the first ``top_n`` words, checked. Split on
    single ASCII spaces as fastText writes them: ``str.split()`` would also split a word at a no-break space."""
    if top_n is not None and top_n < 1:
        raise ValueError(f"top_n must be a positive number of words, got {top_n}")
    line = fh.readline()
    if not line:
        raise ValueError(f"{where} is empty; expected a fastText .vec file starting with 'n_words dim'")
    parts = line.removeprefix("\ufeff").split()  # the byte-order mark some editors write
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise ValueError(f"{where}: line 1 should be the fastText header 'n_words dim' (two integers), got "
                         f"{line.strip()[:80]!r}; is this a fastText .vec file?")
    n_words, dim = map(int, parts)
    if n_words < 1 or dim < 1:
        raise ValueError(f"{where}: header says {n_words} words of dimension {dim}; both must be positive")
    if expected_dim is not None and dim != expected_dim:
        raise ValueError(f"{where} holds {dim}-dimensional vectors (header) but {expected_dim} were expected; "
                         f"use the cc.LANG.{expected_dim} vectors or a model whose hidden size is {dim}")
    yield n_words, dim
    n_read = n_words if top_n is None else min(n_words, top_n)
    for lineno in range(2, n_read + 2):
        line = fh.readline()
        if not line:
            raise ValueError(f"{where} ends at line {lineno - 1}, but its header promises {n_words} words "
                             f"(reading {n_read}); the file is truncated, download it again")
        fields = line.rstrip("\r\n").rstrip(" ").split(" ")
        if len(fields) != dim + 1 or not fields[0]:
            raise ValueError(f"{where}, line {lineno}: got {len(fields)} fields, expected {dim + 1} "
                             f"(a word and {dim} numbers); the file is damaged or not a .vec file")
        yield fields, line
    if n_read == n_words and fh.readline().strip():  # more rows than the header says: count them, up to ROWS_COUNTED
        rows = n_words + 1
        while rows <= ROWS_COUNTED and (line := fh.readline()):
            rows += bool(line.strip())
        held, fix = ((f"{rows:,}", f"if every line after the header is a word, correct line 1 to '{rows} {dim}'")
                     if rows <= ROWS_COUNTED else
                     (f"more than {ROWS_COUNTED:,}", "correct line 1 to the number of word lines and the dimension"))
        raise ValueError(f"{where}: its header says {n_words:,} words but the file goes on past line {n_words + 1}: "
                         f"it holds {held} word lines. The header is wrong (fastText writes the true count): {fix}, "
                         "or write the file again")


ROWS_COUNTED = PAPER_TOP_N  # rows past a wrong header are counted this far, for the message


def read_vec(path: str | Path, top_n: int | None = PAPER_TOP_N, expected_dim: int | None = None) -> WordVectors:
    """The first ``top_n`` words of a fastText text file (.vec or .vec.gz): its most frequent words."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"no vector file at {path}; download cc.LANG.300.vec.gz from {CC_PAGE} "
                                "(download_vectors(lang) does it), or train vectors locally with preset 'demo'")
    words, rows = [], []
    with gzip_checked(path), (gzip.open if path.suffix == ".gz" else open)(path, "rt", **TEXT) as fh:
        lines = iter_vec(fh, str(path), top_n, expected_dim)
        next(lines)  # the header, checked
        for lineno, (fields, _) in enumerate(lines, start=2):
            try:
                row = np.array(fields[1:], dtype=np.float32)
            except ValueError as err:
                raise ValueError(f"{path}, line {lineno}: a value is not a number ({err})") from None
            if not np.isfinite(row).all():
                raise ValueError(f"{path}, line {lineno} ({fields[0]!r}): holds a value that is not a finite number "
                                 f"(nan or inf); centring would spread it to every vector. Fix or re-download the file")
            words.append(fields[0])
            rows.append(row)
    return WordVectors(words, np.stack(rows), source=str(path))  # the header promises at least one row


def save_prefix(source: IO[bytes], dest: Path, top_n: int, where: str, progress: bool = False) -> dict[str, Any]:
    """Copy the header and first ``top_n`` word lines of a gzipped .vec stream into ``dest`` (gzipped); the original
    header's counts and the bytes read go to ``dest`` + '.json'."""
    from tqdm.auto import tqdm
    from tqdm.utils import CallbackIOWrapper

    dest.parent.mkdir(parents=True, exist_ok=True)
    started, read_sizes = time.perf_counter(), []  # compressed bytes per read: a disabled bar would count nothing
    with tqdm(unit="B", unit_scale=True, desc=f"download {dest.name}", disable=not progress) as bar:

        def counted(size: int) -> None:
            read_sizes.append(size)
            bar.update(size)

        with (written_whole(dest, tmp=dest.with_name(dest.name + ".part"), rerun="the download starts again") as part,
              gzip_checked(where, "download it again, or pass a local copy as vectors=PATH"),
              gzip.open(CallbackIOWrapper(counted, source), "rt", **TEXT) as fh,
              gzip.open(part, "wt", encoding="utf-8") as out):
            lines = iter_vec(fh, where, top_n)
            n_words, dim = next(lines)
            kept = min(n_words, top_n)  # iter_vec refuses a file with fewer lines
            out.write(f"{kept} {dim}\n")  # the lines kept: the copy is itself a valid .vec.gz
            out.writelines(line for _, line in lines)
    info = {"source": where, "header_words": n_words, "dim": dim, "lines_kept": kept, "top_n": top_n,
            "complete": kept == n_words, "compressed_bytes_read": sum(read_sizes),
            "bytes_cached": dest.stat().st_size, "seconds": round(time.perf_counter() - started, 1)}
    Path(f"{dest}.json").write_text(json.dumps(info, indent=2), encoding="utf-8")
    return info


def download_vectors(lang: str, cache_dir: str | Path = DEFAULT_CACHE, top_n: int = PAPER_TOP_N,
                     progress: bool = True, url: str | None = None, timeout: float = 60.0) -> Path:
    """The first ``top_n`` words of cc.LANG.300.vec.gz (about a sixth of the file), streamed once and cached."""
    if not re.fullmatch(r"[a-z]{2,3}", lang):
        raise ValueError(f"lang must be a fastText language code such as 'en' or 'cs', got {lang!r}")
    url = url or CC_URL.format(lang=lang)
    dest = Path(cache_dir).expanduser() / f"cc.{lang}.300.top{top_n}.vec.gz"
    if dest.is_file() and Path(f"{dest}.json").is_file():
        return dest
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            save_prefix(response, dest, top_n, url, progress)
    # Only the network's errors: a full disk or a damaged file is not its fault, and says so itself.
    except (urllib.error.URLError, ConnectionError, TimeoutError, HTTPException, ssl.SSLError) as err:
        raise ConnectionError(f"could not download {url} ({type(err).__name__}: {err}). Offline alternatives: copy "
                              f"cc.{lang}.300.vec.gz (from {CC_PAGE}) here and pass vectors=PATH (it is read only up "
                              f"to {top_n:,} words), or use preset 'demo' / 'smoke', which train fastText vectors "
                              "locally on the corpus") from err
    return dest


FASTTEXT_MAGIC = 793712314  # the first int32 of every fastText .bin
ARGS_END = 8 + 12 * 4 + 8  # magic and version, then Args: 12 int32 settings and one double


def check_bin_complete(path: Path) -> None:
    """Refuse a .bin that is cut short or whose header cannot be true, before fastText reads it.

    fasttext.load_model reads a truncated file without a word (missing rows come back as zeros) and turns an impossible
    dictionary size into std::bad_alloc. The layout is fastText 0.9's FastText::saveModel: header, Args, the dictionary
    (size, nwords, nlabels, ntokens, prune size, then the entries), prune pairs, then the input and output matrices
    (a quantisation flag, int64 rows, int64 columns, float32 data).
    """
    size = path.stat().st_size
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        if size < ARGS_END + 28 or struct.unpack_from("<i", data, 0)[0] != FASTTEXT_MAGIC:
            raise ValueError(f"{path} is not a fastText .bin model (no fastText header); give a .bin written by "
                             "fastText's save_model, or a .vec/.vec.gz file")
        words, _, _, _, pruned = struct.unpack_from("<iiiqq", data, ARGS_END)
        if not 0 <= words <= size // 11 or not -1 <= pruned <= size // 8:  # -1: never pruned
            raise ValueError(f"{path}: its header claims {words:,} dictionary entries, which cannot fit in a file of "
                             f"{size:,} bytes: the file is cut short or damaged; download or save it again")
        end = position = ARGS_END + 28  # end: where the last word read ends, -1 when the file ends inside one
        for _ in range(words):
            if (end := data.find(b"\0", position)) < 0:
                break
            position = end + 10  # the word's NUL, int64 count, int8 type
        position += 8 * max(pruned, 0)  # the prune pairs
        if end < 0 or position > size:
            raise ValueError(f"{path} is cut short: its {size:,} bytes end inside its dictionary of {words:,} words; "
                             f"{CUT_FIX}")
        for _ in range(2):  # the input and output matrices
            if position + 17 > size:  # the file ends inside the matrix's header
                position += 17
                break
            if data[position] != 0:  # quantised, laid out otherwise: not walked, the file's size counts as right
                position = size
                break
            rows, columns = struct.unpack_from("<qq", data, position + 1)
            if rows < 0 or columns < 0:
                raise ValueError(f"{path} is damaged: a matrix in it claims {rows:,} x {columns:,} values; "
                                 "download or save it again")
            position += 17 + 4 * rows * columns
    if position > size:
        raise ValueError(f"{path} is cut short: it holds {size:,} bytes, but its header describes {position:,} "
                         f"({100 * size / position:.0f} % of them); {CUT_FIX}")
    if position < size:
        raise ValueError(f"{path} is damaged: its header describes {position:,} bytes but the file holds {size:,}; "
                         "download or save it again")


CUT_FIX = "download or save it again (fastText would load it with zero vectors, without a word)"


def read_bin(path: str | Path, expected_dim: int | None = None) -> Any:
    """A fastText ``.bin`` model: unlike a .vec it also gives vectors to unseen strings (subwords)."""
    import fasttext

    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"no fastText model at {path}; download cc.LANG.300.bin.gz from {CC_PAGE} "
                                "and gunzip it, or train one (preset 'demo')")
    check_bin_complete(path)
    try:
        model = fasttext.load_model(str(path))
    except ValueError as err:
        raise ValueError(f"{path} is not a fastText .bin model ({err})") from None
    if expected_dim is not None and model.get_dimension() != expected_dim:
        raise ValueError(f"{path} has {model.get_dimension()}-dimensional vectors, expected {expected_dim}")
    return model


@dataclass
class VectorsSource:
    """Raw (not yet normalised) vectors, the fastText model if there is one, and how they were made."""

    vectors: WordVectors
    model: Any
    info: dict[str, Any]

    @property
    def subword_model(self) -> Any:
        """The model if it builds vectors from character n-grams (so it can embed a ``##`` piece, as
        ``align(pieces='subword')`` needs), else None."""
        return self.model if self.model is not None and len(self.model.get_subwords("subwords")[0]) > 1 else None


def obtain_vectors(config: VectorsConfig, lang: str, corpus: CorpusSpec, seed: int = 0,
                   vectors_path: str | Path | None = None, progress: bool = True) -> VectorsSource:
    """Vectors for notebook 03: from ``vectors_path`` if given (a ``.bin`` also gives the model), else per
    ``config.source``; fastText trains on ``corpus`` when the preset trains its own vectors."""
    if vectors_path is not None:
        path = Path(vectors_path).expanduser()
        # its content, not only its path: a file replaced later is told apart
        info = {"source": "file", "vectors_path": str(path), "vectors_sha256": content_digest(path, {}),
                "top_n": config.top_n}
        if path.suffix == ".bin":
            model = read_bin(path, expected_dim=config.fasttext.dim)
            return VectorsSource(vectors_from_model(model, config.top_n, f"the fastText model {path}"), model, info)
        return VectorsSource(read_vec(path, config.top_n, config.fasttext.dim), None, info)
    if config.source == "published":
        path = download_vectors(lang, REPO_ROOT / DEFAULT_CACHE, config.top_n, progress)
        info = {"source": "published", "vectors_path": str(path), "url": CC_URL.format(lang=lang),
                "top_n": config.top_n, "download": json.loads(Path(f"{path}.json").read_text(encoding="utf-8"))}
        return VectorsSource(read_vec(path, config.top_n, config.fasttext.dim), None, info)
    texts = load_corpus(corpus, lang, "train", max_docs=config.max_docs)
    started, cpu_started = time.perf_counter(), time.process_time()
    model = train_fasttext(texts.texts, config.fasttext, seed=seed, progress=progress)
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    vectors = vectors_from_model(model, config.top_n)
    info = {"source": "train", "corpus": texts.name, "corpus_source": texts.source, "corpus_docs": len(texts),
            "corpus_words": texts.n_words(), "top_n": config.top_n, "n_model_words": len(vectors),
            "fasttext": {**asdict(config.fasttext), "seed": seed, "thread": 1,
                         "seed_means": "document order of the training file (fastText's own seed is fixed)"},
            "train_seconds": round(seconds, 1), "train_cpu_seconds": round(cpu_seconds, 1),
            "pretokenisation": "BertNormalizer(cased) + BertPreTokenizer"}
    return VectorsSource(vectors, model, info)
