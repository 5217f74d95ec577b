"""Scores at the [MASK], random and unchanged positions, beside all positions, with the floors that need no context.

Of the scored positions 10 % show their own token, so a model that copies it is right there without any context:
BERT_TINY, BERT_FT, the unigram and the copy-aware rule are scored on exactly the same positions, per kind.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import numpy as np
import pandas as pd

from evidence.results import Run, RunSet, SeedGroup, cached_per_runset, comparison_groups, display_path, read_positions
from helpers import paper_values as paper
from helpers.baselines import POSITION_KINDS, copy_aware_scores, position_kinds, unigram_log_probs
from helpers.claims import BOOTSTRAP_DRAWS, CONFIDENCE, Estimate, seed_estimate, seed_t_interval
from helpers.stats import percentile_interval, two_level_draws
from pipeline.store.baseline_files import load_token_facts
from pipeline.store.layout import EXTRA_MODELS, RunLayout

SCORER_LABELS = {"bert_tiny": "BERT_TINY", "bert_ft": "BERT_FT", "unigram": "unigram (no context)",  # in table order
                 "copy_aware": "copy-aware (copy the visible token, else unigram; no context)"}
KINDS = ("all", *POSITION_KINDS)


@dataclass
class RunPositions:
    """One run's scored positions: which kind each is, and every scorer's loss and correctness there."""

    kinds: np.ndarray
    where: np.ndarray  # sequence * 2**16 + position: equal across seeds when they were scored on the same tokens
    label: np.ndarray
    facts: dict[str, np.ndarray]
    scores: dict[str, dict[str, np.ndarray]]  # scorer -> {"loss", "correct"} as floats
    top1: dict[str, np.ndarray]  # model -> its top prediction per position

    def select(self, kind: str) -> np.ndarray:
        return np.ones(len(self.kinds), bool) if kind == "all" else self.kinds == POSITION_KINDS.index(kind)

    def mean(self, scorer: str, key: str, kind: str = "all") -> float:
        chosen = self.select(kind)
        return float(self.scores[scorer][key][chosen].mean()) if chosen.any() else math.nan


def positions_of(run: Run, name: str) -> dict[str, np.ndarray] | str:
    """One model's per-position results of its final evaluation, or why they cannot be used."""
    model = run.model(name)
    files = model.files or RunLayout(run.run_dir).model(name)
    if not files.positions.is_file():
        return f"{display_path(files.positions)} not found (needs per-position results of the final evaluation)"
    if model.last_step != run.last_step:
        return f"{paper.MODEL_LABELS[name]} evaluated past the step both models share, so its positions do not match"
    found = read_positions(files)
    if abs(found["correct"].mean() - run.final(name, "eval_accuracy")) > 1e-6:
        return f"{display_path(files.positions)} disagrees with {files.metrics.name}'s final accuracy"
    return found


def run_positions(run: Run) -> RunPositions | str:
    """Every scorer on the run's positions, or why they cannot be scored by kind; once per loaded run."""
    if run.positions is None:
        run.positions = _score_run(run)
    return run.positions


def _score_run(run: Run) -> RunPositions | str:
    found = {name: positions_of(run, name) for name in paper.MODELS}
    if problem := next((f for f in found.values() if isinstance(f, str)), None):
        return problem
    tiny, ft = found["bert_tiny"], found["bert_ft"]
    if "visible" not in tiny or "visible" not in ft:
        return "its per-position records predate the [MASK]-only scores (no ids of what the model saw); retrain it"
    if not all(np.array_equal(tiny[key], ft[key]) for key in ("sequence", "position", "label", "visible")):
        return "BERT_TINY and BERT_FT were scored on different positions"
    layout = RunLayout(run.run_dir)
    try:
        facts = load_token_facts(layout.step("pretrain"), layout.static.found)
    except (FileNotFoundError, KeyError, ValueError) as err:
        return f"no token facts: {err}"
    label, visible, mask_id = tiny["label"], tiny["visible"], int(facts["mask_id"])
    log_probs = unigram_log_probs(facts["train_count"].astype(np.float64), [int(i) for i in facts["special"]])
    copy_loss, copy_correct = copy_aware_scores(label, visible, mask_id, log_probs)
    for extra in (name for name in EXTRA_MODELS if name in run.models):  # the extra arms where trained, same positions
        arm = found[extra] = positions_of(run, extra)
        if isinstance(arm, str) or not all(np.array_equal(arm[k], tiny[k]) for k in ("sequence", "position")):
            return arm if isinstance(arm, str) else f"{paper.MODEL_LABELS[extra]} was scored on other positions"
    scores = {name: {key: found[name][key] for key in ("loss", "correct")} for name in found}
    scores["unigram"] = {"loss": -log_probs[label], "correct": (label == int(np.argmax(log_probs))).astype(float)}
    scores["copy_aware"] = {"loss": copy_loss, "correct": copy_correct.astype(float)}
    where = tiny["sequence"] * 65_536 + tiny["position"]
    top1 = {name: found[name]["top1"] for name in found}
    return RunPositions(position_kinds(visible, label, mask_id), where, label, facts, scores, top1)


def group_positions(group: SeedGroup) -> tuple[list[RunPositions], bool] | str:
    """Each seed's positions and whether all seeds were scored on the same tokens, or why there are none."""
    found = [run_positions(run) for run in group.runs]
    if problem := next((f for f in found if isinstance(f, str)), None):
        return problem
    same = all(np.array_equal(f.where, found[0].where) and np.array_equal(f.kinds, found[0].kinds) for f in found)
    return found, same


def seed_differences(pairs: Iterable[tuple[dict[str, np.ndarray], dict[str, np.ndarray]]],
                     key: str) -> tuple[list[np.ndarray], bool]:
    """Each seed's change from its base, ``(base, changed)`` positions read by ``read_positions``: ``changed`` minus
    ``base`` in ``key``, and whether the bases share their positions (by index in records without their ids)."""
    diffs, where = [], []
    for base, changed in pairs:
        diffs.append(changed[key] - base[key])
        where.append(base["sequence"] * 65_536 + base["position"] if "sequence" in base else np.arange(len(base[key])))
    return diffs, all(np.array_equal(w, where[0]) for w in where)


def model_differences(group: SeedGroup, key: str) -> tuple[list[np.ndarray], bool] | str:
    """BERT_FT minus BERT_TINY in ``key`` at every scored position, per seed, and whether the seeds share
    their positions: all positions, so records from before the [MASK]-only scores serve too. The first problem
    is returned before any later positions are read (a later seed's corrupt file must not hide it)."""
    pairs = []
    for run in group.runs:
        tiny = positions_of(run, "bert_tiny")
        if isinstance(tiny, str):
            return tiny
        ft = positions_of(run, "bert_ft")
        if isinstance(ft, str):
            return ft
        pairs.append((tiny, ft))
    return seed_differences(pairs, key)


def paired_difference(runs: list[RunPositions], chosen: list[np.ndarray], same: bool, first: str, second: str,
                      key: str, salt: str) -> Estimate:
    """``first`` minus ``second`` in ``key`` at each seed's ``chosen`` positions: the mean over seeds, the
    two-level interval (its draws seeded by ``salt``) and the seed-level t-interval."""
    diffs = [r.scores[first][key][c] - r.scores[second][key][c] for r, c in zip(runs, chosen)]
    return seed_estimate([float(d.mean()) for d in diffs], lambda: (diffs, same), seed=zlib.crc32(salt.encode()))


def share_estimate(runs: list[RunPositions], same: bool, key: str, salt: str, part: tuple[str, str],
                   whole: tuple[str, str] = ("bert_ft", "bert_tiny")) -> dict[str, Any]:
    """(part[0] - part[1]) / (whole[0] - whole[1]) in ``key`` at the [MASK] positions: the ratio of the means over
    seeds, the paired two-level bootstrap ratio's interval and the t-interval over the per-seed ratios."""
    chosen = [r.select("mask") for r in runs]
    top, bottom = ([r.scores[a][key][c] - r.scores[b][key][c] for r, c in zip(runs, chosen)] for a, b in (part, whole))
    per_seed = [float(t.mean() / b.mean()) if b.mean() else math.nan for t, b in zip(top, bottom)]
    seed = zlib.crc32(salt.encode())  # the same seed: both draws resample the same seeds and positions
    with np.errstate(divide="ignore", invalid="ignore"):  # a draw with no head start has no share: NaN, left out
        ratio = (two_level_draws(top, same_positions=same, draws=BOOTSTRAP_DRAWS, seed=seed)
                 / two_level_draws(bottom, same_positions=same, draws=BOOTSTRAP_DRAWS, seed=seed))
    ratio[~np.isfinite(ratio)] = np.nan
    low, high = percentile_interval(ratio, CONFIDENCE)
    seed_low, seed_high = seed_t_interval(per_seed)
    share = float(np.mean([t.mean() for t in top]) / np.mean([b.mean() for b in bottom]))
    return {"share": share, "share ci_low": low, "share ci_high": high, "share seed_ci_low": seed_low,
            "share seed_ci_high": seed_high, "share_per_seed": " / ".join(f"{v:.3f}" for v in per_seed),
            "interval": f"paired two-level bootstrap of the ratio, {BOOTSTRAP_DRAWS:,} draws; t over seeds"}


def share_text(share: dict[str, Any] | pd.Series) -> str:
    """'103 % [91 %, 126 %; seeds 57 % to 154 %]': a share with both of its intervals."""
    seeds = (f"; seeds {share['share seed_ci_low']:.0%} to {share['share seed_ci_high']:.0%}"
             if np.isfinite(share["share seed_ci_low"]) else "")
    return f"{share['share']:.0%} [{share['share ci_low']:.0%}, {share['share ci_high']:.0%}{seeds}]"


def estimate_columns(est: Estimate, mean: str = "ours", prefix: str = "") -> dict[str, Any]:
    """An estimate as table columns: its mean (column ``mean``), the two-level interval's and the seed-level
    t-interval's ends (``prefix`` + 'ci_low' and so on), and how the interval was made."""
    return {mean: est.mean, f"{prefix}ci_low": est.low, f"{prefix}ci_high": est.high, "interval": est.interval,
            f"{prefix}seed_ci_low": est.seed_low, f"{prefix}seed_ci_high": est.seed_high}


def kind_mean(group: SeedGroup, scorer: str, key: str, kind: str) -> float:
    found = group_positions(group)
    return math.nan if isinstance(found, str) else float(np.mean([r.mean(scorer, key, kind) for r in found[0]]))


def group_table(groups: Iterable[SeedGroup], build: Callable[[SeedGroup, list[RunPositions], bool], list[dict]],
                why: str | None = None, columns: list[str] | None = None) -> pd.DataFrame:
    """``build``'s rows for every group with runs; a group whose positions cannot be scored says why in column
    ``why`` (no row when ``why`` is None)."""
    rows: list[dict[str, Any]] = []
    for group in (g for g in groups if g.runs):
        found = group_positions(group)
        if not isinstance(found, str):
            rows += build(group, *found)
        elif why is not None:
            rows.append({"lang": group.lang, "label": group.label, why: found})
    return pd.DataFrame(rows, columns=columns)


def _kind_rows(group: SeedGroup, runs: list[RunPositions], same: bool) -> list[dict[str, Any]]:
    return [{"lang": group.lang, "label": group.label, "scorer": SCORER_LABELS[scorer], "kind": kind,
             "positions": int(runs[0].select(kind).sum()), "share": float(runs[0].select(kind).mean()),
             "loss": float(np.mean([r.mean(scorer, "loss", kind) for r in runs])),
             "accuracy": float(np.mean([r.mean(scorer, "correct", kind) for r in runs])), "status": "ok"}
            for scorer in SCORER_LABELS for kind in KINDS]


@cached_per_runset
def position_kinds_table(runset: RunSet) -> pd.DataFrame:
    """One row per language, scorer and kind of position: loss, accuracy and how many positions, mean over seeds."""
    return group_table(comparison_groups(runset), _kind_rows, "status",
                       ["lang", "label", "scorer", "kind", "positions", "share", "loss", "accuracy", "status"])
