"""Ablations of BERT_FT's initialisation: one choice of notebook 03 changed at a time, BERT_FT trained again.

Each variant trains on the **same prepared data, tokenizer, seed and schedule** as a finished run of notebooks
01-05, whose BERT_FT is the ``paper`` row and BERT_TINY the random-init row: every difference is paired by seed
and evaluation position, with notebook 06's intervals (helpers.claims.seed_estimate).
The table and figure of the results are the evidence's: ``python -m evidence.ablations``.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import sys
from dataclasses import asdict, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping, NamedTuple, Sequence

import numpy as np

from helpers import presets
from helpers import static_vectors as sv
from helpers.presets import VectorsConfig
from helpers.pretrain import cap_steps
from pipeline.corpora.data import CorpusSpec
from pipeline.store.fingerprints import pair_mismatch
from pipeline.store.layout import AblationLayout, RunLayout, VariantFiles, display_path
from pipeline.store.records import copy_into, mark_record, model_record_files, read_info
from pipeline.store.runinfo import device_argument
from pipeline.store.staging import written_whole
from pipeline.vectors.fasttext_training import FastTextSettings
from pipeline.vectors.static_files import load_aligned, save_aligned


class Variant(NamedTuple):
    """One change to the paper's alignment recipe: the VectorsConfig fields of notebook 03 it changes."""

    name: str
    changes: str  # what differs from the paper's recipe, for the table
    settings: Mapping[str, Any] = MappingProxyType({})  # read-only: a NamedTuple's default is shared by every variant


VARIANTS: dict[str, Variant] = {v.name: v for v in (
    Variant("paper", "none: zero fallback, unit length + centre, ## pieces skipped, scale as is"),
    # Another CPU or thread count reorders sums, which training amplifies: a determinism check of the pairing, not
    # the noise floor of a variant (that is BERT_FT's spread over seeds, ablation_table's *_noise_floor).
    Variant("paper_retrained", "none: the paper recipe trained again, so only floating-point rounding differs "
            "(a determinism check of the pairing)"),
    Variant("fallback_random", "tokens without a vector start from N(0, 0.02) instead of zeros (Section 4.2)",
            {"fallback": "random"}),
    Variant("normalise_none", "raw fastText vectors, neither unit length nor centred", {"normalisation": ()}),
    Variant("normalise_unit", "unit length only, not centred", {"normalisation": ("unit",)}),
    Variant("pieces_strip", "## pieces take the vector of the word they spell (##ing -> ing)", {"pieces": "strip"}),
    Variant("scale_bert", "copied rows rescaled to a per-element std of 0.02, BERT's initialiser", {"scale": "bert"}),
    # "do better vectors help?" (benchmarks/results/fasttext_settings.csv)
    Variant("vectors_old", "the old demo's vectors: skip-gram, 3 epochs, n-grams 3-6 (WordSim-353 0.240, "
            "not 0.536)", {"fasttext": FastTextSettings(model="skipgram", epochs=3)}),
)}
TRAINED = tuple(name for name in VARIANTS if name != "paper")


def check_variants(names: Sequence[str]) -> list[str]:
    if unknown := [n for n in names if n not in TRAINED]:
        raise ValueError(f"unknown ablation variant(s) {', '.join(unknown)}; choose from {', '.join(TRAINED)}")
    return list(names)


def _run_settings(run_dir: Path) -> tuple[dict[str, Any], VectorsConfig]:
    """The run's manifest and notebook 03's settings, checked against what the manifest says it used."""
    path = RunLayout(run_dir).static.manifest
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: the ablations start from a finished run of notebooks 01-05 "
                                "(python -m pipeline.job --preset reference --lang en)")
    manifest = json.loads(path.read_text(encoding="utf-8"))
    config = presets.get(manifest["preset"]).vectors
    if config.source != "train" or manifest.get("source") != "train":
        raise ValueError("the ablations retrain fastText as notebook 03 did, so they need a run whose vectors "
                         f"were trained here (preset smoke, demo or reference), not source={manifest.get('source')!r}")
    return manifest, config


def _raw_vectors(manifest: dict[str, Any], config: VectorsConfig, cache_dir: Path) -> sv.WordVectors:
    """fastText vectors trained as notebook 03 trains them with ``config`` (one thread: identical reruns), cached."""
    from pipeline.vectors import vector_files as vf

    key = hashlib.sha256(json.dumps([asdict(config.fasttext), manifest["lang"], manifest["seed"],
                                     manifest["corpus_source"], config.max_docs, config.top_n],
                                    sort_keys=True).encode()).hexdigest()[:16]
    cached = cache_dir / f"vectors-{key}.npz"
    if cached.is_file():
        with np.load(cached, allow_pickle=False) as data:
            return sv.WordVectors([str(w) for w in data["words"]], data["matrix"])
    source = vf.obtain_vectors(config, manifest["lang"], CorpusSpec.parse(manifest["corpus_source"]), manifest["seed"],
                               progress=False)
    cache_dir.mkdir(parents=True, exist_ok=True)
    # Written whole, then renamed: two processes ablating one run never read each other's half-written file.
    with written_whole(cached, tmp=cached.with_name(f".{cached.stem}.{os.getpid()}.npz"),
                       rerun="the vectors are made again") as partial:
        np.savez(partial, words=np.array(source.vectors.words), matrix=source.vectors.matrix)
    return source.vectors


def build_alignment(run_dir: Path, variant: Variant, cache_dir: Path) -> tuple[sv.Alignment, dict[str, Any]]:
    """The run's alignment with ``variant``'s one change (the 'paper' variant must reproduce the run's own), and its
    manifest: the run's, with what the variant changed and without what described the run's own vectors."""
    from helpers.tokenizer import load_tokenizer

    manifest, run_config = _run_settings(run_dir)
    config = replace(run_config, **variant.settings)
    raw = _raw_vectors(manifest, config, cache_dir)
    vectors = sv.normalise_vectors(raw, config.normalisation) if config.normalisation else raw
    alignment = sv.align(load_tokenizer(RunLayout(run_dir).step("tokenizer")), vectors, seed=int(manifest["seed"]),
                         top_n=config.top_n, fallback=config.fallback, pieces=config.pieces, case=config.case,
                         scale=config.scale)
    retrained = {"fasttext": asdict(config.fasttext)} if "fasttext" in variant.settings else {}
    dropped = {"normalisation", "fallback", "pieces", "scale", "n_found", "found_element_std", "text_coverage",
               *(("word_similarity", "train_seconds", "train_cpu_seconds", "n_model_words") if retrained else ())}
    return alignment, {**{k: v for k, v in manifest.items() if k not in dropped}, "ablation": variant.name,
                       "changes": variant.changes, "normalisation": list(config.normalisation), **retrained}


def check_reproduces_run(run_dir: Path, cache_dir: Path) -> None:
    """The rebuilt paper variant must equal the run's saved embeddings, or the ablations compare unlike things."""
    rebuilt, _ = build_alignment(run_dir, VARIANTS["paper"], cache_dir)
    static = RunLayout(run_dir).step("static")
    saved = load_aligned(static)
    if not (np.array_equal(rebuilt.found, saved.found) and np.array_equal(rebuilt.matrix, saved.matrix)):
        raise ValueError(f"retraining fastText did not reproduce {static}: the run's vectors came from "
                         "other settings or code; rerun notebook 03 for the run before ablating it")


def train_variant(run_dir: Path, name: str, out_dir: Path, device: str = "auto") -> VariantFiles:
    """Align with the variant's change and train BERT_FT as the run's BERT_FT was trained; returns its files."""
    from helpers.tokenizer import load_tokenizer
    from pipeline.train.training import train

    variant = VARIANTS[check_variants([name])[0]]
    ablations, run = AblationLayout(out_dir), RunLayout(run_dir)
    files = ablations.variant(run_dir.name, name)
    if not files.static.manifest.is_file():
        save_aligned(files.static.folder, *build_alignment(run_dir, variant, ablations.vectors_cache))
    tiny_info = read_info(run, "bert_tiny")
    # the TrainConfig the run's BERT_TINY was trained with: its preset's, capped as run.json records
    cfg, max_steps = presets.get(tiny_info["preset"]).train, (tiny_info.get("train_config") or {}).get("max_steps")
    train("bert_ft", files.static.folder, cap_steps(cfg, max_steps) if max_steps is not None else cfg,
          run.step("pretrain"), files.folder, tokenizer=load_tokenizer(run.step("tokenizer")), device=device,
          seed=int(tiny_info["seed"]))
    if problem := pair_mismatch(tiny_info, json.loads(files.model.run_json.read_text(encoding="utf-8"))):
        raise ValueError(f"{files.folder}: the variant's BERT_FT is not comparable with the run's BERT_TINY "
                         f"({problem})")
    return files


def save_variant_record(files: VariantFiles, records_dir: Path) -> Path:
    """Copy a trained variant's small files into ``records_dir``, laid out as an ablations folder."""
    record = AblationLayout(records_dir).variant(files.folder.parent.name, files.folder.name).folder
    paths = [files.static.manifest, *model_record_files(files.model)]
    for absent in (path for path in paths if not path.is_file()):
        raise FileNotFoundError(f"{absent} not found: train the variant first")
    copy_into(paths, files.folder, record)
    mark_record(record, f"ablation {files.folder.name} of {files.folder.parent.name}")
    return record


def main(argv: Sequence[str] | None = None) -> int:
    """Train every variant for every run (a stopped one resumes), each saved as a record with ``--records``; the
    table is the evidence's (python -m evidence.ablations)."""
    parser = argparse.ArgumentParser(prog="python -m pipeline.train.ablations", description=__doc__.splitlines()[0])
    add = parser.add_argument
    add("--runs", nargs="+", required=True, type=Path, help="finished run folders (one per seed)")
    add("--out", default="runs/ablations", type=Path, help="where variants are trained (resumable)")
    add("--records", default=None, type=Path, help="save each variant's small files here")
    add("--variants", default=",".join(TRAINED), help=f"comma-separated, from {', '.join(TRAINED)}")
    add("--device", default="auto", type=device_argument, help="auto, cpu, cuda or cuda:N")
    args = parser.parse_args(argv)
    try:
        names = check_variants([n.strip() for n in args.variants.split(",") if n.strip()])
        run_dirs, out = [d.resolve() for d in args.runs], args.out.resolve()
        for run_dir in run_dirs:
            check_reproduces_run(run_dir, AblationLayout(out).vectors_cache)
        for run_dir, name in itertools.product(run_dirs, names):
            print(f"== {run_dir.name} · {name}", flush=True)
            files = train_variant(run_dir, name, out, args.device)
            if args.records is not None:
                print(f"recorded {display_path(save_variant_record(files, args.records))}")
    except (ValueError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"the table: python -m evidence.ablations --runs {' '.join(map(str, args.runs))} "
          f"--records {args.records or args.out} --figures FOLDER")
    return 0


if __name__ == "__main__":
    sys.exit(main())
