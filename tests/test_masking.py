"""helpers.masking: rates checked against the binomial maths, invariants checked exactly; notebook 01's exercises."""

from __future__ import annotations

import math
import warnings

import pytest
import torch
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
from transformers import BertTokenizerFast, DataCollatorForLanguageModeling, PreTrainedTokenizerFast

import exercises
from exercises import nb01
from helpers.masking import (
    IGNORE_INDEX,
    MLMCollator,
    binomial_tolerance,
    check_maskable,
    eligible_positions,
    expected_random_specials,
    mask_loop_style,
    masking_stats,
    random_tokens,
    replace_selected,
    select_positions,
    selection_coverage,
    special_ids,
    within_tolerance,
)
from pipeline.corpora.data import EMBEDDED, load_corpus
from plots.masking import masked_table, plot_coverage, plot_split

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
Z = 5.0  # standard deviations allowed for every statistical check


def _wrap(tk: Tokenizer) -> PreTrainedTokenizerFast:
    cls, sep = tk.token_to_id("[CLS]"), tk.token_to_id("[SEP]")
    tk.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]", special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    return PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]")


@pytest.fixture(scope="module")
def texts() -> list[str]:
    return load_corpus(EMBEDDED, max_docs=300).texts


@pytest.fixture(scope="module")
def tok(texts: list[str]) -> PreTrainedTokenizerFast:
    """A small cased WordPiece trained here, so these tests do not depend on helpers.tokenizer."""
    tk = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tk.normalizer = normalizers.BertNormalizer(lowercase=False)
    tk.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tk.train_from_iterator(texts, trainers.WordPieceTrainer(vocab_size=2000, min_frequency=2, special_tokens=SPECIALS,
                                                            show_progress=False))
    return _wrap(tk)


@pytest.fixture(scope="module")
def tiny_tok() -> PreTrainedTokenizerFast:
    """Five specials + five words: a random draw hits the original id 1 time in 5, which the maths must see."""
    vocab = {t: i for i, t in enumerate(SPECIALS + ["a", "b", "c", "d", "e"])}
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    return _wrap(tk)


@pytest.fixture(scope="module")
def batch(tok: PreTrainedTokenizerFast, texts: list[str]) -> dict[str, torch.Tensor]:
    """Real text padded to the longest (so there is padding), stacked 8 times: ~200k eligible tokens."""
    enc = tok(texts, truncation=True, max_length=128, padding=True, return_tensors="pt")
    return {"input_ids": enc["input_ids"].repeat(8, 1), "attention_mask": enc["attention_mask"].repeat(8, 1)}


@pytest.fixture(scope="module")
def tiny_batch(tiny_tok: PreTrainedTokenizerFast) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    words = torch.randint(5, 10, (4000, 64), generator=g)
    cls, sep = torch.full((4000, 1), tiny_tok.cls_token_id), torch.full((4000, 1), tiny_tok.sep_token_id)
    ids = torch.cat([cls, words, sep], 1)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}


def _stats(tok, batch, out):
    return masking_stats(batch["input_ids"], out, special_ids(tok), tok.mask_token_id, batch["attention_mask"])


def _collator(tok, **kw) -> MLMCollator:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tiny vocabulary warns on purpose
        return MLMCollator(tok, **kw)


# ---------------------------------------------------------------- the algorithm shown in notebook 01


def test_ignore_index_is_what_cross_entropy_skips_by_default():
    logits = torch.randn(4, 7, generator=torch.Generator().manual_seed(0))
    labels = torch.tensor([3, IGNORE_INDEX, 5, IGNORE_INDEX])
    kept = torch.nn.functional.cross_entropy(logits[[0, 2]], labels[[0, 2]])
    assert torch.allclose(torch.nn.functional.cross_entropy(logits, labels), kept)


def test_eligible_positions_exclude_specials_and_padding():
    special_table = torch.tensor([True, True, True, False, False, False])  # ids 0-2 special
    ids = torch.tensor([[1, 3, 4, 2, 0], [1, 5, 2, 0, 0]])
    att = torch.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 0, 0]])
    expected = torch.tensor([[False, True, True, False, False], [False, True, False, False, False]])
    assert torch.equal(eligible_positions(ids, att, special_table), expected)
    # a real token id sitting in a padded position is not eligible either
    assert not eligible_positions(torch.tensor([[3]]), torch.tensor([[0]]), special_table).any()


def test_selection_and_the_80_10_10_cut_follow_u_exactly():
    # u just either side of 0.15 * 0.8 = 0.12, 0.15 * 0.9 = 0.135 and 0.15
    u = torch.tensor([[0.01, 0.05, 0.1199, 0.1201, 0.1349, 0.1351, 0.1499, 0.1501, 0.9]])
    eligible = torch.ones_like(u, dtype=torch.bool)
    eligible[0, 0] = False
    ids = torch.arange(10, 19).unsqueeze(0)
    selected = select_positions(eligible, u, 0.15)
    assert selected.tolist() == [[False, True, True, True, True, True, True, False, False]]
    corrupted, labels = replace_selected(ids, selected, u, torch.full_like(ids, 99), mask_token_id=4)
    assert corrupted.tolist() == [[10, 4, 4, 99, 99, 15, 16, 17, 18]]
    assert labels.tolist() == [[IGNORE_INDEX, 11, 12, 13, 14, 15, 16, IGNORE_INDEX, IGNORE_INDEX]]


def test_random_tokens_are_uniform_over_the_allowed_ids_only():
    allowed = torch.tensor([5, 6, 7, 8, 9])
    draws = random_tokens(allowed, torch.Size([500, 100]), torch.Generator().manual_seed(0))
    assert draws.shape == (500, 100)
    counts = torch.bincount(draws.flatten(), minlength=10)
    assert counts[:5].sum() == 0
    n, p = draws.numel(), 1 / 5
    for count in counts[5:].tolist():  # each allowed id: binomial(n, 1/5)
        assert abs(count - n * p) <= Z * math.sqrt(n * p * (1 - p))


def test_collator_runs_exactly_the_notebook_functions(tok, batch):
    ids, att = batch["input_ids"][:64], batch["attention_mask"][:64]
    collator = MLMCollator(tok, mlm_probability=0.2, mask_replace_prob=0.6, random_replace_prob=0.3, seed=12)
    gen = torch.Generator().manual_seed(12)
    eligible = eligible_positions(ids, att, collator.special_table)
    u = torch.rand(ids.shape, generator=gen)
    selected = select_positions(eligible, u, 0.2)
    random_ids = random_tokens(collator.allowed_ids, ids.shape, gen)
    corrupted, labels = replace_selected(ids, selected, u, random_ids, tok.mask_token_id, 0.2, 0.6, 0.3)
    out = collator.mask(ids, att)
    assert torch.equal(out["input_ids"], corrupted) and torch.equal(out["labels"], labels)
    assert int(selected.sum()) > 500


# ---------------------------------------------------------------- rates


def test_rates_match_bert_recipe_within_binomial_tolerance(tok, batch):
    collator = MLMCollator(tok, seed=0)
    stats = _stats(tok, batch, collator.mask(batch["input_ids"], batch["attention_mask"]))
    assert stats.n_eligible > 150_000 and stats.n_selected > 20_000
    report = within_tolerance(stats, collator.expected_shares(), Z)
    assert all(r["ok"] for r in report.values()), report
    # the nominal 0.15 / 0.8 / 0.1 / 0.1 also hold (the coincidence term is far below the tolerance here)
    for key, p in {"selection": 0.15, "mask": 0.8, "random": 0.1, "unchanged": 0.1}.items():
        assert abs(stats.rates()[key] - p) <= binomial_tolerance(p, stats.trials()[key], Z), (key, stats.rates())


def test_expected_shares_account_for_random_draw_hitting_the_original(tiny_tok, tiny_batch):
    collator = _collator(tiny_tok, seed=3)
    assert collator.n_allowed == 5
    expected = collator.expected_shares()
    assert expected["unchanged"] == pytest.approx(0.1 + 0.1 / 5)
    assert expected["random"] == pytest.approx(0.1 - 0.1 / 5)
    stats = _stats(tiny_tok, tiny_batch, collator.mask(tiny_batch["input_ids"], tiny_batch["attention_mask"]))
    report = within_tolerance(stats, expected, Z)
    assert all(r["ok"] for r in report.values()), report
    # and the naive 0.1 is rejected: the derivation is visible in the data
    assert abs(stats.rates()["unchanged"] - 0.1) > binomial_tolerance(0.1, stats.n_selected, Z)


def test_custom_probabilities_are_honoured(tok, batch):
    collator = MLMCollator(tok, mlm_probability=0.3, mask_replace_prob=0.5, random_replace_prob=0.3, seed=5)
    stats = _stats(tok, batch, collator.mask(batch["input_ids"], batch["attention_mask"]))
    report = within_tolerance(stats, collator.expected_shares(), Z)
    assert all(r["ok"] for r in report.values()), report


# ---------------------------------------------------------------- exact invariants


def test_only_selected_positions_change_and_labels_are_the_originals(tok, batch):
    out = MLMCollator(tok, seed=1).mask(batch["input_ids"], batch["attention_mask"])
    ids, labels = batch["input_ids"], out["labels"]
    selected = labels != IGNORE_INDEX
    assert torch.equal(out["input_ids"][~selected], ids[~selected])
    assert torch.equal(labels[selected], ids[selected])
    assert set(labels[~selected].unique().tolist()) == {IGNORE_INDEX}
    stats = _stats(tok, batch, out)
    assert (stats.n_unselected_changed, stats.n_label_mismatch) == (0, 0)
    assert stats.n_mask + stats.n_random + stats.n_unchanged == stats.n_selected
    assert out["labels"].dtype == torch.long and out["input_ids"].shape == ids.shape


def test_specials_and_padding_never_selected_and_random_never_special(tok, batch):
    collator = MLMCollator(tok, seed=2)
    out = collator.mask(batch["input_ids"], batch["attention_mask"])
    stats = _stats(tok, batch, out)
    assert stats.n_tokens < batch["input_ids"].numel()  # the batch really has padding
    assert stats.n_selected_ineligible == 0
    assert stats.n_random > 1000 and stats.n_random_special == 0
    is_special = torch.isin(batch["input_ids"], torch.tensor(special_ids(tok)))
    assert torch.equal(out["input_ids"][is_special], batch["input_ids"][is_special])
    assert torch.equal(out["attention_mask"], batch["attention_mask"])


def test_tiny_vocab_random_draws_avoid_specials_while_loop_style_does_not(tiny_tok, tiny_batch):
    ids, att = tiny_batch["input_ids"], tiny_batch["attention_mask"]
    ours = _stats(tiny_tok, tiny_batch, _collator(tiny_tok, seed=0).mask(ids, att))
    loop = _stats(tiny_tok, tiny_batch, mask_loop_style(ids, att, tiny_tok, generator=torch.Generator().manual_seed(0)))
    assert ours.n_random > 1000 and ours.n_random_special == 0
    # the baseline draws over all 10 ids, 4 of them specials other than [MASK] (which counts as "mask")
    expected = expected_random_specials(loop.n_selected, len(SPECIALS), len(tiny_tok))
    assert expected == pytest.approx(loop.n_selected * 0.1 * 4 / 10)
    p = expected / loop.n_selected
    assert abs(loop.n_random_special - expected) <= Z * math.sqrt(loop.n_selected * p * (1 - p))


def test_input_tensors_are_not_modified(tok, batch):
    ids, att = batch["input_ids"].clone(), batch["attention_mask"].clone()
    MLMCollator(tok, seed=0).mask(batch["input_ids"], batch["attention_mask"])
    mask_loop_style(batch["input_ids"], batch["attention_mask"], tok)
    assert torch.equal(ids, batch["input_ids"]) and torch.equal(att, batch["attention_mask"])


def test_missing_attention_mask_treats_pad_ids_as_padding(tok, batch):
    out = MLMCollator(tok, seed=0).mask(batch["input_ids"])
    assert torch.equal(out["attention_mask"], batch["attention_mask"])


# ---------------------------------------------------------------- randomness


def test_same_seed_same_masks_and_each_call_is_fresh(tok, batch):
    ids, att = batch["input_ids"][:64], batch["attention_mask"][:64]
    a, b = MLMCollator(tok, seed=7), MLMCollator(tok, seed=7)
    first_a, first_b = a.mask(ids, att), b.mask(ids, att)
    for key in ("input_ids", "labels"):
        assert torch.equal(first_a[key], first_b[key])
    second_a = a.mask(ids, att)
    assert not torch.equal(first_a["labels"], second_a["labels"])  # dynamic: a new mask each call
    other = MLMCollator(tok, seed=8).mask(ids, att)
    assert not torch.equal(first_a["labels"], other["labels"])


def test_generator_state_restores_the_same_masks(tok, batch):
    ids, att = batch["input_ids"][:64], batch["attention_mask"][:64]
    collator = MLMCollator(tok, seed=9)
    collator.mask(ids, att)
    state = collator.generator("cpu").get_state()
    first = collator.mask(ids, att)
    collator.generator("cpu").set_state(state)
    assert torch.equal(collator.mask(ids, att)["labels"], first["labels"])
    assert MLMCollator(tok).generator("cpu") is None


def test_seed_none_follows_the_global_rng(tok, batch):
    ids, att = batch["input_ids"][:64], batch["attention_mask"][:64]
    collator = MLMCollator(tok)
    torch.manual_seed(11)
    first = collator.mask(ids, att)
    torch.manual_seed(11)
    again = collator.mask(ids, att)
    assert torch.equal(first["input_ids"], again["input_ids"]) and torch.equal(first["labels"], again["labels"])


# ---------------------------------------------------------------- agreement with transformers


def test_rates_agree_with_transformers_collator(tok, batch):
    ids, att = batch["input_ids"], batch["attention_mask"]
    ours = _stats(tok, batch, MLMCollator(tok, seed=0).mask(ids, att))
    hf = DataCollatorForLanguageModeling(tok, mlm_probability=0.15, mask_replace_prob=0.8, random_replace_prob=0.1,
                                         seed=0)
    examples = [{"input_ids": r[m.bool()].tolist()} for r, m in zip(ids, att)]
    hf_out = hf(examples)
    assert hf_out["input_ids"].shape == ids.shape  # same padding, so the same positions are compared
    theirs = _stats(tok, batch, {"input_ids": hf_out["input_ids"], "labels": hf_out["labels"]})
    assert theirs.n_selected_ineligible == 0 and theirs.n_unselected_changed == 0
    for key in ("selection", "mask", "random", "unchanged"):
        p = (ours.rates()[key] * ours.trials()[key] + theirs.rates()[key] * theirs.trials()[key]) / (
            ours.trials()[key] + theirs.trials()[key])
        tol = Z * math.sqrt(p * (1 - p) * (1 / ours.trials()[key] + 1 / theirs.trials()[key]))
        assert abs(ours.rates()[key] - theirs.rates()[key]) <= tol, (key, ours.rates(), theirs.rates())


# ---------------------------------------------------------------- bad input and the silent failure


@pytest.mark.parametrize("kw", [dict(mlm_probability=0.0), dict(mlm_probability=1.0), dict(mlm_probability=-0.1),
                                dict(mask_replace_prob=1.2), dict(random_replace_prob=-0.1),
                                dict(mask_replace_prob=0.8, random_replace_prob=0.3)])
def test_bad_probabilities_raise(tok, kw):
    with pytest.raises(ValueError, match="prob"):
        MLMCollator(tok, **kw)


def test_bad_tensors_raise(tok, batch):
    collator = MLMCollator(tok)
    with pytest.raises(ValueError, match="2-D"):
        collator.mask(batch["input_ids"][0])
    with pytest.raises(ValueError, match="integer"):
        collator.mask(batch["input_ids"].float())
    with pytest.raises(ValueError, match="shape"):
        collator.mask(batch["input_ids"], batch["attention_mask"][:, :-1])
    with pytest.raises(ValueError, match="different tokenizer"):
        collator.mask(torch.tensor([[2, 10, len(tok) + 3, 3]]))


def test_vocab_file_tokenizer_is_caught(tok, texts, tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(t for t, _ in sorted(tok.get_vocab().items(), key=lambda kv: kv[1])) + "\n")
    broken = BertTokenizerFast(vocab_file=str(vocab))
    assert check_maskable(tok, texts[:20]) < 0.05
    if len(broken) > len(special_ids(broken)):  # a transformers version that loads vocab.txt properly
        pytest.skip(f"BertTokenizerFast(vocab_file=...) loaded {len(broken)} ids here; the failure is not present")
    with pytest.raises(ValueError, match="tokenizer.json"):
        check_maskable(broken, texts[:20])
    with pytest.raises(ValueError, match="only special tokens"):
        MLMCollator(broken)
    # what would happen without the checks: the loop-style collator masks nothing and the loss is NaN
    enc = broken(texts[:8], truncation=True, max_length=64, padding=True, return_tensors="pt")
    out = mask_loop_style(enc["input_ids"], enc["attention_mask"], broken)
    assert (out["labels"] != IGNORE_INDEX).sum() == 0
    loss = torch.nn.functional.cross_entropy(torch.zeros(out["labels"].numel(), len(broken)), out["labels"].flatten())
    assert torch.isnan(loss)


def test_check_maskable_rejects_high_unk_rate_and_empty_input(tok):
    with pytest.raises(ValueError, match="UNK"):
        check_maskable(tok, ["日本語のテキスト 中文文本 한국어 텍스트"], max_unk_rate=0.05)
    with pytest.raises(ValueError, match="non-empty"):
        check_maskable(tok, ["", "   "])


# ---------------------------------------------------------------- teaching aids


def test_loop_style_baseline_has_bert_selection_rate(tok, batch):
    out = mask_loop_style(batch["input_ids"][:600], batch["attention_mask"][:600], tok,
                          generator=torch.Generator().manual_seed(0))
    stats = masking_stats(batch["input_ids"][:600], out, special_ids(tok), tok.mask_token_id)
    assert stats.n_selected_ineligible == 0
    assert abs(stats.rates()["selection"] - 0.15) <= binomial_tolerance(0.15, stats.n_eligible, Z)


def test_selection_coverage_dynamic_vs_static(tok, batch):
    ids, att = batch["input_ids"][:300], batch["attention_mask"][:300]
    collator = MLMCollator(tok, seed=0)
    dynamic = selection_coverage(collator, ids, att, epochs=12)
    static = selection_coverage(collator, ids, att, epochs=12, static_copies=4)
    n = int((att.bool() & ~torch.isin(ids, collator.special_ids)).sum())
    for epochs in (1, 6, 12):
        p = 1 - 0.85 ** epochs
        assert abs(dynamic[epochs - 1] - p) <= binomial_tolerance(p, n, Z)
    assert static[3] == static[-1]  # after its 4 masks are used, static masking reveals no new targets
    assert dynamic[-1] > static[-1]


def test_masked_table_lists_every_real_token(tok, texts):
    enc = tok(texts[:2], truncation=True, max_length=48, padding=True, return_tensors="pt")
    out = MLMCollator(tok, seed=0).mask(enc["input_ids"], enc["attention_mask"])
    rows = masked_table(tok, enc["input_ids"], out, row=1)
    assert len(rows) == int(enc["attention_mask"][1].sum())
    assert sum(r["selected"] for r in rows) == int((out["labels"][1] != IGNORE_INDEX).sum())
    assert rows[0]["token"] == "[CLS]" and not rows[0]["selected"]



def test_plots_draw_the_measured_split_and_coverage(tok, batch):
    import matplotlib

    matplotlib.use("Agg")
    collator = MLMCollator(tok, seed=0)
    ids, att = batch["input_ids"][:200], batch["attention_mask"][:200]
    report = within_tolerance(_stats(tok, {"input_ids": ids, "attention_mask": att}, collator.mask(ids, att)),
                              collator.expected_shares(), Z)
    fig = plot_split(report, collator.expected_shares(), title="split")
    assert len(fig.axes) == 2 and fig.axes[0].get_ylim() == (0, 1)
    fig = plot_coverage({"dynamic": [0.15, 0.28, 0.39], "static": [0.15, 0.15, 0.15]})
    assert [len(line.get_xdata()) for line in fig.axes[0].get_lines()] == [3, 3]


# ---------------------------------------------------------------- exercises of notebook 01


@pytest.fixture(scope="module")
def stats_50(tok, batch):
    collator = MLMCollator(tok, mask_replace_prob=0.5, random_replace_prob=0.25, seed=0)
    return _stats(tok, batch, collator.mask(batch["input_ids"], batch["attention_mask"]))


def test_exercise_1_accepts_the_predicted_split_and_rejects_plausible_mistakes(stats_50):
    reference = nb01.exercise_1(0.5, 0.25)
    assert reference == {"mask": 0.5, "random": 0.25, "unchanged": 0.25}
    assert exercises.check("Exercise 1", reference, lambda a: nb01.shares_agree(a, stats_50, Z), "") is True
    wrong = [{"mask": 0.8, "random": 0.1, "unchanged": 0.1},  # the old split, unchanged
             {"mask": 0.075, "random": 0.0375, "unchanged": 0.0375},  # shares of all tokens, not of the selected
             {"mask": 0.5, "random": 0.25},  # a share missing
             {"mask": 0.5, "random": 0.125, "unchanged": 0.375}]  # half of the rest random, half kept
    for answer in wrong:
        assert not nb01.shares_agree(answer, stats_50, Z), answer
        with pytest.raises(exercises.WrongAnswer):
            exercises.check("Exercise 1", answer, lambda a: nb01.shares_agree(a, stats_50, Z), "")


def test_exercise_1_prints_its_written_reason_only_after_a_right_answer(stats_50, capsys):
    def is_right(answer):
        return nb01.shares_agree(answer, stats_50, Z)

    assert exercises.check("Exercise 1", None, is_right, "", explanation=nb01.SPLIT_EXPLANATION) is None
    assert nb01.SPLIT_EXPLANATION not in capsys.readouterr().out
    with pytest.raises(exercises.WrongAnswer):
        exercises.check("Exercise 1", {"mask": 0.8, "random": 0.1, "unchanged": 0.1}, is_right, "",
                        explanation=nb01.SPLIT_EXPLANATION)
    assert nb01.SPLIT_EXPLANATION not in capsys.readouterr().out
    exercises.check("Exercise 1", nb01.exercise_1(0.5, 0.25), is_right, "", explanation=nb01.SPLIT_EXPLANATION)
    assert nb01.SPLIT_EXPLANATION in capsys.readouterr().out
    # the written answer states the same shares as the reference solution
    assert all(f"{share:g} {word}" in nb01.SPLIT_EXPLANATION
               for share, word in zip(nb01.exercise_1(0.5, 0.25).values(), ("[MASK]", "random", "unchanged")))


def test_exercise_2_wants_the_smallest_whole_number_of_epochs():
    reference = nb01.exercise_2(0.15, 0.99)
    assert 1 - 0.85 ** reference >= 0.99 > 1 - 0.85 ** (reference - 1)
    assert nb01.epochs_right(reference) and nb01.epochs_right(float(reference))
    for wrong in (reference - 1, reference + 1, math.log(0.01) / math.log(0.85), 1 / 0.15):
        assert not nb01.epochs_right(wrong), wrong
    with pytest.raises(exercises.WrongAnswer):
        exercises.check("Exercise 2", "many", nb01.epochs_right, "")


def test_exercise_3_counts_special_insertions_over_the_paper_run():
    reference = nb01.exercise_3()
    assert reference == pytest.approx(100_000 * 128 * 120 * 0.15 * 0.1 * 4 / 30_000)  # 3,072
    assert nb01.special_draws_right(reference) and nb01.special_draws_right(3100)
    counting_mask = reference * 5 / 4
    for wrong in (counting_mask, reference * 10, reference / 0.15, 0):
        assert not nb01.special_draws_right(wrong), wrong


# ---------------------------------------------------------------- GPU (runs only where CUDA exists)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_masking_stays_on_device_without_syncs(tok, batch):
    ids, att = batch["input_ids"].cuda(), batch["attention_mask"].cuda()
    collator = MLMCollator(tok, seed=0)
    collator.mask(ids, att)  # first call copies the lookups to the GPU
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        out = collator.mask(ids, att)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert all(t.device.type == "cuda" for t in out.values())
    cpu_batch = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}
    stats = _stats(tok, cpu_batch, {k: v.cpu() for k, v in out.items()})
    assert stats.n_selected_ineligible == 0 and stats.n_random_special == 0 and stats.n_unselected_changed == 0
    report = within_tolerance(stats, collator.expected_shares(), Z)
    assert all(r["ok"] for r in report.values()), report
    again = MLMCollator(tok, seed=0)
    again.mask(ids, att)
    assert torch.equal(again.mask(ids, att)["labels"], out["labels"])
