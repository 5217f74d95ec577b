"""The paper's Tables 1-3 rebuilt from our run folders beside the paper's numbers, and the files they go to; notebook
06's one door into the machinery (``__all__``). Our short runs are not the paper's 100,000 steps on C4: each row of
ours names its preset, steps and seeds, and the context-free floors (unigram, copy-aware) show what a run must clear."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np
import pandas as pd

from evidence.claims_table import gain_estimate, steps_saved_figure, steps_saved_note, steps_saved_table, verify_claims
from evidence.figure_plots import (
    FIGURE_FORMATS,
    figure1_loss,
    figure2_accuracy,
    figure3_accuracy_by_language,
    save_figure,
)
from evidence.other_text import NOTE as WEB_NOTE
from evidence.other_text import other_text_answer, share_table, vector_sources_table, web_table
from evidence.position_scores import SCORER_LABELS, group_positions, kind_mean, position_kinds_table
from evidence.results import (
    RunSet,
    SeedGroup,
    cached_per_runset,
    comparison_groups,
    display_path,
    load_runs,
    main_groups,
    order_langs,
    pair_problem,
    sort_runs,
)
from evidence.token_analysis import (
    cloze_table,
    control_table,
    knowledge_or_scale,
    knowledge_share_table,
    prediction_kinds_table,
    token_groups_figure,
    token_groups_table,
)
from helpers import paper_values as paper
from helpers.claims import BOOTSTRAP_DRAWS, TESTABLE_MARGIN, Estimate
from pipeline.store.layout import INTERACTIVE_DIR, PROVENANCE_NAME, repo_path, run_folder_name
from pipeline.store.runinfo import RECORDED_PACKAGES, code_version, package_versions, quiet_libraries

__all__ = [  # notebook 06's set-up, tables and outputs, and what it calls from the other machinery modules
    "FiguresSetup", "start", "setting_comparison", "table1_vectors_found", "table2_loss", "table3_accuracy",
    "position_kinds_table", "unchanged_sentences", "token_groups_table", "prediction_kinds_table", "cloze_table",
    "control_table", "knowledge_share_table", "knowledge_or_scale", "web_table", "share_table", "other_text_answer",
    "steps_saved_table", "steps_saved_figure", "training_progress_table",
    "format_table", "narrow_views", "to_markdown", "featured_lang", "provenance", "write_outputs", "load_runs",
    "comparison_groups", "verify_claims", "kind_mean", "figure1_loss", "figure2_accuracy",
    "figure3_accuracy_by_language", "FIGURE_FORMATS",
]

FIGURE_NAMES = ("fig1a_train_loss", "fig1b_eval_loss", "fig2_eval_accuracy", "fig3_accuracy_by_language",
                "fig5_steps_saved")
RECORD_FIGURE_NAMES = ("fig4_gain_by_frequency",)  # drawn when the per-position records hold the [MASK]-only ids
MISSING_MARK = "—"
PAPER_RUN_LABEL = f"paper ({paper.STEPS:,} steps, batch {paper.BATCH_SIZE}, C4, cc.LANG.300)"
_PAPER_TRAIN_MINUS_EVAL = sorted(paper.TRAIN_LOSS[lang][m] - paper.EVAL_LOSS[lang][m] for lang in paper.LANGS
                                 for m in paper.MODELS)  # Table 2, both columns of each model


class FiguresSetup(NamedTuple):
    """Notebook 06's resolved folders: the run folders it draws from and the folder it writes."""

    run_dirs: list[Path]
    out_dir: Path


def start(run_dirs: Sequence[str | Path] | None, out_dir: str | Path | None) -> FiguresSetup:
    """Notebook 06's first cell; by hand (no folders passed) it draws the English demo run of notebooks 01-05."""
    quiet_libraries()
    folders = [repo_path(d) for d in run_dirs] if run_dirs else [INTERACTIVE_DIR / run_folder_name("demo", "en")]
    out = repo_path(out_dir) if out_dir else INTERACTIVE_DIR / "figures"
    print("run folders:", *folders)
    print("figures and tables go to:", out)
    return FiguresSetup(folders, out)


def vector_source_text(manifest: dict[str, Any] | None) -> str | None:
    """Readable origin of a run's static vectors from its manifest ('train', 'published' or 'file')."""
    manifest = manifest or {}
    source = manifest.get("source")
    texts = {"train": "fastText trained here" + (f" on {manifest['corpus']}" if manifest.get("corpus") else ""),
             "published": f"fastText cc.{manifest.get('lang', 'LANG')}.300 (published)",
             "file": f"vectors from {Path(str(manifest.get('vectors_path', '?'))).name}"}
    return texts.get(source, None if source is None else str(source))


@cached_per_runset
def table1_vectors_found(runset: RunSet) -> pd.DataFrame:
    """Table 1: tokens of the vocabulary that got a static vector; one row per run folder of ours."""
    rows = []
    for lang in order_langs(set(paper.LANGS) | set(runset.langs())):
        if lang in paper.VECTORS_FOUND:
            n = paper.VECTORS_FOUND[lang]
            label = f"paper (cc.LANG.300, top {paper.TOP_N_WORDS:,} words)"
            rows.append({"lang": lang, "source": "paper", "label": label, "preset": None, "seed": None,
                         "vectors_found": n, "vocab_size": paper.VOCAB_SIZE, "fraction_found": n / paper.VOCAB_SIZE,
                         "vector_source": paper.VECTOR_SOURCE, "top_n": paper.TOP_N_WORDS, "status": "published",
                         "run_dir": None})
        for run in runset.runs_for(lang):  # a language with no run folder keeps the paper's row only
            m = run.manifest or {}
            n_found, vocab = m.get("n_found"), m.get("vocab_size")
            rows.append({"lang": lang, "source": "ours", "label": f"ours ({run.preset})", "preset": run.preset,
                         "seed": run.seed, "vectors_found": n_found, "vocab_size": vocab,
                         "fraction_found": n_found / vocab if n_found is not None and vocab else math.nan,
                         "vector_source": vector_source_text(m), "top_n": m.get("top_n"),
                         "status": "ok" if m else "missing: no static/manifest.json",
                         "run_dir": display_path(run.run_dir)})
    return pd.DataFrame(rows).astype(dict.fromkeys(("vectors_found", "vocab_size", "top_n", "seed"), "Int64"))


def _interval_columns(estimate: Estimate | None, prefix: str = "") -> dict[str, Any]:
    if estimate is None:
        return {f"{prefix}ci_low": math.nan, f"{prefix}ci_high": math.nan, f"{prefix}interval": None}
    interval = estimate.interval if estimate.interval != "none" else estimate.note or "none"
    return {f"{prefix}ci_low": estimate.low, f"{prefix}ci_high": estimate.high, f"{prefix}interval": interval}


FLOOR_LABELS = {  # the rows of the floors that need no context, on the same evaluation positions
    "unigram": "unigram (training-text token frequencies, no context; same evaluation positions)",
    "copy-aware": "copy-aware (copy the visible token, else unigram; no context; same evaluation positions)"}
NO_VALUES = (math.nan, math.nan)  # one per model


class _Finals(NamedTuple):
    """What Tables 2 and 3 tell apart: the metric they compare, where its floors come from, their column names."""

    metric: str  # the final evaluation's column: eval_loss or eval_accuracy
    key: str  # the same per scored position: loss or correct
    unigram: str  # the unigram floor's value in baseline.json
    head: str  # each model's column is head + its label
    diff: str  # the column of BERT_FT minus BERT_TINY
    published: dict[str, dict[str, float]]  # the paper's, per language and model


_TABLE2 = _Finals("eval_loss", "loss", "unigram_loss", "eval_loss ", "eval FT - TINY", paper.EVAL_LOSS)
_TABLE3 = _Finals("eval_accuracy", "correct", "unigram_accuracy", "", "FT - TINY", paper.EVAL_ACCURACY)
FrontColumns = Callable[[str, SeedGroup | None, str], dict[str, Any]]  # (lang, group, row's source) -> columns


def _per_model(head: str, values: Sequence[float]) -> dict[str, float]:
    return {f"{head}{paper.MODEL_LABELS[name]}": value for name, value in zip(paper.MODELS, values)}


def _final_columns(spec: _Finals, finals: Sequence[float] = NO_VALUES, diff: float = math.nan,
                   est: Estimate | None = None, at_mask: Sequence[float] = NO_VALUES,
                   mask_est: Estimate | None = None) -> dict[str, Any]:
    """Each model's final value, FT - TINY with its interval, then the same at [MASK] alone; NaN where unmeasured."""
    return {**_per_model(spec.head, finals), spec.diff: diff, **_interval_columns(est),
            **_per_model(f"[MASK] {spec.head}", at_mask), "[MASK] FT - TINY": mask_est.mean if mask_est else math.nan,
            **_interval_columns(mask_est, "[MASK] ")}


def _finals_table(runset: RunSet, spec: _Finals, front: FrontColumns = lambda lang, group, source: {}) -> pd.DataFrame:
    """Rows per language: the paper's, ours (mean over seeds), the context-free floors, then runs that cannot count;
    ``steps``: where the numbers were measured (100,000 for the paper, our last shared evaluation for us)."""
    def row(lang: str, label: str, status: str, finals: dict[str, Any], group: SeedGroup | None = None,
            source: str = "ours", run_dir: str | None = None) -> dict[str, Any]:
        return {"lang": lang, "source": source, "label": label, "preset": group.first.preset if group else None,
                "steps": paper.STEPS if source == "paper" else group.total_steps if group else None,
                "n_seeds": None if source == "paper" else len(group.runs) if group else 0,
                "seeds": ",".join(map(str, group.seeds)) if group else None, **front(lang, group, source),
                **finals, "status": status,
                "run_dir": ", ".join(display_path(r.run_dir) for r in group.runs) if group else run_dir}

    groups = comparison_groups(runset)
    rows = []
    for lang in order_langs(set(paper.LANGS) | set(runset.langs())):
        if lang in spec.published:
            values = [spec.published[lang][name] for name in paper.MODELS]
            rows.append(row(lang, PAPER_RUN_LABEL, "published", _final_columns(spec, values, values[1] - values[0]),
                            source="paper"))
        lang_groups = [g for g in groups if g.lang == lang]  # none: the paper's row only, no row of "—"
        for group in (g for g in lang_groups if g.runs):  # ours: means over seeds, FT's paired difference
            est = gain_estimate(group, spec.metric)
            finals = [group.mean(lambda run, name=name: run.final(name, spec.metric)) for name in paper.MODELS]
            at_mask = [kind_mean(group, name, spec.key, "mask") for name in paper.MODELS]
            rows.append(row(lang, group.label, "ok" + (f"; {group.note}" if group.note else ""), _final_columns(
                spec, finals, est.mean, est, at_mask, gain_estimate(group, spec.metric, "mask")), group))
            floors = [("unigram", "unigram", group.baseline[spec.unigram])] if group.baseline is not None else []
            if not isinstance(group_positions(group), str):
                floors.append(("copy-aware", "copy_aware", kind_mean(group, "copy_aware", spec.key, "all")))
            for source, scorer, every in floors:  # what a run must clear, in both models' columns
                at_mask = kind_mean(group, scorer, spec.key, "mask")
                rows.append(row(lang, FLOOR_LABELS[source], "baseline",
                                _final_columns(spec, (every, every), at_mask=(at_mask, at_mask)), group, source))
        for path, why in (lang_groups[0].excluded.items() if lang_groups else ()):
            rows.append(row(lang, "ours (no comparable run)", why, _final_columns(spec), run_dir=path))
    return pd.DataFrame(rows).astype({"steps": "Int64", "n_seeds": "Int64"})


def _training_losses(lang: str, group: SeedGroup | None, source: str) -> dict[str, Any]:
    """Table 2's first columns: each model's training loss in both readings (``TABLE_NOTES``); the paper gives
    one, the unigram floor its loss on the training text."""
    train = run_mean = NO_VALUES
    if source == "paper":
        train = [paper.TRAIN_LOSS[lang][name] for name in paper.MODELS]
    elif source == "ours" and group is not None:
        train = [group.mean(lambda run, name=name: run.final(name, "train_loss")) for name in paper.MODELS]
        run_mean = [group.mean(lambda run, name=name: run.model(name).run_mean("train_loss", run.last_step))
                    for name in paper.MODELS]
    elif source == "unigram" and group is not None and group.baseline:
        train = (group.baseline["unigram_train_loss"],) * 2
    return {**_per_model("train_loss ", train), **_per_model("train_loss (run mean) ", run_mean)}


@cached_per_runset
def table2_loss(runset: RunSet) -> pd.DataFrame:
    """Table 2: final losses of both models (means over seeds; two readings of the training loss, see
    ``TABLE_NOTES``), FT's difference, the floors; also at [MASK] alone, where no context-free shortcut helps."""
    return _finals_table(runset, _TABLE2, _training_losses)


@cached_per_runset
def table3_accuracy(runset: RunSet) -> pd.DataFrame:
    """Table 3: final masked-token accuracy of both models (means over seeds), FT's gain with its interval,
    at all scored positions (as the paper reports) and at the [MASK] positions alone."""
    return _finals_table(runset, _TABLE3)


@cached_per_runset
def training_progress_table(runset: RunSet) -> pd.DataFrame:
    """Per run and model: passes over the training text, and the evaluation loss's change over the last tenth of the
    steps, where the learning rate decays to 0: a loss still falling there says more steps would help."""
    rows = []
    for run in sort_runs(runset.runs):
        for name, model in run.models.items():
            if model.metrics is None or model.metrics.empty:
                continue
            last, evaluated = model.last_step, model.metrics["step"]
            since = int(evaluated[evaluated <= last - round(0.1 * last)].iloc[-1])  # the last at or before 90 %
            change = model.final("eval_loss") - model.final("eval_loss", upto=since)
            falling = MISSING_MARK if math.isnan(change) else "yes" if change < 0 else "no"
            rows.append({"lang": run.lang, "seed": run.seed, "model": paper.MODEL_LABELS.get(name, name), "steps": last,
                         "passes over the training text": model.passes(last), "eval_loss": model.final("eval_loss"),
                         "from step": since, "eval_loss change from that step": change,
                         "still falling at the end": falling})
    return pd.DataFrame(rows)


def unchanged_sentences(by_kind: pd.DataFrame) -> list[str]:
    """One sentence per language from :func:`position_kinds_table`: how often the copy-aware floor and each model
    are right where the model sees its own token (``unchanged``), and at ``mask``; the numbers as the table has them."""
    sentences = []
    for lang, part in by_kind[by_kind["status"] == "ok"].groupby("lang", sort=False):
        acc = {(scorer, kind): value for scorer, kind, value in zip(part["scorer"], part["kind"], part["accuracy"])}
        at = {kind: [acc[(SCORER_LABELS[s], kind)] for s in ("copy_aware", "bert_tiny", "bert_ft")]
              for kind in ("unchanged", "mask")}
        (copy, tiny, ft), mask = at["unchanged"], at["mask"]
        gaps = ", ".join(f"{name} {abs(copy - value):.3f} {'below' if value < copy else 'above'} it"
                         for name, value in (("BERT_TINY", tiny), ("BERT_FT", ft)))
        sentences.append(f"{lang}, at the unchanged positions: the copy-aware floor is right {copy:.3f} of the time, "
                         f"BERT_TINY {tiny:.3f} and BERT_FT {ft:.3f} ({gaps}); at [MASK]: copy-aware {mask[0]:.3f}, "
                         f"BERT_TINY {mask[1]:.3f}, BERT_FT {mask[2]:.3f}.")
    return sentences


SETTING_ROWS = {"preset": "{}", "seed": "{}", "training steps": "{:,}", "batch size": "{}", "sequence length": "{}",
                "evaluated every": "{:,.0f} steps", "vocabulary": "{:,}", "static vectors": "{}",
                "vectors looked up among": "top {:,} words", "corpus": "{}"}  # each row's format


@cached_per_runset
def setting_comparison(runset: RunSet) -> pd.DataFrame:
    """The settings behind the numbers, ours beside the paper's: why our values are not the paper's."""
    columns = {"paper": (None, None, paper.STEPS, paper.BATCH_SIZE, paper.SEQ_LEN, paper.EVAL_EVERY, paper.VOCAB_SIZE,
                         paper.VECTOR_SOURCE, paper.TOP_N_WORDS, paper.CORPUS)}
    for run in sort_runs(runset.runs):
        info = run.model("bert_tiny").info or run.model("bert_ft").info or {}
        metrics = next((m for m in (run.model(n).metrics for n in paper.MODELS) if m is not None), None)
        manifest = run.manifest or {}
        columns[f"{run.lang}{f' seed {run.seed}' if run.seed else ''}: {run.label}"] = (
            run.preset, run.seed, run.steps, info.get("batch_size"), info.get("seq_len"),
            metrics["step"].diff().median() if metrics is not None and len(metrics) > 1 else None,
            manifest.get("vocab_size"), vector_source_text(manifest), manifest.get("top_n"),
            info.get("corpus") or (f"{manifest['corpus']} (the vectors' corpus)" if manifest.get("corpus") else None))
    formats = SETTING_ROWS.values()
    return pd.DataFrame({name: [MISSING_MARK if pd.isna(v) else fmt.format(v) for v, fmt in zip(values, formats)]
                         for name, values in columns.items()}, index=list(SETTING_ROWS))


STEP_COLUMNS = ("steps", "tiny_step", "model_step", "steps_saved")  # always a step (a mean over seeds may be 233.3)
_STEP_ROW_COLUMNS = ("ours", "ci_low", "ci_high", "seed_ci_low", "seed_ci_high")  # a step in a crossing row


def _format_cell(value: Any, column: str, whole_step: bool) -> str:
    if pd.isna(value):  # None, NaN or pd.NA
        return MISSING_MARK
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}" if column != "lang" else str(value)
    if isinstance(value, (float, np.floating)):
        if whole_step or (column == "ours" and float(value).is_integer()):
            return f"{math.floor(float(value) + 0.5):,}"  # whole steps, half up
        return f"{value:+.3f}" if column in ("FT - TINY", "eval FT - TINY", "[MASK] FT - TINY") else f"{value:.3f}"
    return str(value)


def format_table(table: pd.DataFrame) -> pd.DataFrame:
    """All cells as text, missing values as '—', steps (the step columns, a crossing's or a steps-saved row's values)
    whole although the CSV keeps the mean over seeds: for display and Markdown, not for further computing."""
    step_rows = ([True] * len(table) if "steps_saved" in table
                 else table["claim_id"].astype(str).str.endswith("crossing_step").tolist() if "claim_id" in table
                 else [False] * len(table))
    return pd.DataFrame({c: [_format_cell(v, c, c in STEP_COLUMNS or (c in _STEP_ROW_COLUMNS and step_row))
                             for v, step_row in zip(table[c].tolist(), step_rows)] for c in table.columns},
                        index=table.index)


_PAIR = ("BERT_TINY", "BERT_FT")
_VIEWS = {  # Tables 2 and 3 split into tables a page can show: (title, columns); "CI" joins ci_low and ci_high
    "table2_loss": [
        ("final loss at all scored positions, as the paper reports it",
         ["lang", "source", "steps", *(f"train_loss {m}" for m in _PAIR), *(f"eval_loss {m}" for m in _PAIR),
          "eval FT - TINY", "CI"]),
        ("the same at the [MASK] positions only, and the training loss averaged over the whole run",
         ["lang", "source", *(f"[MASK] eval_loss {m}" for m in _PAIR), "[MASK] FT - TINY", "[MASK] CI",
          *(f"train_loss (run mean) {m}" for m in _PAIR)])],
    "table3_accuracy": [
        ("final accuracy at all scored positions, as the paper reports it",
         ["lang", "source", "steps", *_PAIR, "FT - TINY", "CI"]),
        ("the same at the [MASK] positions only",
         ["lang", "source", *(f"[MASK] {m}" for m in _PAIR), "[MASK] FT - TINY", "[MASK] CI"])],
}
_PROVENANCE_VIEW = (f"where each row of ours comes from: its run, its seeds, how its interval was made (the paper's "
                    f"rows: {PAPER_RUN_LABEL})", ["lang", "source", "label", "n_seeds", "seeds", "interval", "status"])


def narrow_views(table: pd.DataFrame, name: str) -> dict[str, pd.DataFrame]:
    """Table 2 or 3 (``name``) as the narrow titled views the notebook shows (the files keep the whole table): an
    interval as one '[low, high]' cell, and no row with nothing to show in a view (the paper's at [MASK])."""
    text = format_table(table)
    for prefix in ("", "[MASK] "):
        low, high = text[f"{prefix}ci_low"], text[f"{prefix}ci_high"]
        text[f"{prefix}CI"] = [MISSING_MARK if a == MISSING_MARK else f"[{a}, {b}]" for a, b in zip(low, high)]
    views = {title: text[columns][(text[columns[2:]] != MISSING_MARK).any(axis=1)].reset_index(drop=True)
             for title, columns in _VIEWS[name]}
    title, columns = _PROVENANCE_VIEW
    views[title] = text[table["source"] != "paper"][columns].reset_index(drop=True)
    return views


def to_markdown(table: pd.DataFrame) -> str:
    """A GitHub-style Markdown table (own writer: DataFrame.to_markdown needs the optional `tabulate`)."""
    text = format_table(table)
    rows = [text.columns, ["---"] * len(text.columns), *text.itertuples(index=False)]
    return "".join("| " + " | ".join(str(v).replace("|", "\\|") for v in row) + " |\n" for row in rows)


def featured_lang(runset: RunSet) -> str | None:
    """The paper features Czech in Figures 1-2; we use it if we have a comparable run, else our first language."""
    langs = list(main_groups(runset))
    return paper.FEATURED_LANG if paper.FEATURED_LANG in langs else next(iter(langs), None)


def provenance(runset: RunSet, files: Sequence[Path], lang: str | None) -> dict[str, Any]:
    """Which runs and which code produced the outputs; no dates or commit hashes (runinfo.code_version names the
    code), so the same code drawing the same runs leaves the committed files as they are."""
    runs = []
    for run in sort_runs(runset.runs):
        models = {}
        for name in paper.MODELS:
            model = run.model(name)
            info = model.info or {}
            env = info.get("environment") or {}
            models[name] = {"steps": model.steps, "last_evaluated_step": model.last_step,
                            **{k: info.get(k) for k in ("batch_size", "seq_len", "seed", "corpus", "max_steps")},
                            **{k: env.get(k) for k in ("code_version", "device", "device_name")}}
        static = {k: (run.manifest or {}).get(k) for k in ("source", "vectors_path", "top_n", "n_found", "vocab_size")}
        runs.append({"run_dir": display_path(run.run_dir), "lang": run.lang, "preset": run.preset, "seed": run.seed,
                     "steps": run.steps, "pair": pair_problem(run) or "ok", "models": models, "static": static,
                     "unigram_baseline": run.baseline.as_dict() if run.baseline else run.baseline_problem,
                     "missing": run.missing})
    return {
        "generated_by": "evidence.figures.write_outputs (notebooks/06_figures.ipynb)",
        "code_version": code_version(),
        "packages": package_versions((*RECORDED_PACKAGES, "pandas")),
        "paper": paper.CITATION,
        "paper_setting": {"steps": paper.STEPS, "batch_size": paper.BATCH_SIZE, "eval_every": paper.EVAL_EVERY,
                          "corpus": paper.CORPUS, "vectors": paper.VECTOR_SOURCE},
        "figures_1_2_language": lang,
        "paper_languages_without_run": [x for x in paper.LANGS if x not in runset.langs_with_metrics()],
        "runs": runs, "files": [p.name for p in files],
    }


TABLE_NOTES = {
    "table2_loss": ("train_loss is the mean over the last interval between two evaluations (what Figure 1a ends on "
                    "and what the comparison with the paper uses); train_loss (run mean) averages the whole run. The "
                    f"paper's training losses lie {_PAPER_TRAIN_MINUS_EVAL[0]:.3f}-{_PAPER_TRAIN_MINUS_EVAL[-1]:.3f} "
                    "above its evaluation losses, which a whole-run average fits better; it does not say which it "
                    "reports."),
    "claims_check": (f"testable: at the [MASK] positions BERT_TINY's final eval loss is more than {TESTABLE_MARGIN} "
                     "nat below the unigram's (elsewhere copying the visible token needs no context); interval: 95 %, "
                     f"a two-level bootstrap over seeds, then positions ({BOOTSTRAP_DRAWS:,} draws; with one seed, "
                     "positions only); seed_ci: 95 %, a t-interval over the per-seed values (df = seeds - 1; none "
                     "with one seed); holds_on_ours: 'holds' only when both intervals lie on the paper's side of 0, "
                     "'not shown' when they include 0, 'not shown (seeds disagree)' when one does and the other not."),
    "table_control": ("At the [MASK] positions: BERT_FT against the control BERT_FT_PERM (BERT_FT's vector rows "
                      "permuted among themselves: the same norms and spread, other words), and the control against "
                      "BERT_TINY; overall and by the true token's group. Intervals: 95 %, the two-level bootstrap "
                      f"over seeds, then positions ({BOOTSTRAP_DRAWS:,} draws), and beside it a t-interval over "
                      "the seeds. Beyond the paper."),
    "table_control_share": ("At the [MASK] positions: the share of BERT_FT's loss head start over BERT_TINY that "
                            "the vectors' knowledge makes, (FT - PERM) / (FT - TINY); share ci: the paired two-level "
                            "bootstrap of the ratio, share seed_ci: a t-interval over the per-seed ratios."),
    "table_vector_sources": ("Table 1 for both sources of static vectors (each language's first seed): vocabulary "
                             "tokens with a vector, with a row no other token shares, and with a shared one (a pruned "
                             "table maps many words to one row), and the copied rows' per-element std. Beyond the "
                             "paper."),
    "table_web": WEB_NOTE,
    "table_web_share": ("At the [MASK] positions: the share of BERT_FT's head start over BERT_TINY that BERT_FT_WEB "
                        "gives, (WEB - TINY) / (FT - TINY), in loss and in accuracy; share ci: the paired two-level "
                        "bootstrap of the ratio, share seed_ci: a t-interval over the per-seed ratios. Beyond the "
                        "paper."),
    "table_token_groups": ("At the [MASK] positions only, grouped by the true token; FT - TINY with a 95 % "
                           f"two-level bootstrap interval ({BOOTSTRAP_DRAWS:,} draws). Beyond the paper."),
    "table_prediction_kinds": ("At the [MASK] positions: the share of the true tokens and of each model's top "
                               "prediction that is punctuation or one of the 50 most frequent whole words of the "
                               "training text (mostly function words); one seed, named in each row's label. "
                               "Beyond the paper."),
    "table_position_kinds": ("Scored positions by what the model saw there: [MASK] (80 %), a random token (10 %) "
                             "or its own token (10 %, where copying is right). The paper reports all positions."),
}


def write_table(table: pd.DataFrame, out_dir: Path, name: str, note: str | None = None,
                shown: pd.DataFrame | None = None) -> list[Path]:
    """``name``.csv with every digit, and ``name``.md: ``shown`` (else the table itself) with the note below it."""
    table.to_csv(out_dir / f"{name}.csv", index=False)
    note = f"\n{note}\n" if note else ""
    (out_dir / f"{name}.md").write_text(to_markdown(table if shown is None else shown) + note)
    return [out_dir / f"{name}.csv", out_dir / f"{name}.md"]


TABLE_BUILDERS: dict[str, Callable[[RunSet], pd.DataFrame]] = {
    "table1_vectors_found": table1_vectors_found, "table2_loss": table2_loss, "table3_accuracy": table3_accuracy,
    "table_position_kinds": position_kinds_table, "claims_check": verify_claims,
    "table_token_groups": token_groups_table, "table_prediction_kinds": prediction_kinds_table,
    "table_steps_saved": steps_saved_table, "table_control": control_table,  # empty where no run trained one
    "table_control_share": knowledge_share_table, "table_web": web_table, "table_web_share": share_table,  # the same
    "table_vector_sources": vector_sources_table,
    "table_training_progress": training_progress_table}
TABLE_NAMES = tuple(TABLE_BUILDERS)


def write_outputs(runset: RunSet, out_dir: str | Path) -> list[Path]:
    """Every figure (PNG + PDF), table (CSV + Markdown) and provenance.json, under fixed names, into ``out_dir``
    only; Figures 1-2 (their language in titles and provenance) only when a run has metrics."""
    out_dir = repo_path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    lang = featured_lang(runset)
    tables = {name: build(runset) for name, build in TABLE_BUILDERS.items()}
    vs, beyond = f"({lang or 'no runs'}) - ours vs", "- ours, beyond"  # each figure's title: its name, then this
    figures = {} if lang is None else {FIGURE_NAMES[0]: (figure1_loss(runset, lang, "train"), vs),
                                       FIGURE_NAMES[1]: (figure1_loss(runset, lang, "eval"), vs),
                                       FIGURE_NAMES[2]: (figure2_accuracy(runset, lang), vs)}
    figures[FIGURE_NAMES[3]] = figure3_accuracy_by_language(runset), vs
    figures[FIGURE_NAMES[4]] = steps_saved_figure(tables["table_steps_saved"]), beyond
    if tables["table_token_groups"]["grouping"].notna().any():
        figures[RECORD_FIGURE_NAMES[0]] = token_groups_figure(tables["table_token_groups"]), beyond
    written = [path for name, (fig, title) in figures.items()
               for path in save_figure(fig, out_dir, name, f"{name} {title} {paper.CITATION}")]
    notes = {**TABLE_NOTES, "table_steps_saved": steps_saved_note(runset, tables["table_steps_saved"])}
    written += [path for name, table in tables.items() for path in write_table(table, out_dir, name, notes.get(name))]
    prov_path = out_dir / PROVENANCE_NAME
    prov_path.write_text(json.dumps(provenance(runset, written, lang), indent=2, default=str))
    return [*written, prov_path]
