"""Run loading, claims, tables, figures and outputs (evidence.results, .claims_table, .figures) on SYNTHETIC runs.

The metrics here are made-up fixtures to check the table builders; they are never shown as results.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from evidence import claims_table, figures, results
from evidence import figure_plots as plots
from evidence.claims_table import NOT_REPRODUCED
from helpers import claims
from helpers import paper_values as paper
from helpers.crossing import crossing_step
from pipeline.store import fingerprints, layout

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


def identity(lang: str = "en", seed: int | None = 0, **changes: Any) -> dict[str, Any]:
    """run.json's "identity" block (fingerprints.IDENTITY_FIELDS), as pipeline.store.checkpoints.run_identity writes
    it."""
    base = {"lang": lang, "seed": seed, "preset": "demo", "corpus": "embedded", "max_steps": None,
            "data_fingerprint": "d1", "tokenizer_fingerprint": "t1", "train_config_hash": "c1"}
    return {**base, **changes}


def write_run(root: Path, preset: str, lang: str, metrics: dict[str, pd.DataFrame] | None = None,
              static: bool = True, steps: int = 40, seed: int = 0,
              info: dict[str, dict[str, Any]] | None = None) -> Path:
    """A synthetic run folder, run.json as pipeline.train.training writes it; ``info`` adds or replaces its fields per
    model."""
    run_dir = root / (f"{preset}-{lang}" + (f"-seed{seed}" if seed else ""))
    if static:
        (run_dir / "static").mkdir(parents=True)
        (run_dir / "static" / "manifest.json").write_text(json.dumps(
            {"lang": lang, "preset": preset, "n_found": 1234 + len(lang), "vocab_size": 2000, "top_n": 50000,
             "source": "train", "corpus": "wiki-vital-en"}))
    for name, table in (metrics or {}).items():
        model_dir = run_dir / "pretrain" / name
        model_dir.mkdir(parents=True)
        table.to_csv(model_dir / "metrics.csv", index=False)
        env = {"date": "2025-01-01T00:00:00+00:00", "code_version": f"abc-{lang}", "device": "cpu",
               "device_name": "cpu (test)", "packages": {}}
        record = {"model": name, "preset": preset, "lang": lang, "steps": steps, "batch_size": 4, "seq_len": 32,
                  "seed": seed, "identity": identity(lang, seed, preset=preset),
                  "init": {"kind": "random" if name == "bert_tiny" else "static"}, "environment": env,
                  **(info or {}).get(name, {})}
        (model_dir / "run.json").write_text(json.dumps(record))
    run_dir.mkdir(parents=True, exist_ok=True)
    return run_dir


def on_ours(verdict: str) -> str:
    """The verdict inside 'testability unknown (on our runs: ...)': synthetic runs here hold no [MASK]-only ids."""
    found = re.fullmatch(r"(?:not testable|testability unknown) \(on our runs: (.*)\)", verdict)
    return found.group(1) if found else verdict


def both_models(seed: int = 0) -> dict[str, pd.DataFrame]:
    return {"bert_tiny": synthetic_metrics(seed, 0.0), "bert_ft": synthetic_metrics(seed + 1, 0.8)}


@pytest.fixture()
def runset(tmp_path: Path) -> results.RunSet:
    en = write_run(tmp_path, "demo", "en", both_models(0))
    fr = write_run(tmp_path, "demo", "fr", both_models(5))
    es = write_run(tmp_path, "demo", "es", None)  # static vectors only, no pretrain/
    with pytest.warns(UserWarning, match="missing"):
        return results.load_runs([en, fr, es])


def our_row(table: pd.DataFrame, lang: str) -> pd.Series:
    rows = table[(table["lang"] == lang) & (table["source"] == "ours")]
    assert len(rows) == 1
    return rows.iloc[0]


def paper_row(table: pd.DataFrame, lang: str) -> pd.Series:
    rows = table[(table["lang"] == lang) & (table["source"] == "paper")]
    assert len(rows) == 1
    return rows.iloc[0]


def test_load_runs_records_pieces(runset: results.RunSet) -> None:
    assert [r.lang for r in results.sort_runs(runset.runs)] == ["en", "es", "fr"]  # the paper's column order
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
        results.load_runs([tmp_path / "demo-xx"])
    with pytest.raises(ValueError):
        results.load_runs([])
    with pytest.warns(UserWarning):
        assert results.load_runs(json.dumps([str(write_run(tmp_path, "smoke", "fr"))])).langs() == ["fr"]


def test_table3_values_are_last_rows_and_paper_rows_are_published(runset: results.RunSet, tmp_path: Path) -> None:
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


def test_table2_final_losses(runset: results.RunSet, tmp_path: Path) -> None:
    table = figures.table2_loss(runset)
    metrics = pd.read_csv(tmp_path / "demo-fr" / "pretrain" / "bert_ft" / "metrics.csv")
    row = our_row(table, "fr")
    assert row["train_loss BERT_FT"] == pytest.approx(metrics["train_loss"].iloc[-1])
    assert row["eval_loss BERT_FT"] == pytest.approx(metrics["eval_loss"].iloc[-1])
    cs = paper_row(table, "cs")
    assert cs["train_loss BERT_TINY"] == 3.125 and cs["eval_loss BERT_FT"] == 2.414


def test_missing_languages_stay_missing(runset: results.RunSet) -> None:
    t1 = figures.table1_vectors_found(runset)
    for table in (t1, figures.table2_loss(runset), figures.table3_accuracy(runset)):
        for lang in ("de", "cs", "pl", "it"):  # no run folder: the paper's row only, no row of ours full of "—"
            assert set(table[table["lang"] == lang]["source"]) == {"paper"}, lang
        assert "no run for this language" not in " ".join(map(str, table["status"]))
    for table in (figures.table2_loss(runset), figures.table3_accuracy(runset)):
        row = our_row(table, "es")  # a run folder that stopped before pretraining keeps its row, and says why
        numbers = row.drop(["lang", "source", "label", "preset", "steps", "n_seeds", "status", "run_dir"])
        assert numbers.isna().all(), numbers
        assert row["status"].startswith("missing") and "pretrain" in row["status"]
    assert our_row(t1, "es")["vectors_found"] == 1236  # es has static vectors but no pretraining
    assert our_row(t1, "es")["vector_source"] == "fastText trained here on wiki-vital-en"
    assert paper_row(t1, "de")["vectors_found"] == paper.VECTORS_FOUND["de"]


def test_run_without_pretrain_is_missing_not_an_error(tmp_path: Path) -> None:
    only_static = write_run(tmp_path, "smoke", "en", None)
    with pytest.warns(UserWarning):
        runset = results.load_runs([only_static])
    assert runset.langs_with_metrics() == []
    assert our_row(figures.table3_accuracy(runset), "en")["status"].startswith("missing")
    assert claims_table.verify_claims(runset).empty
    with pytest.raises(ValueError, match="no run with pretraining metrics"):
        plots.figure2_accuracy(runset, "en")
    fig = plots.figure3_accuracy_by_language(runset)
    assert not any(ax.get_lines() for ax in fig.axes)
    paths = figures.write_outputs(runset, tmp_path / "figs")
    assert (tmp_path / "figs" / "fig3_accuracy_by_language.png") in paths
    assert not (tmp_path / "figs" / "fig1a_train_loss.png").exists()


def legend_labels(ax) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


@pytest.mark.parametrize("kind", ["train", "eval"])
def test_figure1_lines_and_labels(runset: results.RunSet, kind: str) -> None:
    fig = plots.figure1_loss(runset, "en", kind)
    (ax,) = fig.axes
    assert len(ax.get_lines()) == 4  # our two curves + two paper reference lines
    labels = legend_labels(ax)
    assert sum(label.startswith("paper ") for label in labels) == 2
    assert "paper EN BERT_TINY, Table 2 (100k steps)" in labels
    assert "BERT_FT, ours (demo, 40 steps)" in labels
    assert "demo preset" in ax.get_title() and "40 steps" in ax.get_title()
    paper_lines = [line for line in ax.get_lines() if line.get_label().startswith("paper")]
    assert all(line.get_linestyle() in ("--", "-.") and line.get_marker() in (None, "None", "") for line in paper_lines)
    expected = paper.TRAIN_LOSS if kind == "train" else paper.EVAL_LOSS
    assert sorted(line.get_ydata()[0] for line in paper_lines) == sorted(expected["en"].values())
    # training loss is NaN at step 0 and is not drawn there
    tiny = next(line for line in ax.get_lines() if line.get_label().startswith("BERT_TINY"))
    assert len(tiny.get_xdata()) == (4 if kind == "train" else 5)
    with pytest.raises(ValueError):
        plots.figure1_loss(runset, "en", "test")


def test_figure2_and_figure3_panels(runset: results.RunSet) -> None:
    fig2 = plots.figure2_accuracy(runset, "fr", paper_refs=False)
    assert len(fig2.axes[0].get_lines()) == 2
    fig3 = plots.figure3_accuracy_by_language(runset)
    assert len(fig3.axes) == 2  # en and fr have runs; es (no pretrain/) and the rest are not drawn
    assert [ax.get_title().split(",")[0] for ax in fig3.axes] == ["English", "French"]
    for ax in fig3.axes:
        assert len(ax.get_lines()) == 4
        assert sum(label.startswith("paper") for label in legend_labels(ax)) == 2
    suptitle = fig3.get_suptitle()
    for lang in ("DE", "CS", "PL", "ES", "IT"):
        assert lang in suptitle
    with pytest.raises(ValueError, match="'de'"):
        plots.figure2_accuracy(runset, "de")


def test_crossing_step_on_constructed_curve() -> None:
    steps = [0, 10, 20, 30, 40]
    assert crossing_step(steps, [9, 7, 5.5, 4.9, 4.5], 5.0, lower_is_better=True) == 30
    assert crossing_step(steps, [9, 7, 5.0, 5.0, 5.0], 5.0, lower_is_better=True) is None  # ties do not count
    assert crossing_step(steps, [0.0, 0.1, 0.2, 0.31, 0.4], 0.3, lower_is_better=False) == 30
    assert crossing_step(steps, [4.0, 7, 6, 6, 6], 5.0, lower_is_better=True) is None  # step 0 never counts
    assert crossing_step(steps[:2], [0.0, 0.1], math.nan, lower_is_better=False) is None


def test_verify_claims_on_constructed_run(tmp_path: Path) -> None:
    tiny = pd.DataFrame({"step": EVAL_STEPS, "train_loss": [np.nan, 8, 7, 6, 5.0], "eval_loss": [9, 8, 7, 6, 5.0],
                         "eval_accuracy": [0, 0.1, 0.2, 0.25, 0.3]})
    ft = pd.DataFrame({"step": EVAL_STEPS, "train_loss": [np.nan, 6, 4.8, 4.5, 4.0], "eval_loss": [9, 7, 5.5, 4.9, 4.5],
                       "eval_accuracy": [0, 0.2, 0.31, 0.35, 0.4]})
    run_dir = write_run(tmp_path, "demo", "cs", {"bert_tiny": tiny, "bert_ft": ft}, steps=40)
    checked = claims_table.verify_claims(results.load_runs([run_dir])).set_index("claim_id")
    assert checked.loc["eval_loss_crossing_step", "ours"] == 30
    assert checked.loc["eval_loss_crossing_step", "fraction_of_training"] == pytest.approx(0.75)
    assert on_ours(checked.loc["eval_loss_crossing_step", "holds_on_ours"]) == NOT_REPRODUCED  # 0.75 > 1/3
    assert checked.loc["train_loss_crossing_step", "ours"] == 20
    assert checked.loc["accuracy_crossing_step", "ours"] == 20
    assert checked.loc["final_eval_loss_ft_minus_tiny", "ours"] == pytest.approx(-0.5)
    # without per-position results there is no interval, so the right direction alone is not shown
    assert on_ours(checked.loc["final_eval_loss_ft_minus_tiny", "holds_on_ours"]) == "not shown (no interval)"
    assert checked.loc["final_accuracy_gain", "ours"] == pytest.approx(0.1)
    assert checked.loc["final_accuracy_gain", "paper"] == "+0.072"  # 0.574 - 0.502, Table 3 CS


def test_write_outputs_creates_every_file(runset: results.RunSet, tmp_path: Path) -> None:
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
    assert runs["fr"]["models"]["bert_ft"]["code_version"] == "abc-fr"
    assert "generated" not in prov and "date" not in runs["fr"]["models"]["bert_ft"]  # reproducible byte for byte
    assert runs["es"]["missing"]
    assert "cs" in prov["paper_languages_without_run"] and prov["packages"]["pandas"]
    t3 = pd.read_csv(out / "table3_accuracy.csv")
    assert pd.isna(t3[(t3["lang"] == "de") & (t3["source"] == "ours")]["BERT_TINY"]).all()
    md = (out / "table3_accuracy.md").read_text()
    assert "| paper |" in md and "—" in md and md.count("\n") == len(t3) + 2
    saved = pd.read_csv(out / "table_steps_saved.csv")  # the series' note, on 06's table: one wording for both
    assert (out / "table_steps_saved.md").read_text().endswith(f"\n{claims_table.steps_saved_note(runset, saved)}\n")


def test_markdown_formatting() -> None:
    table = pd.DataFrame({"lang": ["en"], "steps": pd.array([1000], dtype="Int64"), "BERT_FT": [0.4681],
                          "FT - TINY": [0.0321], "note": ["a|b"]})
    md = figures.to_markdown(table).splitlines()
    assert md[0] == "| lang | steps | BERT_FT | FT - TINY | note |"
    assert md[2] == "| en | 1,000 | 0.468 | +0.032 | a\\|b |"


def test_crossing_and_saved_steps_are_shown_whole() -> None:
    claims = pd.DataFrame({"claim_id": ["eval_loss_crossing_step", "final_accuracy_gain"], "ours": [700 / 3, 0.0114],
                           "ci_low": [200.0, 0.005], "ci_high": [300.0, 0.017], "fraction_of_training": [0.194, None]})
    shown = figures.format_table(claims)
    assert shown["ours"].tolist() == ["233", "0.011"] and shown["ci_low"].tolist() == ["200", "0.005"]
    assert shown["fraction_of_training"].tolist() == ["0.194", "—"]
    saved = pd.DataFrame({"level": [6.5], "tiny_step": [433.333], "model_step": [166.667], "steps_saved": [266.5],
                          "seed_ci_low": [-12.25], "seed_ci_high": [545.1]})
    assert figures.to_markdown(saved).splitlines()[2] == "| 6.500 | 433 | 167 | 267 | -12 | 545 |"


def test_setting_comparison_puts_paper_beside_ours(runset: results.RunSet) -> None:
    table = figures.setting_comparison(runset)
    assert list(table.columns)[0] == "paper"
    assert table.loc["training steps", "paper"] == "100,000"
    ours = table["en: ours (demo, 40 steps)"]
    assert ours["training steps"] == "40" and ours["batch size"] == "4" and ours["evaluated every"] == "10 steps"
    assert table.loc["training steps", "es: ours (demo, not pretrained)"] == "—"


def test_a_cut_short_run_is_labelled_as_such(tmp_path: Path) -> None:
    metrics = {name: table.iloc[:3] for name, table in both_models(3).items()}  # evaluated up to step 20 of 40
    runset = results.load_runs([write_run(tmp_path, "demo", "en", metrics, steps=40)])
    row = our_row(figures.table3_accuracy(runset), "en")
    assert row["label"] == "ours (demo, stopped at 20 of 40 steps)" and row["steps"] == 20
    assert "stopped at 20 of 40 steps" in plots.figure2_accuracy(runset, "en").axes[0].get_title()


def test_models_stopped_at_different_steps_are_compared_at_the_step_they_share(tmp_path: Path) -> None:
    both = both_models(4)
    metrics = {"bert_tiny": both["bert_tiny"], "bert_ft": both["bert_ft"].iloc[:3]}  # FT stopped at step 20
    runset = results.load_runs([write_run(tmp_path, "demo", "en", metrics, steps=40)])
    row = our_row(figures.table3_accuracy(runset), "en")
    tiny_at_20 = float(both["bert_tiny"].set_index("step").loc[20, "eval_accuracy"])
    assert row["steps"] == 20 and row["BERT_TINY"] == pytest.approx(tiny_at_20)
    assert row["BERT_TINY"] != pytest.approx(float(both["bert_tiny"]["eval_accuracy"].iloc[-1]))
    checked = claims_table.verify_claims(runset).set_index("claim_id")
    ft_at_20 = float(both["bert_ft"].set_index("step").loc[20, "eval_accuracy"])
    assert checked.loc["final_accuracy_gain", "ours"] == pytest.approx(ft_at_20 - tiny_at_20)


def test_paths_inside_the_repository_are_written_relative(tmp_path: Path) -> None:
    from pipeline.store.runinfo import REPO_ROOT

    assert results.display_path(REPO_ROOT / "runs" / "demo-en") == "runs/demo-en"
    assert results.display_path(tmp_path / "demo-en") == str(tmp_path / "demo-en")


# --------------------------------------------------------------------------- issues 11 and 12


def flat_curves(tiny_loss: list[float], ft_loss: list[float], tiny_acc: list[float], ft_acc: list[float],
                steps: list[int] = EVAL_STEPS) -> dict[str, pd.DataFrame]:
    def table(loss: list[float], acc: list[float]) -> pd.DataFrame:
        return pd.DataFrame({"step": steps, "train_loss": [np.nan, *loss[1:]], "eval_loss": loss,
                             "eval_accuracy": acc})
    return {"bert_tiny": table(tiny_loss, tiny_acc), "bert_ft": table(ft_loss, ft_acc)}


def test_one_metrics_reader_and_one_crossing_rule_are_used() -> None:
    from helpers import crossing
    from pipeline.store import layout
    from pipeline.train import training

    assert results.read_metrics is layout.read_metrics is training.read_metrics
    assert results.METRIC_COLUMNS is layout.METRIC_COLUMNS is training.METRIC_COLUMNS
    assert claims_table.crossing_step is crossing.crossing_step


def test_exactly_one_third_is_not_under_a_third_and_a_tie_is_not_a_crossing(tmp_path: Path) -> None:
    steps = [0, 10, 20, 30]  # FT beats TINY's final loss (5.0) first at step 10 of 30: exactly one third
    curves = flat_curves([9, 8, 6, 5.0], [9, 4.9, 4.8, 4.5], [0, 0.1, 0.2, 0.3], [0, 0.3, 0.3, 0.35], steps)
    run_dir = write_run(tmp_path, "demo", "es", curves, steps=30)
    checked = claims_table.verify_claims(results.load_runs([run_dir])).set_index("claim_id")
    row = checked.loc["eval_loss_crossing_step"]
    assert row["ours"] == 10 and row["fraction_of_training"] == pytest.approx(1 / 3)
    assert row["holds_on_ours"] == f"testability unknown (on our runs: {NOT_REPRODUCED})"  # 1/3 is not under a third
    # FT's accuracy ties TINY's final 0.3 at steps 10 and 20 and passes it only at step 30
    assert checked.loc["accuracy_crossing_step", "ours"] == 30


def test_a_run_without_recorded_seed_takes_it_from_its_folder_name(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path, "demo", "en", both_models(0), static=False, seed=2,
                        info={m: {"seed": None, "identity": identity(seed=None)} for m in paper.MODELS})
    with pytest.warns(UserWarning, match="static vectors"):
        run = results.load_runs([run_dir]).runs[0]
    assert run_dir.name == "demo-en-seed2" and (run.preset, run.lang, run.seed) == ("demo", "en", 2)


N_SCORED = 1000  # positions of the synthetic per-position results; accuracies are multiples of 1/1000


def write_positions(run_dir: Path, name: str, correct: np.ndarray, loss: np.ndarray,
                    visible: np.ndarray | None = None, label: np.ndarray | None = None) -> None:
    """Per-position results as pipeline.train.training writes them; ``visible`` and ``label`` as in newer records."""
    n = len(correct)
    extra = {} if visible is None else {"visible": visible, "label": label, "top1": np.where(correct, label, 0)}
    np.savez(layout.RunLayout(run_dir).model(name).positions, correct=correct, loss=loss.astype(np.float32),
             sequence=np.arange(n) // 8, position=np.arange(n) % 8, **extra)


def first_right(share: float, n: int = N_SCORED) -> np.ndarray:
    return np.arange(n) < round(share * n)


def three_seeds(tmp_path: Path, gains: list[float]) -> list[Path]:
    dirs = []
    for seed, gain in enumerate(gains):
        curves = flat_curves([9, 8, 7, 6, 5.0], [9, 7, 5.5, 4.9, 4.5], [0, 0.1, 0.2, 0.25, 0.3],
                             [0, 0.2, 0.3, 0.3, 0.3 + gain])
        run_dir = write_run(tmp_path, "demo", "en", curves, seed=seed)
        write_positions(run_dir, "bert_tiny", first_right(0.3), np.full(N_SCORED, 5.0))
        write_positions(run_dir, "bert_ft", first_right(0.3 + gain), np.full(N_SCORED, 4.5))
        dirs.append(run_dir)
    return dirs


def test_three_seeds_are_pooled_with_a_two_level_bootstrap(tmp_path: Path) -> None:
    gains = [0.02, 0.05, 0.03]
    runset = results.load_runs(three_seeds(tmp_path, gains))
    row = our_row(figures.table3_accuracy(runset), "en")
    assert row["n_seeds"] == 3 and row["seeds"] == "0,1,2" and "3 seeds" in row["label"]
    assert row["FT - TINY"] == pytest.approx(np.mean(gains))
    assert row["interval"] == "two-level bootstrap over 3 seeds, then 1,000 positions; 10,000 draws"
    # seeds alone vary by var(gains)/3; positions add about var(diff)/n, diff being 0 or 1 on a share of ~3 %
    spread = math.sqrt(np.var(gains) / 3 + np.mean([g * (1 - g) for g in gains]) / N_SCORED)
    assert (row["ci_high"] - row["ci_low"]) == pytest.approx(2 * 1.96 * spread, rel=0.15)
    checked = claims_table.verify_claims(runset).set_index("claim_id")
    assert checked.loc["final_accuracy_gain", "n_seeds"] == 3
    # The two-level interval lies above 0, but three seeds this far apart leave the t-interval over them
    # (mean 0.033, sd 0.015, t(2) = 4.30: half-width 0.038) across 0: the seeds disagree.
    assert checked.loc["final_accuracy_gain", "ci_low"] > 0
    assert checked.loc["final_accuracy_gain", "seed_ci_low"] == pytest.approx(np.mean(gains) - 4.3027 * np.std(
        gains, ddof=1) / math.sqrt(3), rel=1e-3)
    assert on_ours(checked.loc["final_accuracy_gain", "holds_on_ours"]) == "not shown (seeds disagree)"
    close = claims_table.verify_claims(results.load_runs(three_seeds(tmp_path / "close", [0.03, 0.032, 0.034])))
    assert on_ours(close.set_index("claim_id").loc["final_accuracy_gain", "holds_on_ours"]) == "holds"
    assert checked.loc["eval_loss_crossing_step", "ours"] == 30  # every seed crossed at step 30
    assert checked.loc["eval_loss_crossing_step", "interval"] == "range of 3 seeds"
    assert checked.loc["eval_loss_crossing_step", "ci_low"] == pytest.approx(30)  # no spread between seeds


def test_seeds_whose_vectors_came_from_another_recipe_are_not_pooled(tmp_path: Path) -> None:
    """Seed 2's BERT_FT started from vectors normalised otherwise: a separate experiment, never a third seed."""
    dirs = three_seeds(tmp_path, [0.02, 0.05, 0.03])
    for run_dir, normalisation in zip(dirs, (["unit", "center"], ["unit", "center"], ["unit"])):
        path = run_dir / "pretrain" / "bert_ft" / "run.json"
        info = json.loads(path.read_text())
        info["init_manifest"] = {"source": "train", "normalisation": normalisation,
                                 "fasttext": {"dim": 300, "seed": int(run_dir.name[-1]) if "seed" in run_dir.name
                                              else 0}}
        path.write_text(json.dumps(info))
    groups = [g for g in results.comparison_groups(results.load_runs(dirs)) if g.runs]
    assert sorted(g.seeds for g in groups) == [[0, 1], [2]]  # fastText's seed alone differs in seeds 0 and 1


def test_seeds_trained_on_other_text_are_not_pooled_though_both_corpora_are_files(tmp_path: Path) -> None:
    dirs = three_seeds(tmp_path, [0.02, 0.05, 0.03])
    for run_dir, text in zip(dirs, ("a" * 64, "a" * 64, "b" * 64)):
        for name in ("bert_tiny", "bert_ft"):
            path = run_dir / "pretrain" / name / "run.json"
            info = json.loads(path.read_text())
            info["identity"] |= {"corpus": "files", "data_fingerprint": text, "tokenizer_fingerprint": "t" * 64}
            path.write_text(json.dumps(info))
    groups = [g for g in results.comparison_groups(results.load_runs(dirs)) if g.runs]
    assert sorted(g.seeds for g in groups) == [[0, 1], [2]]


def test_one_seed_gets_a_bootstrap_over_positions_or_says_why_not(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    n = 4000
    tiny_correct, ft_correct = rng.random(n) < 0.30, rng.random(n) < 0.35
    curves = flat_curves([9, 8, 7, 6, 5.0], [9, 7, 5.5, 4.9, 4.5], [0, 0.1, 0.2, 0.25, tiny_correct.mean()],
                         [0, 0.2, 0.3, 0.3, ft_correct.mean()])
    run_dir = write_run(tmp_path, "demo", "en", curves)
    missing = our_row(figures.table3_accuracy(results.load_runs([run_dir])), "en")
    assert math.isnan(missing["ci_low"]) and "eval_positions.npz not found" in missing["interval"]
    write_positions(run_dir, "bert_tiny", tiny_correct, rng.random(n) * 5)
    write_positions(run_dir, "bert_ft", ft_correct, rng.random(n) * 5)
    row = our_row(figures.table3_accuracy(results.load_runs([run_dir])), "en")
    assert row["interval"] == "bootstrap over 4,000 positions (1 seed); 10,000 draws"
    diff = ft_correct.astype(float) - tiny_correct.astype(float)
    half = 1.96 * diff.std() / math.sqrt(n)  # the normal approximation the percentile interval should match
    assert row["ci_low"] == pytest.approx(diff.mean() - half, abs=0.15 * half)
    assert row["ci_high"] == pytest.approx(diff.mean() + half, abs=0.15 * half)


def test_runs_that_differ_in_more_than_the_init_are_not_paired(tmp_path: Path) -> None:
    info = {"bert_tiny": {"lang": "fr", "seed": 7, "identity": identity("fr", 7)},
            "bert_ft": {"lang": "en", "seed": 0, "identity": identity("en", 0)}}
    run_dir = write_run(tmp_path, "demo", "fr", both_models(0), info=info)
    with pytest.warns(UserWarning, match="inconsistent languages"):
        runset = results.load_runs([run_dir])
    table = figures.table3_accuracy(runset)
    rows = table[(table["source"] == "ours") & table["status"].str.startswith("mismatch")]
    status = rows.iloc[0]["status"]
    assert len(rows) == 1 and 'lang: "fr" -> "en"' in status and "seed: 7 -> 0" in status
    assert rows[["BERT_TINY", "BERT_FT", "FT - TINY"]].isna().all().all()
    assert claims_table.verify_claims(runset).empty


def test_the_identity_block_decides_and_only_the_init_may_differ(tmp_path: Path) -> None:
    same = {"bert_tiny": {"identity": identity(), "init": {"kind": "random", "manifest_sha256": None}},
            "bert_ft": {"identity": identity(), "init": {"kind": "static", "manifest_sha256": "abc"}}}
    ok = results.load_runs([write_run(tmp_path / "a", "demo", "en", both_models(0), info=same)])
    assert results.pair_problem(ok.runs[0]) is None
    assert our_row(figures.table3_accuracy(ok), "en")["status"] == "ok"
    other_data = {**same, "bert_ft": {**same["bert_ft"], "identity": identity(data_fingerprint="d2")}}
    bad = results.load_runs([write_run(tmp_path / "b", "demo", "en", both_models(0), info=other_data)])
    assert results.pair_problem(bad.runs[0]) == 'mismatch: data_fingerprint: "d1" -> "d2"'
    random_ft = {**same, "bert_ft": {**same["bert_ft"], "init": {"kind": "random"}}}
    worse = results.load_runs([write_run(tmp_path / "c", "demo", "en", both_models(0), info=random_ft)])
    assert "BERT_FT was initialised at random" in results.pair_problem(worse.runs[0])
    assert claims_table.verify_claims(bad).empty and claims_table.verify_claims(worse).empty


def test_a_pair_without_identity_blocks_is_refused_and_the_train_config_is_compared_by_its_hash(
        tmp_path: Path) -> None:
    """run.json as older code wrote it (no "identity" block, "init": "random" or a path) cannot show that the two
    models are one experiment: the pair is refused, never compared by its top-level fields."""
    assert set(identity()) == set(fingerprints.IDENTITY_FIELDS)
    run_dir = write_run(tmp_path, "demo", "en", both_models(0))
    for name, init in (("bert_ft", str(run_dir / "static")), ("bert_tiny", "random")):
        path = layout.RunLayout(run_dir).model(name).run_json
        older = {k: v for k, v in json.loads(path.read_text()).items() if k != "identity"}
        path.write_text(json.dumps({**older, "init": init, "train_config": {"lr": 0.001, "steps": 40}}))
        runset = results.load_runs([run_dir])
        lacking = "BERT_FT" if name == "bert_ft" else "BERT_TINY and BERT_FT"
        assert results.pair_problem(runset.runs[0]) == (f"mismatch: no identity block in the run.json of {lacking} "
                                                        "(written by older code, or not found): train the pair again")
        assert our_row(figures.table3_accuracy(runset), "en")["status"].startswith("mismatch: no identity block")
        assert claims_table.verify_claims(runset).empty
    other_config = {"bert_ft": {"identity": identity(train_config_hash="c2")}}
    runset = results.load_runs([write_run(tmp_path / "b", "demo", "en", both_models(0), info=other_config)])
    assert results.pair_problem(runset.runs[0]) == 'mismatch: train_config_hash: "c1" -> "c2"'


THREE_LABELS, THREE_SEEN = np.array([5, 8, 6]), np.array([4, 8, 4])  # [MASK] (id 4), its own token, [MASK]


def three_position_run(tmp_path: Path, tiny_mask_loss: float = 1.0) -> Path:
    """Three scored positions (labels 5, 8, 6): the model saw [MASK] at the first and last, its own token at the
    second. Unigram (add-one over test_baselines' training counts): p(5) = 0.4, p(6) = 0.2, p(8) = 0.1."""
    from test_baselines import write_prepared_data

    curves = flat_curves([9, 8, 7, 6, 0.67], [9, 7, 5.5, 4.9, 0.5], [0, 0.1, 0.2, 0.3, 1 / 3],
                         [0, 0.2, 0.3, 0.4, 2 / 3])
    run_dir = write_run(tmp_path, "demo", "en", curves)
    write_prepared_data(run_dir / "pretrain")
    write_three_positions(run_dir, tiny_mask_loss)
    return run_dir


def write_three_positions(run_dir: Path, tiny_mask_loss: float) -> None:
    write_positions(run_dir, "bert_tiny", np.array([False, True, False]),
                    np.array([tiny_mask_loss, 0.01, tiny_mask_loss]), THREE_SEEN, THREE_LABELS)
    write_positions(run_dir, "bert_ft", np.array([True, True, False]), np.array([0.5, 0.01, 1.0]), THREE_SEEN,
                    THREE_LABELS)


def test_testability_is_judged_at_the_mask_positions_where_copying_cannot_help(tmp_path: Path) -> None:
    run_dir = three_position_run(tmp_path)
    runset = results.load_runs([run_dir])
    base = runset.runs[0].baseline
    unigram_at_mask = -(math.log(0.4) + math.log(0.2)) / 2  # 1.263
    assert claims.is_testable(0.67, base.unigram_loss)  # all positions: 0.94 nat below the unigram's 1.609 ...
    checked = claims_table.verify_claims(runset)
    per_lang = checked[(checked["lang"] == "en") & (checked["claim_id"] != "average_accuracy_gain")]
    assert len(per_lang) == 7 and (checked["testable"] == False).all()  # noqa: E712  ... at [MASK] only 0.26 below
    assert per_lang["holds_on_ours"].str.startswith("not testable (on our runs: ").all()
    assert per_lang["note"].str.contains(f"BERT_TINY ends at 1.000, within 0.5 nat of the unigram's "
                                         f"{unigram_at_mask:.3f}").all()
    table = figures.table2_loss(runset)
    unigram = table[(table["lang"] == "en") & (table["source"] == "unigram")].iloc[0]
    assert unigram["eval_loss BERT_TINY"] == pytest.approx(base.unigram_loss)
    assert unigram["[MASK] eval_loss BERT_TINY"] == pytest.approx(unigram_at_mask)
    copying = table[(table["lang"] == "en") & (table["source"] == "copy-aware")].iloc[0]
    # copy-aware: unigram at [MASK]; at the unchanged position half its mass on the visible token 8
    expected = (-math.log(0.4) - math.log(0.5 + 0.5 * 0.1) - math.log(0.2)) / 3
    assert copying["eval_loss BERT_TINY"] == pytest.approx(expected)
    accuracy = our_row(figures.table3_accuracy(runset), "en")
    assert accuracy["[MASK] BERT_TINY"] == 0.0 and accuracy["[MASK] BERT_FT"] == 0.5
    fig = plots.figure1_loss(runset, "en", "eval")
    assert "unigram baseline (no context, same positions)" in legend_labels(fig.axes[0])
    copy_label = "copy-aware floor (copy the visible token, else unigram; no context)"
    assert copy_label in legend_labels(fig.axes[0])
    assert copy_label in legend_labels(plots.figure2_accuracy(runset, "en").axes[0])


def test_table2_reports_both_readings_of_the_training_loss(tmp_path: Path) -> None:
    curves = flat_curves([9, 8, 7, 6, 5.0], [9, 7, 5.5, 4.9, 4.5], [0, 0.1, 0.2, 0.25, 0.3], [0, 0.2, 0.3, 0.3, 0.4],
                         steps=[0, 10, 20, 40, 80])
    runset = results.load_runs([write_run(tmp_path, "demo", "en", curves, steps=80)])
    row = our_row(figures.table2_loss(runset), "en")
    assert row["train_loss BERT_TINY"] == pytest.approx(5.0)  # the last interval's mean
    assert row["train_loss (run mean) BERT_TINY"] == pytest.approx((8 * 10 + 7 * 10 + 6 * 20 + 5 * 40) / 80)
    assert "comparison with the paper uses" in figures.TABLE_NOTES["table2_loss"]


def scored_run(tmp_path: Path, lang: str, seed: int, gain: float) -> Path:
    """A run whose BERT_FT is right at ``gain`` more of 1,000 positions than BERT_TINY's 30 %."""
    curves = flat_curves([9, 8, 7, 6, 5.0], [9, 7, 5.5, 4.9, 4.5], [0, 0.1, 0.2, 0.25, 0.3],
                         [0, 0.2, 0.3, 0.3, 0.3 + gain])
    run_dir = write_run(tmp_path, "demo", lang, curves, seed=seed, static=False)
    write_positions(run_dir, "bert_tiny", first_right(0.3), np.full(N_SCORED, 5.0))
    write_positions(run_dir, "bert_ft", first_right(0.3 + gain), np.full(N_SCORED, 4.5))
    return run_dir


def test_language_claims_check_the_ordering_and_the_average(tmp_path: Path) -> None:
    dirs = []
    for lang, gain in (("en", 0.01), ("fr", 0.04), ("es", 0.05)):
        for seed in range(3):
            dirs.append(scored_run(tmp_path, lang, seed, gain + 0.002 * seed))
    with pytest.warns(UserWarning):
        checked = claims_table.verify_claims(results.load_runs(dirs)).set_index("claim_id")
    least = checked.loc["english_gains_least"]
    assert least["ours"] == pytest.approx(0.03) and on_ours(least["holds_on_ours"]) == "holds"
    assert least["ci_low"] < 0.03 < least["ci_high"] and least["lang"] == "en,es,fr"
    assert least["paper"] == "+0.020 over the same languages"  # min(FR 0.052, ES 0.057) - EN 0.032
    assert "seeds per language: en 3, es 3, fr 3" in least["note"] and "includes 0" not in least["note"]
    average = checked.loc["average_accuracy_gain"]
    assert average["ours"] == pytest.approx((0.01 + 0.04 + 0.05) / 3 + 0.002)
    assert average["ci_low"] < average["ours"] < average["ci_high"]
    assert "+0.047 over en,es,fr" in average["paper"] and "+0.061 over its 7 languages" in average["paper"]
    assert "seeds per language: en 3, es 3, fr 3" in average["note"]


def test_an_ordering_whose_interval_includes_zero_says_so(tmp_path: Path) -> None:
    # English gains 0.030, French 0.031: seeds and positions both spread by more, so the margin's interval spans 0.
    dirs = []
    for lang, gain in (("en", 0.030), ("fr", 0.031)):
        for seed in range(3):
            dirs.append(scored_run(tmp_path, lang, seed, gain + 0.002 * seed))
    with pytest.warns(UserWarning):
        least = claims_table.verify_claims(results.load_runs(dirs)).set_index("claim_id").loc["english_gains_least"]
    assert least["ours"] == pytest.approx(0.001) and least["ci_low"] < 0 < least["ci_high"]
    # Seed by seed French leads by exactly 0.001, so the t-interval over seeds excludes 0 while the two-level one
    # does not: the verdict is 'not shown' either way, and says that the intervals disagree.
    assert least["seed_ci_low"] == pytest.approx(0.001) and least["seed_ci_high"] == pytest.approx(0.001)
    assert "the interval includes 0" in least["note"]
    assert on_ours(least["holds_on_ours"]) == "not shown (seeds disagree)"


def test_titles_name_the_max_steps_cap(tmp_path: Path) -> None:
    info = {name: {"max_steps": 40} for name in paper.MODELS}
    runset = results.load_runs([write_run(tmp_path, "demo", "en", both_models(0), info=info, steps=40)])
    title = plots.figure2_accuracy(runset, "en").axes[0].get_title()
    assert "demo preset" in title and "40 steps" in title and "max_steps=40" in title


def test_write_outputs_writes_only_into_its_folder(runset: results.RunSet, tmp_path: Path) -> None:
    before = {p for p in tmp_path.rglob("*")}
    out = tmp_path / "staging"
    paths = figures.write_outputs(runset, out)
    after = {p for p in tmp_path.rglob("*")}
    assert after - before == {out, *paths}
    assert "comparison with the paper uses" in (out / "table2_loss.md").read_text()


def test_exercise_checks_accept_the_solutions_and_reject_plausible_mistakes() -> None:
    from exercises import nb06

    assert nb06.crossing_right(nb06.exercise_1(**nb06.EXERCISE_1)) and nb06.exercise_1(**nb06.EXERCISE_1) == 100
    assert not nb06.crossing_right(50)  # the first tie is not a crossing
    assert nb06.average_right(nb06.exercise_2()) and nb06.exercise_2() == pytest.approx(0.0663, abs=1e-4)
    assert nb06.average_right(0.066) and nb06.average_right(0.0665)  # rounded to three decimals
    assert not nb06.average_right(nb06.exercise_2(leave_out=""))  # all seven languages, English kept
    assert not nb06.average_right(0.072)  # Czech's gain, not the average
    assert nb06.testable_right(nb06.exercise_3()) and nb06.exercise_3() == {"fr"}
    assert not nb06.testable_right({"fr", "es"})  # es ends 0.45 below its unigram loss: within 0.5 nat


def test_exercise_4s_premise_holds_three_made_up_seeds_give_a_wider_interval_than_one() -> None:
    """Notebook 06 section 6's made-up seeds, built as the notebook builds them: the explanation asked for in
    exercise 4 is only right while the three-seed interval is the wider one."""
    from helpers.claims import two_level_estimate

    rng = np.random.default_rng(0)
    shared = rng.random(3000)
    per_seed = [(shared < 0.35 + shift).astype(float) - (shared < 0.30).astype(float) for shift in (0.0, 0.02, 0.01)]
    one, three = (two_level_estimate(seeds, same_positions=True) for seeds in (per_seed[:1], per_seed))
    assert three.high - three.low > 1.3 * (one.high - one.low)


def test_notebook_06_draws_the_interactive_demo_run_unless_given_folders(capsys: pytest.CaptureFixture[str]) -> None:
    setup = figures.start(None, None)
    assert setup.run_dirs == [layout.INTERACTIVE_DIR / "demo-en"]
    assert setup.out_dir == layout.INTERACTIVE_DIR / "figures"
    given = figures.start(["runs/demo-fr"], "figures")  # relative to the repository, wherever the kernel started
    assert given.run_dirs == [layout.REPO_ROOT / "runs" / "demo-fr"] and given.out_dir == layout.FIGURES_DIR
    assert "run folders:" in capsys.readouterr().out


def test_scores_by_kind_follow_a_rewritten_run_in_the_same_process(tmp_path: Path) -> None:
    from evidence import position_scores

    run_dir = three_position_run(tmp_path)
    for loss in (1.0, 2.0):  # notebook 06 run twice in one kernel, the run retrained in between
        write_three_positions(run_dir, loss)
        group = [g for g in results.comparison_groups(results.load_runs([run_dir])) if g.runs][0]
        assert position_scores.kind_mean(group, "bert_tiny", "loss", "mask") == pytest.approx(loss)


def test_steps_saved_count_the_evaluations_each_model_needs_to_reach_a_loss(tmp_path: Path) -> None:
    from evidence.claims_table import steps_saved_table

    dirs = []
    for seed, lag in enumerate((1, 2, 2)):  # BERT_TINY's curve is BERT_FT's one or two evaluations later, above 5.8
        ft = [9.0, 7.2, 6.4, 5.8, 5.2, 5.2, 5.2]
        tiny = [max(loss, 5.8) for loss in [9.0] * (lag + 1) + ft[1:len(ft) - lag]]
        steps = [0, 10, 20, 30, 40, 50, 60]
        dirs.append(write_run(tmp_path, "demo", "en", flat_curves(tiny, ft, [0] * 7, [0] * 7, steps), seed=seed))
    table = steps_saved_table(results.load_runs(dirs)).set_index("level")
    # 6.5 is first reached at step 20 by BERT_FT, at 30 / 40 / 40 by BERT_TINY
    assert table.loc[6.5, "model_step"] == 20 and table.loc[6.5, "steps_saved_per_seed"] == "10 / 20 / 20"
    assert table.loc[6.5, "steps_saved"] == pytest.approx(50 / 3)
    assert table.loc[6.5, "seed_ci_low"] < 50 / 3 < table.loc[6.5, "seed_ci_high"]
    # 5.0 is reached by no model, so it has no row; 5.5 by BERT_FT alone: not reached, not 'no saving'
    assert 5.0 not in table.index and table.loc[5.5, "reached"] == 0 and np.isnan(table.loc[5.5, "steps_saved"])


def test_each_model_reports_its_passes_over_the_text_and_whether_its_loss_still_falls_at_the_end() -> None:
    """Read from the committed reference records and checked against their files, read here independently."""
    runs = sorted((layout.FIGURES_DIR / "reference" / "runs").iterdir())
    table = figures.training_progress_table(results.load_runs(runs))
    models = [m for run in runs for m in layout.TRAINABLE_MODELS if layout.RunLayout(run).model(m).metrics.is_file()]
    assert len(table) == len(models) > 0
    files = layout.RunLayout(layout.FIGURES_DIR / "reference" / "runs" / "reference-es-seed1").model("bert_ft")
    info, metrics = json.loads(files.run_json.read_text()), pd.read_csv(files.metrics)
    row = table[(table["lang"] == "es") & (table["seed"] == 1) & (table["model"] == "BERT_FT")].iloc[0]
    last = int(metrics["step"].iloc[-1])
    assert row["passes over the training text"] == pytest.approx(last * info["batch_size"]
                                                                 / info["data"]["train"]["sequences"])
    earlier = metrics[metrics["step"] <= last * 0.9].iloc[-1]  # the last evaluation at or before 90 % of the steps
    change = metrics["eval_loss"].iloc[-1] - earlier["eval_loss"]
    assert row["from step"] == earlier["step"] and row["eval_loss change from that step"] == pytest.approx(change,
                                                                                                           abs=1e-12)
    assert row["still falling at the end"] == ("yes" if change < 0 else "no")


def test_a_table_is_built_once_per_list_of_runs_and_handed_out_as_copies() -> None:
    calls: list[int] = []

    @results.cached_per_runset
    def count(runset: results.RunSet) -> pd.DataFrame:
        calls.append(1)
        return pd.DataFrame({"runs": [len(runset.runs)]})

    first, second = object(), object()
    runset = results.RunSet([first, second])  # cached_per_runset looks only at which runs these are
    handed_out = count(runset)
    handed_out.loc[0, "runs"] = 99  # a caller's change to its copy stays in its copy
    assert count(runset)["runs"].tolist() == [2] and len(calls) == 1
    runset.runs = [first, object()]  # as many runs, one of them another
    assert count(runset)["runs"].tolist() == [2] and len(calls) == 2


def test_one_rule_says_which_way_is_better_for_every_column(tmp_path: Path) -> None:
    """Losses fall as a model learns and accuracy rises: the claims and the series ask one rule, never the caller."""
    assert [claims_table.lower_is_better(c) for c in ("train_loss", "eval_loss", "eval_accuracy")] == [True, True,
                                                                                                       False]
    curves = flat_curves([9, 8, 6, 5.0], [9, 4.9, 4.8, 4.5], [0, 0.1, 0.2, 0.3], [0, 0.3, 0.3, 0.35], [0, 10, 20, 30])
    run = results.load_runs([write_run(tmp_path, "demo", "es", curves, steps=30)]).runs[0]
    assert [claims_table.run_crossing(run, c) for c in ("train_loss", "eval_loss", "eval_accuracy")] == [10, 10, 30]


def series_runs(root: Path, seeds_per_length: dict[int, int], info: dict[str, dict[str, Any]]) -> list[Path]:
    """A synthetic training-length series: per length (in steps) its seeds, the base (the first length) first."""
    dirs = []
    for steps, n_seeds in seeds_per_length.items():
        for seed in range(n_seeds):
            curves = both_models(seed)
            for table in curves.values():
                table["step"] = table["step"] * steps // EVAL_STEPS[-1]
            dirs.append(write_run(root / f"steps{steps}", "demo", "en", curves, steps=steps, seed=seed, info=info))
    return dirs


def test_the_series_steps_note_reads_a_null_train_config(tmp_path: Path) -> None:
    from evidence import series

    null = {name: {"train_config": None} for name in layout.TRAINABLE_MODELS}  # as a run.json may hold it
    series.write_series(series_runs(tmp_path, {40: 1, 80: 1}, null), tmp_path / "figures")
    note = (tmp_path / "figures" / f"{series.SERIES_TABLE}_steps_saved.md").read_text()
    assert "the evaluation interval differs between runs or is not recorded" in note
    assert "One seed: no interval." in note


def test_a_length_with_one_seed_in_a_multi_seed_series_has_no_t_interval(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from evidence import series

    monkeypatch.setattr(claims_table, "CONFIDENCE", 0.9)  # the note's level is helpers.claims', never typed in
    every = {name: {"train_config": {"eval_every": 10}} for name in layout.TRAINABLE_MODELS}
    series.write_series(series_runs(tmp_path, {40: 1, 80: 2}, every), tmp_path / "figures")
    saved = pd.read_csv(tmp_path / "figures" / f"{series.SERIES_TABLE}_steps_saved.csv")
    assert set(saved["n_seeds"]) == {1, 2} and saved.loc[saved["n_seeds"] == 1, "seed_ci_low"].isna().all()
    note = (tmp_path / "figures" / f"{series.SERIES_TABLE}_steps_saved.md").read_text()
    assert "evaluations every 10 steps" in note and "90 %" in note and "95 %" not in note
    assert "a row with one seed (n_seeds 1) has none" in note
