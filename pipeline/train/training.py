"""Pretrain one model from prepared files, with checkpoints, resume, run.json and metrics.csv (notebook 04, the CLI).

:func:`compare_runs` answers the paper's question: how many steps did BERT_FT need to reach BERT_TINY's final
evaluation loss and accuracy?
"""

from __future__ import annotations

import contextlib
import csv
import json
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from helpers.crossing import crossing_step, fraction_of
from helpers.model import InitSpec, build_model, count_parameters, permute_vector_rows, use_attention
from helpers.presets import TrainConfig, check_choice, check_count
from helpers.pretrain import (
    Evaluation,
    RunningLoss,
    StepContext,
    TrainingDiverged,
    make_step_context,
    step_options,
    train_loop,
)
from helpers.static_vectors import Alignment, vocab_fingerprint
from pipeline.store import checkpoints as ck
from pipeline.store.layout import (
    METRIC_COLUMNS,
    PERMUTES,
    TRAINABLE_MODELS,
    WEB_CONTROL,
    WEB_MODEL,
    WEB_SOURCE,
    ModelFiles,
    PretrainFiles,
    StaticFiles,
    read_metrics,
)
from pipeline.store.runinfo import environment, pick_device
from pipeline.store.staging import written_whole
from pipeline.train import distributed
from pipeline.train.prepare import PreparedData, load_data, load_data_tokenizer
from pipeline.vectors.static_files import load_aligned


def check_model_init(model_name: str, init: InitSpec) -> None:
    """BERT_TINY starts from random embeddings, BERT_FT and its control from static vectors."""
    check_choice("model name", model_name, TRAINABLE_MODELS)
    random = isinstance(init, str) and init == "random"
    if model_name != "bert_tiny" and random:
        raise ValueError(f"{model_name} needs static vectors: pass init (--init) = the static/ folder notebook 03 "
                         "wrote")
    if model_name == "bert_tiny" and not random:
        raise ValueError(f"bert_tiny starts from random embeddings, but init={str(init)!r} was given; "
                         "use --model bert_ft for static vectors, or --init random")
    web = model_name in (WEB_MODEL, WEB_CONTROL)
    if isinstance(init, (str, Path)) and not random and (StaticFiles(Path(init)).manifest.is_file()):
        source = json.loads(StaticFiles(Path(init)).manifest.read_text(encoding="utf-8")).get("source")
        if web != (source == WEB_SOURCE):  # a model's name says where its vectors come from
            start = "vectors pretrained on other text" if web else "this run's vectors"
            folder = ("the folder pipeline.vectors.pretrained_vectors wrote (RUN/static_web)" if web
                      else "notebook 03's static/")
            raise ValueError(f"{model_name} starts from {start}, but {init} holds {source!r} vectors; give {folder}")


def load_training_data(data_dir: str | Path, cfg: TrainConfig, tokenizer: Any,
                       init: InitSpec) -> tuple[PreparedData, Any]:
    """The prepared data and its tokenizer, checked against the config and the static vectors (a matrix aligned to
    another tokenizer of the same size is refused; folders written before fingerprints carry none and pass)."""
    data = load_data(data_dir)
    if data.seq_len != cfg.seq_len or bool(data.meta["packing"]) != cfg.packing:
        raise ValueError(f"the prepared data has seq_len={data.seq_len}, packing={data.meta['packing']} but the "
                         f"config asks for seq_len={cfg.seq_len}, packing={cfg.packing}; rerun prepare_data")
    tokenizer = tokenizer if tokenizer is not None else load_data_tokenizer(data.directory)
    if len(tokenizer) != data.meta["vocab_size"]:
        raise ValueError(f"the tokenizer has {len(tokenizer)} tokens but the data was prepared with "
                         f"{data.meta['vocab_size']}; use the tokenizer saved with the data in {data.directory}")
    built_for, data_for = (ck.init_record(init)["manifest"] or {}).get("vocab_sha256"), data.meta.get("vocab_sha256")
    if built_for and data_for and built_for != data_for:
        raise ValueError("the static vectors were aligned to a different vocabulary than the one the data was "
                         "prepared with (same size, other tokens or order); rerun notebook 03 with the tokenizer "
                         "saved in the data folder, or prepare the data with the tokenizer notebook 03 used")
    return data, tokenizer


def train(model_name: str, init: InitSpec, cfg: TrainConfig, data_dir: str | Path, out_dir: str | Path,
          tokenizer: Any = None, device: str = "auto", seed: int = 0, resume: bool = True,
          stop_at: int | None = None, progress: bool = True,
          model_overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Pretrain one model into ``out_dir/model_name``; returns run.json's content.

    ``init`` is 'random' (BERT_TINY) or a static-vector folder / Alignment (BERT_FT). ``stop_at`` ends the call
    after that step with a checkpoint, for time-boxed sessions and the resume test; ``model_overrides`` change
    the Table 4 config (the tests use a tiny model). Under torchrun process 0 alone writes the files. A non-finite
    loss or gradient norm raises TrainingDiverged after run.json records ``finished: false`` and the step.
    """
    check_model_init(model_name, init)
    if stop_at is not None:
        check_count("stop_at", stop_at)
    world = distributed.from_environment()
    dev = distributed.process_device(pick_device(device), world)

    def train_in_group() -> dict[str, Any]:
        # The model lives in this frame only, so it is freed before the process group goes, also after an error:
        # freed after it, gloo's threads were joined while they waited for the GIL, and torchrun never ended.
        data, tokens = load_training_data(data_dir, cfg, tokenizer, init)
        overrides = {"vocab_size": len(tokens), "pad_token_id": tokens.pad_token_id, **(model_overrides or {})}
        start, permutation = starting_embeddings(model_name, init, seed)
        model = build_model(static_init(start), seed=seed, **overrides)
        use_attention(model, step_options(cfg, dev, world).attention)
        model.to(dev).train()
        # Every process draws the same masks (the collator's seed) but its own dropout (a stream per process);
        # the dropout stream starts in the same place for both models.
        torch.manual_seed(distributed.dropout_seed(seed, world))
        ctx = make_step_context(model, cfg, tokens, str(dev), seed)
        if world.distributed:
            world.my_rows(cfg.batch_size)  # refuse a batch that does not split evenly, before any step
            ctx = replace(ctx, world=world)  # __post_init__ sizes the options and builds the loss for this world
        record = run_record(model_name, start, ctx, seed, data, tokens)
        if permutation is not None:
            record["init"].update(source=ck.init_record(init)["source"], permutation=permutation)
        key = {"model_name": model_name, "identity": record["identity"], "init": record["init"],
               "model_overrides": overrides, "world_size": world.world_size}
        with RunFiles(PretrainFiles(Path(out_dir)).model(model_name), record, key, world, resume, progress) as run:
            step = train_loop(ctx, data, run, seed, cfg.steps if stop_at is None else min(cfg.steps, stop_at))
        return run.finish(step, ctx)

    threads = torch.get_num_threads()
    if cfg.cpu_threads and dev.type == "cpu":
        torch.set_num_threads(cfg.cpu_threads)
    try:
        with distributed.process_group(dev, world):
            return train_in_group()
    finally:
        torch.set_num_threads(threads)


def starting_embeddings(model_name: str, init: InitSpec, seed: int) -> tuple[InitSpec, dict[str, Any] | None]:
    """What the model starts from, and for a control how its rows were permuted (a fixed permutation per seed)."""
    if model_name not in PERMUTES:
        return init, None
    alignment = static_init(init)
    found = getattr(alignment, "found", None)
    if found is None:
        raise ValueError(f"{model_name} permutes the rows that hold a static vector, so it needs the static/ "
                         "folder (or an Alignment with its found mask), not a bare matrix")
    matrix, order = permute_vector_rows(np.asarray(alignment.matrix), found, seed)
    record = {"rows": int(len(order)), "fixed_points": int((order == np.arange(len(order))).sum()),
              "generator": "numpy default_rng(SeedSequence([seed, helpers.model.PERMUTATION_STREAM]))",
              "order_sha256": ck.arrays_fingerprint({"order": order}, {}),
              "unpermuted_embeddings_sha256": ck.init_record(alignment)["embeddings_sha256"]}
    return Alignment(matrix, np.asarray(found), dict(alignment.report)), record


def static_init(init: InitSpec) -> InitSpec:
    """What helpers.model.build_model takes: 'random' or an Alignment (a static/ folder is read here)."""
    if (isinstance(init, str) and init == "random") or hasattr(init, "matrix") or isinstance(init, np.ndarray):
        return init
    return load_aligned(init)


def run_record(model_name: str, init: InitSpec, ctx: StepContext, seed: int, data: PreparedData,
               tokenizer: Any) -> dict[str, Any]:
    """run.json: the run's identity and init first, then what a reader wants to know about it."""
    init_info, cfg, model = ck.init_record(init), ctx.cfg, ctx.model
    identity = ck.run_identity(data.meta.get("lang"), seed, cfg, data.meta.get("corpus"), data.fingerprint(),
                               vocab_fingerprint(tokenizer))
    return {
        "model_name": model_name, "identity": identity,
        "init": {k: init_info[k] for k in ("kind", "manifest_sha256", "embeddings_sha256", "source")},
        "preset": cfg.name, "lang": data.meta.get("lang"), "corpus": data.meta.get("corpus"), "steps": cfg.steps,
        "max_steps": cfg.max_steps, "batch_size": cfg.batch_size, "seq_len": cfg.seq_len, "seed": seed,
        "init_manifest": init_info["manifest"], "parameters": count_parameters(model),
        "attention": model.config._attn_implementation, "train_config": asdict(cfg),
        "model_config": model.config.to_dict(), "data": data.meta, "data_dir": str(data.directory),
        "environment": environment(str(ctx.device)), "world_size": ctx.world.world_size,
        "step_options": asdict(ctx.options),
    }


class RunFiles(contextlib.AbstractContextManager):
    """The ``run`` helpers.pretrain.train_loop reports to, kept on disk in one model's folder; process 0 alone
    writes, every process reads its own random streams back from the checkpoint."""

    def __init__(self, files: ModelFiles, record: dict[str, Any], key: dict[str, Any], world: distributed.World,
                 resume: bool, progress: bool) -> None:
        self.files, self.record, self.key, self.world = files, record, key, world
        self.may_resume, self.show_progress = resume, progress and world.is_main
        self.rows: list[dict[str, Any]] = []
        self.started = time.perf_counter()
        self.bar: Any = None
        if world.is_main:
            files.folder.mkdir(parents=True, exist_ok=True)

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: Any) -> None:
        """The progress bar closes whatever happened; a diverged run records its step and why in run.json."""
        if self.bar is not None:
            self.bar.close()
        if isinstance(error, TrainingDiverged):
            self.write_record(finished=False, steps_done=error.step, stopped=str(error))

    def resume(self, ctx: StepContext) -> tuple[int, RunningLoss]:
        """Where this run's checkpoint stopped, or step 0. Process 0 reads it and hands it to the others (an
        unreadable one raises the same error in every process), so several machines need no shared disk."""
        step, train_loss, saved = 0, RunningLoss(ctx.device), None
        if self.world.is_main and self.may_resume and self.files.checkpoint.exists():
            try:
                saved = ck.load_checkpoint(self.files.checkpoint)
            except ck.CheckpointError as err:
                saved = err
        saved = self.world.broadcast_from_main(saved)
        if isinstance(saved, Exception):
            raise saved
        if saved is not None:
            ck.check_resumable(self.files.checkpoint, saved["key"], self.key, saved.get("train_config"),
                               asdict(ctx.cfg))
            ctx.model.load_state_dict(saved["model"])  # onto the parameters' device
            ctx.optimizer.load_state_dict(saved["optimizer"])
            ctx.scheduler.load_state_dict(saved["scheduler"])
            rng = saved.get("process_rng", [saved["rng"]])[self.world.rank]
            ck.set_rng_state(rng, ctx.collator.generator(ctx.device), ctx.device)
            step, self.rows = saved["step"], saved["metrics"]
            self.started -= saved["elapsed_s"]
            train_loss = RunningLoss(ctx.device, *saved["running_loss"])
        self.write_record(finished=False, steps_done=step)
        return step, train_loss

    def progress(self, steps: range) -> Iterable[int]:
        if not self.show_progress:
            return steps
        self.bar = tqdm(steps, total=self.record["steps"], initial=steps.start - 1, desc=self.record["model_name"],
                        mininterval=10, dynamic_ncols=True)
        return self.bar

    def log(self, step: int, train_loss: float, evaluation: Evaluation, lr: float) -> None:
        """One metrics.csv row (train_loss: the mean since the previous row, NaN at step 0; lr: the next step's,
        so 0.0 when finished); after the final evaluation also each masked position's result."""
        self.rows.append({"step": step, "train_loss": train_loss, "eval_loss": evaluation.loss,
                          "eval_accuracy": evaluation.accuracy, "lr": lr,
                          "elapsed_s": round(time.perf_counter() - self.started, 2)})
        write_metrics(self.files.metrics, self.rows)
        if evaluation.positions is not None:
            with written_whole(self.files.positions) as tmp:  # a .npz name, so np.savez adds no suffix
                np.savez(tmp, **evaluation.positions)
        if self.bar is not None:
            self.bar.set_postfix(train=f"{train_loss:.3f}", eval=f"{evaluation.loss:.3f}",
                                 acc=f"{evaluation.accuracy:.3f}", refresh=False)

    def checkpoint(self, step: int, ctx: StepContext, train_loss: RunningLoss, batches: dict[str, Any]) -> None:
        """Process 0 writes the checkpoint, with every process's random streams (each draws its own dropout)."""
        rng = ck.rng_state(ctx.collator.generator(ctx.device), ctx.device)
        process_rng = self.world.gather_to_main(rng)
        if self.world.is_main:
            ck.save_checkpoint(self.files.checkpoint, {
                "key": self.key, "train_config": asdict(ctx.cfg), "step": step, "metrics": self.rows,
                "sampler": batches, "running_loss": train_loss.state(), "elapsed_s": time.perf_counter() - self.started,
                "model": ctx.model.state_dict(), "optimizer": ctx.optimizer.state_dict(),
                "scheduler": ctx.scheduler.state_dict(), "rng": rng, "process_rng": process_rng})

    def finish(self, step: int, ctx: StepContext) -> dict[str, Any]:
        """Record how far the run got; a finished run also saves its model. Returns run.json's content."""
        finished, seconds = step >= ctx.cfg.steps, round(time.perf_counter() - self.started, 2)
        if self.world.is_main and finished:
            ctx.model.save_pretrained(str(self.files.model))
        self.write_record(finished=finished, steps_done=step, train_seconds=seconds)
        return self.record

    def write_record(self, **changes: Any) -> None:
        self.record.update(changes)
        if self.world.is_main:
            ck.write_run_json(self.files.run_json, self.record)


def write_metrics(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    """metrics.csv rewritten whole (a full disk or a kill leaves the previous one, never half of it)."""
    with written_whole(Path(path)) as tmp, open(tmp, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=METRIC_COLUMNS)
        writer.writeheader()
        writer.writerows({k: row[k] for k in METRIC_COLUMNS} for row in rows)


def _rows_and_identity(metrics: Any, identity: Mapping[str, Any] | None) -> tuple[list[Mapping[str, Any]], Any]:
    """The rows of a metrics.csv path (with the identity in the run.json beside it, unless given) or rows given."""
    if not isinstance(metrics, (str, Path)):
        return list(metrics), identity
    if identity is None:
        identity = (ck.read_run_json(ModelFiles(Path(metrics).parent).run_json) or {}).get("identity")
    return read_metrics(metrics), identity


def compare_runs(tiny_metrics: str | Path | Sequence[Mapping[str, Any]],
                 ft_metrics: str | Path | Sequence[Mapping[str, Any]],
                 tiny_identity: Mapping[str, Any] | None = None,
                 ft_identity: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Final numbers of both models and when BERT_FT reached BERT_TINY's final ones (helpers.crossing's rule);
    refuses runs whose identities (from the run.json beside each metrics.csv, or given) differ."""
    tiny, tiny_identity = _rows_and_identity(tiny_metrics, tiny_identity)
    ft, ft_identity = _rows_and_identity(ft_metrics, ft_identity)
    ck.check_same_experiment(tiny_identity, ft_identity)
    if not tiny or not ft:
        raise ValueError("both metrics tables need at least one row")
    # "final" is the last step both reached (a run stopped early against a longer one)
    shared = min(int(tiny[-1]["step"]), int(ft[-1]["step"]))
    tiny, ft = ([r for r in rows if int(r["step"]) <= shared] for rows in (tiny, ft))
    t, f = ({k: rows[-1][k] for k in ("step", "train_loss", "eval_loss", "eval_accuracy")} for rows in (tiny, ft))
    steps = [r["step"] for r in ft]
    loss_step = crossing_step(steps, [r["eval_loss"] for r in ft], t["eval_loss"], lower_is_better=True)
    acc_step = crossing_step(steps, [r["eval_accuracy"] for r in ft], t["eval_accuracy"], lower_is_better=False)
    return {  # keys spelled whole: notebook 04 and the tests read them by name
        "bert_tiny_final": t, "bert_ft_final": f,
        "ft_steps_to_tiny_final_eval_loss": loss_step,
        "ft_steps_to_tiny_final_eval_accuracy": acc_step,
        "ft_fraction_to_tiny_final_eval_loss": fraction_of(loss_step, t["step"]),
        "ft_fraction_to_tiny_final_eval_accuracy": fraction_of(acc_step, t["step"]),
        "eval_loss_difference": f["eval_loss"] - t["eval_loss"],
        "eval_accuracy_difference": f["eval_accuracy"] - t["eval_accuracy"],
        "ft_ahead": bool(f["eval_loss"] < t["eval_loss"] and f["eval_accuracy"] > t["eval_accuracy"]),
    }


def write_comparison(out_dir: str | Path) -> dict[str, Any]:
    folder = PretrainFiles(Path(out_dir))
    result = compare_runs(folder.model("bert_tiny").metrics, folder.model("bert_ft").metrics)
    ck.write_run_json(folder.comparison, result)  # whole or not at all, like run.json
    return result
