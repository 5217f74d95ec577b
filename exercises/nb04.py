"""Reference solutions of notebook 04's exercises (pretraining), and the checks their self-check cells use.

Try the exercises before reading on: every function below gives an answer away.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import torch
from transformers import get_linear_schedule_with_warmup

from helpers.masking import IGNORE_INDEX
from helpers.model import bert_tiny_config, build_model, count_parameters, masked_logits
from helpers.presets import TrainConfig
from helpers.pretrain import TrainingData, lengths_to_mask

# Exercise 2: the model the paper started from (Section 4.1: 2 heads, hidden 128, sequence length 512), the rest
# as Table 4. The structure printed in the notebook is the Table 4 model, so its counts are not this answer.
STARTING_MODEL: dict[str, int] = {"hidden_size": 128, "num_attention_heads": 2, "max_position_embeddings": 512}


def exercise_1(cfg: TrainConfig, step: int) -> float:
    """The rate after ``step`` scheduler steps: a straight line up to cfg.lr over the warmup, then down to 0."""
    warmup = cfg.warmup_steps
    if step < warmup:
        return cfg.lr * step / warmup
    return cfg.lr * max(0.0, (cfg.steps - step) / (cfg.steps - warmup))


def scheduled_lr(cfg: TrainConfig, step: int) -> float:
    """What the training loop's scheduler (transformers' linear warmup schedule) gives at ``step``."""
    optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=cfg.lr)
    scheduler = get_linear_schedule_with_warmup(optimizer, cfg.warmup_steps, cfg.steps)
    return cfg.lr * scheduler.lr_lambdas[0](step)


def exercise_2(config: Mapping[str, Any] | None = None) -> dict[str, int]:
    """Table 4's parameters counted by hand (embeddings, two encoder layers, the MLM head), and the V x H
    decoder matrix that tying saves: untied, the output layer would need a matrix of its own."""
    c = dict(bert_tiny_config().to_dict() if config is None else config)
    v, h, i = c["vocab_size"], c["hidden_size"], c["intermediate_size"]
    embeddings = v * h + c["max_position_embeddings"] * h + c["type_vocab_size"] * h + 2 * h  # + LayerNorm
    attention = 4 * (h * h + h) + 2 * h  # q, k, v, output projection with biases; LayerNorm
    feed_forward = (h * i + i) + (i * h + h) + 2 * h  # up, down; LayerNorm
    head = (h * h + h) + 2 * h + v  # transform dense, its LayerNorm, the decoder's bias
    tied = embeddings + c["num_hidden_layers"] * (attention + feed_forward) + head
    return {"tied": tied, "saved_by_tying": v * h}


def parameter_counts(overrides: Mapping[str, Any] | None = None) -> dict[str, int]:
    """Exercise 2's check, from the models transformers builds with Table 4 plus ``overrides``: the tied count,
    and the size of the decoder matrix an untied model holds apart from its input embeddings (about a second)."""
    tied = build_model("random", **dict(overrides or {}))
    untied = build_model("random", tie_word_embeddings=False, **dict(overrides or {}))
    decoder = untied.cls.predictions.decoder.weight
    assert decoder is not untied.bert.embeddings.word_embeddings.weight
    return {"tied": count_parameters(tied), "saved_by_tying": decoder.numel()}


def counts_agree(answer: Mapping[str, Any], expected: Mapping[str, int]) -> bool:
    return set(answer) == set(expected) and all(int(answer[k]) == expected[k] for k in expected)


EXERCISE_3_ANSWER = "a"


@torch.no_grad()
def step0_scores(model: torch.nn.Module, data: TrainingData, n_sequences: int | None,
                 batch_size: int = 32) -> dict[str, float]:
    """What an untrained model's scores (logits) look like at the evaluation's masked positions.

    Per position: the spread (standard deviation) of the scores over the vocabulary, the right token's score
    minus their mean, and log-sum-exp of the centred scores minus log V. The loss is the mean of
    (log-sum-exp - right score), so loss - log V = mean excess of log-sum-exp - mean offset of the right score.
    """
    was_training = model.training
    model.eval()
    n = len(data.eval_labels) if n_sequences is None else min(n_sequences, len(data.eval_labels))
    totals = {"loss": 0.0, "logit_sd": 0.0, "label_offset": 0.0, "spread_excess": 0.0}
    count = 0
    for start in range(0, n, batch_size):
        ids = torch.from_numpy(data.eval_masked_ids[start:start + batch_size].astype("int64"))
        lengths = torch.from_numpy(data.eval_lengths[start:start + batch_size].astype("int64"))
        labels = torch.from_numpy(data.eval_labels[start:start + batch_size].astype("int64"))
        logits, targets = masked_logits(model, ids, lengths_to_mask(lengths, ids.shape[1]), labels)
        logits, targets = logits.double(), targets[targets != IGNORE_INDEX]
        centred = logits - logits.mean(dim=1, keepdim=True)
        totals["loss"] += float(torch.nn.functional.cross_entropy(logits, targets, reduction="sum"))
        totals["logit_sd"] += float(logits.std(dim=1).sum())
        totals["label_offset"] += float(centred.gather(1, targets[:, None]).sum())
        totals["spread_excess"] += float((torch.logsumexp(centred, dim=1) - math.log(logits.shape[1])).sum())
        count += len(targets)
    model.train(was_training)
    row_sd = float(model.get_input_embeddings().weight.std())  # the tied output layer's rows
    return {key: value / count for key, value in totals.items()} | {"positions": count, "row_sd": row_sd}


def exercise_3_explanation(scores: Mapping[str, Mapping[str, float]], vocab_size: int) -> str:
    """The reference answer of Exercise 3, written from the step-0 scores of both models on this run."""
    tiny, ft = scores["bert_tiny"], scores["bert_ft"]
    both = (("BERT_TINY", tiny), ("BERT_FT", ft))
    spread = " and ".join(f"{name} {s['logit_sd']:.3f} (s^2/2 = {s['logit_sd'] ** 2 / 2:.3f})" for name, s in both)
    excess = " and ".join(f"{name} {s['spread_excess']:.3f}" for name, s in both)
    measured = " and ".join(f"{name} {s['loss'] - math.log(vocab_size):.3f}" for name, s in both)
    return (
        "(a). The loss at a position is log(sum over the vocabulary of exp(score)) minus the right token's score. "
        "An untrained model's scores are uneven but know nothing about the masked word: on this run the right "
        f"token's score is {tiny['label_offset']:+.3f} (BERT_TINY) and {ft['label_offset']:+.3f} (BERT_FT) from "
        "the mean score, essentially zero. Uneven scores with nothing behind them only cost: for scores spread "
        "like a normal distribution with standard deviation s, the log-sum-exp exceeds log V by about s^2/2. "
        f"Measured spreads: {spread}; measured excess of the log-sum-exp: {excess}; losses above log V: "
        f"{measured} (the excess minus the right token's offset). The spread comes from the "
        "output layer, which is tied to the token embeddings: each score is the transformed hidden state "
        "(after a LayerNorm, length about sqrt(300) = 17) times that token's embedding row, so the spread is "
        f"about 17 times the rows' standard deviation: {tiny['row_sd']:.4f} for BERT_TINY (drawn with 0.02) and "
        f"{ft['row_sd']:.4f} for BERT_FT (the normalised fastText rows, and zeros for tokens without a vector), "
        f"so about {17.3 * tiny['row_sd']:.2f} and {17.3 * ft['row_sd']:.2f}. Larger rows make more confident "
        "guesses, and a confident guess that knows nothing is a wrong guess that costs more than the uniform one: "
        "the model with the larger rows starts higher. (b) is out because evaluation runs with dropout off; (c) "
        "because an untrained model has not learned to use what it sees at any position, so a random token cannot "
        "mislead it; (d) because a zero row gives the score of its bias (0 at the start), not a probability of 0, "
        "and it says nothing about BERT_TINY, which has no zero rows and starts above log V as well.")
