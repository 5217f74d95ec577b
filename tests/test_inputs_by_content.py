"""Issue 21, case 3: a step's input files count by their content, so a file replaced at the same path reruns the
step, and --check names the input that changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.run.steps import STEP_BY_NAME
from pipeline.store import fingerprints


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


def test_identical_inputs_at_new_paths_and_a_moved_run_folder_keep_the_fingerprint(inputs, tmp_path) -> None:
    """Paths say where inputs are, never what they are: a copied corpus and vectors file are the same inputs."""
    import shutil

    run_dir, corpus, vectors = inputs
    step = STEP_BY_NAME["03_static_vectors"]
    before = fingerprints.fingerprint(step, _params(run_dir, corpus, vectors))
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(corpus, elsewhere / "corpus")
    shutil.copyfile(vectors, elsewhere / "copy.vec")
    shutil.move(run_dir, elsewhere / "runs")
    moved = _params(elsewhere / "runs", elsewhere / "corpus", elsewhere / "copy.vec")
    assert fingerprints.fingerprint(step, moved) == before
    (elsewhere / "copy.vec").write_text("2 3\nthe 0.5 0.5 0.5\ndocument 0.3 0.2 0.1\n")
    assert fingerprints.fingerprint(step, moved) != before  # other content at the new path is another input


def test_a_vectors_file_replaced_at_the_same_path_changes_the_fingerprint_and_check_names_it(inputs) -> None:
    run_dir, corpus, vectors = inputs
    step = STEP_BY_NAME["03_static_vectors"]
    params = _params(run_dir, corpus, vectors)
    folder = run_dir / "static"
    folder.mkdir()
    fingerprints.mark_finished(folder, fingerprints.fingerprint(step, params), 1.0, params,
                               inputs=fingerprints.input_digests(params))
    assert fingerprints.changed_inputs(folder, params) == []
    vectors.write_text("2 3\nthe 0.25 0.5 0.75\ndocument 0.3 0.2 0.1\n")  # new content, same path
    assert not fingerprints.is_up_to_date(folder, fingerprints.fingerprint(step, params))
    reasons = fingerprints.changed_inputs(folder, params)
    assert len(reasons) == 1 and reasons[0].startswith(f"input vectors {vectors} changed (sha256 ")


def test_digests_are_read_once_and_kept_in_the_run_folder(inputs, monkeypatch) -> None:
    run_dir, corpus, vectors = inputs
    params = _params(run_dir, corpus, vectors)
    first = fingerprints.input_digests(params)
    assert (run_dir / fingerprints.INPUT_HASHES_NAME).is_file()
    opened = []
    real_open = open
    monkeypatch.setattr("builtins.open", lambda path, *a, **k: opened.append(path) or real_open(path, *a, **k))
    assert fingerprints.input_digests(params) == first and not [p for p in opened if str(p).endswith(".vec")]


def test_a_missing_input_is_named_missing_not_an_error(tmp_path: Path) -> None:
    assert fingerprints.content_digest(tmp_path / "gone.vec", {}) == "missing"


def test_the_static_manifest_records_the_vectors_files_content(inputs) -> None:
    from helpers import presets
    from pipeline.corpora.data import CorpusSpec
    from pipeline.vectors.vector_files import obtain_vectors

    _, _, vectors = inputs
    config = presets.VectorsConfig(source="train", fasttext=presets.FastTextSettings(dim=3))
    info = obtain_vectors(config, "en", CorpusSpec("embedded"), vectors_path=vectors).info
    assert info["vectors_sha256"] == fingerprints.content_digest(vectors, {})


# ---------------------------------------------------------------- the main job, as the issue ran it


@pytest.fixture()
def notebooks_not_executed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The main job in this process, with each notebook's execution replaced by a note of its name: what is tested
    is which steps the job runs, skips and names, not the notebooks (tests/test_nb_0N.py run those)."""
    from pipeline.run import runner

    ran: list[str] = []
    monkeypatch.setattr(runner, "execute_notebook", lambda notebook, executed, params: ran.append(notebook.stem))
    return ran


def test_the_job_names_a_corpus_vectors_or_labelled_file_replaced_at_the_same_path_and_reruns_from_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], notebooks_not_executed: list[str]) -> None:
    from pipeline import job
    from pipeline.run.steps import STEPS

    corpus, labelled = tmp_path / "corpus", tmp_path / "topics.csv"
    corpus.mkdir()
    (corpus / "a.txt").write_text("The first document.\nThe second document.\n")
    (corpus / "b.txt").write_text("A third document.\n")
    vectors = tmp_path / "cc.en.300.vec"
    vectors.write_text("1 3\nthe 0.1 0.2 0.3\n")
    labelled.write_text("text,label\nA match was won.,sport\nIt rained.,weather\n")
    command = ["--preset", "smoke", "--lang", "en", "--corpus", f"files:{corpus}", "--vectors", str(vectors),
               "--labelled", f"files:{labelled}", "--out", str(tmp_path / "runs"), "--no-figures"]
    names = [step.name for step in STEPS]

    def check() -> str:
        capsys.readouterr()
        job.main([*command, "--check"])
        return capsys.readouterr().out

    assert job.main(command) == 0 and notebooks_not_executed == names
    assert "smoke-en: up to date" in check()

    (corpus / "b.txt").write_text("A third document, rewritten.\n")  # same path, new content
    said = check()
    assert f"01_masking (input corpus {corpus} changed (sha256 " in said and "): b.txt changed)" in said
    assert all(name in said for name in names)
    notebooks_not_executed.clear()
    assert job.main(command) == 0 and notebooks_not_executed == names  # on 0cc080c: every step skipped
    assert "up to date" in check()

    vectors.write_text("1 3\nthe 0.3 0.2 0.1\n")
    said = check()
    assert f"would rerun 03_static_vectors (input vectors {vectors} changed (sha256 " in said
    notebooks_not_executed.clear()
    assert job.main(command) == 0 and notebooks_not_executed == names[2:]

    labelled.write_text("text,label\nA match was lost.,sport\nIt snowed.,weather\n")
    assert f"would rerun 05_probing (input labelled {labelled} changed (sha256 " in check()
    notebooks_not_executed.clear()
    assert job.main(command) == 0 and notebooks_not_executed == ["05_probing"]


def test_a_folder_input_names_the_files_added_changed_and_removed(tmp_path: Path, monkeypatch) -> None:
    then = {"corpus": {"path": "/c", "sha256": "a" * 64, "files": {"x.txt": "1", "y.txt": "2", "z.txt": "3"}}}
    now = {"corpus": {"path": "/c", "sha256": "b" * 64, "files": {"x.txt": "1", "y.txt": "9", "w.txt": "4"}}}
    fingerprints.mark_finished(tmp_path, "key", 1.0, {}, inputs=then)
    monkeypatch.setattr(fingerprints, "input_digests", lambda params: now)
    assert fingerprints.changed_inputs(tmp_path, {}) == [
        f"input corpus /c changed (sha256 {'a' * 12} -> {'b' * 12}): w.txt added, y.txt changed, z.txt removed"]


def test_an_unwritable_run_folder_keeps_no_cache_but_the_digests_still_come(inputs, monkeypatch) -> None:
    run_dir, corpus, vectors = inputs

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full_disk)
    digests = fingerprints.input_digests(_params(run_dir, corpus, vectors))
    assert digests["vectors"]["sha256"] == fingerprints.content_digest(vectors, {})
    assert not list(run_dir.iterdir())


def test_the_help_says_when_the_digest_cache_is_trusted_and_deleting_it_reads_the_inputs_again(inputs) -> None:
    """Same size and modification time: the cached digest is trusted (as --help says); deleting the cache
    re-hashes."""
    import os

    from pipeline.run.job_options import build_parser
    from pipeline.store.layout import INPUT_HASHES_NAME

    help_text = " ".join(build_parser().format_help().split())
    assert f"{INPUT_HASHES_NAME} and trusted while a file's size and modification time are unchanged" in help_text
    run_dir, corpus, vectors = inputs
    params = _params(run_dir, corpus, vectors)
    first = fingerprints.input_digests(params)["vectors"]["sha256"]
    stat = vectors.stat()
    vectors.write_text(vectors.read_text().replace("0.1 0.2 0.3", "0.9 0.8 0.7"))  # same size
    os.utime(vectors, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert fingerprints.input_digests(params)["vectors"]["sha256"] == first  # trusted, as the help says
    (run_dir / INPUT_HASHES_NAME).unlink()
    assert fingerprints.input_digests(params)["vectors"]["sha256"] != first


def test_a_change_inside_a_symlinked_subfolder_of_a_corpus_changes_its_digest(tmp_path) -> None:
    """The reader follows symlinked folders (tests/test_input_cases.py), so the digest must look inside them too."""
    corpus, elsewhere = tmp_path / "corpus", tmp_path / "elsewhere"
    corpus.mkdir()
    elsewhere.mkdir()
    (corpus / "a.txt").write_text("The first document.\n")
    (elsewhere / "b.txt").write_text("A document reached through a link.\n")
    (corpus / "linked").symlink_to(elsewhere, target_is_directory=True)
    before = fingerprints.content_digest(corpus, {})
    (elsewhere / "b.txt").write_text("Another document reached through the link.\n")
    assert fingerprints.content_digest(corpus, {}) != before
    assert "linked/b.txt" in fingerprints.folder_digests(corpus, {})


def test_a_run_folder_accepts_its_corpus_and_vectors_at_new_paths_but_not_another_seed(tmp_path) -> None:
    """identity.json says what a folder's run is, never where its inputs lie (their content is each step's check)."""
    from pipeline.store.layout import RunLayout
    from pipeline.store.run_identity import claim_identity, identity_conflict

    folder = RunLayout(tmp_path / "smoke-en")
    run = {"preset": "smoke", "lang": "en", "seed": 0, "max_steps": None}
    claim_identity(folder, {**run, "corpus": "files:/old/corpus", "vectors": "/old/cc.en.300.vec"})
    assert identity_conflict(folder, {**run, "corpus": "files:/new/corpus", "vectors": "/new/copy.vec"}) is None
    refused = identity_conflict(folder, {**run, "seed": 1, "corpus": "files:/new/corpus", "vectors": None})
    assert refused and "seed=1" in refused and "vectors=None" in refused
    assert "corpus" not in refused.split("asks for")[1]
