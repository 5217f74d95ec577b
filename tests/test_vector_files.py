"""pipeline.vectors.vector_files: reading .vec/.vec.gz, refusing damaged files, and caching the prefix of a download."""

from __future__ import annotations

import errno
import gzip
import hashlib
import io
import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from helpers.presets import FastTextSettings, VectorsConfig
from pipeline.corpora.data import EMBEDDED
from pipeline.vectors import vector_files as vf

DIM = 4
WORDS = ["the", ",", "Paris", "king", "river", "paris", "ing", "\u00a0odd"]


def vec_text(words: list[str], dim: int = DIM, header: str | None = None) -> str:
    """A .vec file as fastText writes it: header, then 'word v1 ... vd ' per line (trailing space)."""
    rows = [" ".join([w, *(f"{(i + 1) * 0.1 + j:.4f}" for j in range(dim))]) + " " for i, w in enumerate(words)]
    return "\n".join([header or f"{len(words)} {dim}", *rows]) + "\n"


@pytest.fixture()
def vec_file(tmp_path: Path) -> Path:
    path = tmp_path / "small.vec"
    path.write_text(vec_text(WORDS), encoding="utf-8")
    return path


def test_read_vec_keeps_order_values_and_odd_words(vec_file: Path) -> None:
    wv = vf.read_vec(vec_file)
    assert wv.words == WORDS  # the no-break-space word survives: lines split on ASCII spaces only
    assert wv.matrix.dtype == np.float32 and wv.matrix.shape == (len(WORDS), DIM)
    np.testing.assert_allclose(wv.matrix[2], [0.3 + j for j in range(DIM)], rtol=1e-6)


def test_read_vec_gz_and_top_n(tmp_path: Path) -> None:
    path = tmp_path / "small.vec.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write(vec_text(WORDS))
    wv = vf.read_vec(path, top_n=3, expected_dim=DIM)
    assert wv.words == WORDS[:3]
    assert wv.matrix.shape == (3, DIM)


def test_read_vec_stops_after_top_n_even_if_later_lines_are_broken(tmp_path: Path) -> None:
    path = tmp_path / "tail.vec"
    path.write_text(vec_text(WORDS[:3], header=f"5 {DIM}") + "broken line\n", encoding="utf-8")
    assert vf.read_vec(path, top_n=3).words == WORDS[:3]


@pytest.mark.parametrize("header", ["hello world", "5", "5 4 3", ""])
def test_read_vec_bad_header(tmp_path: Path, header: str) -> None:
    path = tmp_path / "bad.vec"
    path.write_text(header + ("\n" if header else ""), encoding="utf-8")
    with pytest.raises(ValueError, match="header|empty"):
        vf.read_vec(path)


def test_read_vec_short_line_names_file_line_and_counts(tmp_path: Path) -> None:
    text = vec_text(WORDS[:3]).splitlines()
    text[2] = "Paris 0.1 0.2"  # third line of the file: 3 fields instead of 5
    path = tmp_path / "short.vec"
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    with pytest.raises(ValueError) as info:
        vf.read_vec(path)
    message = str(info.value)
    assert "short.vec" in message and "line 3" in message and "got 3 fields" in message and "expected 5" in message


def test_read_vec_long_line_is_caught(tmp_path: Path) -> None:
    text = vec_text(WORDS[:2]).splitlines()
    text[1] = text[1].rstrip(" ") + " 9.9"
    path = tmp_path / "long.vec"
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 2: got 6 fields, expected 5"):
        vf.read_vec(path)


def test_a_dimension_that_differs_from_the_model_is_refused_clearly(vec_file: Path) -> None:
    with pytest.raises(ValueError, match=f"holds {DIM}-dimensional vectors .*300 were expected.*hidden size"):
        vf.read_vec(vec_file, expected_dim=300)


def test_a_vec_whose_header_counts_5_words_of_1165_is_refused_naming_both_counts_and_the_file(tmp_path: Path) -> None:
    """As the issue found it: 0cc080c read the first 5 rows as the whole file, without a word."""
    path = tmp_path / "five.vec"
    words = [f"w{i}" for i in range(1165)]
    path.write_text(vec_text(words, header=f"5 {DIM}"), encoding="utf-8")
    with pytest.raises(ValueError, match=rf"{path}: its header says 5 words but .* it holds 1,165 word lines\. .*"
                                         rf"correct line 1 to '1165 {DIM}'"):
        vf.read_vec(path)
    assert vf.read_vec(path, top_n=4).words == words[:4]  # reading fewer words than the header promises is fine
    fixed = tmp_path / "fixed.vec"
    fixed.write_text(vec_text(words), encoding="utf-8")
    assert len(vf.read_vec(fixed)) == 1165


def test_rows_past_a_wrong_header_are_counted_only_so_far(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vf, "ROWS_COUNTED", 10)
    path = tmp_path / "long.vec"
    path.write_text(vec_text([f"w{i}" for i in range(50)], header=f"3 {DIM}"), encoding="utf-8")
    with pytest.raises(ValueError, match="it holds more than 10 word lines.*correct line 1 to the number of word"):
        vf.read_vec(path)


def test_a_file_shorter_than_its_header_and_a_missing_file_say_what_to_do(tmp_path: Path) -> None:
    truncated = tmp_path / "trunc.vec"
    truncated.write_text(vec_text(WORDS[:2], header=f"10 {DIM}"), encoding="utf-8")
    with pytest.raises(ValueError, match="truncated"):
        vf.read_vec(truncated)
    with pytest.raises(FileNotFoundError, match="download"):
        vf.read_vec(tmp_path / "nope.vec")


def test_a_value_that_is_not_a_number_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "text.vec"
    path.write_text("1 2\nword 0.5 abc\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 2: a value is not a number"):
        vf.read_vec(path)


@pytest.mark.parametrize("bad", ["nan", "inf", "-inf", "NaN"])
def test_a_non_finite_value_is_refused_with_file_and_line(tmp_path: Path, bad: str) -> None:
    lines = vec_text(WORDS[:4]).splitlines()
    lines[3] = f"king 0.1 {bad} 0.3 0.4 "  # line 4 of the file
    path = tmp_path / "nonfinite.vec"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ValueError) as info:
        vf.read_vec(path)
    message = str(info.value)
    assert "nonfinite.vec" in message and "line 4" in message and "'king'" in message and "finite" in message


def test_a_non_finite_value_after_top_n_is_never_read(tmp_path: Path) -> None:
    lines = vec_text(WORDS[:4]).splitlines()
    lines[4] = "king nan nan nan nan "
    path = tmp_path / "late.vec"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert vf.read_vec(path, top_n=3).words == WORDS[:3]


def test_a_truncated_gzip_names_the_file_or_url_and_what_to_do(tmp_path: Path) -> None:
    whole = gzip.compress(vec_text(WORDS * 50).encode())
    path = tmp_path / "cut.vec.gz"
    path.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(ValueError) as info:
        vf.read_vec(path, top_n=None)
    assert "cut.vec.gz is not a complete gzip file" in str(info.value)
    assert "truncated or damaged" in str(info.value) and "write or download it again" in str(info.value)
    cache = tmp_path / "cache"
    with pytest.raises(ValueError) as info:
        vf.download_vectors("xx", cache, top_n=10_000, progress=False, url=path.as_uri())
    assert f"{path.as_uri()} is not a complete gzip file" in str(info.value)
    assert "download it again, or pass a local copy as vectors=PATH" in str(info.value)
    assert not cache.exists() or not list(cache.iterdir())  # nothing half-written is left to be taken as a cache


def test_a_utf8_byte_order_mark_before_the_header_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "bom.vec"
    path.write_bytes(b"\xef\xbb\xbf" + vec_text(WORDS[:3]).encode("utf-8"))
    wv = vf.read_vec(path)
    assert wv.words == WORDS[:3] and wv.matrix.shape == (3, DIM)


# --------------------------------------------------------------------------------------------
# The published vectors: the first top_n lines of a streamed download, cached
# --------------------------------------------------------------------------------------------


def cc_file(tmp_path: Path, n_words: int = 40) -> tuple[Path, list[str]]:
    """A cc.LANG.300.vec.gz in miniature: header, then words by descending frequency."""
    words = [f"w{i}" for i in range(n_words)]
    path = tmp_path / "remote" / "cc.xx.300.vec.gz"
    path.parent.mkdir()
    path.write_bytes(gzip.compress(vec_text(words).encode("utf-8")))
    return path, words


def prefix_info(path: Path) -> dict[str, Any]:
    """What save_prefix recorded beside a cached prefix."""
    return json.loads(Path(f"{path}.json").read_text(encoding="utf-8"))


def test_download_keeps_only_the_prefix_and_records_the_header_and_bytes(tmp_path: Path) -> None:
    source, words = cc_file(tmp_path, n_words=400)
    cache = tmp_path / "cache"
    path = vf.download_vectors("xx", cache, top_n=25, progress=False, url=source.as_uri())
    assert path == cache / "cc.xx.300.top25.vec.gz"
    wv = vf.read_vec(path, top_n=None)  # the cached prefix is itself a valid .vec.gz of 25 words
    assert wv.words == words[:25]
    np.testing.assert_array_equal(wv.matrix, vf.read_vec(source, top_n=25).matrix)
    info = prefix_info(path)
    assert info["header_words"] == 400 and info["lines_kept"] == 25 and info["dim"] == DIM
    assert info["complete"] is False and info["top_n"] == 25
    assert 0 < info["compressed_bytes_read"] <= source.stat().st_size
    assert info["bytes_cached"] == path.stat().st_size
    assert sorted(p.name for p in cache.iterdir()) == [path.name, path.name + ".json"]


def test_download_stops_reading_early(tmp_path: Path) -> None:
    words = [f"w{i}" for i in range(20_000)]
    rng = np.random.default_rng(0)  # random values: a compressed stream that cannot be read in one gulp
    lines = [f"{len(words)} {DIM}"] + [" ".join([w, *(f"{v:.6f}" for v in rng.normal(size=DIM))]) + " "
                                       for w in words]
    data = gzip.compress(("\n".join(lines) + "\n").encode())
    source = tmp_path / "big.vec.gz"
    source.write_bytes(data)
    path = vf.download_vectors("xx", tmp_path / "cache", top_n=100, progress=False, url=source.as_uri())
    assert prefix_info(path)["compressed_bytes_read"] < len(data) / 4


def test_a_second_download_uses_the_cache(tmp_path: Path) -> None:
    source, words = cc_file(tmp_path)
    cache = tmp_path / "cache"
    path = vf.download_vectors("xx", cache, top_n=10, progress=False, url=source.as_uri())
    source.unlink()  # the second call never touches the URL
    assert vf.download_vectors("xx", cache, top_n=10, progress=False, url=source.as_uri()) == path
    with pytest.raises(ValueError, match="language code"):
        vf.download_vectors("../x", cache)


def test_a_file_shorter_than_top_n_is_kept_whole_and_marked_complete(tmp_path: Path) -> None:
    source, words = cc_file(tmp_path, n_words=12)
    path = vf.download_vectors("xx", tmp_path / "cache", top_n=1000, progress=False, url=source.as_uri())
    assert vf.read_vec(path).words == words
    assert prefix_info(path)["complete"] is True


def test_a_local_complete_file_is_read_only_up_to_top_n(tmp_path: Path) -> None:
    source, words = cc_file(tmp_path, n_words=50)
    data = source.read_bytes()
    source.write_bytes(data[: len(data) - 30])  # damage the end: never reached when reading the prefix
    assert vf.read_vec(source, top_n=10).words == words[:10]


class BrokenResponse(io.BytesIO):
    """Gives some bytes, then the connection drops."""

    headers = {"Content-Length": "1000"}

    def read(self, size: int = -1) -> bytes:
        if self.tell() >= 30:
            raise ConnectionResetError("connection dropped")
        return super().read(10 if size < 0 else min(size, 10))


def test_download_failure_is_clear_and_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(url: str, timeout: float = 0) -> None:
        raise urllib.error.URLError("no route to host")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    with pytest.raises(ConnectionError) as info:
        vf.download_vectors("cs", tmp_path, progress=False)
    message = str(info.value)
    assert "cc.cs.300.vec.gz" in message and "vectors=PATH" in message and "demo" in message
    assert list(tmp_path.iterdir()) == []

    raw = gzip.compress(vec_text(WORDS).encode())
    monkeypatch.setattr(urllib.request, "urlopen", lambda url, timeout=0: BrokenResponse(raw))
    with pytest.raises(ConnectionError, match="connection dropped"):
        vf.download_vectors("cs", tmp_path, progress=False)
    assert list(tmp_path.iterdir()) == []  # the .part file is gone, no half-written cache


def test_a_full_disk_while_downloading_is_not_called_a_network_failure(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    def full_disk(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, "no space left to write the cache")

    monkeypatch.setattr(urllib.request, "urlopen", lambda url, timeout=0: io.BytesIO(b""))
    monkeypatch.setattr(vf, "save_prefix", full_disk)
    with pytest.raises(OSError, match="no space left") as info:
        vf.download_vectors("cs", tmp_path, progress=False)
    assert not isinstance(info.value, ConnectionError)


def test_a_truncated_download_names_the_url_and_leaves_nothing(tmp_path: Path) -> None:
    source, _ = cc_file(tmp_path, n_words=400)
    data = source.read_bytes()
    source.write_bytes(data[: len(data) // 3])
    cache = tmp_path / "cache"
    with pytest.raises(ValueError, match="cc.xx.300.vec.gz.*truncated or damaged"):
        vf.download_vectors("xx", cache, top_n=399, progress=False, url=source.as_uri())
    assert not cache.exists() or list(cache.iterdir()) == []


# --------------------------------------------------------------------------------------------
# obtain_vectors: a given file, or fastText trained on the run's corpus
# --------------------------------------------------------------------------------------------


def test_a_given_vector_file_wins_over_the_preset(vec_file: Path) -> None:
    config = VectorsConfig(source="train", fasttext=FastTextSettings(dim=DIM), top_n=3)
    source = vf.obtain_vectors(config, "en", EMBEDDED, vectors_path=vec_file)
    assert source.vectors.words == WORDS[:3] and source.model is None and source.subword_model is None
    assert source.info == {"source": "file", "vectors_path": str(vec_file), "top_n": 3,
                           "vectors_sha256": hashlib.sha256(vec_file.read_bytes()).hexdigest()}


def test_training_reads_the_corpus_it_is_given(tmp_path: Path) -> None:
    """Run in a fresh process: without subword n-grams fasttext 0.9.3 sets bucket=0, so a vocabulary this small
    gets an input matrix from the heap, part of which it never initialises; after other tests the heap holds
    leftovers and training can end in NaN. A fresh process starts from clean pages, as the real runs do."""
    texts = [f"the river {i} runs past the old mill near Paris" for i in range(60)]
    (tmp_path / "docs.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    code = f"""
import json
from helpers.presets import FastTextSettings, VectorsConfig
from pipeline.vectors import vector_files as vf
from pipeline.corpora.data import CorpusSpec
settings = FastTextSettings(dim={DIM}, epochs=1, min_count=1, bucket=100, maxn=0)
config = VectorsConfig(source="train", fasttext=settings, max_docs=40)
source = vf.obtain_vectors(config, "en", CorpusSpec("files", {str(tmp_path / "docs.txt")!r}), progress=False)
print(json.dumps({{"info": source.info, "words": source.vectors.words, "subwords": source.subword_model is None}}))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    found = json.loads(done.stdout.strip().splitlines()[-1])
    info = found["info"]
    assert info["corpus_source"] == "files" and info["corpus"] == str(tmp_path / "docs.txt")
    assert info["corpus_docs"] == 40 and {"river", "Paris", "mill"} <= set(found["words"])
    assert found["subwords"]  # no n-grams: the 'subword' option has nothing to use
