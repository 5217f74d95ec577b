"""Vectors pretrained on other text: spaCy's vector table read from a wheel made here in the real format."""

from __future__ import annotations

import hashlib
import io
import json
import sys
import zipfile
from pathlib import Path

import msgpack
import numpy as np
import pytest

from helpers import static_vectors as sv
from pipeline.train import training
from pipeline.vectors import pretrained_vectors as pv

VOCAB_DIR = "tiny_core_web_md/vocab"


def make_wheel(path: Path, words_to_rows: dict[str, int], vectors: np.ndarray, extra_strings: tuple = ()) -> Path:
    """A wheel holding a spaCy vector table: vectors .npy, key2row msgpack (hash -> row), strings.json."""
    npy = io.BytesIO()
    np.save(npy, vectors.astype(np.float32))
    key2row = {pv.murmurhash64a(word.encode("utf-8")): row for word, row in words_to_rows.items()}
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{VOCAB_DIR}/vectors", npy.getvalue())
        archive.writestr(f"{VOCAB_DIR}/key2row", msgpack.packb(key2row))
        archive.writestr(f"{VOCAB_DIR}/strings.json", json.dumps([*words_to_rows, *extra_strings]))
    return path


@pytest.fixture
def table_wheel(tmp_path: Path) -> Path:
    # 'cat' and 'cats' were pruned onto the row of 'kitten'; 'dog' and 'the' keep rows of their own
    rows = {"kitten": 0, "cat": 0, "cats": 0, "dog": 1, "the": 2, "Paris": 3}
    vectors = np.random.default_rng(0).normal(size=(4, 6)) + 3.0  # a shared offset, as web vectors have
    return make_wheel(tmp_path / "tiny.whl", rows, vectors, extra_strings=("NOUN", "nsubj"))


def test_the_hash_is_spacys_string_hash() -> None:
    # spaCy's documentation: nlp.vocab.strings["coffee"] == 3197928453018144401, ["apple"] == 8566208034543834098
    assert pv.murmurhash64a(b"coffee") == 3197928453018144401
    assert pv.murmurhash64a(b"apple") == 8566208034543834098
    assert pv.murmurhash64a("café".encode()) != pv.murmurhash64a(b"cafe")


def test_a_pruned_table_gives_each_word_the_row_it_points_to(table_wheel: Path) -> None:
    table = pv.read_table(table_wheel, VOCAB_DIR)
    row_of = dict(zip(table.words, table.rows.tolist()))
    assert row_of == {"kitten": 0, "cat": 0, "cats": 0, "dog": 1, "the": 2, "Paris": 3}  # no tag strings
    vectors = table.word_vectors()
    distinct = vectors.matrix[[table.words.index(w) for w in ("kitten", "dog", "the", "Paris")]]
    np.testing.assert_allclose(distinct.mean(axis=0), 0.0, atol=1e-6)  # centred over distinct rows, each once
    assert not np.allclose(vectors.matrix.mean(axis=0), 0.0, atol=1e-3)  # not over words (kitten's row counts thrice)
    np.testing.assert_array_equal(vectors.matrix[table.words.index("cat")], vectors.matrix[table.words.index("kitten")])


def test_coverage_counts_tokens_with_a_row_of_their_own_and_shared(table_wheel: Path) -> None:
    table = pv.read_table(table_wheel, VOCAB_DIR)
    vocab = {"[PAD]": 0, "cat": 1, "cats": 2, "dog": 3, "##s": 4, "Paris": 5, "zebra": 6}
    vectors = table.word_vectors()
    alignment = sv.align(vocab, vectors, top_n=len(vectors))
    assert alignment.found.tolist() == [False, True, True, True, False, True, False]
    assert pv.row_sharing(alignment) == {"n_found": 4, "distinct_rows": 3, "own_row": 2, "shared_row": 2}


def test_a_table_whose_keys_are_not_hashes_of_its_strings_is_refused(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "bad.whl", {"dog": 0}, np.ones((1, 3)))
    with zipfile.ZipFile(tmp_path / "other.whl", "w") as archive:
        with zipfile.ZipFile(wheel) as source:
            for name in source.namelist():
                data = source.read(name)
                archive.writestr(name, json.dumps(["chien"]) if name.endswith("strings.json") else data)
    with pytest.raises(ValueError, match="only 0 of its 1 keys"):
        pv.read_table(tmp_path / "other.whl", VOCAB_DIR)
    with pytest.raises(ValueError, match="not a spaCy vector table"):
        pv.read_table(wheel, "elsewhere/vocab")


def test_a_language_without_such_vectors_names_those_that_have_them() -> None:
    with pytest.raises(ValueError, match=r"no vectors pretrained on other text for 'es'.*en, fr.*--preset paper"):
        pv.table_for("es")


def _pin(monkeypatch: pytest.MonkeyPatch, wheel: Path) -> None:
    sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
    monkeypatch.setitem(pv.TABLES, "xx", pv.VectorTable("tiny-core", "1.0", wheel.name, sha, VOCAB_DIR, "3.11", "t"))


def test_a_cached_wheel_is_used_by_content_and_a_wrong_download_is_refused(
        table_wheel: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _pin(monkeypatch, table_wheel)
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / table_wheel.name).write_bytes(table_wheel.read_bytes())
    monkeypatch.setattr(pv, "PIP", ("false",))  # no client: a cached file with the pinned hash needs none
    assert pv.fetch_wheel("xx", cache) == cache / table_wheel.name
    (cache / table_wheel.name).write_bytes(b"damaged")
    with pytest.raises(ConnectionError, match=r"could not fetch tiny-core==1.0.*pip download .*--dest"):
        pv.fetch_wheel("xx", cache)
    writer = ("import pathlib, sys; dest = sys.argv[sys.argv.index('--dest') + 1]; "
              f"pathlib.Path(dest, {table_wheel.name!r}).write_bytes(b'other')")
    monkeypatch.setattr(pv, "PIP", (sys.executable, "-c", writer))  # a client that serves another file
    with pytest.raises(ValueError, match="not the pinned"):
        pv.fetch_wheel("xx", cache)
    assert (cache / table_wheel.name).read_bytes() == b"damaged"  # nothing replaced by the refused file


def test_the_web_arm_starts_only_from_other_text_vectors(table_wheel: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    _pin(monkeypatch, table_wheel)
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / table_wheel.name).write_bytes(table_wheel.read_bytes())
    vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4, "cat": 5, "dog": 6, "##s": 7}
    alignment, manifest = pv.align_pretrained(vocab, "xx", cache)
    assert manifest["source"] == "web" and manifest["n_found"] == 2 and manifest["table_rows"] == 4
    web = tmp_path / "static_web"
    from pipeline.vectors.static_files import save_aligned

    save_aligned(web, alignment, manifest)
    training.check_model_init("bert_ft_web", str(web))
    training.check_model_init("bert_ft_web_perm", str(web))
    with pytest.raises(ValueError, match="bert_ft starts from this run's vectors, but .* holds 'web' vectors"):
        training.check_model_init("bert_ft", str(web))
    here = tmp_path / "static"
    save_aligned(here, alignment, {**manifest, "source": "train"})
    with pytest.raises(ValueError, match="bert_ft_web starts from vectors pretrained on other text.*RUN/static_web"):
        training.check_model_init("bert_ft_web", str(here))


def test_the_sources_table_takes_row_counts_only_from_manifests_that_counted_contents() -> None:
    from evidence.other_text import _source_row

    old = {"n_found": 4, "vocab_size": 10, "coverage": {"n_found": 4, "distinct_rows": 3, "own_row": 2}}
    new = {"n_found": 4, "vocab_size": 10, "distinct_rows": 3, "own_row": 2, "shared_row": 2}
    same_text = {"n_found": 4, "vocab_size": 10}  # vectors trained here: every word its own row
    rows = [_source_row("en", "x", manifest) for manifest in (old, new, same_text)]
    assert [(r["distinct_rows"], r["own_row"], r["shared_row"]) for r in rows] == [(None, None, None), (3, 2, 2),
                                                                                    (4, 4, 0)]
    assert "notebook 03" in rows[0]["note"] and rows[1]["note"] == ""  # old records counted table rows, not contents
    assert "no static-vector manifest" in _source_row("en", "x", {})["note"]  # a run without one: a row, not a crash
