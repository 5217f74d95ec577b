"""The committed reference results come from their committed records and the current code.

`make reference-figures` redraws figures/reference/ from the records saved beside it; these tests do
the same into a temporary folder and compare the tables, so a change to the figure code (or an edited
record) that would change a committed number fails here instead of going unnoticed.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from evidence import ablations
from pipeline import job

REFERENCE = Path(__file__).resolve().parents[1] / "figures" / "reference"
RUN_RECORDS = REFERENCE / "runs"
ABLATION_RECORDS = REFERENCE / "ablations"

pytestmark = pytest.mark.skipif(not RUN_RECORDS.is_dir(), reason="no reference records committed")


def _same_table(regenerated: Path, committed: Path) -> None:
    new, old = (pd.read_csv(path).drop(columns="run_dir", errors="ignore") for path in (regenerated, committed))
    pd.testing.assert_frame_equal(new, old)


def test_the_committed_reference_tables_regenerate_from_their_records(tmp_path: Path) -> None:
    runs = sorted(str(p) for p in RUN_RECORDS.iterdir() if p.is_dir())
    assert len(runs) >= 2
    out = tmp_path / "figures"
    assert job.main(["--figures-from", *runs, "--figures", str(out), "--out", str(tmp_path / "runs")]) == 0
    for name in ("table2_loss", "table3_accuracy", "claims_check", "table_control_share", "table_vector_sources",
                 "table_web", "table_web_share"):
        _same_table(out / f"{name}.csv", REFERENCE / f"{name}.csv")


def test_the_committed_1200_step_tables_and_the_other_text_arm_regenerate_from_their_records(tmp_path: Path) -> None:
    runs = sorted(str(p) for p in (REFERENCE / "series").glob("*-steps1200") if p.is_dir())
    assert len(runs) >= 2
    out = tmp_path / "figures"
    assert job.main(["--figures-from", *runs, "--figures", str(out), "--out", str(tmp_path / "runs")]) == 0
    for name in ("claims_check", "table_control", "table_vector_sources", "table_web", "table_web_share"):
        _same_table(out / f"{name}.csv", REFERENCE / "steps1200" / f"{name}.csv")


@pytest.mark.skipif(not ABLATION_RECORDS.is_dir(), reason="no ablation records committed")
def test_the_committed_ablation_table_regenerates_from_its_records(tmp_path: Path) -> None:
    # The same call as `make reference-figures`.
    argv = ["--run-records", str(RUN_RECORDS), "--records", str(ABLATION_RECORDS), "--figures", str(tmp_path)]
    assert ablations.main(argv) == 0
    _same_table(tmp_path / f"{ablations.TABLE_NAME}.csv", REFERENCE / f"{ablations.TABLE_NAME}.csv")


SERIES_RECORDS = REFERENCE / "series"


def test_every_committed_record_names_one_clean_commit_for_both_models() -> None:
    from pipeline.store.layout import RunLayout
    from pipeline.store.records import trained_commit

    folders = [p for root in (RUN_RECORDS, SERIES_RECORDS) if root.is_dir() for p in root.iterdir() if p.is_dir()]
    assert folders
    for folder in folders:
        assert len(trained_commit(RunLayout(folder))) == 40, folder  # raises naming the folder otherwise


@pytest.mark.skipif(not SERIES_RECORDS.is_dir(), reason="no series records committed")
def test_the_committed_series_table_regenerates_from_its_records(tmp_path: Path) -> None:
    from evidence import series

    argv = ["--base", str(RUN_RECORDS / "reference-en"), "--records", str(SERIES_RECORDS), "--figures", str(tmp_path)]
    assert series.main(argv) == 0
    _same_table(tmp_path / f"{series.SERIES_TABLE}.csv", REFERENCE / f"{series.SERIES_TABLE}.csv")
