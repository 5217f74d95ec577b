"""Local files as a corpus or a labelled set (``.txt``, one document a line; JSON lines, plain or gzipped as C4's
shards; ``.csv``; ``.parquet``), or a folder of them: read lazily, every bad input refused with its file and line.

Not ``datasets.load_dataset("json"/"csv"/...)`` (datasets 5.2.0): its errors name no file or line, a record without
the text field becomes a silently dropped None, a JSON array line becomes one row per element, and 200,000 C4 lines
took 1.9-2.8 s against 0.36 s here."""

from __future__ import annotations

import csv
import gzip
import json
import math
import os
import re
import shlex
import sys
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

from pipeline.corpora.documents import (
    AG_NEWS_LABELS,
    EVAL_FRACTION,
    Corpus,
    LabelledSet,
    as_text,
    check_choice,
    check_fraction,
    stable_fraction,
    stratified_split,
    take,
)

# File kinds, matched on the end of the name; C4's shards (.json.gz, or unpacked .json) are JSON lines.
FILE_SUFFIXES = (".txt", ".jsonl", ".csv", ".parquet", ".json.gz", ".jsonl.gz", ".json")
KINDS_READ = ", ".join(FILE_SUFFIXES)


def file_kind(path: Path) -> str | None:
    return next((kind for kind in FILE_SUFFIXES if path.name.lower().endswith(kind)), None)


def data_files(path: str | Path) -> list[Path]:
    """The readable files at ``path``: the file itself, or a folder's files (recursively) sorted by path."""
    p = Path(path).expanduser()
    if not p.exists():
        raise FileNotFoundError(f"no such file or folder: {p}; give files:PATH an existing {'/'.join(FILE_SUFFIXES)} "
                                "file or a folder of them")
    files = [p]
    if p.is_dir():
        visible, followed, links = walk_folder(p)
        files = [f for f in visible if file_kind(f)]
        skipped = [f.relative_to(p).as_posix() for f in visible if not file_kind(f)]
        if skipped:  # never silently: a file the user meant as text would otherwise just be missing
            print(f"warning: {p}: {len(skipped)} file(s) of other kinds are not read ({', '.join(skipped[:5])}"
                  f"{', ...' if len(skipped) > 5 else ''}); text is read from {KINDS_READ}", file=sys.stderr)
        if followed:
            print(f"note: {p}: symlinked folder(s) read too: {', '.join(followed)}", file=sys.stderr)
        if links:
            print(f"warning: {p}: {len(links)} symlinked folder(s) not read again, as they lead to a folder already "
                  f"read (a loop, or a second link to it): {', '.join(links)}", file=sys.stderr)
        if not files:
            raise ValueError(f"the folder {p} holds no {KINDS_READ} files")
    elif file_kind(p) is None:
        raise ValueError(f"{p} is not a supported file type; use one of {KINDS_READ}")
    if empty := next((f for f in files if f.stat().st_size == 0), None):
        raise ValueError(f"{empty} is empty; put one document per line (.txt) or one record per row")
    return files


def walk_folder(root: Path) -> tuple[list[Path], list[str], list[str]]:
    """(the visible files under ``root`` sorted by path, the symlinked folders followed and those not followed, as
    'link -> target'): each real folder read once, so a loop cannot recurse forever; hidden names left out."""
    seen, files, followed, links = {os.path.realpath(root)}, [], [], []
    for folder, subfolders, names in os.walk(root, followlinks=True):
        kept = []
        for name in sorted(n for n in subfolders if not n.startswith(".")):
            real, link = os.path.realpath(os.path.join(folder, name)), Path(folder, name)
            said = f"{link.relative_to(root).as_posix()} -> {real}"
            if real in seen:
                links.append(said)
                continue
            seen.add(real)
            kept.append(name)
            followed += [said] if link.is_symlink() else []
        subfolders[:] = kept
        files += [Path(folder, n) for n in names if not n.startswith(".") and Path(folder, n).is_file()]
    return sorted(files), followed, links


# Byte-order marks, longest first (UTF-32-LE's mark begins like UTF-16-LE's); iconv reads the mark itself.
MARKS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"), (b"\xff\xfe", "UTF-16"),
         (b"\xfe\xff", "UTF-16"))
# The first bytes of kinds of files that land in a corpus folder by mistake, and what to call them.
MAGIC = ((b"\x89PNG", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"), (b"GIF8", "a GIF image"),
         (b"%PDF", "a PDF document"), (b"PK\x03\x04", "a zip archive (or .docx/.xlsx)"), (b"\x7fELF", "a program"))


def wide_encoding(head: bytes) -> str | None:
    """The UTF-16/32 encoding (as iconv names it) of a file's first bytes, None for a byte encoding: named by a
    byte-order mark, else by NUL bytes (UTF-8 and Latin-1 text holds none), whose place gives the byte order."""
    marked = next((encoding for mark, encoding in MARKS if head.startswith(mark)), None)
    if marked or b"\x00" not in head:
        return marked
    if b"\x00\x00\x00" in head:
        return "UTF-32BE" if head[:1] == b"\x00" else "UTF-32LE"
    return "UTF-16LE" if head[1::2].count(0) > head[0::2].count(0) else "UTF-16BE"


def _open(path: Path) -> Any:
    return (gzip.open if path.name.lower().endswith(".gz") else open)(path, "rb")


def _not_text(path: Path, problem: str, nul: bool = False) -> ValueError:
    """The error for a file that does not decode (``nul``: a line held a NUL byte), judged from its first bytes:
    a magic number, or NULs that UTF-16/32 text would not hold, say binary; text gets the command that converts it
    from its encoding (Latin-1's command would turn a UTF-16 file into garbage that loads without a word)."""
    with _open(path) as fh:  # called inside text_lines' gzip_checked, which names a .gz cut short
        head = bytes(fh.read(4096))
    kind, encoding = next((name for magic, name in MAGIC if head.startswith(magic)), None), wide_encoding(head)
    if kind is None and encoding is not None:
        text = head[:len(head) // 4 * 4].decode(encoding, errors="replace")
        kind = "binary data" if "\x00" in text or text.count("\ufffd") > 2 else None
    if kind is not None:
        return ValueError(f"{path} is not text (it looks like {kind}); remove it from the corpus folder")
    if encoding is None and nul:
        cleaned = shlex.quote(f"{path}.clean")
        hint = (f"NUL bytes are not text: remove them, e.g. `tr -d '\\000' < {shlex.quote(str(path))} > {cleaned}`, "
                "or write the file again")
    elif encoding is None:
        hint = f"save it as UTF-8, e.g. `{_iconv_command(path, 'latin1')}` for a Latin-1 file"
    else:
        hint = f"it looks like {encoding[:6]}: convert it with `{_iconv_command(path, encoding)}`"
    return ValueError(f"{problem}; {hint}")


def _iconv_command(path: Path, encoding: str) -> str:
    source, converted = shlex.quote(str(path)), shlex.quote(f"{path}.utf8")
    read = (f"gunzip -c {source} | iconv -f {encoding} -t UTF-8 | gzip" if path.name.lower().endswith(".gz") else
            f"iconv -f {encoding} -t UTF-8 {source}")
    return f"{read} > {converted} && mv {converted} {source}"


@contextmanager
def gzip_checked(where: Any, fix: str = "write or download it again") -> Iterator[None]:
    """A truncated or damaged .gz, reported as such with the file or URL it came from and what to do."""
    try:
        yield
    except (EOFError, gzip.BadGzipFile, zlib.error) as err:
        raise ValueError(f"{where} is not a complete gzip file: the data is truncated or damaged "
                         f"({type(err).__name__}: {err}); {fix}") from None


def text_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, line) of a UTF-8 text file (gunzipped when named .gz), lines ending in \\n, \\r\\n or a lone
    \\r as universal newlines read them (a lone \\r said once); decoded line by line, so an encoding error names the
    file and line."""
    said = False
    with gzip_checked(path), _open(path) as fh:
        lines = (part for chunk in fh for part in (chunk.splitlines(keepends=True) if b"\r" in chunk else [chunk]))
        for n, raw in enumerate(lines, 1):
            if raw.endswith(b"\r") and not said:
                said = True
                print(f"note: {path} ends lines with a lone \\r (old Mac line endings); each is read as a line break",
                      file=sys.stderr)
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise _not_text(path, f"{path}:{n} is not UTF-8 text (byte 0x{raw[err.start]:02x} at column "
                                      f"{err.start + 1})") from None
            if "\x00" in line:  # UTF-16 without a byte-order mark decodes, as garbage with NULs
                raise _not_text(path, f"{path}:{n} holds NUL bytes, so it is not UTF-8 text", nul=True)
            yield n, line.removeprefix("\ufeff") if n == 1 else line


def read_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Lazy (line or row number, record) pairs of one file: {'text': line} per non-empty line of a .txt file, a CSV's
    rows by its header, parquet rows and JSON lines (whose records may differ in their fields) as they are."""
    kind = file_kind(path)
    if kind == ".txt":
        return ((n, {"text": line.rstrip("\r\n")}) for n, line in text_lines(path) if line.strip())
    if kind == ".csv":
        return enumerate(csv.DictReader(line for _, line in text_lines(path)), 2)
    if kind == ".parquet":
        import pyarrow.parquet as pq

        return enumerate((row for batch in pq.ParquetFile(path).iter_batches() for row in batch.to_pylist()), 1)
    return _json_records(path)  # the other kinds are JSON lines


def _json_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for n, line in ((n, line) for n, line in text_lines(path) if line.strip()):
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}:{n} is not valid JSON ({err}); write one JSON object per line") from None
        if not isinstance(row, dict):
            raise ValueError(f"{path}:{n} holds a {type(row).__name__}, not a JSON object; "
                             'write one object per line, e.g. {"text": "..."}')
        yield n, row


def read_columns(path: Path, **columns: str) -> Iterator[tuple[Any, ...]]:
    """The values of ``columns`` (option name: column, e.g. text_column='body') in every record of ``path``, lazily.
    A column missing from a CSV's header or the first record is refused naming its option; from a later one, naming
    its line."""
    def check(number: int, what: str, fields: Any, later: bool) -> None:
        if missing := [(option, c) for option, c in columns.items() if c not in fields]:
            raise ValueError(f"{path}:{number}: {what} has no {missing[0][1]!r} field (its fields: "
                             f"{', '.join(map(str, fields)) or 'none'})" + (
                                 " while earlier records have one; add the field or remove the line" if later else
                                 f"; pass {missing[0][0]}=<one of them>"))

    if file_kind(path) == ".csv":  # the header names the columns, even of a file without rows
        check(1, "the header", csv.DictReader(line for _, line in text_lines(path)).fieldnames or [], False)
    for seen, (number, row) in enumerate(read_records(path)):
        check(number, "this record", row, bool(seen))
        yield tuple(row[c] for c in columns.values())


def files_corpus(path: Path, lang: str, split: str, text_column: str = "text", eval_fraction: float = EVAL_FRACTION,
                 seed: int = 0, max_docs: int | None = None) -> Corpus:
    """The documents of ``path`` on one side of the split, which hashes each text: duplicates share a side, and
    files may be reordered or sharded freely; within a split, documents keep the files' order."""
    check_fraction("eval_fraction", eval_fraction)
    texts, total = [], 0
    for f in data_files(path):
        for (value,) in read_columns(f, text_column="text" if file_kind(f) == ".txt" else text_column):
            total += 1
            text = as_text(value)
            if (stable_fraction(text, seed) < eval_fraction) == (split == "eval"):
                texts.append(text)
    return Corpus(take(texts, max_docs), lang, "files", split, str(path),
                  meta={"eval_fraction": eval_fraction, "seed": seed, "documents_total": total,
                        "max_docs": max_docs, "split_key": "sha256 of the document text"})


def files_labelled(path: Path, lang: str, split: str, text_column: str = "text", label_column: str = "label",
                   csv_format: str = "header", test_fraction: float = 0.2, seed: int = 0,
                   label_names: Sequence[str] | None = None, max_docs: int | None = None) -> LabelledSet:
    """One side of a stratified split of the labelled rows of ``path`` (labels as :func:`encode_labels` reads them).
    ``csv_format='ag_news'``: headerless rows (label 1-4, title, description), title and description joined as the
    Hub's AG News does."""
    check_choice("csv_format", csv_format, ("header", "ag_news"))
    check_fraction("test_fraction", test_fraction)
    label_names = list(label_names or AG_NEWS_LABELS) if csv_format == "ag_news" else label_names
    pairs: list[tuple[Any, Any]] = []
    for f in data_files(path):
        if file_kind(f) == ".txt":
            raise ValueError(f"{f} is a .txt file and has no labels; use a .csv, .jsonl or .parquet file "
                             f"with a {label_column!r} column, or load_corpus for unlabelled text")
        if csv_format == "ag_news" and file_kind(f) != ".csv":
            raise ValueError(f"csv_format='ag_news' reads .csv files; {f} is not one")
        rows = list(_ag_news_rows(f) if csv_format == "ag_news" else
                    read_columns(f, text_column=text_column, label_column=label_column))
        if not rows:
            raise ValueError(f"{f} holds no rows; a labelled set needs rows with a text and a label")
        pairs += rows
    texts = [as_text(text) for text, _ in pairs]
    labels, names, values = encode_labels([label for _, label in pairs], label_names, where=str(path))
    chosen = take(dict(zip(("train", "test"), stratified_split(texts, labels, test_fraction, seed)))[split], max_docs)
    return LabelledSet([texts[i] for i in chosen], lang, "files", split, str(path), labels=[labels[i] for i in chosen],
                       label_names=names, meta={"test_fraction": test_fraction, "seed": seed, "max_docs": max_docs,
                                                "csv_format": csv_format, "label_values": values})


def _ag_news_rows(path: Path) -> Iterator[tuple[str, int]]:
    """(text, label) of rows 'label (1-4), title, description' without a header, as in the original AG News files."""
    for n, row in enumerate(csv.reader(line for _, line in text_lines(path)), 1):
        if not row:
            continue
        if len(row) != 3:
            raise ValueError(f"{path}:{n}: an AG News row has 3 fields (label, title, description), got {len(row)}")
        label = row[0].strip()
        if label not in ("1", "2", "3", "4"):
            raise ValueError(f"{path}:{n}: AG News labels are 1-4, got {label!r}; "
                             "is this file headerless (csv_format='ag_news') or does it have a header?")
        yield f"{row[1]} {row[2]}".strip(), int(label) - 1


_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def _as_number(value: Any) -> float | int | None:
    """The number a label stands for (2, 2.0 and '2.0' alike), or None for a name."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    text = value.strip() if isinstance(value, str) else ""
    return (int(text) if text.lstrip("+-").isdigit() else float(text)) if _NUMBER.fullmatch(text) else None


def encode_labels(raw: Sequence[Any], names: Sequence[str] | None = None,
                  where: str = "the labelled set") -> tuple[list[int], list[str], list[Any]]:
    """(classes 0..k-1, their names, the raw value of each class) from a column of labels: numbers (2 and 2.0 one
    label; the values present become classes in numeric order, so {0, 1, 1000000} gives 3; ``names[v]`` names value
    ``v``) or names, in sorted order; a column mixing both is refused."""
    if any(v is None or (isinstance(v, str) and not v.strip()) for v in raw):
        raise ValueError(f"some rows of {where} have no label; fill or drop them")
    numbers = [_as_number(v) for v in raw]
    keys: list[Any] = [str(v).strip() for v in raw]  # names, unless the labels are numbers
    if all(x is None for x in numbers):
        if names:
            raise ValueError(f"label_names is for numeric labels; the labels of {where} are already names")
    elif any(x is None for x in numbers):
        name = next(v for v, x in zip(raw, numbers) if x is None)
        number = next(v for v, x in zip(raw, numbers) if x is not None)
        raise ValueError(f"the labels of {where} mix numbers and names (e.g. {number!r} and {name!r}); "
                         "use one kind for every row")
    else:
        if (odd := next((v for v, x in zip(raw, numbers) if not math.isfinite(x) or x != int(x)), None)) is not None:
            raise ValueError(f"label {odd!r} in {where} is not a whole number; labels must be whole numbers or names")
        keys = [int(x) for x in numbers]
    values = sorted(set(keys))
    if names and (values[0] < 0 or values[-1] >= len(names)):
        raise ValueError(f"{len(names)} label names given, but the labels of {where} run from {values[0]} to "
                         f"{values[-1]}; give one name per label value (label_names[v] names label v)")
    index = {v: i for i, v in enumerate(values)}
    return [index[k] for k in keys], [str(names[v]) if names else str(v) for v in values], values
