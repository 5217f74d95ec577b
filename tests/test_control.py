"""The control arm (BERT_FT_PERM) joins a record by content, and the knowledge-or-scale table adds up."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evidence import results
from evidence import token_analysis as control
from helpers import presets
from pipeline.store import records
from pipeline.store.layout import CONTROL_MODEL, WEB_CONTROL, WEB_MODEL, RunLayout
from pipeline.train import training


def _commit(info_path: Path, commit: str) -> None:
    info = json.loads(info_path.read_text())
    info["environment"]["git_commit"] = commit
    info_path.write_text(json.dumps(info))


@pytest.fixture(scope="module")
def run_with_control(smoke_figures: Path, smoke_run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the finished smoke run, with a control trained apart (as train_cli does) and then recorded."""
    run = tmp_path_factory.mktemp("control") / smoke_run_dir.name
    shutil.copytree(smoke_run_dir, run)
    layout, trained = RunLayout(run), run.parent / "control-trained"
    training.train(CONTROL_MODEL, str(layout.static.folder), presets.get("smoke").train, layout.step("pretrain"),
                   trained, device="cpu", seed=0, progress=False)
    _commit(trained / CONTROL_MODEL / "run.json", "c" * 40)
    records.save_arm(trained, run, CONTROL_MODEL)
    return run


def test_a_control_trained_apart_joins_its_pairs_record(run_with_control: Path) -> None:
    run = results.load_run(run_with_control)
    assert CONTROL_MODEL in run.models and run.model(CONTROL_MODEL).last_step == run.last_step
    info = run.model(CONTROL_MODEL).info
    assert info["identity"] == run.model("bert_ft").info["identity"] and info["init"]["permutation"]["rows"] > 0


def test_a_control_of_another_seed_or_from_uncommitted_code_is_refused(run_with_control: Path, tmp_path: Path) -> None:
    layout = RunLayout(run_with_control)
    trained = tmp_path / "other"
    training.train(CONTROL_MODEL, str(layout.static.folder), presets.get("smoke").train, layout.step("pretrain"),
                   trained, device="cpu", seed=1, progress=False)
    _commit(trained / CONTROL_MODEL / "run.json", "d" * 40 + "+dirty")
    before = (layout.model(CONTROL_MODEL).run_json).read_bytes()
    with pytest.raises(records.RecordConflict, match="uncommitted code.*another experiment"):
        records.save_arm(trained, run_with_control, CONTROL_MODEL)
    assert layout.model(CONTROL_MODEL).run_json.read_bytes() == before  # the recorded control is untouched


def test_knowledge_and_scale_add_up_to_the_whole_head_start(run_with_control: Path) -> None:
    table = control.control_table(results.load_runs([run_with_control]))
    overall = table[table["grouping"] == "all"].set_index("comparison")
    knowledge, scale, whole = (overall.iloc[i] for i in range(3))
    assert list(overall.index) == [c for _, _, c in control.COMPARISONS]
    for key in ("loss", "accuracy"):
        assert knowledge[key] + scale[key] == pytest.approx(whole[key], abs=1e-9)
        assert (table[f"{key} ci_low"] <= table[key] + 1e-12).all()
        assert (table[key] <= table[f"{key} ci_high"] + 1e-12).all()
    assert np.isnan(table["loss seed_ci_low"]).all()  # one seed: no seed-level interval
    for _, part in table[table["grouping"] != "all"].groupby(["comparison", "grouping"]):
        assert part["positions"].sum() == overall["positions"].iloc[0]  # every [MASK] position in one group


def test_runs_without_a_control_give_no_control_rows(run_with_control: Path, tmp_path: Path) -> None:
    run = tmp_path / run_with_control.name
    shutil.copytree(run_with_control, run)
    shutil.rmtree(RunLayout(run).model(CONTROL_MODEL).folder)
    assert control.control_table(results.load_runs([run])).empty


def test_the_knowledge_or_scale_sentence_takes_its_numbers_from_the_table(run_with_control: Path) -> None:
    runset = results.load_runs([run_with_control])
    table, shares = control.control_table(runset), control.knowledge_share_table(runset)
    (sentence,) = control.knowledge_or_scale(table, shares)
    overall = table[table["grouping"] == "all"].set_index("comparison")
    for comparison in overall.index:
        assert f"{overall.loc[comparison, 'loss']:+.3f}" in sentence
    share = shares.iloc[0]
    assert share["share"] == pytest.approx(overall["loss"].iloc[0] / overall["loss"].iloc[2])
    assert share["share ci_low"] <= share["share"] <= share["share ci_high"]
    assert f"knowledge makes {control.share_text(share)} of it" in sentence
    assert control.share_text(share).startswith(f"{share['share']:.0%} [{share['share ci_low']:.0%}, ")


def test_the_smoke_run_of_notebook_04_trains_the_control_and_06_draws_its_table(smoke_figures: Path,
                                                                                 smoke_run_dir: Path) -> None:
    info = json.loads(RunLayout(smoke_run_dir).model(CONTROL_MODEL).run_json.read_text())
    assert info["finished"] and info["init"]["permutation"]["rows"] > 0
    cloze = json.loads(RunLayout(smoke_run_dir).pretrain.cloze.read_text())
    assert set(cloze["hits"]) == {"bert_tiny", "bert_ft", CONTROL_MODEL}
    table = pd.read_csv(smoke_figures / "table_control.csv")
    assert set(table["comparison"]) == {c for _, _, c in control.COMPARISONS}


@pytest.fixture(scope="module")
def run_with_web(run_with_control: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A copy of the run with the control, its other-text vectors aligned from a table made here in spaCy's format,
    and BERT_FT_WEB and BERT_FT_WEB_PERM trained apart (not yet recorded): (record, trained folder)."""
    from pipeline.vectors import pretrained_vectors as pv
    from tests.test_pretrained_vectors import VOCAB_DIR, make_wheel

    tmp = tmp_path_factory.mktemp("web")
    run = tmp / run_with_control.name
    shutil.copytree(run_with_control, run)
    layout = RunLayout(run)
    words = [w for w in json.loads((layout.root / "tokenizer" / "tokenizer.json").read_text())["model"]["vocab"]
             if w.isalpha()][:60]
    wheel = make_wheel(tmp / "web.whl", {w: i % 20 for i, w in enumerate(words)},
                       np.random.default_rng(1).normal(size=(20, 300)))
    table = pv.VectorTable("web", "1", wheel.name, pv.sha256_of(wheel), VOCAB_DIR, "3.11", "test")
    original = pv.TABLES["en"]
    pv.TABLES["en"] = table
    try:
        pv.save_pretrained(layout.root / "tokenizer", "en", layout.static_web.folder, cache_dir=tmp)
    finally:
        pv.TABLES["en"] = original
    trained = tmp / "web-trained"
    for name in (WEB_MODEL, WEB_CONTROL):
        training.train(name, str(layout.static_web.folder), presets.get("smoke").train, layout.step("pretrain"),
                       trained, device="cpu", seed=0, progress=False)
        _commit(trained / name / "run.json", "c" * 40)
    return run, trained


def test_the_web_arm_and_its_control_join_a_record_in_order(run_with_web: tuple[Path, Path]) -> None:
    run_dir, trained = run_with_web
    with pytest.raises(records.RecordConflict, match="controls bert_ft_web, which the record does not hold yet"):
        records.save_arm(trained, run_dir, WEB_CONTROL)
    records.save_arm(trained, run_dir, WEB_MODEL)
    records.save_arm(trained, run_dir, WEB_CONTROL)
    run = results.load_run(run_dir)
    assert {WEB_MODEL, WEB_CONTROL} <= set(run.models)
    info = run.model(WEB_CONTROL).info
    assert info["init"]["permutation"]["unpermuted_embeddings_sha256"] == run.model(WEB_MODEL).info["init"][
        "embeddings_sha256"] != run.model("bert_ft").info["init"]["embeddings_sha256"]


def test_the_other_text_comparisons_add_up_and_the_answer_quotes_them(run_with_web: tuple[Path, Path]) -> None:
    from evidence import other_text

    run_dir, trained = run_with_web
    for name in (WEB_MODEL, WEB_CONTROL):
        records.save_arm(trained, run_dir, name)
    runset = results.load_runs([run_dir])
    table, shares = other_text.web_table(runset), other_text.share_table(runset)
    for group in ("all positions", "[MASK] positions"):
        rows = table[(table["grouping"] == "all") & (table["group"] == group)].set_index("comparison")
        web, ft, against = (rows.loc[c] for _, _, c in other_text.WEB_COMPARISONS)
        for key in ("loss", "accuracy"):
            assert web[key] == pytest.approx(ft[key] + against[key], abs=1e-9)  # paired on the same positions
    assert set(table["comparison"]) == {c for _, _, c in (*other_text.WEB_COMPARISONS,
                                                          *other_text.WEB_CONTROL_COMPARISONS)}
    loss = shares.set_index("metric").loc["loss"]
    mask = table[table["group"] == "[MASK] positions"].set_index("comparison")
    web_gain, ft_gain = (mask.loc[c, "loss"] for _, _, c in other_text.WEB_COMPARISONS[:2])
    assert loss["share"] == pytest.approx(web_gain / ft_gain)
    assert loss["share ci_low"] <= loss["share"] <= loss["share ci_high"] and np.isnan(loss["share seed_ci_low"])
    sentence = other_text.other_text_answer(table, shares)[0]
    assert f"{web_gain:+.3f}" in sentence and f"{loss['share']:.0%}" in sentence


def test_the_vector_sources_table_counts_shared_rows_and_names_languages_without_other_text(
        run_with_web: tuple[Path, Path]) -> None:
    from evidence import other_text

    run_dir, trained = run_with_web
    records.save_arm(trained, run_dir, WEB_MODEL)
    table = other_text.vector_sources_table(results.load_runs([run_dir])).set_index("source")
    here, web = table.loc["trained here (same text)"], table.loc["pretrained on other text"]
    manifest = json.loads(RunLayout(run_dir).static_web.manifest.read_text())
    assert (web["n_found"], web["own_row"], web["distinct_rows"]) == (manifest["n_found"], manifest["own_row"],
                                                                      manifest["distinct_rows"])
    assert web["shared_row"] == manifest["shared_row"] > 0 and here["shared_row"] == 0  # 60 words on 20 rows
    assert other_text.missing_web_vectors("es").startswith("none offline")  # the Spanish row of the table
    assert other_text.missing_web_vectors("en").startswith("not trained in these runs")
