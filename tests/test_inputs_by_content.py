"""Issue 21, case 3: a step's input files count by their content, so a file replaced at the same path reruns the
step, and --check names the input that changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline import content_hash, fingerprints
from pipeline.steps import STEP_BY_NAME


def _params(run_dir: Path, corpus: Path, vectors: Path) -> dict:
    return {"preset": "smoke", "lang": "en", "seed": 0, "corpus": f"files:{corpus}", "run_dir": str(run_dir),
            "solve_exercises": False, "vectors": str(vectors)}


@pytest.fixture()
def inputs(tmp_path: Path) -> tuple[Path, Path, Path]:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text("The first document.\nThe second document.\n")
    vectors = tmp_path / "cc.en.300.vec"
    vectors.write_text("2 3\nthe 0.1 0.2 0.3\ndocument 0.3 0.2 0.1\n")
    run_dir = tmp_path / "runs" / "smoke-en"
    run_dir.mkdir(parents=True)
    return run_dir, corpus, vectors


def test_a_corpus_file_replaced_at_the_same_path_changes_the_fingerprint(inputs) -> None:
    run_dir, corpus, vectors = inputs
    step = STEP_BY_NAME["03_static_vectors"]
    before = fingerprints.fingerprint(step, _params(run_dir, corpus, vectors))
    (corpus / "a.txt").write_text("Other text altogether.\n")
    assert fingerprints.fingerprint(step, _params(run_dir, corpus, vectors)) != before


def test_a_vectors_file_replaced_at_the_same_path_changes_the_fingerprint_and_check_names_it(inputs) -> None:
    run_dir, corpus, vectors = inputs
    step = STEP_BY_NAME["03_static_vectors"]
    params = _params(run_dir, corpus, vectors)
    folder = run_dir / "static"
    folder.mkdir()
    fingerprints.mark_finished(folder, fingerprints.fingerprint(step, params), 1.0, params,
                               inputs=content_hash.input_digests(params))
    assert fingerprints.changed_inputs(folder, params) == []
    vectors.write_text("2 3\nthe 0.25 0.5 0.75\ndocument 0.3 0.2 0.1\n")  # new content, same path
    assert not fingerprints.is_up_to_date(folder, fingerprints.fingerprint(step, params))
    reasons = fingerprints.changed_inputs(folder, params)
    assert len(reasons) == 1 and reasons[0].startswith(f"input vectors {vectors} changed (sha256 ")


def test_digests_are_read_once_and_kept_in_the_run_folder(inputs, monkeypatch) -> None:
    run_dir, corpus, vectors = inputs
    params = _params(run_dir, corpus, vectors)
    first = content_hash.input_digests(params)
    assert (run_dir / content_hash.CACHE_NAME).is_file()
    opened = []
    real_open = open
    monkeypatch.setattr("builtins.open", lambda path, *a, **k: opened.append(path) or real_open(path, *a, **k))
    assert content_hash.input_digests(params) == first and not [p for p in opened if str(p).endswith(".vec")]


def test_a_missing_input_is_named_missing_not_an_error(tmp_path: Path) -> None:
    assert content_hash.content_digest(tmp_path / "gone.vec", {}) == "missing"


def test_the_static_manifest_records_the_vectors_files_content(inputs) -> None:
    from helpers import presets
    from pipeline.data import CorpusSpec
    from pipeline.vector_files import obtain_vectors

    _, _, vectors = inputs
    config = presets.VectorsConfig(source="train", fasttext=presets.FastTextSettings(dim=3))
    info = obtain_vectors(config, "en", CorpusSpec("embedded"), vectors_path=vectors).info
    assert info["vectors_sha256"] == content_hash.content_digest(vectors, {})
