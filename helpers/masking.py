"""BERT's masked-language-model corruption: 15 % of the tokens selected, of those 80 % [MASK], 10 % random, 10 % kept.

The algorithm is four short functions (:func:`eligible_positions`, :func:`select_positions`,
:func:`random_tokens`, :func:`replace_selected`), written and explained in notebook 01 and copied
here character for character. :class:`MLMCollator` checks its input, keeps the lookups and a
seeded generator per device, and calls exactly those functions: a fresh mask on every call
(RoBERTa's dynamic masking), a few whole-batch tensor operations, no host-device synchronisation.

Unlike ``transformers.DataCollatorForLanguageModeling`` it draws the random replacements from the
non-special ids only, and finds special tokens with one table lookup instead of a Python loop over rows.

The rest measures what a collator did: :func:`masking_stats` and :func:`within_tolerance` (rates
against the binomial maths), :func:`selection_coverage` (dynamic against static masking),
:func:`check_maskable` (the silent all-[UNK] failure) and :func:`mask_loop_style`, the flawed
tutorial recipe kept as a baseline for timing and discussion.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import torch

LOAD_HINT = (
    "Load a trained tokenizer from its tokenizer.json, e.g. "
    "transformers.AutoTokenizer.from_pretrained(<folder written by save_pretrained>) or "
    "PreTrainedTokenizerFast(tokenizer_file='<folder>/tokenizer.json'); "
    "in transformers 5.x BertTokenizerFast(vocab_file='vocab.txt') silently builds a 5-token vocabulary."
)


# --------------------------------------------------------------------------------------------
# The algorithm (shown and explained in notebook 01, section 1)
# --------------------------------------------------------------------------------------------

IGNORE_INDEX = -100  # the label cross_entropy skips: every position that is not a prediction target


def eligible_positions(input_ids: torch.Tensor, attention_mask: torch.Tensor,
                       special_table: torch.Tensor) -> torch.Tensor:
    """Positions that may be selected: real tokens (attention 1) that are not special ([CLS], [SEP], [PAD]...).

    ``special_table[id]`` is True for every special id, so one gather answers the question for the
    whole batch (torch.isin would do too, but with many specials it sorts, a host sync on a GPU).
    """
    is_special = special_table.index_select(0, input_ids.flatten()).view_as(input_ids)
    return attention_mask.bool() & ~is_special


def select_positions(eligible: torch.Tensor, u: torch.Tensor, mlm_probability: float = 0.15) -> torch.Tensor:
    """The 15 % selection: an eligible position becomes a prediction target when its uniform draw u < p.

    ``u`` holds one number drawn uniformly from [0, 1) per position, so each eligible position is
    selected independently with probability ``mlm_probability``.
    """
    return eligible & (u < mlm_probability)


def random_tokens(allowed_ids: torch.Tensor, shape: torch.Size,
                  generator: torch.Generator | None = None) -> torch.Tensor:
    """One id drawn uniformly from ``allowed_ids`` (the non-special vocabulary) for every position."""
    draws = torch.randint(0, allowed_ids.numel(), shape, generator=generator, device=allowed_ids.device)
    # index_select gives the same as allowed_ids[draws], without advanced indexing's overhead on a CPU
    return allowed_ids.index_select(0, draws.flatten()).view(shape)


def replace_selected(input_ids: torch.Tensor, selected: torch.Tensor, u: torch.Tensor, random_ids: torch.Tensor,
                     mask_token_id: int, mlm_probability: float = 0.15, mask_replace_prob: float = 0.8,
                     random_replace_prob: float = 0.1) -> tuple[torch.Tensor, torch.Tensor]:
    """The 80/10/10 replacement; returns the corrupted ids and the labels.

    It reuses the ``u`` that selected a position: a selected u is uniform on [0, p), so u < 0.8 p
    for 80 % of the selected, 0.8 p <= u < 0.9 p for 10 % and u >= 0.9 p for the last 10 %.
    """
    to_mask = selected & (u < mlm_probability * mask_replace_prob)
    to_random = selected & ~to_mask & (u < mlm_probability * (mask_replace_prob + random_replace_prob))
    corrupted = torch.where(to_mask, mask_token_id, input_ids)
    corrupted = torch.where(to_random, random_ids, corrupted)  # the rest of the selected stay as they are
    labels = torch.where(selected, input_ids, IGNORE_INDEX)  # the original id where selected, -100 elsewhere
    return corrupted, labels


# --------------------------------------------------------------------------------------------
# The collator: input checks, lookups per device, a seeded generator, then the four functions
# --------------------------------------------------------------------------------------------


def _device_key(device: torch.device | str) -> str:
    """'cuda' and 'cuda:0' name one GPU; key both the same so a checkpoint saves the generator in use."""
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    return str(device)


def _check_probabilities(mlm_probability: float, mask_replace_prob: float, random_replace_prob: float) -> None:
    if not 0.0 < mlm_probability < 1.0:
        raise ValueError(f"mlm_probability must be strictly between 0 and 1 (BERT uses 0.15), got {mlm_probability}")
    for name, value in (("mask_replace_prob", mask_replace_prob), ("random_replace_prob", random_replace_prob)):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must lie in [0, 1] (BERT uses 0.8 and 0.1), got {value}")
    if mask_replace_prob + random_replace_prob > 1.0 + 1e-12:
        raise ValueError(
            f"mask_replace_prob + random_replace_prob must be at most 1 (the rest is kept unchanged), "
            f"got {mask_replace_prob} + {random_replace_prob}"
        )


def special_ids(tokenizer: Any) -> list[int]:
    """Every id the tokenizer treats as special ([PAD], [UNK], [CLS], [SEP], [MASK], added specials)."""
    return sorted({int(i) for i in tokenizer.all_special_ids if i is not None})


class MLMCollator:
    """Dynamic BERT masking: a new random mask on every call, vectorised over the whole batch.

    ``collator.mask(input_ids, attention_mask)`` masks a padded 2-D batch on its own device (what the
    pretraining loop calls on GPU) and returns ``input_ids`` (a corrupted copy), ``attention_mask`` and
    ``labels`` (the original id where selected, -100 elsewhere). The caller's tensors are never modified.

    ``seed`` gives each device its own ``torch.Generator`` so a rerun reproduces the same sequence of
    masks; ``seed=None`` uses torch's global RNG (seeded by ``pipeline.store.runinfo.set_seed``).
    """

    def __init__(self, tokenizer: Any, mlm_probability: float = 0.15, mask_replace_prob: float = 0.8,
                 random_replace_prob: float = 0.1, seed: int | None = None) -> None:
        _check_probabilities(mlm_probability, mask_replace_prob, random_replace_prob)
        if tokenizer.mask_token_id is None:
            raise ValueError("the tokenizer has no mask token; give it mask_token='[MASK]' when loading it")
        self.tokenizer = tokenizer
        self.mlm_probability = float(mlm_probability)
        self.mask_replace_prob = float(mask_replace_prob)
        self.random_replace_prob = float(random_replace_prob)
        self.seed = seed
        self.mask_token_id = int(tokenizer.mask_token_id)
        self.pad_token_id = None if tokenizer.pad_token_id is None else int(tokenizer.pad_token_id)
        self.vocab_size = len(tokenizer)
        # Built once: the lookups every call needs, kept on the CPU and copied to a device on first use.
        self.special_ids = torch.tensor(special_ids(tokenizer), dtype=torch.long)
        table_size = max(self.vocab_size, int(self.special_ids.max()) + 1 if self.special_ids.numel() else 0)
        self.special_table = torch.zeros(table_size, dtype=torch.bool)  # special_table[id] is True for specials
        self.special_table[self.special_ids] = True
        self.allowed_ids = torch.nonzero(~self.special_table[:self.vocab_size]).flatten()  # random replacements
        if self.allowed_ids.numel() == 0:
            raise ValueError(
                f"the tokenizer's vocabulary of {self.vocab_size} ids holds only special tokens, so every "
                f"word becomes [UNK] and nothing can be masked (the loss would be NaN). {LOAD_HINT}"
            )
        if self.allowed_ids.numel() < 100:
            warnings.warn(
                f"the tokenizer has only {self.allowed_ids.numel()} non-special tokens; was it loaded properly? "
                f"{LOAD_HINT}", stacklevel=2,
            )
        self._on_device: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
        self._generators: dict[str, torch.Generator] = {}

    @property
    def n_allowed(self) -> int:
        """How many ids a random replacement is drawn from (the non-special vocabulary)."""
        return int(self.allowed_ids.numel())

    def _lookups(self, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        key = _device_key(device)
        if key not in self._on_device:
            self._on_device[key] = (self.special_table.to(device), self.allowed_ids.to(device))
        return self._on_device[key]

    def generator(self, device: torch.device | str) -> torch.Generator | None:
        """The seeded generator masks on ``device`` are drawn from (None when seed is None).

        Save and restore its ``get_state()`` with a training checkpoint to resume the same masks.
        """
        return self._generator(torch.device(device))

    def _generator(self, device: torch.device) -> torch.Generator | None:
        if self.seed is None:
            return None
        key = _device_key(device)
        if key not in self._generators:
            self._generators[key] = torch.Generator(device=device).manual_seed(self.seed)
        return self._generators[key]

    def mask(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """Mask a (batch, seq) id tensor; no host-device synchronisation, so it is cheap inside a GPU loop.

        Without ``attention_mask``, positions holding the pad id count as padding.
        """
        if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 2:
            raise ValueError(
                "input_ids must be a 2-D (batch, sequence) tensor; for one sequence use ids.unsqueeze(0); for a "
                "list of examples pad them into one batch first, batch = tokenizer.pad(examples, return_tensors='pt'),"
                " then call collator.mask(batch['input_ids'], batch['attention_mask'])"
            )
        if input_ids.dtype.is_floating_point or input_ids.dtype == torch.bool:
            raise ValueError(f"input_ids must hold integer token ids, got dtype {input_ids.dtype}")
        device = input_ids.device
        ids = input_ids.long()
        if attention_mask is None:
            attention_mask = (ids != self.pad_token_id) if self.pad_token_id is not None else torch.ones_like(ids)
        elif attention_mask.shape != ids.shape:
            raise ValueError(f"attention_mask has shape {tuple(attention_mask.shape)}, input_ids {tuple(ids.shape)}")
        attention_mask = attention_mask.to(device=device, dtype=torch.long)
        if device.type == "cpu" and ids.numel():  # on a GPU this check would cost a sync; the gather asserts there
            low, high = torch.aminmax(ids)
            if int(low) < 0 or int(high) >= len(self.special_table):
                raise ValueError(
                    f"input_ids hold ids outside 0..{len(self.special_table) - 1}, the tokenizer's vocabulary; "
                    "were they made with a different tokenizer?"
                )
        special_table, allowed = self._lookups(device)
        gen = self._generator(device)
        # The algorithm of notebook 01, section 1, in the same order of random draws.
        eligible = eligible_positions(ids, attention_mask, special_table)
        u = torch.rand(ids.shape, generator=gen, device=device)
        selected = select_positions(eligible, u, self.mlm_probability)
        random_ids = random_tokens(allowed, ids.shape, gen)
        corrupted, labels = replace_selected(ids, selected, u, random_ids, self.mask_token_id, self.mlm_probability,
                                             self.mask_replace_prob, self.random_replace_prob)
        return {"input_ids": corrupted, "attention_mask": attention_mask, "labels": labels}

    def expected_shares(self) -> dict[str, float]:
        """Exact probabilities of what a selected token looks like afterwards.

        A random draw equals the original id with probability 1/|allowed| (the original is always an
        allowed id, since specials are never selected), so "unchanged" is a little above its nominal
        share and "random" (visibly changed) a little below.
        """
        coincide = self.random_replace_prob / self.n_allowed
        return {
            "selection": self.mlm_probability,
            "mask": self.mask_replace_prob,
            "random": self.random_replace_prob - coincide,
            "unchanged": 1.0 - self.mask_replace_prob - self.random_replace_prob + coincide,
        }


# --------------------------------------------------------------------------------------------
# Catching a tokenizer that turns text into [UNK]
# --------------------------------------------------------------------------------------------


def unk_share(tokenizer: Any, texts: Sequence[str]) -> tuple[float, int]:
    """Share of [UNK] among the tokens of ``texts`` (no special tokens added), and the token count."""
    encoded = tokenizer(list(texts), add_special_tokens=False, truncation=False, verbose=False,
                        return_attention_mask=False)["input_ids"]
    n_tokens = sum(len(ids) for ids in encoded)
    if tokenizer.unk_token_id is None or n_tokens == 0:
        return 0.0, n_tokens
    n_unk = sum(ids.count(tokenizer.unk_token_id) for ids in encoded)
    return n_unk / n_tokens, n_tokens


def check_maskable(tokenizer: Any, texts: Sequence[str], max_unk_rate: float = 0.05) -> float:
    """Raise ValueError if real text would leave MLM nothing to learn from; return the [UNK] rate.

    A tokenizer loaded the wrong way maps every word to [UNK]; [UNK] is a special token, so the
    collator selects nothing, every label is -100 and the mean loss over zero tokens is NaN, with
    no error anywhere. Run this on a few documents before training.
    """
    texts = [t for t in texts if t and t.strip()]
    if not texts:
        raise ValueError("check_maskable needs some non-empty texts to tokenize")
    if not 0.0 <= max_unk_rate <= 1.0:
        raise ValueError(f"max_unk_rate must lie in [0, 1], got {max_unk_rate}")
    n_vocab, n_special = len(tokenizer), len(special_ids(tokenizer))
    rate, n_tokens = unk_share(tokenizer, texts)
    if n_tokens == 0:
        raise ValueError("the tokenizer produced no tokens at all for the given texts. " + LOAD_HINT)
    if n_vocab <= n_special or rate > max_unk_rate:
        raise ValueError(
            f"{rate:.1%} of the {n_tokens} tokens are [UNK] (allowed: {max_unk_rate:.1%}); the vocabulary has "
            f"{n_vocab} ids of which {n_special} are special. [UNK] is never masked, so MLM would select "
            f"(almost) nothing and the loss would be NaN or meaningless. {LOAD_HINT}"
        )
    return rate


# --------------------------------------------------------------------------------------------
# Measuring what a collator did
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MaskingStats:
    """Counts from one masked batch; the rates are properties so the counts stay the source of truth."""

    n_tokens: int  # non-padding positions
    n_eligible: int  # non-padding, non-special positions
    n_selected: int  # positions with a label
    n_mask: int  # selected and now [MASK]
    n_random: int  # selected, changed, not [MASK]
    n_unchanged: int  # selected and identical to the input
    n_random_special: int  # random replacements that are special tokens (our collator: always 0)
    n_selected_ineligible: int  # specials or padding given a label (must be 0)
    n_unselected_changed: int  # positions without a label whose id changed (must be 0)
    n_label_mismatch: int  # labelled positions whose label is not the original id (must be 0)

    def rates(self) -> dict[str, float]:
        """Selection among the eligible tokens; the three actions among the selected (NaN if none)."""
        def share(count: int, total: int) -> float:
            return count / total if total else float("nan")

        return {"selection": share(self.n_selected, self.n_eligible), "mask": share(self.n_mask, self.n_selected),
                "random": share(self.n_random, self.n_selected), "unchanged": share(self.n_unchanged, self.n_selected)}

    def trials(self) -> dict[str, int]:
        """The binomial ``n`` behind each rate (eligible tokens for selection, selected for the shares)."""
        return {"selection": self.n_eligible, "mask": self.n_selected, "random": self.n_selected,
                "unchanged": self.n_selected}

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "rates": self.rates()}


def masking_stats(input_ids: torch.Tensor, output: Mapping[str, torch.Tensor], special_token_ids: Sequence[int],
                  mask_token_id: int, attention_mask: torch.Tensor | None = None) -> MaskingStats:
    """Compare a batch before and after masking. ``output`` needs ``input_ids`` and ``labels``.

    Works for any collator that marks unselected positions with -100 (ours, transformers', the loop style).
    """
    before = input_ids.long().cpu()
    after = output["input_ids"].long().cpu()
    labels = output["labels"].long().cpu()
    if attention_mask is None:
        attention_mask = output.get("attention_mask", torch.ones_like(before))
    real = attention_mask.cpu().bool()
    specials = torch.tensor(list(special_token_ids), dtype=torch.long)
    eligible = real & ~torch.isin(before, specials)
    selected = labels != IGNORE_INDEX
    changed = after != before
    is_mask = after == mask_token_id
    random_ = selected & changed & ~is_mask

    def count(t: torch.Tensor) -> int:
        return int(t.sum().item())

    return MaskingStats(
        n_tokens=count(real), n_eligible=count(eligible), n_selected=count(selected),
        n_mask=count(selected & is_mask), n_random=count(random_), n_unchanged=count(selected & ~changed),
        n_random_special=count(random_ & torch.isin(after, specials)),
        n_selected_ineligible=count(selected & ~eligible), n_unselected_changed=count(~selected & changed),
        n_label_mismatch=count(selected & (labels != before)),
    )


def expected_random_specials(n_selected: int, n_special: int, vocab_size: int, random_share: float = 0.1) -> float:
    """Expected special tokens among the random replacements of a collator that draws over the whole vocabulary.

    ``n_special`` counts ``[MASK]`` too; a random draw of ``[MASK]`` looks like a mask replacement to
    :func:`masking_stats`, so only the other ``n_special - 1`` specials count here.
    """
    return n_selected * random_share * max(n_special - 1, 0) / vocab_size


def binomial_tolerance(p: float, n: int, z: float = 5.0) -> float:
    """``z`` binomial standard deviations of a rate estimated from ``n`` trials."""
    if n <= 0:
        raise ValueError(f"a rate needs at least one trial, got n={n}")
    return z * math.sqrt(p * (1.0 - p) / n)


def within_tolerance(stats: MaskingStats, expected: Mapping[str, float], z: float = 5.0) -> dict[str, dict[str, Any]]:
    """Per rate: observed, expected, n, tolerance and whether |observed - expected| <= tolerance."""
    rates, trials = stats.rates(), stats.trials()
    table = {}
    for key, p in expected.items():
        tol = binomial_tolerance(p, trials[key], z)
        table[key] = {"observed": rates[key], "expected": p, "n": trials[key], "tolerance": tol,
                      "ok": abs(rates[key] - p) <= tol}
    return table


# --------------------------------------------------------------------------------------------
# Teaching aids: the tutorial-style baseline, static vs dynamic coverage, the silent failure
# --------------------------------------------------------------------------------------------


def mask_loop_style(input_ids: torch.Tensor, attention_mask: torch.Tensor, tokenizer: Any,
                    mlm_probability: float = 0.15, generator: torch.Generator | None = None) -> dict[str, torch.Tensor]:
    """THE FLAWED BASELINE, kept only to time and discuss; use :class:`MLMCollator` for training.

    It follows the common tutorial recipe: the special-tokens mask is built one row at a time with a
    Python loop over ``get_special_tokens_mask`` (slow, and a host round trip on GPU), and "random"
    replacements are drawn over the whole vocabulary, so special tokens such as [PAD] or [MASK] can
    be inserted as the random token.
    """
    ids = input_ids.clone()
    labels = input_ids.clone()
    special_rows = [tokenizer.get_special_tokens_mask(row.tolist(), already_has_special_tokens=True) for row in ids]
    special = torch.tensor(special_rows, dtype=torch.bool)
    probability = torch.full(ids.shape, mlm_probability)
    probability.masked_fill_(special | (attention_mask == 0), 0.0)
    selected = torch.bernoulli(probability, generator=generator).bool()
    to_mask = selected & torch.bernoulli(torch.full(ids.shape, 0.8), generator=generator).bool()
    ids[to_mask] = tokenizer.mask_token_id
    to_random = selected & ~to_mask & torch.bernoulli(torch.full(ids.shape, 0.5), generator=generator).bool()
    random_ids = torch.randint(0, len(tokenizer), ids.shape, generator=generator)
    ids[to_random] = random_ids[to_random]
    labels[~selected] = IGNORE_INDEX
    return {"input_ids": ids, "attention_mask": attention_mask, "labels": labels}


def selection_coverage(collator: MLMCollator, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                       epochs: int, static_copies: int | None = None) -> list[float]:
    """Share of eligible tokens that have been a prediction target at least once, after each epoch.

    ``static_copies=None`` draws a new mask every epoch (dynamic, RoBERTa); ``static_copies=k`` makes
    k masks once and cycles through them (original BERT duplicated its data 10 times, 40 epochs).
    """
    if epochs < 1:
        raise ValueError(f"epochs must be at least 1, got {epochs}")
    if static_copies is not None and static_copies < 1:
        raise ValueError(f"static_copies must be a positive number of copies or None, got {static_copies}")
    n_masks = epochs if static_copies is None else min(static_copies, epochs)
    masks = [collator.mask(input_ids, attention_mask)["labels"] != IGNORE_INDEX for _ in range(n_masks)]
    eligible = attention_mask.bool() & ~torch.isin(input_ids, collator.special_ids.to(input_ids.device))
    seen = torch.zeros_like(eligible)
    n_eligible = max(int(eligible.sum().item()), 1)
    coverage = []
    for epoch in range(epochs):
        seen |= masks[epoch % n_masks]
        coverage.append(int((seen & eligible).sum().item()) / n_eligible)
    return coverage


def write_vocab_file(tokenizer: Any, path: str | Path) -> Path:
    """vocab.txt (one token per line, line number = id): the file the silent failure is built from."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    by_id = sorted(tokenizer.get_vocab().items(), key=lambda item: item[1])
    path.write_text("".join(f"{token}\n" for token, _ in by_id), encoding="utf-8")
    return path


def silent_failure_report(tokenizer: Any, texts: Sequence[str], seq_len: int = 128, seed: int = 0) -> dict[str, Any]:
    """What the standard pipeline does with ``tokenizer``, no checks in the way.

    Encodes ``texts``, masks them with transformers' ``DataCollatorForLanguageModeling`` (what most
    code uses) and computes the MLM loss a model with uniform predictions would get. A healthy
    tokenizer gives log(vocabulary size); one that maps everything to [UNK] selects nothing and gives NaN.
    """
    from transformers import DataCollatorForLanguageModeling

    enc = tokenizer(list(texts), truncation=True, max_length=seq_len)
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.15, seed=seed)
    batch = collator([{"input_ids": ids} for ids in enc["input_ids"]])
    labels = batch["labels"].flatten()
    logits = torch.zeros(labels.numel(), len(tokenizer))  # uniform predictions: loss = log(vocab) if any label
    loss = torch.nn.functional.cross_entropy(logits, labels, ignore_index=IGNORE_INDEX)
    ids = torch.as_tensor([i for row in enc["input_ids"] for i in row])
    eligible = ~torch.isin(ids, torch.tensor(special_ids(tokenizer)))
    return {
        "tokenizer": type(tokenizer).__name__,
        "vocab_size": len(tokenizer),
        "first_tokens": tokenizer.convert_ids_to_tokens(enc["input_ids"][0][:12]),
        "unk_rate": unk_share(tokenizer, texts)[0],
        "n_tokens": int(ids.numel()),
        "n_eligible": int(eligible.sum()),
        "n_selected": int((labels != IGNORE_INDEX).sum()),
        "loss_uniform_model": float(loss),
    }


