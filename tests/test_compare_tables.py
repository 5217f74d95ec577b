"""benchmarks/compare_tables.py: how far regenerated tables moved against a git revision."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import compare_tables  # noqa: E402


def _committed(repo: Path, table: pd.DataFrame) -> None:
    (repo / "figures").mkdir(parents=True)
    table.to_csv(repo / "figures" / "table2_loss.csv", index=False)
    table.to_csv(repo / "figures" / "same.csv", index=False)
    for command in (["init", "-q"], ["add", "."], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "t"]):
        subprocess.run(["git", *command], cwd=repo, check=True)


def test_a_moved_number_is_named_with_its_size_and_unchanged_tables_are_counted(tmp_path: Path) -> None:
    old = pd.DataFrame({"lang": ["en", "fr"], "loss": [3.0, 4.0], "ok": [True, False]})
    _committed(tmp_path, old)
    old.assign(loss=[3.0, 4.25]).to_csv(tmp_path / "figures" / "table2_loss.csv", index=False)
    lines = compare_tables.compare(tmp_path / "figures", "HEAD", repo=tmp_path)
    assert lines == ["figures/table2_loss.csv: loss 2.5e-01", f"1 other table(s) under {tmp_path / 'figures'} "
                     "identical to HEAD"]


def test_changed_text_a_vanished_value_and_new_rows_are_said_not_hidden(tmp_path: Path) -> None:
    old = pd.DataFrame({"lang": ["en", "fr"], "loss": [3.0, 4.0]})
    _committed(tmp_path, old)
    pd.DataFrame({"lang": ["en", "es"], "loss": [3.0, None]}).to_csv(tmp_path / "figures" / "table2_loss.csv",
                                                                     index=False)
    pd.concat([old, old]).to_csv(tmp_path / "figures" / "same.csv", index=False)
    (tmp_path / "figures" / "new.csv").write_text("a\n1\n")
    lines = compare_tables.compare(tmp_path / "figures", "HEAD", repo=tmp_path)
    assert "figures/table2_loss.csv: loss inf, lang text differs" in lines
    assert "figures/same.csv: rows or columns changed (2 -> 4 rows); not compared" in lines
    assert "figures/new.csv: new (not at HEAD)" in lines
