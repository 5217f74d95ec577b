"""Issue 21, case 4 and item 9: a damaged fastText .bin is refused with its file named, never read as zeros."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from helpers.presets import FastTextSettings
from pipeline.corpora.data import CorpusSpec, load_corpus
from pipeline.vectors.fasttext_training import train_fasttext
from pipeline.vectors.vector_files import check_bin_complete, read_bin


@pytest.fixture(scope="module")
def model_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real fastText .bin trained here on 300 embedded articles (8 dimensions; about 6 MB of n-gram rows, so the
    issue's cut to 1 MB falls inside them)."""
    folder = tmp_path_factory.mktemp("bin")
    texts = load_corpus(CorpusSpec("embedded"), "en", "train", max_docs=300).texts
    model = train_fasttext(texts, FastTextSettings(dim=8, epochs=2, min_count=2, bucket=200_000), progress=False)
    model.save_model(str(folder / "model.bin"))
    return folder / "model.bin"


def test_a_whole_bin_passes_the_check_and_loads(model_bin: Path) -> None:
    check_bin_complete(model_bin)
    assert read_bin(model_bin, expected_dim=8).get_dimension() == 8


def test_a_truncated_bin_is_refused_naming_the_file(model_bin: Path, tmp_path: Path) -> None:
    cut = tmp_path / "cut.bin"
    cut.write_bytes(model_bin.read_bytes()[: model_bin.stat().st_size * 2 // 3])
    with pytest.raises(ValueError, match=rf"{cut} is cut short: .* download or save it again"):
        read_bin(cut)


@pytest.mark.parametrize("kept", [30_000, 1_000_000, -4], ids=["in the dictionary", "1 MB", "4 bytes short"])
def test_a_bin_cut_anywhere_is_refused_before_fasttext_reads_it(model_bin: Path, tmp_path: Path, kept: int) -> None:
    """As the issue cut it (to 1 MB): on 0cc080c fastText loaded it, and most words came back as zero vectors."""
    from helpers.presets import VectorsConfig
    from pipeline.vectors.vector_files import obtain_vectors

    cut = tmp_path / "cc.en.8.bin"
    cut.write_bytes(model_bin.read_bytes()[:kept])
    config = VectorsConfig(source="train", fasttext=FastTextSettings(dim=8))
    said = r"(end inside its dictionary of [\d,]+ words|but its header describes [\d,]+ \(\d+ % of them\))"
    with pytest.raises(ValueError, match=rf"{cut} is cut short: .*{said}; download or save it again"):
        obtain_vectors(config, "en", CorpusSpec("embedded"), vectors_path=cut)


def test_a_bin_with_bytes_past_its_matrices_is_refused(model_bin: Path, tmp_path: Path) -> None:
    longer = tmp_path / "longer.bin"
    longer.write_bytes(model_bin.read_bytes() + b"\0" * 64)
    with pytest.raises(ValueError, match="is damaged: its header describes"):
        check_bin_complete(longer)


@pytest.mark.parametrize(("size", "said"), [(2**31 - 1, "2,147,483,647"), (2**31, "-2,147,483,648")])
def test_an_impossible_dictionary_size_is_refused_before_fasttext_allocates_it(model_bin: Path, tmp_path: Path,
                                                                               size: int, said: str) -> None:
    damaged = bytearray(model_bin.read_bytes())
    struct.pack_into("<I", damaged, 64, size)  # the dictionary's size, right after Args (2**31 reads as negative)
    path = tmp_path / "huge.bin"
    path.write_bytes(bytes(damaged))
    with pytest.raises(ValueError, match=rf"{path}: its header claims {said} dictionary entries, which cannot fit"):
        read_bin(path)


def test_a_file_that_is_not_a_bin_says_so(tmp_path: Path) -> None:
    path = tmp_path / "vectors.bin"
    path.write_text("3 2\nthe 0.1 0.2\n")
    with pytest.raises(ValueError, match="is not a fastText .bin model"):
        read_bin(path)


def test_a_bin_with_an_empty_dictionary_is_walked_not_refused_as_impossible(model_bin: Path, tmp_path: Path) -> None:
    """No dictionary entries fit in any file, so the walk judges the rest: the matrices' sizes, read whole or short."""
    from pipeline.vectors.vector_files import ARGS_END

    empty = model_bin.read_bytes()[:ARGS_END] + struct.pack("<iiiqq", 0, 0, 0, 0, -1)
    path = tmp_path / "empty.bin"
    path.write_bytes(empty + (b"\0" + struct.pack("<qq", 0, 8)) * 2)  # two matrices of 0 x 8 values
    check_bin_complete(path)
    path.write_bytes(empty + (b"\0" + struct.pack("<qq", 2, 8)) * 2)  # 2 x 8 values promised, none there
    with pytest.raises(ValueError, match=rf"{path} is cut short: .*describes 190 .*download or save it again"):
        check_bin_complete(path)
