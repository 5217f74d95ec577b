"""Tables, figures, claims and outputs of helpers.figures on SYNTHETIC run folders written by the tests.

The metrics here are made-up fixtures to check the table builders; they are never shown as results.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from helpers import figures
from helpers import paper_values as paper

EVAL_STEPS = [0, 10, 20, 30, 40]


def synthetic_metrics(seed: int, offset: float) -> pd.DataFrame:
    """Decreasing losses, rising accuracy; train_loss empty at step 0 as in the contract."""
    rng = np.random.default_rng(seed)
    n = len(EVAL_STEPS)
    eval_loss = np.linspace(9.0, 5.0, n) - offset + rng.uniform(-0.05, 0.05, n)
    train_loss = eval_loss + 0.2
    train_loss[0] = np.nan
    accuracy = np.linspace(0.0, 0.3, n) + offset / 10 + rng.uniform(0, 0.01, n)
    return pd.DataFrame({"step": EVAL_STEPS, "train_loss": train_loss, "eval_loss": eval_loss,
                         "eval_accuracy": accuracy, "lr": np.linspace(0, 1e-4, n), "elapsed_s": np.arange(n) * 1.5})


def write_run(root: Path, preset: str, lang: str, metrics: dict[str, pd.DataFrame] | None = None,
              static: bool = True, steps: int = 40) -> Path:
    run_dir = root / f"{preset}-{lang}"
    if static:
        (run_dir / "static").mkdir(parents=True)
        (run_dir / "static" / "manifest.json").write_text(json.dumps(
            {"lang": lang, "preset": preset, "n_found": 1234 + len(lang), "vocab_size": 2000, "top_n": 50000,
             "source": "train", "corpus": "wiki-vital-en"}))
    for name, table in (metrics or {}).items():
        model_dir = run_dir / "pretrain" / name
        model_dir.mkdir(parents=True)
        table.to_csv(model_dir / "metrics.csv", index=False)
        env = {"date": "2025-01-01T00:00:00+00:00", "git_commit": f"abc-{lang}", "device": "cpu",
               "device_name": "cpu (test)", "packages": {}}
        (model_dir / "run.json").write_text(json.dumps(
            {"model": name, "preset": preset, "lang": lang, "steps": steps, "batch_size": 4, "seq_len": 32,
             "seed": 0, "environment": env}))
    run_dir.mkdir(parents=True, exist_ok=True)
    return run_dir


def both_models(seed: int = 0) -> dict[str, pd.DataFrame]:
    return {"bert_tiny": synthetic_metrics(seed, 0.0), "bert_ft": synthetic_metrics(seed + 1, 0.8)}


@pytest.fixture()
def runset(tmp_path: Path) -> figures.RunSet:
    en = write_run(tmp_path, "demo", "en", both_models(0))
    fr = write_run(tmp_path, "demo", "fr", both_models(5))
    es = write_run(tmp_path, "demo", "es", None)  # static vectors only, no pretrain/
    with pytest.warns(UserWarning, match="missing"):
        return figures.load_runs([en, fr, es])


def our_row(table: pd.DataFrame, lang: str) -> pd.Series:
    rows = table[(table["lang"] == lang) & (table["source"] == "ours")]
    assert len(rows) == 1
    return rows.iloc[0]


def paper_row(table: pd.DataFrame, lang: str) -> pd.Series:
    rows = table[(table["lang"] == lang) & (table["source"] == "paper")]
    assert len(rows) == 1
    return rows.iloc[0]


def test_load_runs_records_pieces(runset: figures.RunSet) -> None:
    assert [r.lang for r in figures.sort_runs(runset.runs)] == ["en", "es", "fr"]  # the paper's column order
    assert runset.langs_with_metrics() == ["en", "fr"]
    es = runset.runs_for("es")[0]
    assert not es.has_metrics and es.manifest is not None
    assert any("bert_tiny metrics" in m for m in es.missing)
    en = runset.runs_for("en")[0]
    assert en.preset == "demo" and en.steps == 40 and en.label == "ours (demo, 40 steps)"
    summary = runset.summary()
    assert summary.set_index("lang").loc["es", "bert_ft/metrics"] == False  # noqa: E712


def test_load_runs_without_any_folder_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="run the main job"):
        figures.load_runs([tmp_path / "demo-xx"])
    with pytest.raises(ValueError):
        figures.load_runs([])
    with pytest.warns(UserWarning):
        assert figures.load_runs(json.dumps([str(write_run(tmp_path, "smoke", "fr"))])).langs() == ["fr"]


def test_table3_values_are_last_rows_and_paper_rows_are_published(runset: figures.RunSet, tmp_path: Path) -> None:
    table = figures.table3_accuracy(runset)
    for lang in ("en", "fr"):
        run_dir = tmp_path / f"demo-{lang}" / "pretrain"
        tiny = pd.read_csv(run_dir / "bert_tiny" / "metrics.csv")["eval_accuracy"].iloc[-1]
        ft = pd.read_csv(run_dir / "bert_ft" / "metrics.csv")["eval_accuracy"].iloc[-1]
        row = our_row(table, lang)
        assert row["BERT_TINY"] == pytest.approx(tiny) and row["BERT_FT"] == pytest.approx(ft)
        assert row["FT - TINY"] == pytest.approx(ft - tiny)
        assert row["preset"] == "demo" and row["steps"] == 40 and "demo, 40 steps" in row["label"]
    for lang in paper.LANGS:
        row = paper_row(table, lang)
        assert row["BERT_TINY"] == paper.EVAL_ACCURACY[lang]["bert_tiny"]
        assert row["BERT_FT"] == paper.EVAL_ACCURACY[lang]["bert_ft"]
        assert row["steps"] == paper.STEPS and row["label"].startswith("paper")
    assert set(table["lang"]) == set(paper.LANGS)
    assert {"preset", "steps", "source", "label"} <= set(table.columns)


def test_table2_final_losses(runset: figures.RunSet, tmp_path: Path) -> None:
    table = figures.table2_loss(runset)
    metrics = pd.read_csv(tmp_path / "demo-fr" / "pretrain" / "bert_ft" / "metrics.csv")
    row = our_row(table, "fr")
    assert row["train_loss BERT_FT"] == pytest.approx(metrics["train_loss"].iloc[-1])
    assert row["eval_loss BERT_FT"] == pytest.approx(metrics["eval_loss"].iloc[-1])
    cs = paper_row(table, "cs")
    assert cs["train_loss BERT_TINY"] == 3.125 and cs["eval_loss BERT_FT"] == 2.414


def test_missing_languages_stay_missing(runset: figures.RunSet) -> None:
    for table in (figures.table2_loss(runset), figures.table3_accuracy(runset)):
        for lang in ("de", "cs", "pl", "it", "es"):
            row = our_row(table, lang)
            numbers = row.drop(["lang", "source", "label", "preset", "steps", "status", "run_dir"])
            assert numbers.isna().all(), (lang, numbers)
            assert row["status"].startswith("missing")
        assert "pretrain" in our_row(table, "es")["status"]
    t1 = figures.table1_vectors_found(runset)
    assert our_row(t1, "es")["vectors_found"] == 1236  # es has static vectors but no pretraining
    assert our_row(t1, "es")["vector_source"] == "fastText trained here on wiki-vital-en"
    assert pd.isna(our_row(t1, "de")["vectors_found"])
    assert paper_row(t1, "de")["vectors_found"] == paper.VECTORS_FOUND["de"]


def test_run_without_pretrain_is_missing_not_an_error(tmp_path: Path) -> None:
    only_static = write_run(tmp_path, "smoke", "en", None)
    with pytest.warns(UserWarning):
        runset = figures.load_runs([only_static])
    assert runset.langs_with_metrics() == []
    assert our_row(figures.table3_accuracy(runset), "en")["status"].startswith("missing")
    assert figures.verify_claims(runset).empty
    with pytest.raises(ValueError, match="no run with pretraining metrics"):
        figures.figure2_accuracy(runset, "en")
    fig = figures.figure3_accuracy_by_language(runset)
    assert not any(ax.get_lines() for ax in fig.axes)
    paths = figures.write_outputs(runset, tmp_path / "figs")
    assert (tmp_path / "figs" / "fig3_accuracy_by_language.png") in paths
    assert not (tmp_path / "figs" / "fig1a_train_loss.png").exists()


def legend_labels(ax) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


@pytest.mark.parametrize("kind", ["train", "eval"])
def test_figure1_lines_and_labels(runset: figures.RunSet, kind: str) -> None:
    fig = figures.figure1_loss(runset, "en", kind)
    (ax,) = fig.axes
    assert len(ax.get_lines()) == 4  # our two curves + two paper reference lines
    labels = legend_labels(ax)
    assert sum(label.startswith("paper ") for label in labels) == 2
    assert "paper EN BERT_TINY, Table 2 (100k steps)" in labels
    assert "BERT_FT, ours (demo, 40 steps)" in labels
    assert "demo preset" in ax.get_title() and "40 steps" in ax.get_title()
    paper_lines = [l for l in ax.get_lines() if l.get_label().startswith("paper")]
    assert all(l.get_linestyle() in ("--", "-.") and l.get_marker() in (None, "None", "") for l in paper_lines)
    expected = paper.TRAIN_LOSS if kind == "train" else paper.EVAL_LOSS
    assert sorted(l.get_ydata()[0] for l in paper_lines) == sorted(expected["en"].values())
    # training loss is NaN at step 0 and is not drawn there
    tiny = next(l for l in ax.get_lines() if l.get_label().startswith("BERT_TINY"))
    assert len(tiny.get_xdata()) == (4 if kind == "train" else 5)
    with pytest.raises(ValueError):
        figures.figure1_loss(runset, "en", "test")


def test_figure2_and_figure3_panels(runset: figures.RunSet) -> None:
    fig2 = figures.figure2_accuracy(runset, "fr", paper_refs=False)
    assert len(fig2.axes[0].get_lines()) == 2
    fig3 = figures.figure3_accuracy_by_language(runset)
    assert len(fig3.axes) == 2  # en and fr have runs; es (no pretrain/) and the rest are not drawn
    assert [ax.get_title().split(",")[0] for ax in fig3.axes] == ["English", "French"]
    for ax in fig3.axes:
        assert len(ax.get_lines()) == 4
        assert sum(label.startswith("paper") for label in legend_labels(ax)) == 2
    suptitle = fig3.get_suptitle()
    for lang in ("DE", "CS", "PL", "ES", "IT"):
        assert lang in suptitle
    with pytest.raises(ValueError, match="'de'"):
        figures.figure2_accuracy(runset, "de")


def test_crossing_step_on_constructed_curve() -> None:
    steps = [0, 10, 20, 30, 40]
    assert figures.crossing_step(steps, [9, 7, 5.5, 4.9, 4.5], 5.0, below=True) == 30
    assert math.isnan(figures.crossing_step(steps, [9, 7, 5.0, 5.0, 5.0], 5.0, below=True))  # ties do not count
    assert figures.crossing_step(steps, [0.0, 0.1, 0.2, 0.31, 0.4], 0.3, below=False) == 30
    assert math.isnan(figures.crossing_step(steps, [0.0, 0.1], math.nan))


def test_verify_claims_on_constructed_run(tmp_path: Path) -> None:
    tiny = pd.DataFrame({"step": EVAL_STEPS, "train_loss": [np.nan, 8, 7, 6, 5.0], "eval_loss": [9, 8, 7, 6, 5.0],
                         "eval_accuracy": [0, 0.1, 0.2, 0.25, 0.3]})
    ft = pd.DataFrame({"step": EVAL_STEPS, "train_loss": [np.nan, 6, 4.8, 4.5, 4.0], "eval_loss": [9, 7, 5.5, 4.9, 4.5],
                       "eval_accuracy": [0, 0.2, 0.31, 0.35, 0.4]})
    run_dir = write_run(tmp_path, "demo", "cs", {"bert_tiny": tiny, "bert_ft": ft}, steps=40)
    claims = figures.verify_claims(figures.load_runs([run_dir])).set_index("claim_id")
    assert claims.loc["eval_loss_crossing_step", "ours"] == 30
    assert claims.loc["eval_loss_crossing_step", "fraction_of_training"] == pytest.approx(0.75)
    assert claims.loc["eval_loss_crossing_step", "holds_on_ours"] == False  # noqa: E712  (0.75 > 1/3)
    assert claims.loc["train_loss_crossing_step", "ours"] == 20
    assert claims.loc["accuracy_crossing_step", "ours"] == 20
    assert claims.loc["final_eval_loss_ft_minus_tiny", "ours"] == pytest.approx(-0.5)
    assert claims.loc["final_eval_loss_ft_minus_tiny", "holds_on_ours"] == True  # noqa: E712
    assert claims.loc["final_accuracy_gain", "ours"] == pytest.approx(0.1)
    assert claims.loc["final_accuracy_gain", "paper"] == "+0.072"  # 0.574 - 0.502, Table 3 CS


def test_write_outputs_creates_every_file(runset: figures.RunSet, tmp_path: Path) -> None:
    out = tmp_path / "figs"
    paths = figures.write_outputs(runset, out)
    expected = [f"{n}.{ext}" for n in figures.FIGURE_NAMES for ext in ("png", "pdf")]
    expected += [f"{n}.{ext}" for n in figures.TABLE_NAMES for ext in ("csv", "md")] + ["provenance.json"]
    assert sorted(p.name for p in paths) == sorted(expected)
    for name in expected:
        assert (out / name).stat().st_size > 0, name
    assert (out / "fig1a_train_loss.png").read_bytes()[:4] == b"\x89PNG"
    assert (out / "fig2_eval_accuracy.pdf").read_bytes()[:4] == b"%PDF"
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["figures_1_2_language"] == "en"  # no Czech run: the first language with metrics
    runs = {r["lang"]: r for r in prov["runs"]}
    assert set(runs) == {"en", "fr", "es"}
    assert runs["en"]["preset"] == "demo" and runs["en"]["steps"] == 40
    assert runs["fr"]["models"]["bert_ft"]["git_commit"] == "abc-fr"
    assert runs["es"]["missing"]
    assert "cs" in prov["paper_languages_without_run"] and prov["packages"]["pandas"]
    t3 = pd.read_csv(out / "table3_accuracy.csv")
    assert pd.isna(t3[(t3["lang"] == "de") & (t3["source"] == "ours")]["BERT_TINY"]).all()
    md = (out / "table3_accuracy.md").read_text()
    assert "| paper |" in md and "—" in md and md.count("\n") == len(t3) + 2


def test_markdown_formatting() -> None:
    table = pd.DataFrame({"lang": ["en"], "steps": pd.array([1000], dtype="Int64"), "BERT_FT": [0.4681],
                          "FT - TINY": [0.0321], "note": ["a|b"]})
    md = figures.to_markdown(table).splitlines()
    assert md[0] == "| lang | steps | BERT_FT | FT - TINY | note |"
    assert md[2] == "| en | 1,000 | 0.468 | +0.032 | a\\|b |"


def test_setting_comparison_puts_paper_beside_ours(runset: figures.RunSet) -> None:
    table = figures.setting_comparison(runset)
    assert list(table.columns)[0] == "paper"
    assert table.loc["training steps", "paper"] == "100,000"
    ours = table["en: ours (demo, 40 steps)"]
    assert ours["training steps"] == "40" and ours["batch size"] == "4" and ours["evaluated every"] == "10 steps"
    assert table.loc["training steps", "es: ours (demo, not pretrained)"] == "—"


def test_a_cut_short_run_is_labelled_as_such(tmp_path: Path) -> None:
    metrics = {name: table.iloc[:3] for name, table in both_models(3).items()}  # evaluated up to step 20 of 40
    runset = figures.load_runs([write_run(tmp_path, "demo", "en", metrics, steps=40)])
    row = our_row(figures.table3_accuracy(runset), "en")
    assert row["label"] == "ours (demo, stopped at 20 of 40 steps)" and row["steps"] == 20
    assert "stopped at 20 of 40 steps" in figures.figure2_accuracy(runset, "en").axes[0].get_title()


def test_models_stopped_at_different_steps_are_compared_at_the_step_they_share(tmp_path: Path) -> None:
    both = both_models(4)
    metrics = {"bert_tiny": both["bert_tiny"], "bert_ft": both["bert_ft"].iloc[:3]}  # FT stopped at step 20
    runset = figures.load_runs([write_run(tmp_path, "demo", "en", metrics, steps=40)])
    row = our_row(figures.table3_accuracy(runset), "en")
    tiny_at_20 = float(both["bert_tiny"].set_index("step").loc[20, "eval_accuracy"])
    assert row["steps"] == 20 and row["BERT_TINY"] == pytest.approx(tiny_at_20)
    assert row["BERT_TINY"] != pytest.approx(float(both["bert_tiny"]["eval_accuracy"].iloc[-1]))
    claims = figures.verify_claims(runset).set_index("claim_id")
    ft_at_20 = float(both["bert_ft"].set_index("step").loc[20, "eval_accuracy"])
    assert claims.loc["final_accuracy_gain", "ours"] == pytest.approx(ft_at_20 - tiny_at_20)


def test_paths_inside_the_repository_are_written_relative(tmp_path: Path) -> None:
    from helpers.runinfo import REPO_ROOT

    assert figures.display_path(REPO_ROOT / "runs" / "demo-en") == "runs/demo-en"
    assert figures.display_path(tmp_path / "demo-en") == str(tmp_path / "demo-en")
