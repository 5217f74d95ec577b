"""How far regenerated tables moved: every CSV table under a folder against the same file at a git revision.

Why: after `make figures` (or `make reference-figures`) on another CPU or at another commit, the question is not
whether `git diff` shows lines but by how much the numbers moved. For each table and each numeric column this prints
the largest absolute difference, new minus old, over the rows both versions hold (matched by position; a table whose
rows or columns changed is named, not compared). `benchmarks/results/reproducibility.md` quotes its output.

    python benchmarks/compare_tables.py --against HEAD~1 --folder figures
"""

from __future__ import annotations

import argparse
import io
import subprocess
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]


def committed_table(revision: str, path: Path, repo: Path) -> pd.DataFrame | None:
    """The CSV at ``revision`` (None where that revision has no such file)."""
    shown = subprocess.run(["git", "show", f"{revision}:{path.as_posix()}"], cwd=repo, capture_output=True)
    return pd.read_csv(io.BytesIO(shown.stdout)) if shown.returncode == 0 else None


def largest_differences(new: pd.DataFrame, old: pd.DataFrame) -> dict[str, float]:
    """Column -> the largest |new - old| over the rows; a text column that differs anywhere counts as NaN."""
    moved = {}
    for column in new.columns:
        if pd.api.types.is_numeric_dtype(new[column]) and pd.api.types.is_numeric_dtype(old[column]):
            both = new[column].notna() & old[column].notna()
            if (new[column].isna() != old[column].isna()).any():
                moved[column] = float("inf")  # a value appeared or vanished
            elif both.any():
                moved[column] = float((new[column][both].astype(float) - old[column][both].astype(float)).abs().max())
        else:
            moved[column] = 0.0 if new[column].astype(str).equals(old[column].astype(str)) else float("nan")
    return moved


def compare(folder: Path, revision: str, repo: Path = REPO) -> list[str]:
    """One line per table that moved (its columns, largest first) or cannot be compared; one count of the rest."""
    lines, identical = [], 0
    for path in sorted(folder.rglob("*.csv")):
        relative = path.resolve().relative_to(repo.resolve())
        old, new = committed_table(revision, relative, repo), pd.read_csv(path)
        if old is None:
            lines.append(f"{relative}: new (not at {revision})")
        elif list(old.columns) != list(new.columns) or len(old) != len(new):
            lines.append(f"{relative}: rows or columns changed ({len(old)} -> {len(new)} rows); not compared")
        elif not (moved := {c: d for c, d in largest_differences(new, old).items() if d != 0}):
            identical += 1
        else:
            ranked = sorted(moved.items(), key=lambda item: -1.0 if pd.isna(item[1]) else -item[1])
            shown = ", ".join(f"{c} {'text differs' if pd.isna(d) else f'{d:.1e}'}" for c, d in ranked)
            lines.append(f"{relative}: {shown}")
    return [*lines, f"{identical} other table(s) under {folder} identical to {revision}"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", required=True, help="the git revision of the old tables, e.g. HEAD")
    parser.add_argument("--folder", type=Path, default=REPO / "figures", help="where the new tables are")
    options = parser.parse_args(argv)
    print("\n".join(compare(options.folder, options.against)))


if __name__ == "__main__":
    main()
