"""Issue 21, case 8: notebook 05's labelled set is chosen per language, given to the main job with --labelled, and a
run without one records why and skips the probe instead of failing. Each test fails on 0cc080c's behaviour, where
notebook 05 read only the embedded set (en, fr, es) and the job had no option to give another."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from helpers.probe import PAIRED_COLUMNS, TABLE_COLUMNS
from pipeline.corpora.data import EMBEDDED, HUB, CorpusSpec
from pipeline.corpora.labelled import LabelledSpec, how_to_give_one
from pipeline.job import worker_command
from pipeline.run.job_options import parse_options
from pipeline.run.steps import STEP_BY_NAME, JobError, RunSettings
from pipeline.store.layout import RunLayout
from pipeline.train.probe_runs import SKIPPED_MARK, cell_that_always_runs, record_no_labelled_set, skip_remaining_cells

PROBE = STEP_BY_NAME["05_probing"]
LOCAL = CorpusSpec("files", Path("/data/corpus"))


@pytest.mark.parametrize("lang, corpus, expected", [
    ("en", EMBEDDED, "embedded"), ("fr", LOCAL, "embedded"),  # the embedded topics wherever they exist ...
    ("cs", HUB, "sib200"), ("en", HUB, "sib200"),  # ... but the paper's corpus gets the set all seven languages share
    ("de", LOCAL, "none"), ("pl", LOCAL, "none"),  # nothing offline for the other languages: no probe, no failure
])
def test_auto_gives_every_language_a_labelled_set_or_none(lang: str, corpus: CorpusSpec, expected: str) -> None:
    assert str(LabelledSpec("auto").resolve(lang, corpus)) == expected


def test_the_readme_paper_command_for_czech_probes_on_sib200(tmp_path: Path) -> None:
    [run] = parse_options(["--preset", "paper", "--lang", "cs", "--corpus", "hub", "--out", str(tmp_path)]).runs()
    assert run.parameters(PROBE, tmp_path / "run")["labelled"] == "sib200"


def test_labelled_sets_parse_once_with_absolute_paths(tmp_path: Path) -> None:
    assert LabelledSpec.parse("files:set.csv", base=tmp_path) == LabelledSpec("files", tmp_path / "set.csv")
    assert str(LabelledSpec.parse("sib200:copy", base=tmp_path)) == f"sib200:{tmp_path / 'copy'}"
    for text in ("sib200", "embedded", "ag_news", "none", "auto"):
        assert str(LabelledSpec.parse(text)) == text
    for text, message in [("hub", "unknown labelled set 'hub'"), ("files:", "write files:PATH"),
                          ("files", "write files:PATH"), ("embedded:/x", "unknown labelled set")]:
        with pytest.raises(ValueError, match=message):
            LabelledSpec.parse(text)
    # built directly, as notebooks and steps do: each message says what to write
    with pytest.raises(ValueError, match="the labelled set 'files' names no path; write files:PATH"):
        LabelledSpec("files")
    with pytest.raises(ValueError, match="the labelled set 'embedded' takes no path; write embedded, or files:PATH or "
                                         "sib200:PATH"):
        LabelledSpec("embedded", tmp_path)


def test_the_main_job_passes_labelled_on_to_notebook_05_and_its_workers(tmp_path: Path) -> None:
    labelled = tmp_path / "themen.csv"
    labelled.write_text("text,label\nEin Tor.,sport\n", encoding="utf-8")
    options = parse_options(["--preset", "smoke", "--lang", "de", "--seeds", "0,1", "--corpus", f"files:{tmp_path}",
                             "--labelled", f"files:{labelled}", "--out", str(tmp_path / "out")])
    for run in options.runs():
        assert run.parameters(PROBE, tmp_path / "run")["labelled"] == f"files:{labelled}"
        assert worker_command(run, tmp_path, False)[-2:] == ["--labelled", f"files:{labelled}"]
        assert "labelled" not in run.parameters(STEP_BY_NAME["04_pretraining"], tmp_path / "run")
    assert "--labelled" not in worker_command(RunSettings("smoke", "de"), tmp_path, False)  # auto: each worker's own


@pytest.mark.parametrize("args, message", [
    (["--lang", "de", "--corpus", "files:{tmp}", "--labelled", "embedded"], "--labelled embedded: .*has no 'de'"),
    (["--lang", "en,de", "--corpus", "hub", "--labelled", "ag_news"], "--labelled ag_news: .*has no 'de'"),
    (["--labelled", "files:{tmp}/missing.csv"], "missing.csv does not exist"),
    (["--labelled", "hub"], "unknown labelled set 'hub'"),
])
def test_a_labelled_set_the_run_cannot_use_is_refused_before_any_step(tmp_path: Path, args: list[str],
                                                                     message: str) -> None:
    with pytest.raises(JobError, match=message):
        parse_options([a.replace("{tmp}", str(tmp_path)) for a in args] + ["--out", str(tmp_path / "out")])


def test_a_run_without_a_labelled_set_records_why_in_its_probe_files(tmp_path: Path) -> None:
    layout = RunLayout(tmp_path / "smoke-de")
    written = record_no_labelled_set(layout, {"lang": "de"}, "de", how_to_give_one("de"))
    assert written == [layout.probe_table, layout.probe_record, layout.probe_differences]
    record = json.loads(layout.probe_record.read_text())
    assert record["status"] == "no labelled set for de" and record["results"] == []
    assert "--labelled files:PATH" in record["how_to_give_one"] and "-p labelled" in record["how_to_give_one"]
    assert list(pd.read_csv(layout.probe_table).columns) == list(TABLE_COLUMNS)  # read back: empty, not stale
    assert len(pd.read_csv(layout.probe_differences)) == 0
    assert list(pd.read_csv(layout.probe_differences).columns) == list(PAIRED_COLUMNS)


@pytest.mark.parametrize("source, kind", [
    ('preset = "smoke"\nlang = "de"\nlabelled = None\nCs = (0.1, 1.0)\n', "parameters"),
    ("setup = start(preset, lang, seed, run_dir, corpus)\n", "start"),
    ("data = load_probe_data(config, labelled_spec, lang)\n", None),
    ('answer_1 = None\nif solve_exercises:\n    answer_1 = 1\n', None),
    ("x = len(data)\n", None), ("", None), ("def broken(:\n", None),
])
def test_only_the_parameters_cell_and_the_setup_cell_run_after_a_skip(source: str, kind: str | None) -> None:
    assert cell_that_always_runs(source) == kind


def test_skipping_turns_every_later_cell_into_a_note_until_the_setup_cell_runs_again() -> None:
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        shell.run_cell("from pipeline.train.probe_runs import skip_remaining_cells\nreached = []\n"
                       "skip_remaining_cells('no labelled set for de')")
        assert shell.transform_cell("reached.append(1)\n") == f"print({SKIPPED_MARK + 'no labelled set for de'!r})\n"
        shell.run_cell("reached.append(1)")
        shell.run_cell('lang = "fr"')  # the parameters cell still runs
        assert shell.user_ns["reached"] == [] and shell.user_ns["lang"] == "fr"
        shell.run_cell("start = lambda *args: None\n")  # a definition, not a call: still skipped
        shell.user_ns["start"] = lambda *args: None
        shell.run_cell("setup = start(lang)\nreached.append(2)")  # the notebook starts over: skipping ends
        shell.run_cell("reached.append(3)")
        assert shell.user_ns["reached"] == [2, 3]
    finally:
        shell.input_transformers_post.clear()
        InteractiveShell.clear_instance()
    skip_remaining_cells("outside IPython nothing happens")


def test_a_local_labelled_set_enters_the_fingerprint_by_content(tmp_path: Path) -> None:
    from pipeline.store.fingerprints import input_files

    assert input_files({"labelled": f"files:{tmp_path / 'set.csv'}"}) == {"labelled": tmp_path / "set.csv"}
    assert input_files({"labelled": f"sib200:{tmp_path}"}) == {"labelled": tmp_path}
    assert input_files({"labelled": "sib200"}) == input_files({"labelled": "none"}) == {}
