"""Issue 21, case 8, as the issue ran it: ``python -m pipeline.job --preset smoke --lang de --corpus files:DIR``.

On 0cc080c the job ran 01-04 and then failed in 05 ("unknown embedded language 'de' ... use source='files'"),
and had no option to give a labelled set. Now 05 records "no labelled set for de", says how to give one, and the
job goes on to 06; with ``--labelled files:PATH`` the same run probes, rerunning 05 alone.

DIR holds real German sentences: facts about every country (its languages and currency, by their German names in
the CLDR data that babel, a dependency of JupyterLab, ships) and everyday sentences, enough text for the smoke
preset's 2,000-token tokenizer. The labelled set is German sentences on four topics. One job run per fixture.
"""

from __future__ import annotations

import csv
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from helpers.probe import TABLE_COLUMNS
from pipeline.store.layout import REPO_ROOT, RunLayout
from pipeline.train.probe_runs import SKIPPED_MARK

pytestmark = pytest.mark.notebook

SUBJECTS = ["Der alte Bäcker", "Die junge Ärztin", "Mein Nachbar", "Unsere Lehrerin", "Der Bürgermeister",
            "Die Studentin", "Ein kleiner Junge", "Die Großmutter", "Der Förster", "Eine Journalistin"]
ACTIONS = ["kauft frisches Brot", "liest die Zeitung", "trinkt einen heißen Kaffee", "schreibt einen langen Brief",
           "repariert das alte Fahrrad", "malt ein buntes Bild", "kocht eine Gemüsesuppe", "pflanzt junge Bäume",
           "wartet auf den Bus", "füttert die Enten", "sucht den verlorenen Schlüssel", "lernt eine neue Sprache"]
PLACES = ["am Morgen auf dem Markt", "im Garten hinter dem Haus", "in der Bibliothek", "am Ufer des Sees",
          "in der Küche", "auf dem Bahnhof", "im Wald bei Regen", "in der Altstadt", "im Café an der Ecke"]
TOPICS = {
    "sport": ["Die Mannschaft gewinnt das Spiel", "Der Läufer trainiert für den Marathon",
              "Die Schwimmerin holt eine Medaille", "Das Tor fällt in der letzten Minute"],
    "wetter": ["Morgen regnet es im ganzen Land", "Ein Gewitter zieht über die Stadt",
               "Die Temperaturen steigen auf dreißig Grad", "Im Norden schneit es stark"],
    "essen": ["Die Suppe schmeckt nach Kräutern", "Der Kuchen kommt frisch aus dem Ofen",
              "Zum Frühstück gibt es Brötchen mit Käse", "Die Kartoffeln kochen im Topf"],
    "politik": ["Das Parlament berät über das Gesetz", "Die Ministerin hält eine Rede",
                "Die Wahl findet im September statt", "Der Stadtrat stimmt über den Haushalt ab"],
}


def country_facts() -> list[str]:
    """One short German text per country: its official languages and its currency (CLDR, through babel)."""
    from babel import Locale
    from babel.languages import get_official_languages
    from babel.numbers import get_territory_currencies

    de = Locale("de")
    facts = []
    for code, country in sorted(de.territories.items()):
        languages = [de.languages[x] for x in get_official_languages(code) if x in de.languages]
        currencies = [de.currencies[x] for x in get_territory_currencies(code) if x in de.currencies]
        if len(code) == 2 and code.isalpha() and languages and currencies:
            spoken = " und ".join([", ".join(languages[:-1]), languages[-1]] if len(languages) > 1 else languages)
            facts.append(f"In {country} spricht man {spoken}. Die Währung von {country} heißt {currencies[0]}. "
                         f"Wer nach {country} reist, bezahlt dort mit {currencies[0]}.")
    return facts


def german_documents(n: int, seed: int = 0) -> list[str]:
    from babel import Locale

    de, rng, facts = Locale("de"), random.Random(seed), country_facts()
    languages, scripts = sorted(set(de.languages.values())), sorted(set(de.scripts.values()))
    docs = []
    for i in range(n):
        named = [languages[(4 * i + k) % len(languages)] for k in range(5)]
        everyday = [f"{rng.choice(SUBJECTS)} {rng.choice(ACTIONS)} {rng.choice(PLACES)}." for _ in range(2)]
        docs.append(" ".join([facts[i % len(facts)], f"{', '.join(named[:-1])} und {named[-1]} sind Sprachen.",
                              f"Man schreibt sie zum Beispiel in {scripts[(2 * i) % len(scripts)]}.", *everyday]))
    return docs


def german_topics(per_topic: int, seed: int = 0) -> list[tuple[str, str]]:
    rng, rows = random.Random(seed), []
    for topic, sentences in TOPICS.items():
        made: set[str] = set()
        while len(made) < per_topic:
            made.add(f"{rng.choice(sentences)} {rng.choice(PLACES)}. {rng.choice(sentences)}.")
        rows += [(text, topic) for text in sorted(made)]
    return rows


def job(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "2")}
    done = subprocess.run([sys.executable, "-m", "pipeline.job", "--preset", "smoke", "--device", "cpu", *args],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def cell_outputs(notebook: Path) -> list[tuple[str, str]]:
    """(source, printed text) of every code cell of an executed notebook."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return [("".join(c["source"]), "".join("".join(o.get("text", "")) for o in c["outputs"]))
            for c in cells if c["cell_type"] == "code"]


@pytest.fixture(scope="module")
def german(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The issue's command, run once: German files, no labelled set, through 06. What 05 wrote is kept."""
    root = tmp_path_factory.mktemp("german")
    corpus, topics = root / "korpus", root / "themen"
    corpus.mkdir()
    topics.mkdir()
    (corpus / "de.txt").write_text("\n".join(german_documents(600)) + "\n", encoding="utf-8")
    with (topics / "themen.csv").open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([("text", "label"), *german_topics(50)])
    done = job("--lang", "de", "--corpus", f"files:{corpus}", "--out", str(root / "runs"),
               "--figures", str(root / "figures"))
    run = RunLayout(root / "runs" / "smoke-de")
    return {"root": root, "corpus": corpus, "topics": topics, "run": run, "stdout": done.stdout,
            "record": json.loads(run.probe_record.read_text()), "table": pd.read_csv(run.probe_table),
            "cells": cell_outputs(run.executed("05_probing"))}


@pytest.fixture(scope="module")
def probed(german: dict[str, Any]) -> dict[str, Any]:
    """The same run given a labelled set: ``--labelled files:DIR``."""
    done = job("--lang", "de", "--corpus", f"files:{german['corpus']}", "--labelled", f"files:{german['topics']}",
               "--out", str(german["root"] / "runs"), "--no-figures")
    run = german["run"]
    return {"stdout": done.stdout, "record": json.loads(run.probe_record.read_text()),
            "table": pd.read_csv(run.probe_table)}


def test_german_from_local_files_runs_through_05_and_records_no_labelled_set(german: dict[str, Any]) -> None:
    record = german["record"]
    assert record["status"] == "no labelled set for de" and record["lang"] == "de" and record["results"] == []
    assert "--labelled files:PATH" in record["how_to_give_one"] and "-p labelled" in record["how_to_give_one"]
    assert list(german["table"].columns) == list(TABLE_COLUMNS) and german["table"].empty
    stamp = json.loads((german["run"].step("probe") / ".step.json").read_text())
    assert stamp["params"]["labelled"] == "none"  # the job chose none for de, and 05 finished


def test_notebook_05_says_how_to_give_one_and_skips_the_probe(german: dict[str, Any]) -> None:
    cells = german["cells"]
    [where] = [n for n, (source, _) in enumerate(cells) if "skip_without_labelled_set(setup)" in source]
    said = cells[where][1]
    assert "no labelled set for de" in said and "--labelled files:PATH" in said
    later = cells[where + 1:]
    assert later and all(text == f"{SKIPPED_MARK}no labelled set for de\n" for _, text in later)


def test_the_job_goes_on_to_06_over_a_run_without_probe_results(german: dict[str, Any]) -> None:
    assert "[done] 05_probing" in german["stdout"] and "[done] 06_figures" in german["stdout"]
    [run] = json.loads((german["root"] / "figures" / "provenance.json").read_text())["runs"]
    assert run["lang"] == "de"
    assert (german["root"] / "figures" / "table3_accuracy.csv").is_file()


def test_with_a_labelled_files_set_the_same_run_probes(german: dict[str, Any], probed: dict[str, Any]) -> None:
    for step in ("01_masking", "02_tokenizer", "03_static_vectors", "04_pretraining"):
        assert f"[skip] {step}" in probed["stdout"]  # only the probe depends on the labelled set
    assert "[run ] 05_probing" in probed["stdout"]
    record, table = probed["record"], probed["table"]
    assert "status" not in record and record["labelled"] == f"files:{german['topics']}"
    assert sorted(record["label_names"]) == sorted(TOPICS) and record["lang"] == "de"
    assert {"majority", "random init", "BERT_TINY", "BERT_FT"} <= set(table["model"])
    assert table["accuracy"].between(0, 1).all() and (table["n_test"] > 0).all()


def test_check_names_a_labelled_file_whose_content_changed(german: dict[str, Any], probed: dict[str, Any]) -> None:
    themen = german["topics"] / "themen.csv"
    themen.write_text(themen.read_text(encoding="utf-8") + "Der Schnee schmilzt im Frühling.,wetter\n",
                      encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "pipeline.job", "--preset", "smoke", "--lang", "de", "--corpus",
                           f"files:{german['corpus']}", "--labelled", f"files:{german['topics']}", "--out",
                           str(german["root"] / "runs"), "--no-figures", "--check"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and f"05_probing (input labelled {german['topics']} changed" in done.stdout
