"""Issue 21, item 9 and case 6: each failure names the file, the cause and the fix, and leaves nothing half-written
that a rerun would trust. Each test fails on 0cc080c's behaviour."""

from __future__ import annotations

import errno
import gzip
import io
import json
from pathlib import Path

import pytest
import torch

from pipeline.corpora.data import CorpusSpec, load_corpus
from pipeline.corpora.files import data_files, text_lines
from pipeline.run import runner
from pipeline.store import checkpoints, fingerprints, staging
from pipeline.store.layout import stamp_of
from pipeline.vectors import fasttext_training
from pipeline.vectors.vector_files import read_vec, save_prefix


def test_an_empty_stamp_counts_as_not_finished_and_names_the_file(tmp_path: Path, capsys) -> None:
    stamp_of(tmp_path).write_text("")
    assert fingerprints.finished_with(tmp_path) is None and not fingerprints.is_up_to_date(tmp_path, "key")
    assert f"the stamp {stamp_of(tmp_path)} cannot be read" in capsys.readouterr().err


def test_a_full_disk_while_checkpointing_leaves_no_temporary_file_and_says_what_to_free(tmp_path: Path) -> None:
    # The temporary file is /dev/full, a device on which every write fails with ENOSPC, as on a full disk. torch.save
    # to such a path raises a RuntimeError without errno ("unexpected pos"), which this message must not become.
    target = tmp_path / "checkpoint.pt"
    target.with_suffix(".tmp").symlink_to("/dev/full")
    with pytest.raises(OSError, match=rf"no space left to save the checkpoint {target}: free space"):
        checkpoints.save_checkpoint(target, {"step": 1, "model": torch.randn(256, 256)})
    assert list(tmp_path.iterdir()) == []


@pytest.fixture()
def full_disk_when_replacing(monkeypatch: pytest.MonkeyPatch) -> None:
    """written_whole's last step, moving the written temporary into place, fails as on a full disk."""
    def full_disk(source: str, target: str) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(staging.os, "replace", full_disk)


@pytest.mark.usefixtures("full_disk_when_replacing")
def test_a_full_disk_while_caching_a_vectors_download_says_the_download_starts_again(tmp_path: Path) -> None:
    stream = io.BytesIO(gzip.compress("2 3\nun 0.1 0.2 0.3\ndeux 0.4 0.5 0.6\n".encode()))
    with pytest.raises(OSError, match="then run the same command again; the download starts again"):
        save_prefix(stream, tmp_path / "cc.fr.300.vec.gz", top_n=2, where="cc.fr.300.vec.gz")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.usefixtures("full_disk_when_replacing")
def test_a_full_disk_while_claiming_a_run_folder_says_the_folder_is_left_as_it_was(tmp_path: Path) -> None:
    from pipeline.store.layout import RunLayout
    from pipeline.store.run_identity import claim_identity

    with pytest.raises(OSError, match="then run the same command again; the folder is left as it was"):
        claim_identity(RunLayout(tmp_path / "run"), {"preset": "smoke", "lang": "en", "seed": 0})
    assert list((tmp_path / "run").iterdir()) == []


def test_a_utf16_file_gets_the_utf16_hint_not_the_latin1_one(tmp_path: Path) -> None:
    with_mark = tmp_path / "bom.txt"
    with_mark.write_text("Une phrase.\nUne autre.\n", encoding="utf-16")
    without_mark = tmp_path / "plain.txt"
    without_mark.write_bytes("A sentence.\n".encode("utf-16-le"))
    for path in (with_mark, without_mark):
        with pytest.raises(ValueError, match=r"looks like UTF-16: convert it with `iconv -f UTF-16(LE)? -t UTF-8"):
            list(text_lines(path))
    latin = tmp_path / "latin.txt"
    latin.write_bytes("café\n".encode("latin-1"))
    with pytest.raises(ValueError, match="iconv -f latin1"):
        list(text_lines(latin))


def test_an_uncompressed_c4_json_shard_is_read_and_other_files_are_named(tmp_path: Path, capsys) -> None:
    record = {"text": "Un document de C4.", "timestamp": "2019-04-25T12:00:00Z", "url": "https://example.org"}
    lines = [json.dumps({**record, "text": f"Le document de C4 numéro {n}."}) for n in range(60)]
    (tmp_path / "c4-fr.tfrecord-00000-of-00001.json").write_text("\n".join(lines) + "\n")
    with gzip.open(tmp_path / "c4-fr.tfrecord-00001-of-00001.json.gz", "wt") as handle:
        handle.write(json.dumps({**record, "text": "Un autre document."}) + "\n")
    (tmp_path / "notes.docx").write_bytes(b"PK")
    assert [p.name for p in data_files(tmp_path)] == ["c4-fr.tfrecord-00000-of-00001.json",
                                                      "c4-fr.tfrecord-00001-of-00001.json.gz"]
    assert "1 file(s) of other kinds are not read (notes.docx)" in capsys.readouterr().err
    spec = CorpusSpec("files", tmp_path)
    texts = load_corpus(spec, "fr", "train").texts + load_corpus(spec, "fr", "eval").texts
    assert len(texts) == 61 and "Un autre document." in texts and "Le document de C4 numéro 7." in texts


def test_a_vec_with_more_rows_than_its_header_says_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "v.vec"
    path.write_text("2 2\nthe 0.1 0.2\nof 0.3 0.4\nand 0.5 0.6\n")
    with pytest.raises(ValueError, match=r"its header says 2 words but the file goes on past line 3"):
        read_vec(path, top_n=None)
    assert len(read_vec(path, top_n=1)) == 1  # reading fewer words than the header promises needs no look past


def test_a_document_of_one_huge_line_is_pretokenised_in_pieces_with_the_same_words(monkeypatch) -> None:
    text = "Paris, the capital; founded in 52 BC. " * 2_000
    whole = fasttext_training.pretokenize(text)
    monkeypatch.setattr(fasttext_training, "PIECE_CHARS", 500)
    assert fasttext_training.pretokenize(text) == whole and len(whole) == 20_000


def test_a_record_edited_by_hand_reruns_the_figures(tmp_path: Path) -> None:
    from pipeline.store.layout import RunLayout
    from pipeline.store.records import record_files

    run = RunLayout(tmp_path / "demo-en")
    for path in (*record_files(run), run.pretrain.baseline):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("step,eval_accuracy\n300,0.10\n")
    before = runner.figures_key([run.root], tmp_path / "figures")
    run.model("bert_ft").metrics.write_text("step,eval_accuracy\n300,0.20\n")
    assert runner.figures_key([run.root], tmp_path / "figures") != before
