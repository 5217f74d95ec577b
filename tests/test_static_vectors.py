"""helpers.static_vectors (normalisation, Equation 3), pipeline.vectors.static_files (saving) and local fastText
training."""

from __future__ import annotations

import ctypes
import json
import math
from pathlib import Path

import numpy as np
import pytest

from exercises import nb03
from helpers import static_vectors as sv
from pipeline.store.layout import StaticFiles
from pipeline.vectors import fasttext_training as ft
from pipeline.vectors.static_files import load_aligned, save_aligned
from pipeline.vectors.vector_files import VectorsSource

# --------------------------------------------------------------------------------------------
# normalise
# --------------------------------------------------------------------------------------------


@pytest.fixture()
def raw_matrix() -> np.ndarray:
    rng = np.random.default_rng(0)
    return rng.normal(0.5, 2.0, size=(50, 6)).astype(np.float32)


def test_normalise_gives_zero_mean_columns_of_rows_that_were_unit_length(raw_matrix: np.ndarray) -> None:
    out = sv.normalise(raw_matrix)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.mean(axis=0), 0.0, atol=1e-6)
    unit = sv.unit_length(raw_matrix)
    np.testing.assert_allclose(np.linalg.norm(unit, axis=1), 1.0, rtol=1e-5)
    # centring subtracts the mean of the unit rows: adding it back gives the unit rows again
    np.testing.assert_allclose(out + unit.mean(axis=0), unit, atol=1e-6)
    assert raw_matrix[0, 0] != out[0, 0]  # the input is not modified in place


def test_unit_length_leaves_an_all_zero_row_at_zero(raw_matrix: np.ndarray) -> None:
    raw_matrix[7] = 0.0
    unit = sv.unit_length(raw_matrix)
    assert np.isfinite(unit).all() and np.all(unit[7] == 0)


def test_centring_keeps_cosine_rankings_only_up_to_the_shift(raw_matrix: np.ndarray) -> None:
    # unit length never changes a cosine; centring does (it removes a shared direction)
    def cos(m: np.ndarray) -> np.ndarray:
        u = m / np.linalg.norm(m, axis=1, keepdims=True)
        return u @ u.T

    np.testing.assert_allclose(cos(sv.unit_length(raw_matrix)), cos(raw_matrix), atol=1e-5)
    assert not np.allclose(cos(sv.normalise(raw_matrix)), cos(raw_matrix), atol=1e-2)


def test_other_orders_differ_and_unit_center_unit_rows_are_unit(raw_matrix: np.ndarray) -> None:
    ucu = sv.normalise_steps(raw_matrix, "unit,center,unit")
    np.testing.assert_allclose(np.linalg.norm(ucu, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(sv.normalise_steps(raw_matrix, "unit,center"), sv.normalise(raw_matrix))
    assert not np.allclose(sv.normalise_steps(raw_matrix, "center,unit"), sv.normalise(raw_matrix), atol=1e-3)


def test_normalise_rejects_unknown_step(raw_matrix: np.ndarray) -> None:
    with pytest.raises(ValueError, match="unknown normalisation step 'scale'"):
        sv.normalise_steps(raw_matrix, ("unit", "scale"))


@pytest.mark.parametrize("steps", ["unit,center", "unit,center,unit", "center,unit"])
def test_transform_reuses_the_fitted_mean(raw_matrix: np.ndarray, steps: str) -> None:
    wv = sv.normalise_vectors(sv.WordVectors([f"w{i}" for i in range(len(raw_matrix))], raw_matrix), steps)
    np.testing.assert_allclose(wv.transform(raw_matrix[:5]), wv.matrix[:5], atol=1e-6)
    with pytest.raises(ValueError, match="already normalised"):
        sv.normalise_vectors(wv)


def test_matrix_stats_show_centring_removes_the_shared_direction(raw_matrix: np.ndarray) -> None:
    shifted = raw_matrix + 3.0  # every row shares a direction: expected cosine about 9.25 / (4 + 9.25) = 0.7
    raw = sv.matrix_stats(shifted)
    centred = sv.matrix_stats(sv.normalise(shifted))
    assert raw["mean_cosine_random_pairs"] > 0.5
    assert abs(centred["mean_cosine_random_pairs"]) < 0.1 and centred["max_abs_column_mean"] < 1e-6


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


def row_index(vectors: sv.WordVectors) -> dict[str, int]:
    return {w: i for i, w in enumerate(vectors.words)}


def test_align_exact_matches_at_token_ids(vectors: sv.WordVectors) -> None:
    al = sv.align(VOCAB, vectors)
    idx = row_index(vectors)
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
    idx = row_index(vectors)
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
    with pytest.raises(ValueError, match="fallback must be one of"):
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
    save_aligned(tmp_path / "static", al, {"preset": "test", "lang": "en", "source": "train"})
    back = load_aligned(tmp_path / "static")
    np.testing.assert_array_equal(back.matrix, al.matrix)
    np.testing.assert_array_equal(back.found, al.found)
    assert back.matrix.dtype == np.float32 and back.found.dtype == bool
    assert back.report["n_found"] == 6 and back.report["n_found_pieces"] == 3
    assert back.report["vocab_size"] == len(VOCAB) and back.report["preset"] == "test"


def test_save_refuses_contradicting_manifest(tmp_path: Path, vectors: sv.WordVectors) -> None:
    al = sv.align(VOCAB, vectors)
    with pytest.raises(ValueError, match="vocab_size"):
        save_aligned(tmp_path, al, {"vocab_size": 30_000})
    with pytest.raises(ValueError, match="found mask"):
        save_aligned(tmp_path, sv.Alignment(al.matrix, al.found[:-1]), {})


def test_a_manifest_is_strict_json_with_non_finite_numbers_as_null(tmp_path: Path, vectors: sv.WordVectors) -> None:
    out = save_aligned(tmp_path / "s", sv.align(VOCAB, vectors), {"nan": np.float32("nan"), "inf": float("inf"),
                                                                   "count": np.int64(3)})
    manifest = json.loads(StaticFiles(out).manifest.read_text(), parse_constant=lambda name: pytest.fail(name))
    assert manifest["nan"] is None and manifest["inf"] is None and manifest["count"] == 3


def test_load_errors(tmp_path: Path, vectors: sv.WordVectors) -> None:
    with pytest.raises(FileNotFoundError, match="03_static_vectors"):
        load_aligned(tmp_path / "missing")
    out = save_aligned(tmp_path / "s", sv.align(VOCAB, vectors), {})
    files = StaticFiles(out)
    np.save(files.found, np.zeros(len(VOCAB) + 1, bool))
    with pytest.raises(ValueError, match="found mask has shape"):
        load_aligned(out)
    np.save(files.found, np.zeros(len(VOCAB), bool))
    with pytest.raises(ValueError, match="n_found"):
        load_aligned(out)
    manifest = json.loads(files.manifest.read_text())
    files.manifest.write_text(json.dumps({**manifest, "n_found": 0, "dim": 300}))
    with pytest.raises(ValueError, match="dim=300"):
        load_aligned(out)
    files.embeddings.unlink()
    with pytest.raises(FileNotFoundError, match="embeddings.npy"):
        load_aligned(out)


# --------------------------------------------------------------------------------------------
# Equation 3 as the notebook shows it
# --------------------------------------------------------------------------------------------


def test_equation_3_is_the_paper_lookup_and_align_with_paper_options_gives_the_same(vectors: sv.WordVectors) -> None:
    matrix, found = sv.equation_3(VOCAB, vectors)
    al = sv.align(VOCAB, vectors)
    np.testing.assert_array_equal(matrix, al.matrix)
    np.testing.assert_array_equal(found, al.found)


def test_equation_3_looks_only_among_the_top_n_words(vectors: sv.WordVectors) -> None:
    _, found = sv.equation_3(VOCAB, vectors, top_n=2)  # 'the' and ',' are the two most frequent
    assert [t for t, i in VOCAB.items() if found[i]] == ["the", ","]


def test_a_repeated_word_keeps_its_most_frequent_row() -> None:
    wv = sv.WordVectors(["a", "b", "a"], np.array([[1.0, 0], [0, 1.0], [5.0, 5.0]]))
    matrix, found = sv.equation_3({"[PAD]": 0, "a": 1}, wv)
    np.testing.assert_array_equal(matrix[1], [1.0, 0.0])


def test_save_refuses_a_non_finite_matrix(tmp_path: Path, vectors: sv.WordVectors) -> None:
    al = sv.align(VOCAB, vectors)
    al.matrix[VOCAB["the"], 0] = np.nan
    with pytest.raises(ValueError, match="nan or inf"):
        save_aligned(tmp_path / "s", al, {})
    assert not (tmp_path / "s").exists()


def test_aligned_words_pairs_each_found_token_with_its_row(vectors: sv.WordVectors) -> None:
    al = sv.align(VOCAB, vectors)
    words, rows = sv.aligned_words(al, VOCAB)
    assert words == ["the", "Paris", ","]
    np.testing.assert_array_equal(rows, al.matrix[[VOCAB[w] for w in words]])


# --------------------------------------------------------------------------------------------
# fastText training (public API only, deterministic with one thread)
# --------------------------------------------------------------------------------------------

def synthetic_corpus(n_docs: int = 150, n_words: int = 400, seed: int = 0) -> list[str]:
    """Zipf-like random text: fastText's subsampling would discard nearly all of a tiny repetitive corpus."""
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}" for i in range(n_words)] + ["Paris", "the", ",", "Seine"])
    weights = 1.0 / np.arange(1, vocab.size + 1)
    docs = rng.choice(vocab, size=(n_docs, 20), p=weights / weights.sum())
    return [" ".join(doc) + " . Paris , the Seine" for doc in docs]


CORPUS = synthetic_corpus()
SMALL = ft.FastTextSettings(dim=8, epochs=2, min_count=2, bucket=1000)


def test_pretokenize_splits_punctuation_and_keeps_case() -> None:
    assert ft.pretokenize("Paris, 1889: Eiffel's tower.") == ["Paris", ",", "1889", ":", "Eiffel", "'", "s",
                                                             "tower", "."]


def test_a_model_with_no_words_is_refused_naming_its_file() -> None:
    class NoWords:  # a dictionary with fastText's line-end marker only, as a .bin of 0 words would load
        def get_words(self, on_unicode_error: str = "strict") -> list[str]:
            return ["</s>"]

    with pytest.raises(ValueError, match=r"the fastText model /v/empty\.bin has no words in its dictionary"):
        ft.vectors_from_model(NoWords(), source="the fastText model /v/empty.bin")


def test_train_fasttext_is_deterministic_and_the_seed_changes_the_vectors(tmp_path: Path) -> None:
    a = ft.vectors_from_model(ft.train_fasttext(CORPUS, SMALL, seed=0, tmp_dir=tmp_path, progress=False))
    b = ft.vectors_from_model(ft.train_fasttext(CORPUS, SMALL, seed=0, tmp_dir=tmp_path, progress=False))
    c = ft.vectors_from_model(ft.train_fasttext(CORPUS, SMALL, seed=1, tmp_dir=tmp_path, progress=False))
    assert a.words == b.words and "," in a.words and "Paris" in a.words
    assert "</s>" not in a.words  # fastText's line-end marker is not a word
    counts = [sum(doc.split().count(w) for doc in CORPUS) for w in a.words]
    assert counts == sorted(counts, reverse=True)  # frequency order
    np.testing.assert_array_equal(a.matrix, b.matrix)
    assert not np.array_equal(a.matrix, c.matrix)
    assert list(tmp_path.iterdir()) == []  # the temporary corpus file is cleaned up


def leave_on_the_heap(byte: int, size: int) -> None:
    """A freed heap chunk of ``size`` bytes, each ``byte``: what a kernel that has done other work may hold."""
    libc = ctypes.CDLL(None)
    libc.malloc.restype, libc.free.argtypes = ctypes.c_void_p, [ctypes.c_void_p]
    for fill in (False, True):  # the first, freed, raises glibc's dynamic mmap threshold above ``size``
        chunk = libc.malloc(ctypes.c_size_t(size))
        if fill:
            ctypes.memset(chunk, byte, size)
        libc.free(chunk)


@pytest.mark.skipif(not hasattr(ctypes.CDLL(None), "mallopt"), reason="the heap reuse shown here is glibc's")
def test_vectors_without_subwords_do_not_depend_on_what_the_heap_held_before(tmp_path: Path) -> None:
    settings = ft.FastTextSettings(dim=300, epochs=1, min_count=1, maxn=0)  # fastText then uses no bucket rows
    matrix_bytes = (len(set(" ".join(CORPUS).split())) + 1) * settings.dim * 4
    vectors = []
    for byte in (0x00, 0x3F, 0xFF):  # zeros; 0.75 in every float; NaN in every float
        leave_on_the_heap(byte, matrix_bytes + 4096)
        vectors.append(ft.vectors_from_model(ft.train_fasttext(CORPUS, settings, tmp_dir=tmp_path, progress=False)))
    for other in vectors[1:]:
        np.testing.assert_array_equal(vectors[0].matrix, other.matrix)


def test_a_diverging_fasttext_names_its_learning_rate_and_says_to_lower_it(tmp_path: Path) -> None:
    settings = ft.FastTextSettings(dim=20, epochs=30, min_count=1, maxn=0, lr=50.0)  # lr 0.05 to 2 train here
    with pytest.raises(ValueError, match=r"diverged \(NaN\) at lr=50: lower lr"):
        ft.train_fasttext(CORPUS * 10, settings, tmp_dir=tmp_path, progress=False)


def test_the_seed_shuffles_documents_and_seed_zero_keeps_their_order(tmp_path: Path) -> None:
    docs = [f"doc{i} word" for i in range(30)]
    ft.write_training_text(docs, tmp_path / "a.txt", seed=0)
    ft.write_training_text(docs, tmp_path / "b.txt", seed=3)
    a, b = (tmp_path / "a.txt").read_text().splitlines(), (tmp_path / "b.txt").read_text().splitlines()
    assert a == docs and sorted(b) == sorted(docs) and b != docs


def test_a_document_longer_than_fasttexts_line_limit_is_written_as_lines_of_1024_words(tmp_path: Path) -> None:
    """fastText reads at most 1024 words a line; on 0cc080c one 100 MB document was one 100 MB line."""
    long = " ".join(f"w{i}" for i in range(2_500))
    docs = ["a short document", long, "another short one"]
    assert ft.write_training_text(docs, tmp_path / "a.txt", seed=0) == (3, 2_506)
    lines = (tmp_path / "a.txt").read_text(encoding="utf-8").splitlines()
    assert [len(line.split()) for line in lines] == [3, 1024, 1024, 452, 3]
    assert " ".join(lines[1:4]) == long  # every word, in order
    ft.write_training_text(docs, tmp_path / "b.txt", seed=3)
    shuffled = (tmp_path / "b.txt").read_text(encoding="utf-8").splitlines()
    start = shuffled.index(lines[1])
    assert shuffled[start:start + 3] == lines[1:4] and sorted(shuffled) == sorted(lines)  # the document stays whole


def test_a_huge_run_without_whitespace_is_cut_into_pieces_of_bounded_size(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ft, "PIECE_CHARS", 100)
    text = "word " * 30 + "x" * 450 + " tail"
    pieces = list(ft._pieces(text))
    assert "".join(pieces) == text and max(map(len, pieces)) <= 2 * 100


def test_training_uses_no_private_fasttext_api() -> None:
    source = Path(ft.__file__).read_text(encoding="utf-8") + Path(sv.__file__).read_text(encoding="utf-8")
    assert "_build_args" not in source and "ft._FastText" not in source and "FastText._" not in source


def test_no_subwords_means_maxn_zero() -> None:
    args = ft.fasttext_args(ft.FastTextSettings(maxn=0))
    assert args["maxn"] == 0 and args["minn"] == 0 and args["thread"] == 1
    assert not ft.FastTextSettings(maxn=0).subwords and "no subwords" in ft.FastTextSettings(maxn=0).label()


def test_settings_are_validated() -> None:
    with pytest.raises(ValueError, match="unknown fastText model"):
        ft.FastTextSettings(model="glove")
    with pytest.raises(ValueError, match="minn <= maxn"):
        ft.FastTextSettings(minn=5, maxn=3)
    with pytest.raises(ValueError, match="positive"):
        ft.FastTextSettings(epochs=0)


def test_the_estimate_grows_with_words_epochs_and_negatives() -> None:
    base = ft.FastTextSettings(epochs=5)
    assert ft.estimate_seconds(2_000_000, base) == pytest.approx(2 * ft.estimate_seconds(1_000_000, base))
    assert ft.estimate_seconds(10**6, ft.FastTextSettings(epochs=10)) > ft.estimate_seconds(10**6, base)
    assert ft.estimate_seconds(10**6, ft.FastTextSettings(neg=10)) > ft.estimate_seconds(10**6, base)
    assert ft.estimate_seconds(10**6, ft.FastTextSettings(model="cbow")) < ft.estimate_seconds(10**6, base)


def test_train_fasttext_says_how_long_to_expect_and_refuses_an_empty_corpus(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    settings = ft.FastTextSettings(dim=4, epochs=1, min_count=1, bucket=100)
    model = ft.train_fasttext(CORPUS, settings, progress=True)
    assert model.get_dimension() == 4 and "Seine" in model.get_words()
    assert VectorsSource(ft.vectors_from_model(model), model, {}).subword_model is model  # it has n-grams
    expected, taken = capsys.readouterr().out.splitlines()
    assert expected.startswith(f"training fastText ({settings.label()}) on ") and expected.endswith(" s")
    assert taken.startswith("fastText trained in ")
    with pytest.raises(ValueError, match="lower min_count"):
        ft.train_fasttext(["one two three"], ft.FastTextSettings(dim=4, epochs=1, min_count=2), progress=False)
    with pytest.raises(ValueError, match="empty"):
        ft.train_fasttext(["  ", ""], ft.FastTextSettings(dim=4), progress=False)


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



# --------------------------------------------------------------------------------------------
# Notebook 03's exercises: each check accepts the reference solution and rejects a plausible wrong answer
# --------------------------------------------------------------------------------------------


def benchmark_vectors(seed: int = 0) -> sv.WordVectors:
    """Random vectors with a shared offset for every WordSim-353 word (so centring would change the score)."""
    from pipeline.vectors import wordsim

    pairs = wordsim.load_pairs("wordsim353")
    words = sorted({p.first for p in pairs} | {p.second for p in pairs})
    rng = np.random.default_rng(seed)
    scale = rng.uniform(0.2, 5.0, size=(len(words), 1))  # lengths that unit_length will remove
    return sv.WordVectors(words, (rng.normal(size=(len(words), 16)) + 1.5) * scale)


def test_exercise_1_check_accepts_the_solution_or_the_raw_score_to_three_decimals() -> None:
    import exercises

    raw = benchmark_vectors()
    from pipeline.vectors import wordsim

    right = nb03.right_1(raw.words, raw.matrix, wordsim.word_similarity)
    solution = nb03.exercise_1(raw.words, raw.matrix, wordsim.word_similarity)
    assert right(solution) and right(round(solution, 3))  # as the tables print it

    centred = wordsim.evaluate(raw.words, sv.normalise(raw.matrix), "wordsim353", n_bootstrap=1)["spearman"]
    assert abs(centred - solution) > nb03.SPEARMAN_TOLERANCE
    assert not right(centred)
    with pytest.raises(exercises.WrongAnswer):
        exercises.check("Ex1", round(solution, 2) + 0.01, right, hint="")


def test_exercise_2_counts_the_pieces_that_start_as_copies_of_a_word_token(vectors: sv.WordVectors) -> None:
    import exercises

    # ##ing and ##zz find 'ing' and 'zz' when stripped, ##river finds 'river'; only 'ing' is also a token
    vocab = {**VOCAB, "ing": len(VOCAB), "river": len(VOCAB) + 1}
    right = nb03.right_2(vocab, vectors)
    assert nb03.exercise_2(vocab, vectors) == 2 and right(2)  # ##ing = ing and ##river = river
    assert nb03.exercise_2(VOCAB, vectors) == 0 and nb03.right_2(VOCAB, vectors)(0)  # no bare form is a token
    strip = sv.align(vocab, vectors, pieces="strip").report
    with pytest.raises(exercises.WrongAnswer):  # every piece strip finds, not only those with a twin token
        exercises.check("Ex2", strip["n_found_pieces"], right, hint="")
    with pytest.raises(exercises.WrongAnswer):
        exercises.check("Ex2", 1, right, hint="")


def test_exercise_3_wants_the_ratio_of_copied_to_random_row_lengths_to_two_decimals() -> None:
    import exercises

    words = [f"w{i}" for i in range(50)]
    wv = sv.normalise_vectors(sv.WordVectors(words, np.random.default_rng(0).normal(size=(50, 300))))
    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words[:20],
                                         *(f"##p{i}" for i in range(2000))])}
    right = nb03.right_3(vocab, wv)
    solution = nb03.exercise_3(vocab, wv, seed=0)
    assert 2.0 < solution < 3.0  # rows a little under 1 against 0.02 * sqrt(300) = 0.35
    assert right(solution) and right(round(solution, 2)) and right(nb03.exercise_3(vocab, wv, seed=1))
    with pytest.raises(exercises.WrongAnswer):  # forgetting that centring shortens the copied rows
        exercises.check("Ex3", 1 / (0.02 * math.sqrt(300)), right, hint="")
    with pytest.raises(exercises.WrongAnswer):  # the inverse ratio
        exercises.check("Ex3", 1 / solution, right, hint="")
