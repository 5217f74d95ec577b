"""Pretraining on a tiny tokenizer and model: data formats, fixed eval mask, the loop, determinism, resume."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from helpers import presets
from helpers import pretrain as P
from helpers.masking import IGNORE_INDEX
from helpers.model import build_model
from pipeline.corpora.data import EMBEDDED, load_corpus
from pipeline.store.layout import PretrainFiles
from pipeline.train import prepare, training
from pipeline.train import train_cli as cli
from pipeline.train.shards import make_sequences, tokenize_corpus

SMALL_MODEL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=48)
CFG = presets.TrainConfig(name="test", steps=8, batch_size=4, seq_len=32, eval_every=2, checkpoint_every=4,
                    eval_batch_size=16, lr=2e-3)


@pytest.fixture(scope="module")
def corpus():
    train = load_corpus(EMBEDDED, "en", "train", max_docs=150).texts
    evaluation = load_corpus(EMBEDDED, "en", "eval", max_docs=24).texts
    return train, evaluation


@pytest.fixture(scope="module")
def tokenizer(small_tokenizer):
    return small_tokenizer  # conftest's: the same 400 tokens of the same 150 articles as ``corpus``


@pytest.fixture(scope="module")
def data_dir(small_prepared):
    return small_prepared(CFG.seq_len)  # conftest's: ``corpus`` prepared once for every module that trains


def _train(tokenizer, data_dir, out, **kw):
    kw.setdefault("init", "random")
    kw.setdefault("cfg", CFG)
    return training.train("bert_tiny" if kw["init"] == "random" else "bert_ft", kw.pop("init"), kw.pop("cfg"), data_dir,
                   out, tokenizer=tokenizer, device="cpu", seed=kw.pop("seed", 0), progress=False,
                   model_overrides=SMALL_MODEL, **kw)


def _without_time(rows):
    """Rows minus the wall clock, NaN (step 0 has no training loss yet) as None so == compares them."""
    return [{k: (None if v != v else v) for k, v in r.items() if k != "elapsed_s"} for r in rows]


# ---------------------------------------------------------------- data


def test_truncation_shapes_and_round_trip(tokenizer, corpus):
    texts = corpus[0][:40]
    tokenized = tokenize_corpus(tokenizer, texts)
    ids, lengths = make_sequences(tokenized, tokenizer, 32, packing=False)
    assert ids.shape == (40, 32) and ids.dtype == np.uint16
    for row, length, text in zip(ids, lengths, texts):
        expected = tokenizer(text, add_special_tokens=False)["input_ids"][:30]
        assert row[0] == tokenizer.cls_token_id and row[length - 1] == tokenizer.sep_token_id
        assert row[1:length - 1].tolist() == expected
        assert (row[length:] == tokenizer.pad_token_id).all()


def test_packing_fills_every_position_and_keeps_the_text(tokenizer, corpus):
    texts = corpus[0][:40]
    tokenized = tokenize_corpus(tokenizer, texts)
    ids, lengths = make_sequences(tokenized, tokenizer, 32, packing=True)
    assert ids.shape[1] == 32 and (lengths == 32).all()
    assert (ids[:, 0] == tokenizer.cls_token_id).all()
    stream = []
    for text in texts:
        stream += tokenizer(text, add_special_tokens=False)["input_ids"] + [tokenizer.sep_token_id]
    assert ids.shape[0] == len(stream) // 31
    assert ids[:, 1:].reshape(-1).tolist() == stream[: ids.shape[0] * 31]


def test_prepared_files_and_fixed_eval_mask(tokenizer, corpus, data_dir, tmp_path):
    first, second = prepare.load_data(data_dir), prepare.load_data(data_dir)
    assert np.array_equal(first.eval_masked_ids, second.eval_masked_ids)
    assert np.array_equal(first.eval_labels, second.eval_labels)
    labels = first.eval_labels
    scored = labels != IGNORE_INDEX
    n_eligible = int((first.eval_lengths.astype(int) - 2).sum())  # [CLS] and [SEP] are never masked
    assert scored.sum() > 0
    assert abs(scored.sum() / n_eligible - 0.15) < 5 * math.sqrt(0.15 * 0.85 / n_eligible)
    # Labels hold the original ids; unscored positions are unchanged.
    original = make_sequences(tokenize_corpus(tokenizer, corpus[1]), tokenizer, CFG.seq_len, False)[0]
    assert np.array_equal(labels[scored], original[scored])
    assert np.array_equal(first.eval_masked_ids[~scored], original[~scored])
    # Preparing again gives the same mask; another mask seed gives a different one.
    again = prepare.prepare_data(tokenizer, corpus[0], corpus[1], tmp_path / "a", seq_len=CFG.seq_len)
    other = prepare.prepare_data(tokenizer, corpus[0], corpus[1], tmp_path / "b", seq_len=CFG.seq_len, eval_mask_seed=7)
    assert again["eval"]["masked_positions"] == first.meta["eval"]["masked_positions"]
    assert np.array_equal(prepare.load_data(tmp_path / "a").eval_labels, labels)
    assert not np.array_equal(prepare.load_data(tmp_path / "b").eval_labels, labels)
    assert other["eval"]["sequences"] == labels.shape[0]


def test_missing_data_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="prepare_data"):
        prepare.load_data(tmp_path)


def test_sampler_is_a_function_of_seed_and_step():
    sampler = P.BatchSampler(10, 3, seed=5)
    assert np.array_equal(sampler.indices(4), P.BatchSampler(10, 3, seed=5).indices(4))
    epoch = np.concatenate([sampler.indices(s) for s in range(3)])
    assert len(set(epoch.tolist())) == 9  # no repeats inside an epoch
    assert not np.array_equal(sampler.indices(0), P.BatchSampler(10, 3, seed=6).indices(0))


# ---------------------------------------------------------------- training


def test_training_is_deterministic_and_writes_its_files(tokenizer, data_dir, tmp_path):
    info = _train(tokenizer, data_dir, tmp_path / "a")
    _train(tokenizer, data_dir, tmp_path / "b")
    a = training.read_metrics(tmp_path / "a" / "bert_tiny" / "metrics.csv")
    b = training.read_metrics(tmp_path / "b" / "bert_tiny" / "metrics.csv")
    assert _without_time(a) == _without_time(b)
    assert [r["step"] for r in a] == [0, 2, 4, 6, 8]
    assert math.isnan(a[0]["train_loss"]) and all(math.isfinite(r["train_loss"]) for r in a[1:])
    assert all(math.isfinite(r["eval_loss"]) and 0 <= r["eval_accuracy"] <= 1 for r in a)
    assert a[-1]["eval_loss"] < a[0]["eval_loss"]  # 8 steps at lr 2e-3 move a 400-token model
    run = json.loads((tmp_path / "a" / "bert_tiny" / "run.json").read_text())
    for key in ("model_name", "preset", "lang", "steps", "batch_size", "seq_len", "seed", "init", "environment"):
        assert key in run, key
    assert run["finished"] and info["steps_done"] == 8 and run["lang"] == "en"
    from transformers import BertForMaskedLM

    loaded = BertForMaskedLM.from_pretrained(tmp_path / "a" / "bert_tiny" / "model")
    assert loaded.config.vocab_size == len(tokenizer) and loaded.config.hidden_size == 32


def test_the_loop_of_helpers_alone_gives_the_metrics_of_the_file_backed_run(tokenizer, data_dir, tmp_path):
    """helpers.pretrain.train_loop with an in-memory run, set up as pipeline.train.training sets it up: same numbers."""
    _train(tokenizer, data_dir, tmp_path)
    data = prepare.load_data(data_dir)
    model = build_model("random", seed=0, vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                        **SMALL_MODEL)
    torch.manual_seed(0)  # the dropout stream, as pipeline.train.training starts it for one process
    run = P.InMemoryRun()
    assert P.train_loop(P.make_step_context(model, CFG, tokenizer, "cpu", seed=0), data, run, 0, CFG.steps) == 8
    on_disk = training.read_metrics(tmp_path / "bert_tiny" / "metrics.csv")
    assert _without_time(run.rows) == _without_time(on_disk)


def test_another_seed_changes_the_run(tokenizer, data_dir, tmp_path):
    _train(tokenizer, data_dir, tmp_path / "a", cfg=CFG.replace(steps=2, eval_every=2))
    _train(tokenizer, data_dir, tmp_path / "b", cfg=CFG.replace(steps=2, eval_every=2), seed=1)
    a = training.read_metrics(tmp_path / "a" / "bert_tiny" / "metrics.csv")
    b = training.read_metrics(tmp_path / "b" / "bert_tiny" / "metrics.csv")
    assert a[-1]["train_loss"] != b[-1]["train_loss"]


def test_resume_gives_the_same_metrics_and_weights(tokenizer, data_dir, tmp_path):
    _train(tokenizer, data_dir, tmp_path / "straight")
    # Stop mid-interval (step 3: between evaluations and checkpoints), then resume.
    partial = _train(tokenizer, data_dir, tmp_path / "resumed", stop_at=3)
    assert not partial["finished"] and partial["steps_done"] == 3
    _train(tokenizer, data_dir, tmp_path / "resumed")
    straight = training.read_metrics(tmp_path / "straight" / "bert_tiny" / "metrics.csv")
    resumed = training.read_metrics(tmp_path / "resumed" / "bert_tiny" / "metrics.csv")
    assert _without_time(straight) == _without_time(resumed)
    from transformers import BertForMaskedLM

    w1 = BertForMaskedLM.from_pretrained(tmp_path / "straight" / "bert_tiny" / "model").state_dict()
    w2 = BertForMaskedLM.from_pretrained(tmp_path / "resumed" / "bert_tiny" / "model").state_dict()
    assert all(torch.equal(w1[k], w2[k]) for k in w1)


def test_resume_refuses_a_checkpoint_of_another_run(tokenizer, data_dir, tmp_path):
    _train(tokenizer, data_dir, tmp_path, stop_at=2)
    with pytest.raises(ValueError, match="different run"):
        _train(tokenizer, data_dir, tmp_path, cfg=CFG.replace(lr=1e-3))


def test_bert_ft_run_records_its_static_init(tokenizer, data_dir, tmp_path):
    from helpers.static_vectors import Alignment
    from pipeline.vectors.static_files import load_aligned, save_aligned

    matrix = np.random.default_rng(0).normal(size=(len(tokenizer), 32)).astype(np.float32)
    found = np.ones(len(tokenizer), dtype=bool)
    static = save_aligned(tmp_path / "static", Alignment(matrix, found, {}), {"fallback": "zero"})
    cfg = CFG.replace(steps=2, eval_every=2)
    _train(tokenizer, data_dir, tmp_path, init=str(static), cfg=cfg)
    _train(tokenizer, data_dir, tmp_path, init="random", cfg=cfg)
    run = json.loads((tmp_path / "bert_ft" / "run.json").read_text())
    assert run["init"]["kind"] == "static" and run["init"]["source"] == str(static)
    assert len(run["init"]["manifest_sha256"]) == 64 and run["init_manifest"]["n_found"] == len(tokenizer)
    tiny_run = json.loads((tmp_path / "bert_tiny" / "run.json").read_text())
    assert tiny_run["init"]["kind"] == "random" and tiny_run["init"]["manifest_sha256"] is None
    assert tiny_run["identity"] == run["identity"]  # one experiment: only the init differs
    ft = training.read_metrics(tmp_path / "bert_ft" / "metrics.csv")
    tiny = training.read_metrics(tmp_path / "bert_tiny" / "metrics.csv")
    assert ft[0]["eval_loss"] != tiny[0]["eval_loss"]  # different embeddings from step 0
    assert load_aligned(static).matrix.shape == (len(tokenizer), 32)


def test_the_control_starts_from_bert_fts_rows_permuted_among_the_rows_with_a_vector(tokenizer, data_dir, tmp_path):
    """BERT_FT_PERM: the same rows as BERT_FT (so the same norms and spread), each moved to another token's id;
    rows without a vector stay zero; the permutation is fixed by the seed and recorded in run.json."""
    from helpers.static_vectors import Alignment
    from pipeline.vectors.static_files import save_aligned

    rng = np.random.default_rng(1)
    found = rng.random(len(tokenizer)) < 0.6
    matrix = np.where(found[:, None], rng.normal(size=(len(tokenizer), 32)), 0).astype(np.float32)
    static = save_aligned(tmp_path / "static", Alignment(matrix, found, {}), {"fallback": "zero"})
    cfg = CFG.replace(steps=2, eval_every=2)
    for name in ("bert_ft", "bert_ft_perm"):
        training.train(name, str(static), cfg, data_dir, tmp_path, tokenizer=tokenizer, device="cpu", seed=3,
                       progress=False, model_overrides=SMALL_MODEL, stop_at=1)
    start, record = training.starting_embeddings("bert_ft_perm", str(static), seed=3)
    rows = np.flatnonzero(found)
    assert np.array_equal(start.matrix[~found], matrix[~found]) and not start.matrix[~found].any()
    assert np.array_equal(np.sort(np.linalg.norm(start.matrix[rows], axis=1)),
                          np.sort(np.linalg.norm(matrix[rows], axis=1)))
    assert (start.matrix[rows] != matrix[rows]).any(axis=1).mean() > 0.95  # almost every row moved
    again, _ = training.starting_embeddings("bert_ft_perm", str(static), seed=3)
    other, _ = training.starting_embeddings("bert_ft_perm", str(static), seed=4)
    assert np.array_equal(again.matrix, start.matrix) and not np.array_equal(other.matrix, start.matrix)
    control = json.loads((tmp_path / "bert_ft_perm" / "run.json").read_text())
    ft = json.loads((tmp_path / "bert_ft" / "run.json").read_text())
    assert control["identity"] == ft["identity"]  # one experiment: only the init differs
    assert control["init"]["source"] == str(static) and control["init"]["permutation"] == record
    assert record["rows"] == found.sum() and record["unpermuted_embeddings_sha256"] == ft["init"]["embeddings_sha256"]
    assert control["init"]["embeddings_sha256"] != ft["init"]["embeddings_sha256"]


def test_the_control_refuses_random_embeddings(tokenizer, data_dir, tmp_path):
    with pytest.raises(ValueError, match="bert_ft_perm needs static vectors"):
        training.train("bert_ft_perm", "random", CFG, data_dir, tmp_path, tokenizer=tokenizer)


def test_mismatched_data_and_config_are_refused(tokenizer, data_dir, tmp_path):
    with pytest.raises(ValueError, match="seq_len"):
        _train(tokenizer, data_dir, tmp_path, cfg=CFG.replace(seq_len=64))
    with pytest.raises(ValueError, match="model name must be one of"):
        training.train("bert_base", "random", CFG, data_dir, tmp_path, tokenizer=tokenizer)


def test_cli_runs_from_prepared_files_only(data_dir, tmp_path, capsys):
    """The GPU route: no tokenizer argument, the one saved beside the data is used."""
    cfg_args = ["--steps", "2", "--batch-size", "4", "--eval-every", "2", "--checkpoint-every", "2"]
    small = presets.TrainConfig(name="test", steps=2, batch_size=4, seq_len=CFG.seq_len, eval_every=2,
                          checkpoint_every=2, eval_batch_size=16)
    with pytest.MonkeyPatch.context() as patch:  # the smoke preset's seq_len (64) differs from this data's
        patch.setitem(presets.PRESETS, "smoke", replace(presets.get("smoke"), train=small))
        code = cli.main(["--data", str(data_dir), "--out", str(tmp_path), "--model", "bert_tiny", "--preset", "smoke",
                         "--device", "cpu", *cfg_args])
    assert code == 0
    assert (tmp_path / "bert_tiny" / "metrics.csv").exists()
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["steps_done"] == 2


# ---------------------------------------------------------------- comparison and presets


def _rows(losses, accs):
    return [{"step": 10 * i, "train_loss": loss + 0.1, "eval_loss": loss, "eval_accuracy": a, "lr": 0.0,
             "elapsed_s": 0.0}
            for i, (loss, a) in enumerate(zip(losses, accs))]


def test_compare_runs_finds_the_first_strictly_better_step():
    tiny = _rows([9.0, 7.0, 6.0, 5.0], [0.0, 0.1, 0.2, 0.3])
    ft = _rows([8.0, 6.0, 4.9, 4.5], [0.05, 0.2, 0.31, 0.35])
    result = training.compare_runs(tiny, ft)
    assert result["ft_steps_to_tiny_final_eval_loss"] == 20
    assert result["ft_steps_to_tiny_final_eval_accuracy"] == 20
    assert result["ft_fraction_to_tiny_final_eval_loss"] == pytest.approx(20 / 30)
    assert result["ft_ahead"] and result["eval_loss_difference"] == pytest.approx(-0.5)
    never = training.compare_runs(ft, tiny)  # the other way round, the slower model never catches up
    assert never["ft_steps_to_tiny_final_eval_loss"] is None and not never["ft_ahead"]


def test_a_tie_with_the_final_value_is_not_a_crossing():
    tiny = _rows([9.0, 7.0, 6.0, 5.0], [0.0, 0.1, 0.2, 0.3])
    ft = _rows([8.0, 6.0, 5.0, 4.5], [0.05, 0.2, 0.3, 0.35])  # equal to tiny's final values at step 20
    result = training.compare_runs(tiny, ft)
    assert result["ft_steps_to_tiny_final_eval_loss"] == 30
    assert result["ft_steps_to_tiny_final_eval_accuracy"] == 30


def test_step_zero_never_counts_as_a_crossing():
    tiny = _rows([9.0, 7.0, 6.0], [0.0, 0.1, 0.2])
    ft = _rows([5.0, 6.5, 5.9], [0.5, 0.15, 0.21])  # better than tiny's final already at step 0
    result = training.compare_runs(tiny, ft)
    assert result["ft_steps_to_tiny_final_eval_loss"] == 20
    assert result["ft_steps_to_tiny_final_eval_accuracy"] == 20


def test_compare_runs_uses_the_last_step_both_reached():
    tiny = _rows([9.0, 7.0, 6.0, 5.0], [0.0, 0.1, 0.2, 0.3])
    ft = _rows([8.0, 6.0], [0.05, 0.2])  # stopped at step 10
    result = training.compare_runs(tiny, ft)
    assert result["bert_tiny_final"]["step"] == result["bert_ft_final"]["step"] == 10
    assert result["bert_tiny_final"]["eval_loss"] == 7.0
    assert result["eval_loss_difference"] == pytest.approx(-1.0)
    assert result["ft_steps_to_tiny_final_eval_loss"] == 10


def test_static_vectors_of_another_vocabulary_are_refused(tokenizer, data_dir, tmp_path):
    """Same size, same tokens in another order: the shapes agree, so only the fingerprint can tell."""
    from helpers.static_vectors import Alignment, vocab_fingerprint
    from pipeline.vectors.static_files import save_aligned

    vocab = tokenizer.get_vocab()
    swapped = {tok: len(vocab) - 1 - i for tok, i in vocab.items()}  # same tokens, other ids
    assert vocab_fingerprint(swapped) != vocab_fingerprint(tokenizer)
    assert vocab_fingerprint(dict(vocab)) == vocab_fingerprint(tokenizer)
    matrix = np.zeros((len(tokenizer), 32), dtype=np.float32)
    found = np.zeros(len(tokenizer), dtype=bool)
    report = {"vocab_sha256": vocab_fingerprint(swapped)}
    static = save_aligned(tmp_path / "static", Alignment(matrix, found, report), {"fallback": "zero"})
    with pytest.raises(ValueError, match="different vocabulary"):
        _train(tokenizer, data_dir, tmp_path, init=str(static), cfg=CFG.replace(steps=2, eval_every=2))



def test_weight_decay_skips_biases_and_layernorm():
    model = build_model("random", vocab_size=50, **SMALL_MODEL)
    decay, no_decay = P.decay_groups(model, 0.01)
    names = {id(p): n for n, p in model.named_parameters()}
    assert all(not names[id(p)].endswith("bias") and "LayerNorm" not in names[id(p)] for p in decay["params"])
    assert all(names[id(p)].endswith("bias") or "LayerNorm" in names[id(p)] for p in no_decay["params"])
    assert len(decay["params"]) + len(no_decay["params"]) == len(list(model.parameters()))


def test_bucketed_batches_train_deterministically_on_batches_cut_to_their_longest_row(tokenizer, data_dir, tmp_path):
    bucketed = CFG.replace(batching="bucketed")
    _train(tokenizer, data_dir, tmp_path / "a", cfg=bucketed)
    _train(tokenizer, data_dir, tmp_path / "b", cfg=bucketed)
    a = training.read_metrics(tmp_path / "a" / "bert_tiny" / "metrics.csv")
    assert _without_time(a) == _without_time(training.read_metrics(tmp_path / "b" / "bert_tiny" / "metrics.csv"))
    assert all(math.isfinite(r["train_loss"]) for r in a[1:])
    run = json.loads((tmp_path / "a" / "bert_tiny" / "run.json").read_text())
    assert run["train_config"]["batching"] == "bucketed"
    data = prepare.load_data(data_dir)
    from helpers.batching import BucketedBatchSampler

    picked = BucketedBatchSampler(np.asarray(data.train_lengths), CFG.batch_size, 0).indices(0)
    ids, lengths = data.train_batch(picked, cut=True)
    assert ids.shape[1] == int(lengths.max()) < data.seq_len or int(lengths.max()) == data.seq_len
    assert data.train_batch(picked)[0].shape[1] == data.seq_len  # random batches keep the full width


# ---------------------------------------------------------------- memory-mapped shards (the paper preset)


@pytest.fixture(scope="module")
def sharded_dir(tmp_path_factory, tokenizer, corpus):
    out = tmp_path_factory.mktemp("sharded")
    # A generator, and shards of 37 rows: the 150 documents span several shards, the last one partial.
    prepare.prepare_data(tokenizer, (text for text in corpus[0]), corpus[1], out, seq_len=CFG.seq_len, lang="en",
                         corpus="embedded", shards=True, shard_size=37, progress=False)
    return out


def test_sharded_data_loads_the_same_arrays_and_meta_as_in_memory_data(data_dir, sharded_dir):
    from pipeline.train.shards import ShardedArray

    plain, sharded = prepare.load_data(data_dir), prepare.load_data(sharded_dir)
    assert isinstance(sharded.train_ids, ShardedArray) and len(sharded.train_ids.parts) == -(-len(plain.train_ids)
                                                                                             // 37)
    assert all(isinstance(part, np.memmap) for part in sharded.train_ids.parts)
    assert not (sharded.directory / "train_ids.npy").exists()
    for name in ("train_ids", "train_lengths", "eval_masked_ids", "eval_lengths", "eval_labels"):
        mine, theirs = np.asarray(getattr(sharded, name)), getattr(plain, name)
        assert mine.dtype == theirs.dtype and np.array_equal(mine, theirs), name
    assert sharded.meta["storage"]["train"] == "shards" and plain.meta["storage"] == {"train": "npy"}
    drop = lambda meta: {k: v for k, v in meta.items() if k not in ("storage", "seconds")}  # noqa: E731
    assert drop(sharded.meta) == drop(plain.meta)  # the same counts: documents, tokens, padding share, ...
    picked = np.array([5, 140, 0, 37, 36])
    for mine, theirs in zip(sharded.train_batch(picked, cut=True), plain.train_batch(picked, cut=True)):
        assert np.array_equal(mine, theirs)


def test_the_fingerprint_does_not_depend_on_how_the_rows_are_stored(data_dir, sharded_dir):
    from pipeline.store import checkpoints as ck

    plain, sharded = prepare.load_data(data_dir), prepare.load_data(sharded_dir)
    assert sharded.fingerprint() == plain.fingerprint()
    # ... and it is still pipeline.store.checkpoints' digest, so identities of data prepared before shards are kept.
    arrays = {name: getattr(plain, name) for name in ("train_ids", "train_lengths", "eval_masked_ids",
                                                      "eval_lengths", "eval_labels")}
    meta = {k: v for k, v in plain.meta.items() if k != "storage"}
    assert plain.fingerprint() == ck.arrays_fingerprint(arrays, meta)
    other = prepare.PreparedData(plain.train_ids[:-1], plain.train_lengths[:-1], plain.eval_masked_ids,
                           plain.eval_lengths, plain.eval_labels, plain.meta, plain.directory)
    assert other.fingerprint() != plain.fingerprint()


def test_training_on_shards_gives_the_same_run_as_in_memory(tokenizer, data_dir, sharded_dir, tmp_path):
    for batching in ("random", "bucketed"):
        cfg = CFG.replace(batching=batching)
        plain = _train(tokenizer, data_dir, tmp_path / f"plain_{batching}", cfg=cfg)
        sharded = _train(tokenizer, sharded_dir, tmp_path / f"sharded_{batching}", cfg=cfg)
        a = training.read_metrics(tmp_path / f"plain_{batching}" / "bert_tiny" / "metrics.csv")
        b = training.read_metrics(tmp_path / f"sharded_{batching}" / "bert_tiny" / "metrics.csv")
        assert _without_time(a) == _without_time(b) and len(a) == 5
        assert plain["identity"] == sharded["identity"]


def test_prepare_data_reads_the_training_stream_lazily(tokenizer, corpus, tmp_path):
    from pipeline.train.shards import read_manifest

    folder = PretrainFiles(tmp_path).data.shards
    behind = []

    def stream():
        for i, text in enumerate(corpus[0] * 3):
            done = (read_manifest(folder) or {}).get("documents_read", 0)
            behind.append(i - done)  # documents pulled but not yet on disk
            yield text

    meta = prepare.prepare_data(tokenizer, stream(), corpus[1], tmp_path, seq_len=CFG.seq_len, shards=True,
                          shard_size=50, progress=False)
    assert meta["train"]["documents"] == 450 and meta["storage"]["documents_read"] == 450  # each document once
    assert max(behind) <= 2 * 50  # never more than one shard being filled plus one batch in memory


def test_packing_and_shards_together_are_refused(tokenizer, corpus, tmp_path):
    with pytest.raises(ValueError, match="packing=False with shards"):
        presets.TrainConfig(name="x", steps=1, batch_size=1, packing=True, shards=True)
    with pytest.raises(ValueError, match="packing=False with shards"):
        prepare.prepare_data(tokenizer, corpus[0], corpus[1], tmp_path, packing=True, shards=True)
    assert presets.get("paper").train.shards and not presets.get("demo").train.shards
    assert not presets.get("smoke").train.shards


def test_preparing_again_in_the_other_format_replaces_the_training_files(tokenizer, corpus, tmp_path):
    texts = corpus[0][:60]
    prepare.prepare_data(tokenizer, texts, corpus[1], tmp_path, seq_len=CFG.seq_len, shards=True, shard_size=25,
                   progress=False)
    sharded = np.asarray(prepare.load_data(tmp_path).train_ids)
    prepare.prepare_data(tokenizer, texts, corpus[1], tmp_path, seq_len=CFG.seq_len)
    assert not PretrainFiles(tmp_path).data.shards.exists()
    assert np.array_equal(prepare.load_data(tmp_path).train_ids, sharded)
    prepare.prepare_data(tokenizer, texts[:30], corpus[1], tmp_path, seq_len=CFG.seq_len, shards=True, progress=False)
    assert not PretrainFiles(tmp_path).data.array("train_ids").exists()
    assert np.array_equal(np.asarray(prepare.load_data(tmp_path).train_ids), sharded[:30])  # not the 60 rows before
