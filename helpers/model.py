"""The Table 4 model, its initialisations (BERT_TINY, BERT_FT, the control BERT_FT_PERM) and a masked-only MLM loss.

Only torch, numpy and transformers at module level: this module runs on the GPU machines, which
lack datasets, fasttext and papermill.

Attention (measured on the 2-core CPU, see benchmarks/README.md): transformers 5.x picks
``attn_implementation="sdpa"`` for BERT by default, i.e. ``torch.nn.functional.scaled_dot_product_attention``.
On the CPU a training step with ``"eager"`` took about as long (0.70 vs 0.72 s, within the noise), so the
CPU keeps the default. On CUDA the head
dimension matters: 300 / 4 heads = 75, not a multiple of 8, so PyTorch's flash and memory-efficient
kernels refuse the call and SDPA falls back to its slow "math" kernel. ``"sdpa_padded"`` (registered
below) zero-pads q, k and v to 80 and keeps the softmax scale at 1/sqrt(75): q.k is unchanged by the
zero columns, and the five extra output columns are zeros that are sliced off, so the result is the
same attention (tested on the CPU for exact equality). Its GPU speed-up was not measured here.
Every option runs the same code on the CPU and on CUDA (tests/test_gpu_path_on_cpu.py).
"""

from __future__ import annotations

from typing import Any, Union

import numpy as np
import torch
import torch.nn.functional as F
from transformers import AttentionInterface, BertConfig, BertForMaskedLM
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from helpers.masking import IGNORE_INDEX

# Table 4 of Mištera & Král: the model both BERT_TINY and BERT_FT use.
TABLE4: dict[str, Any] = {
    "vocab_size": 30_000,
    "hidden_size": 300,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 512,
    "max_position_embeddings": 128,
    "type_vocab_size": 2,
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
    "tie_word_embeddings": True,
}
TABLE4_PARAMETERS = 10_501_324  # Table 4; decoder tied to the input embeddings, no pooler
PADDED_ATTENTION = "sdpa_padded"
PAD_HEAD_DIM_TO = 8


def bert_tiny_config(**overrides: Any) -> BertConfig:
    """Table 4 as a BertConfig; overrides (e.g. a tokenizer's vocab_size and pad_token_id) win."""
    unknown = [k for k in overrides if not hasattr(BertConfig(), k)]
    if unknown:
        raise ValueError(f"unknown BertConfig field(s) {unknown}; see transformers.BertConfig for the names")
    return BertConfig(**{**TABLE4, **overrides})


InitSpec = Union[str, np.ndarray, Any]  # "random", an embedding matrix, or an Alignment-like object with .matrix


def static_matrix(init: InitSpec) -> np.ndarray | None:
    """The matrix BERT_FT's token embeddings start from (None for BERT_TINY's random init).

    ``init`` is in memory: 'random', a (vocab_size, hidden_size) array, or an Alignment (``.matrix``).
    A static/ folder is read by the machinery first (pipeline.train.training loads it).
    """
    if isinstance(init, str) and init == "random":
        return None
    if isinstance(init, np.ndarray):
        return init.astype(np.float32, copy=False)
    if hasattr(init, "matrix"):
        return np.asarray(init.matrix, dtype=np.float32)
    raise ValueError(f"init must be 'random', an embedding matrix or an Alignment, got {type(init).__name__} "
                     f"{str(init)[:80]!r}; load a static-vector folder with load_aligned first")


def check_matrix_shape(matrix: np.ndarray, config: BertConfig) -> None:
    expected = (config.vocab_size, config.hidden_size)
    if tuple(matrix.shape) != expected:
        raise ValueError(
            f"the static embedding matrix has shape {tuple(matrix.shape)} but the model needs "
            f"(vocab_size, hidden_size) = {expected}; build the vectors with the same tokenizer and "
            "dimension as the model (or pass vocab_size/hidden_size overrides that match)"
        )


def build_model(init: InitSpec = "random", seed: int = 0, config: BertConfig | None = None,
                **overrides: Any) -> BertForMaskedLM:
    """BERT_TINY (init='random') or BERT_FT (init = an Alignment or its matrix).

    The seed is set right before construction, so two calls with the same seed give models that
    differ only in the token embedding matrix: the comparison isolates the initialisation.
    """
    config = config if config is not None else bert_tiny_config(**overrides)
    matrix = static_matrix(init)
    if matrix is not None:
        check_matrix_shape(matrix, config)  # fail before spending time on construction
    torch.manual_seed(seed)
    model = BertForMaskedLM(config)
    if matrix is not None:
        copy_static_embeddings(model, matrix)
    return model


def copy_static_embeddings(model: BertForMaskedLM, matrix: np.ndarray) -> None:
    """Overwrite the token embeddings with ``matrix`` (rows without a vector are already zero in it).

    The decoder is tied to this tensor, so the output projection starts from the same vectors.
    """
    check_matrix_shape(matrix, model.config)
    weight = model.bert.embeddings.word_embeddings.weight
    with torch.no_grad():
        weight.copy_(torch.from_numpy(np.ascontiguousarray(matrix)).to(weight.dtype))


PERMUTATION_STREAM = 0x5045524D  # "PERM": the permutation's own random stream, apart from the model's and the masks'


def permute_vector_rows(matrix: np.ndarray, found: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The control's start: BERT_FT's rows that hold a vector, shuffled among themselves (the rest stay zero).

    Each row keeps its length and the rows their spread, but (bar about one fixed point) none stays on its word,
    so BERT_FT's gain over the control is the vectors' knowledge, not their scale. Returns the matrix and
    ``order``: row ``rows[i]`` of the result is ``matrix[rows[order[i]]]``, ``rows`` the found rows in id order.
    """
    found = np.asarray(found, dtype=bool)
    if found.shape != (matrix.shape[0],):
        raise ValueError(f"found must hold one flag per row of the {matrix.shape[0]}-row matrix, got {found.shape}")
    rows = np.flatnonzero(found)
    order = np.random.default_rng(np.random.SeedSequence([seed, PERMUTATION_STREAM])).permutation(len(rows))
    permuted = np.array(matrix, dtype=np.float32, copy=True)
    permuted[rows] = matrix[rows[order]]
    return permuted, order


def count_parameters(model: torch.nn.Module) -> int:
    """Unique parameters: a tied tensor counts once, as in Table 4."""
    seen: dict[int, int] = {}
    for p in model.parameters():
        seen[id(p)] = p.numel()
    return sum(seen.values())


def masked_rows(labels: torch.Tensor, max_masked: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Flat indices of the scored positions and their labels.

    With ``max_masked`` the result has a fixed length (static shapes for torch.compile, no host
    sync): the first ``max_masked`` scored positions, padded with ignored rows. Positions past the
    cap are dropped, so pick a cap a few binomial standard deviations above the expected count.
    """
    flat = labels.reshape(-1)
    scored = flat != IGNORE_INDEX
    if max_masked is None:
        index = scored.nonzero().squeeze(1)  # data-dependent length: a host sync on CUDA
        return index, flat[index]
    k = min(int(max_masked), flat.numel())
    # Stable sort puts scored positions first, in order; a fixed-size slice needs no sync.
    index = torch.argsort(scored.to(torch.int8), descending=True, stable=True)[:k]
    picked = flat[index]
    return index, torch.where(scored[index], picked, torch.full_like(picked, IGNORE_INDEX))


def sync_free_mask(model: BertForMaskedLM, attention_mask: torch.Tensor | None) -> torch.Tensor | None:
    """Hand SDPA a ready (batch, 1, 1, seq) boolean mask, on every device.

    Given a 2-D mask, transformers first asks ``mask.all()`` to see whether it may drop the mask,
    a host-device sync on every forward pass on CUDA; a 4-D mask is passed through untouched and
    broadcast by SDPA over the query positions (on the CPU no slower than the 2-D path,
    benchmarks/results/cpu_options.json). Eager attention keeps the 2-D mask it expects.
    """
    if (attention_mask is None or attention_mask.dim() != 2
            or model.config._attn_implementation not in ("sdpa", PADDED_ATTENTION)):
        return attention_mask
    return attention_mask.bool()[:, None, None, :]


def masked_logits(model: BertForMaskedLM, input_ids: torch.Tensor, attention_mask: torch.Tensor | None,
                  labels: torch.Tensor, max_masked: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits at the masked positions only, with their target ids: the output layer sees ~15 % of the rows."""
    # The encoder runs on every position: each token's output depends on the whole sequence.
    hidden = model.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    # Keep the rows whose label is scored (IGNORE_INDEX everywhere else), in reading order.
    index, targets = masked_rows(labels, max_masked)
    rows = hidden.reshape(-1, hidden.shape[-1]).index_select(0, index)
    # The output layer (a transform, then hidden x vocabulary tied to the input embeddings) on those rows,
    # in at least float32: the softmax over the vocabulary needs it even when the encoder ran in bfloat16.
    logits = model.cls(rows)
    return logits.to(torch.promote_types(logits.dtype, torch.float32)), targets


def mlm_loss(model: BertForMaskedLM, input_ids: torch.Tensor, attention_mask: torch.Tensor | None,
             labels: torch.Tensor, max_masked: int | None = None, reduction: str = "mean") -> torch.Tensor:
    """BERT's MLM objective: mean cross-entropy over the masked positions (or their sum), as a device tensor."""
    logits, targets = masked_logits(model, input_ids, attention_mask, labels, max_masked)
    return F.cross_entropy(logits, targets, ignore_index=IGNORE_INDEX, reduction=reduction)


class MaskedLMLoss(torch.nn.Module):
    """:func:`mlm_loss` as a module returning (sum over the scored rows, their number).

    A module, so that torch.compile and DistributedDataParallel can wrap the whole loss (DDP only
    synchronises gradients of a forward pass that went through it); a sum and a count, so that
    several processes can divide by the number of masked tokens of the whole batch.
    """

    def __init__(self, model: BertForMaskedLM, max_masked: int | None = None) -> None:
        super().__init__()
        self.model = model
        self.max_masked = max_masked

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None,
                labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        total = mlm_loss(self.model, input_ids, attention_mask, labels, self.max_masked, reduction="sum")
        count = (labels != IGNORE_INDEX).sum()
        if self.max_masked is not None:  # rows past the cap are not scored (masked_rows)
            count = count.clamp(max=self.max_masked)
        return total, count


# --------------------------------------------------------------------------------------------
# Attention with the head dimension padded to a multiple of 8 (for CUDA's fast SDPA kernels)
# --------------------------------------------------------------------------------------------


def padded_sdpa_attention(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                          attention_mask: torch.Tensor | None, scaling: float | None = None,
                          **kwargs: Any) -> tuple[torch.Tensor, Any]:
    """transformers' SDPA attention on q, k, v zero-padded to a multiple of 8 (75 -> 80).

    The scale stays 1/sqrt(real head dim): BertSelfAttention passes it, and we default to it.
    """
    head_dim = query.shape[-1]
    pad = (-head_dim) % PAD_HEAD_DIM_TO
    if scaling is None:
        scaling = head_dim ** -0.5
    if pad:
        query, key, value = (F.pad(t, (0, pad)) for t in (query, key, value))
    out, weights = sdpa_attention_forward(module, query, key, value, attention_mask, scaling=scaling, **kwargs)
    return out[..., :head_dim], weights


AttentionInterface.register(PADDED_ATTENTION, padded_sdpa_attention)
AttentionMaskInterface.register(PADDED_ATTENTION, sdpa_mask)


def use_attention(model: BertForMaskedLM, name: str) -> BertForMaskedLM:
    """Switch the attention kernel in place ('sdpa', 'eager' or 'sdpa_padded'); weights are untouched.

    The choice is not written by save_pretrained, so saved models load anywhere with the default.
    """
    model.set_attn_implementation(name)
    return model


def differing_parameters(a: torch.nn.Module, b: torch.nn.Module) -> list[str]:
    """Names of parameters whose values differ between two models of the same architecture."""
    b_params = dict(b.named_parameters())
    return [name for name, p in a.named_parameters() if not torch.equal(p, b_params[name])]
