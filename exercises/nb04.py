"""Reference solutions of notebook 04's exercises (pretraining), and the checks their self-check cells use.

Try the exercises before reading on: every function below gives an answer away.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import torch
from transformers import get_linear_schedule_with_warmup

from helpers.model import bert_tiny_config, build_model, count_parameters
from helpers.presets import TrainConfig


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


def parameter_counts() -> dict[str, int]:
    """Exercise 2's check, from the models transformers builds: the tied count, and the size of the
    decoder matrix an untied model holds apart from its input embeddings (about a second)."""
    tied = build_model("random")
    untied = build_model("random", tie_word_embeddings=False)
    decoder = untied.cls.predictions.decoder.weight
    assert decoder is not untied.bert.embeddings.word_embeddings.weight
    return {"tied": count_parameters(tied), "saved_by_tying": decoder.numel()}


def counts_agree(answer: Mapping[str, Any], expected: Mapping[str, int]) -> bool:
    return set(answer) == set(expected) and all(int(answer[k]) == expected[k] for k in expected)


def exercise_3(vocab_size: int) -> float:
    """A uniform predictor gives every id probability 1/V, so its cross-entropy is log V at every position."""
    return math.log(vocab_size)
