"""pipeline.train.shards: streamed uint16 shards equal prepare_data's arrays, resume exactly, read lazily."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest

from helpers import tokenizer as T
from pipeline.corpora.data import EMBEDDED, load_corpus
from pipeline.store.layout import PretrainFiles, ShardFiles
from pipeline.train import shards as S


@pytest.fixture(scope="module")
def docs() -> list[str]:
    texts = load_corpus(EMBEDDED, "en", "train", max_docs=300).texts
    return [*texts[:40], "", "   \n", *texts[40:]]  # blank documents are dropped, as prepare_data drops them


@pytest.fixture(scope="module")
def tok(docs: list[str]):
    return T.train_wordpiece(docs, vocab_size=1_000, show_progress=False)


def files_of(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_shards_equal_prepare_datas_arrays(tok, docs: list[str], tmp_path: Path) -> None:
    from pipeline.train.prepare import prepare_data

    prepare_data(tok, docs, docs[:20], tmp_path / "prepared")
    prepared = PretrainFiles(tmp_path / "prepared").data
    expected_ids = np.load(prepared.array("train_ids"))
    expected_lengths = np.load(prepared.array("train_lengths"))
    manifest = S.write_shards(tok, iter(docs), tmp_path / "shards", shard_size=64, progress=False)
    got = S.open_shards(tmp_path / "shards")
    assert manifest["complete"] and manifest["exhausted"] and manifest["documents_read"] == len(docs)
    assert len(manifest["shards"]) == -(-len(expected_ids) // 64)  # ceil: the last shard is partial
    assert got.ids.dtype == expected_ids.dtype == np.uint16 and got.lengths.dtype == expected_lengths.dtype
    np.testing.assert_array_equal(np.asarray(got.ids), expected_ids)
    np.testing.assert_array_equal(np.asarray(got.lengths), expected_lengths)
    assert (expected_lengths == 128).any() and (expected_lengths < 128).any()  # both cut and padded rows occur


def test_n_sequences_stops_the_stream_and_records_where(tok, docs: list[str], tmp_path: Path) -> None:
    manifest = S.write_shards(tok, docs, tmp_path, n_sequences=100, shard_size=30, progress=False)
    assert manifest["sequences"] == 100 and not manifest["exhausted"]
    assert [s["sequences"] for s in manifest["shards"]] == [30, 30, 30, 10]
    assert manifest["documents_read"] == 102  # two blank documents were read and dropped on the way
    assert len(S.open_shards(tmp_path).ids) == 100


def test_resume_after_an_interruption_gives_identical_files(tok, docs: list[str], tmp_path: Path) -> None:
    S.write_shards(tok, docs, tmp_path / "straight", n_sequences=250, shard_size=40, batch_size=16, progress=False)

    def breaks_after(n: int) -> Iterator[str]:
        yield from docs[:n]
        raise KeyboardInterrupt  # the user stops the run half-way through a shard

    with pytest.raises(KeyboardInterrupt):
        S.write_shards(tok, breaks_after(130), tmp_path / "resumed", n_sequences=250, shard_size=40, batch_size=16,
                       progress=False)
    half = S.read_manifest(tmp_path / "resumed")
    assert len(half["shards"]) == 3 and not half["complete"]  # three whole shards of 40 survived
    with pytest.raises(ValueError, match="incomplete"):
        S.open_shards(tmp_path / "resumed")
    assert len(S.open_shards(tmp_path / "resumed", allow_incomplete=True).ids) == 120
    S.write_shards(tok, docs, tmp_path / "resumed", n_sequences=250, shard_size=40, batch_size=16, progress=False)
    assert files_of(tmp_path / "resumed") == files_of(tmp_path / "straight")


def test_resume_with_other_settings_is_refused(tok, docs: list[str], tmp_path: Path) -> None:
    S.write_shards(tok, docs, tmp_path, n_sequences=50, shard_size=20, progress=False)
    with pytest.raises(ValueError, match="shard_size"):
        S.write_shards(tok, docs, tmp_path, n_sequences=50, shard_size=25, progress=False)


def test_documents_are_read_lazily_from_an_endless_stream(tok, docs: list[str], tmp_path: Path) -> None:
    pulled = 0

    def endless() -> Iterator[str]:
        nonlocal pulled
        for text in itertools.cycle(docs):
            pulled += 1
            yield text

    manifest = S.write_shards(tok, endless(), tmp_path, n_sequences=500, shard_size=100, batch_size=32,
                              progress=False)
    assert manifest["sequences"] == 500
    assert manifest["documents_read"] <= pulled <= manifest["documents_read"] + 32  # at most one batch ahead


def test_a_vocabulary_too_big_for_uint16_is_refused(tmp_path: Path) -> None:
    class Huge:
        def __len__(self) -> int:
            return 70_000

    with pytest.raises(ValueError, match="uint16"):
        S.write_shards(Huge(), ["some text"], tmp_path, progress=False)
    S.check_vocab_fits(65_536)  # ids 0..65,535 still fit


def test_sharded_array_indexes_like_one_array() -> None:
    whole = np.arange(23 * 3, dtype=np.uint16).reshape(23, 3)
    sharded = S.ShardedArray([whole[:10], whole[10:20], whole[20:]], shard_size=10)
    assert sharded.shape == whole.shape and len(sharded) == 23
    picks = np.array([22, 0, 9, 10, 15, 9, -1])
    np.testing.assert_array_equal(sharded[picks], whole[picks])
    np.testing.assert_array_equal(sharded[5:17], whole[5:17])
    np.testing.assert_array_equal(sharded[::4], whole[::4])
    np.testing.assert_array_equal(sharded[-2], whole[-2])
    np.testing.assert_array_equal(sharded[whole[:, 0] % 2 == 0], whole[whole[:, 0] % 2 == 0])
    np.testing.assert_array_equal(np.asarray(sharded), whole)
    with pytest.raises(IndexError):
        sharded[23]


def test_open_shards_reads_memory_maps_and_explains_a_missing_folder(tok, docs: list[str], tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="write_shards"):
        S.open_shards(tmp_path)
    S.write_shards(tok, docs, tmp_path, n_sequences=30, shard_size=20, progress=False)
    got = S.open_shards(tmp_path)
    assert all(isinstance(part, np.memmap) for part in got.ids.parts)
    assert json.loads(ShardFiles(tmp_path).manifest.read_text())["vocab_size"] == len(tok)
