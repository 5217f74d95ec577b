"""Unit tests for helpers.static_vectors on small files and vocabularies written here."""

from __future__ import annotations

import gzip
import io
import json
import math
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from helpers import static_vectors as sv

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


# --------------------------------------------------------------------------------------------
# read_vec
# --------------------------------------------------------------------------------------------


def test_read_vec_keeps_order_values_and_odd_words(vec_file: Path) -> None:
    wv = sv.read_vec(vec_file)
    assert wv.words == WORDS  # the no-break-space word survives: lines split on ASCII spaces only
    assert wv.matrix.dtype == np.float32 and wv.matrix.shape == (len(WORDS), DIM)
    np.testing.assert_allclose(wv.matrix[2], [0.3 + j for j in range(DIM)], rtol=1e-6)


def test_read_vec_gz_and_top_n(tmp_path: Path) -> None:
    path = tmp_path / "small.vec.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write(vec_text(WORDS))
    wv = sv.read_vec(path, top_n=3, expected_dim=DIM)
    assert wv.words == WORDS[:3]
    assert wv.matrix.shape == (3, DIM)


def test_read_vec_stops_after_top_n_even_if_later_lines_are_broken(tmp_path: Path) -> None:
    path = tmp_path / "tail.vec"
    path.write_text(vec_text(WORDS[:3], header=f"5 {DIM}") + "broken line\n", encoding="utf-8")
    assert sv.read_vec(path, top_n=3).words == WORDS[:3]


@pytest.mark.parametrize("header", ["hello world", "5", "5 4 3", ""])
def test_read_vec_bad_header(tmp_path: Path, header: str) -> None:
    path = tmp_path / "bad.vec"
    path.write_text(header + ("\n" if header else ""), encoding="utf-8")
    with pytest.raises(ValueError, match="header|empty"):
        sv.read_vec(path)


def test_read_vec_short_line_names_file_line_and_counts(tmp_path: Path) -> None:
    text = vec_text(WORDS[:3]).splitlines()
    text[2] = "Paris 0.1 0.2"  # third line of the file: 3 fields instead of 5
    path = tmp_path / "short.vec"
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    with pytest.raises(ValueError) as info:
        sv.read_vec(path)
    message = str(info.value)
    assert "short.vec" in message and "line 3" in message and "got 3 fields" in message and "expected 5" in message


def test_read_vec_long_line_is_caught(tmp_path: Path) -> None:
    text = vec_text(WORDS[:2]).splitlines()
    text[1] = text[1].rstrip(" ") + " 9.9"
    path = tmp_path / "long.vec"
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 2: got 6 fields, expected 5"):
        sv.read_vec(path)


def test_read_vec_wrong_dimension_and_truncated_and_missing(tmp_path: Path, vec_file: Path) -> None:
    with pytest.raises(ValueError, match=f"{DIM}-dimensional.*300 were expected"):
        sv.read_vec(vec_file, expected_dim=300)
    truncated = tmp_path / "trunc.vec"
    truncated.write_text(vec_text(WORDS[:2], header=f"10 {DIM}"), encoding="utf-8")
    with pytest.raises(ValueError, match="truncated"):
        sv.read_vec(truncated)
    with pytest.raises(FileNotFoundError, match="download"):
        sv.read_vec(tmp_path / "nope.vec")


def test_read_vec_non_number(tmp_path: Path) -> None:
    path = tmp_path / "nan.vec"
    path.write_text(f"1 2\nword 0.5 abc\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 2: a value is not a number"):
        sv.read_vec(path)


# --------------------------------------------------------------------------------------------
# normalise
# --------------------------------------------------------------------------------------------


@pytest.fixture()
def raw_matrix() -> np.ndarray:
    rng = np.random.default_rng(0)
    m = rng.normal(0.5, 2.0, size=(50, 6)).astype(np.float32)
    m[7] = 0.0
    return m


def test_unit_center(raw_matrix: np.ndarray) -> None:
    out = sv.normalise(raw_matrix, ("unit", "center"))
    nonzero = np.ones(len(out), bool)
    nonzero[7] = False
    np.testing.assert_allclose(out[nonzero].mean(axis=0), 0.0, atol=1e-6)
    assert np.all(out[7] == 0) and np.isfinite(out).all()
    # centring is the mean of the unit rows: adding it back gives unit rows again
    unit = sv.normalise(raw_matrix, "unit")
    np.testing.assert_allclose(np.linalg.norm(unit[nonzero], axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(out[nonzero] + unit[nonzero].mean(axis=0), unit[nonzero], atol=1e-6)
    assert raw_matrix[0, 0] != out[0, 0]  # input not modified in place
    np.testing.assert_array_equal(raw_matrix[7], 0.0)


def test_unit_center_unit_rows_are_unit_and_order_matters(raw_matrix: np.ndarray) -> None:
    ucu = sv.normalise(raw_matrix, "unit,center,unit")
    norms = np.linalg.norm(ucu, axis=1)
    np.testing.assert_allclose(np.delete(norms, 7), 1.0, rtol=1e-5)
    assert norms[7] == 0
    cu = sv.normalise(raw_matrix, "center,unit")
    uc = sv.normalise(raw_matrix, "unit,center")
    assert not np.allclose(cu, uc, atol=1e-3)


def test_normalise_rejects_unknown_step(raw_matrix: np.ndarray) -> None:
    with pytest.raises(ValueError, match="unknown normalisation step 'scale'"):
        sv.normalise(raw_matrix, ("unit", "scale"))


def test_transform_reuses_fitted_mean(raw_matrix: np.ndarray) -> None:
    wv = sv.normalise_vectors(sv.WordVectors([f"w{i}" for i in range(len(raw_matrix))], raw_matrix))
    np.testing.assert_allclose(wv.transform(raw_matrix[:5]), wv.matrix[:5], atol=1e-6)
    with pytest.raises(ValueError, match="already normalised"):
        sv.normalise_vectors(wv)


# --------------------------------------------------------------------------------------------
# align
# --------------------------------------------------------------------------------------------

VOCAB_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "Paris", "King", "##ing", "##river",
                "zebra", ",", "##zz"]
VOCAB = {t: i for i, t in enumerate(VOCAB_TOKENS)}


@pytest.fixture()
def vectors() -> sv.WordVectors:
    words = ["the", ",", "Paris", "king", "river", "[CLS]", "ing", "zz"]
    rng = np.random.default_rng(1)
    return sv.normalise_vectors(sv.WordVectors(words, rng.normal(size=(len(words), 8))))


def test_align_exact_matches_at_token_ids(vectors: sv.WordVectors) -> None:
    al = sv.align(VOCAB, vectors)
    idx = vectors.index()
    for token in ("the", "Paris", ","):
        np.testing.assert_array_equal(al.matrix[VOCAB[token]], vectors.matrix[idx[token]])
    expected = np.zeros(len(VOCAB), bool)
    expected[[VOCAB["the"], VOCAB["Paris"], VOCAB[","]]] = True
    np.testing.assert_array_equal(al.found, expected)  # King (case), pieces, zebra and specials are missing
    assert not al.found[VOCAB["[CLS]"]]  # a special is never looked up even though '[CLS]' is a word here
    np.testing.assert_array_equal(al.matrix[~al.found], 0.0)
    rep = al.report
    assert rep["n_found"] == 3 and rep["n_found_words"] == 3 and rep["n_found_pieces"] == 0
    assert rep["by_source"]["special"] == 5 and rep["by_source"]["piece_missing"] == 3
    assert rep["n_missing"] == len(VOCAB) - 3
    assert rep["vocab_sha256"] == sv.vocab_fingerprint(VOCAB)  # ties the matrix to this vocabulary


def test_align_case_and_strip(vectors: sv.WordVectors) -> None:
    lower = sv.align(VOCAB, vectors, case="lower_fallback")
    assert lower.found[VOCAB["King"]] and lower.report["by_source"]["word_lower"] == 1
    strip = sv.align(VOCAB, vectors, pieces="strip")
    idx = vectors.index()
    np.testing.assert_array_equal(strip.matrix[VOCAB["##ing"]], vectors.matrix[idx["ing"]])
    np.testing.assert_array_equal(strip.matrix[VOCAB["##river"]], vectors.matrix[idx["river"]])
    assert strip.report["n_found_pieces"] == 3 and strip.report["n_found"] == 6


class FakeSubwordModel:
    """Stands in for a fastText .bin: a deterministic vector for any string."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.seen: list[str] = []

    def get_dimension(self) -> int:
        return self.dim

    def get_word_vector(self, word: str) -> np.ndarray:
        self.seen.append(word)
        return np.random.default_rng(len(word)).normal(size=self.dim).astype(np.float32)


def test_align_subword_passes_prefixed_piece_and_normalises(vectors: sv.WordVectors) -> None:
    model = FakeSubwordModel(vectors.dim)
    al = sv.align(VOCAB, vectors, pieces="subword", bin_model=model)
    assert sorted(model.seen) == ["##ing", "##river", "##zz"]  # prefix kept, as WECHSEL does
    expected = vectors.transform(model.get_word_vector("##ing"))[0]
    np.testing.assert_allclose(al.matrix[VOCAB["##ing"]], expected, atol=1e-6)
    assert al.report["by_source"]["piece_subword"] == 3 and al.report["n_found"] == 6
    with pytest.raises(ValueError, match="bin_model"):
        sv.align(VOCAB, vectors, pieces="subword")


def test_random_fallback_std_and_found_rows_unchanged(vectors: sv.WordVectors) -> None:
    vocab = {**VOCAB, **{f"missing{i}": len(VOCAB) + i for i in range(2000)}}
    al = sv.align(vocab, vectors, fallback="random", random_std=0.02, seed=3)
    missing = al.matrix[~al.found]
    n = missing.size
    # sample std of n normal draws: relative standard error ~ 1/sqrt(2n); allow 5 of them
    assert abs(missing.std() / 0.02 - 1) < 5 / math.sqrt(2 * n)
    assert abs(missing.mean()) < 5 * 0.02 / math.sqrt(n)
    zero = sv.align(vocab, vectors, fallback="zero")
    np.testing.assert_array_equal(al.matrix[al.found], zero.matrix[zero.found])
    np.testing.assert_array_equal(zero.matrix[~zero.found], 0.0)
    again = sv.align(vocab, vectors, fallback="random", random_std=0.02, seed=3)
    np.testing.assert_array_equal(al.matrix, again.matrix)


def test_scale_bert(vectors: sv.WordVectors) -> None:
    plain = sv.align(VOCAB, vectors, pieces="strip")
    scaled = sv.align(VOCAB, vectors, pieces="strip", scale="bert")
    assert scaled.matrix[scaled.found].std() == pytest.approx(0.02, rel=1e-4)
    factor = scaled.report["scale_factor"]
    assert factor == pytest.approx(0.02 / plain.matrix[plain.found].std(), rel=1e-5)
    np.testing.assert_allclose(scaled.matrix, plain.matrix * factor, rtol=1e-5, atol=1e-8)


def test_align_rejects_bad_options_and_gappy_vocab(vectors: sv.WordVectors) -> None:
    with pytest.raises(ValueError, match="unknown fallback"):
        sv.align(VOCAB, vectors, fallback="mean")
    with pytest.raises(ValueError, match="ids must be 0"):
        sv.align({"a": 0, "b": 2}, vectors)


def test_check_dim() -> None:
    sv.check_dim(300, 300)
    with pytest.raises(ValueError, match="300 dimensions but the model's hidden size is 128"):
        sv.check_dim(300, 128)


# --------------------------------------------------------------------------------------------
# save / load
# --------------------------------------------------------------------------------------------


def test_save_load_round_trip(tmp_path: Path, vectors: sv.WordVectors) -> None:
    al = sv.align(VOCAB, vectors, pieces="strip")
    sv.save_aligned(tmp_path / "static", al, {"preset": "test", "lang": "en", "source": "train"})
    back = sv.load_aligned(tmp_path / "static")
    np.testing.assert_array_equal(back.matrix, al.matrix)
    np.testing.assert_array_equal(back.found, al.found)
    assert back.matrix.dtype == np.float32 and back.found.dtype == bool
    assert back.report["n_found"] == 6 and back.report["n_found_pieces"] == 3
    assert back.report["vocab_size"] == len(VOCAB) and back.report["preset"] == "test"


def test_save_refuses_contradicting_manifest(tmp_path: Path, vectors: sv.WordVectors) -> None:
    al = sv.align(VOCAB, vectors)
    with pytest.raises(ValueError, match="vocab_size"):
        sv.save_aligned(tmp_path, al, {"vocab_size": 30_000})
    with pytest.raises(ValueError, match="found mask"):
        sv.save_aligned(tmp_path, sv.Alignment(al.matrix, al.found[:-1]), {})


def test_load_errors(tmp_path: Path, vectors: sv.WordVectors) -> None:
    with pytest.raises(FileNotFoundError, match="03_static_vectors"):
        sv.load_aligned(tmp_path / "missing")
    out = sv.save_aligned(tmp_path / "s", sv.align(VOCAB, vectors), {})
    np.save(out / sv.FOUND_FILE, np.zeros(len(VOCAB) + 1, bool))
    with pytest.raises(ValueError, match="found mask has shape"):
        sv.load_aligned(out)
    np.save(out / sv.FOUND_FILE, np.zeros(len(VOCAB), bool))
    with pytest.raises(ValueError, match="n_found"):
        sv.load_aligned(out)
    manifest = json.loads((out / sv.MANIFEST_FILE).read_text())
    (out / sv.MANIFEST_FILE).write_text(json.dumps({**manifest, "n_found": 0, "dim": 300}))
    with pytest.raises(ValueError, match="dim=300"):
        sv.load_aligned(out)
    (out / sv.EMBEDDINGS_FILE).unlink()
    with pytest.raises(FileNotFoundError, match="embeddings.npy"):
        sv.load_aligned(out)


# --------------------------------------------------------------------------------------------
# download
# --------------------------------------------------------------------------------------------


class BrokenResponse(io.BytesIO):
    """Gives some bytes, then the connection drops."""

    headers = {"Content-Length": "100"}

    def read(self, size: int = -1) -> bytes:
        if self.tell() >= 10:
            raise ConnectionResetError("connection dropped")
        return super().read(10)


def test_download_failure_is_clear_and_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(url: str, timeout: float = 0) -> None:
        raise urllib.error.URLError("no route to host")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    with pytest.raises(ConnectionError) as info:
        sv.download_vectors("cs", tmp_path, progress=False)
    message = str(info.value)
    assert "cc.cs.300.vec.gz" in message and "vectors_path" in message and "demo" in message
    assert list(tmp_path.iterdir()) == []

    monkeypatch.setattr(urllib.request, "urlopen", lambda url, timeout=0: BrokenResponse(b"x" * 100))
    with pytest.raises(ConnectionError, match="connection dropped"):
        sv.download_vectors("cs", tmp_path, progress=False)
    assert list(tmp_path.iterdir()) == []  # the .part file is gone, no half-written cache


def test_download_success_from_file_url_and_cache(tmp_path: Path, vec_file: Path) -> None:
    source = tmp_path / "remote.vec.gz"
    source.write_bytes(gzip.compress(vec_file.read_bytes()))
    cache = tmp_path / "cache"
    path = sv.download_vectors("en", cache, progress=False, url=source.as_uri())
    assert path == cache / "cc.en.300.vec.gz" and path.read_bytes() == source.read_bytes()
    assert sv.read_vec(path).words == WORDS
    assert sorted(p.name for p in cache.iterdir()) == ["cc.en.300.vec.gz"]
    source.unlink()  # second call uses the cache and never touches the URL
    assert sv.download_vectors("en", cache, progress=False, url=source.as_uri()) == path
    with pytest.raises(ValueError, match="language code"):
        sv.download_vectors("../x", cache)


# --------------------------------------------------------------------------------------------
# fastText training, coverage, neighbours
# --------------------------------------------------------------------------------------------

def synthetic_corpus(n_docs: int = 150, n_words: int = 400, seed: int = 0) -> list[str]:
    """Zipf-like random text: fastText's subsampling would discard nearly all of a tiny repetitive corpus."""
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}" for i in range(n_words)] + ["Paris", "the", ",", "Seine"])
    weights = 1.0 / np.arange(1, vocab.size + 1)
    docs = rng.choice(vocab, size=(n_docs, 20), p=weights / weights.sum())
    return [" ".join(doc) + " . Paris , the Seine" for doc in docs]


CORPUS = synthetic_corpus()


def test_pretokenize_splits_punctuation_and_keeps_case() -> None:
    assert sv.pretokenize("Paris, 1889: Eiffel's tower.") == ["Paris", ",", "1889", ":", "Eiffel", "'", "s",
                                                             "tower", "."]


def test_train_fasttext_is_deterministic_and_seeded(tmp_path: Path) -> None:
    kwargs = dict(dim=8, epochs=2, min_count=2, bucket=1000, tmp_dir=tmp_path, progress=False)
    a = sv.vectors_from_model(sv.train_fasttext(CORPUS, seed=0, **kwargs), top_n=None)
    b = sv.vectors_from_model(sv.train_fasttext(CORPUS, seed=0, **kwargs), top_n=None)
    c = sv.vectors_from_model(sv.train_fasttext(CORPUS, seed=1, **kwargs), top_n=None)
    assert a.words == b.words and "," in a.words and "Paris" in a.words
    assert "</s>" not in a.words  # fastText's line-end marker is not a word
    counts = [sum(doc.split().count(w) for doc in CORPUS) for w in a.words]
    assert counts == sorted(counts, reverse=True)  # frequency order
    np.testing.assert_array_equal(a.matrix, b.matrix)
    assert not np.array_equal(a.matrix, c.matrix)
    assert list(tmp_path.iterdir()) == []  # the temporary corpus file is cleaned up


def test_clean_bucket_keeps_the_input_matrix_above_the_mmap_threshold() -> None:
    assert sv.clean_bucket(10, 300) * 300 * 4 >= sv.MIN_INPUT_MATRIX_BYTES
    assert sv.clean_bucket(10**7, 300) == 10**7
    params = sv.fasttext_params(dim=300, seed=0, bucket=10)
    assert params["thread"] == 1 and params["seed"] == 1 and params["bucket"] == sv.clean_bucket(10, 300)


def test_train_fasttext_progress_path_and_empty_corpus(tmp_path: Path) -> None:
    model = sv.train_fasttext(CORPUS, dim=4, epochs=1, min_count=1, bucket=100, progress=True)
    assert model.get_dimension() == 4 and "Seine" in model.get_words()
    with pytest.raises(ValueError, match="lower min_count"):
        sv.train_fasttext(["one two three"], dim=4, epochs=1, min_count=2, bucket=100, progress=False)
    with pytest.raises(ValueError, match="empty"):
        sv.train_fasttext(["  ", ""], dim=4, progress=False)


def test_coverage_by_rank_uses_frequency_order() -> None:
    found = np.array([False, False, True, True, False, True])
    freqs = np.array([0, 1, 50, 40, 2, 30])
    starts, shares = sv.coverage_by_rank(found, bucket=3, frequencies=freqs)
    np.testing.assert_array_equal(starts, [0, 3])
    np.testing.assert_allclose(shares, [1.0, 0.0])
    _, by_id = sv.coverage_by_rank(found, bucket=3)
    np.testing.assert_allclose(by_id, [1 / 3, 2 / 3])
    assert sv.text_coverage(found, freqs) == pytest.approx(120 / 123)
    tied = sv.frequency_order(np.array([5, 1, 1, 1, 1, 9]))
    assert tied[0] == 5 and tied[1] == 0 and sorted(tied[2:]) == [1, 2, 3, 4]
    np.testing.assert_array_equal(tied, sv.frequency_order(np.array([5, 1, 1, 1, 1, 9])))  # seeded


class FakeEncoding:
    def __init__(self, ids: list[int]) -> None:
        self.ids = ids


class FakeBackend:
    def get_vocab_size(self) -> int:
        return 5

    def encode_batch(self, texts: list[str], add_special_tokens: bool = True) -> list[FakeEncoding]:
        assert add_special_tokens is False
        return [FakeEncoding([int(c) for c in t]) for t in texts]


def test_token_frequencies_counts_ids() -> None:
    counts = sv.token_frequencies(FakeBackend(), ["0112", "44", "1"], batch_size=2)
    np.testing.assert_array_equal(counts, [1, 3, 1, 0, 2])


def test_nearest_neighbours_cosine() -> None:
    words = ["a", "b", "c", "d"]
    m = np.array([[1, 0], [10, 1], [0, 1], [-1, 0]], dtype=np.float32)
    out = sv.nearest_neighbours(words, m, "a", k=2)
    assert [w for w, _ in out] == ["b", "c"]
    assert out[0][1] == pytest.approx(10 / math.sqrt(101))
    with pytest.raises(ValueError, match="'z' is not among"):
        sv.nearest_neighbours(words, m, "z")


def test_presets() -> None:
    assert set(sv.PRESETS) == {"smoke", "demo", "paper"}
    paper = sv.PRESETS["paper"]
    assert (paper.source, paper.top_n, paper.normalisation, paper.fallback, paper.pieces, paper.case,
            paper.scale) == ("published", 300_000, ("unit", "center"), "zero", "skip", "exact", None)
    assert all(c.dim == 300 for c in sv.PRESETS.values())
    with pytest.raises(ValueError, match="unknown pieces"):
        sv.VectorsConfig(source="train", pieces="glue")
