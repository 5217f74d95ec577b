"""helpers.model: Table 4, the two initialisations, the masked-only loss and the padded attention."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from helpers.masking import IGNORE_INDEX
from helpers.model import (
    PADDED_ATTENTION,
    TABLE4,
    TABLE4_PARAMETERS,
    bert_tiny_config,
    build_model,
    count_parameters,
    masked_logits,
    masked_rows,
    mlm_loss,
    use_attention,
)

# A model small enough for float64 gradient checks: head dim 30 / 4 = 7.5 -> use 28 / 4 = 7 (not a multiple of 8).
TINY = dict(vocab_size=53, hidden_size=28, num_hidden_layers=2, num_attention_heads=4, intermediate_size=40,
            max_position_embeddings=32)


def tiny_batch(seed: int = 0, batch: int = 3, length: int = 16, vocab: int = 53):
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, vocab, (batch, length), generator=gen)
    attention = torch.ones(batch, length, dtype=torch.long)
    attention[1, 11:] = 0  # one padded row, so the attention mask matters
    ids[1, 11:] = 0
    labels = torch.full((batch, length), IGNORE_INDEX)
    chosen = (torch.rand(batch, length, generator=gen) < 0.3) & attention.bool()
    chosen[0, 2] = True
    labels[chosen] = ids[chosen]
    return ids, attention, labels


def test_table4_parameter_count():
    model = build_model("random")
    assert count_parameters(model) == TABLE4_PARAMETERS == 10_501_324
    assert model.num_parameters() == TABLE4_PARAMETERS


def test_config_is_table4_and_overrides_win():
    config = bert_tiny_config()
    for key, value in TABLE4.items():
        assert getattr(config, key) == value, key
    assert bert_tiny_config(vocab_size=2000).vocab_size == 2000
    with pytest.raises(ValueError, match="unknown BertConfig field"):
        bert_tiny_config(hiden_size=300)


def test_decoder_is_tied_to_input_embeddings():
    model = build_model("random", **TINY)
    assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight


def test_masked_only_loss_equals_full_logits_loss_and_gradients():
    ids, attention, labels = tiny_batch()
    reference = build_model("random", **TINY).double().eval()
    ours = build_model("random", **TINY).double().eval()
    full = reference(input_ids=ids, attention_mask=attention, labels=labels).loss
    full.backward()
    loss = mlm_loss(ours, ids, attention, labels)
    loss.backward()
    assert torch.allclose(loss, full, rtol=1e-12, atol=1e-12)
    ref_grads = dict(reference.named_parameters())
    for name, param in ours.named_parameters():
        assert torch.allclose(param.grad, ref_grads[name].grad, rtol=1e-9, atol=1e-12), name
    # The masked rows' logits are the full logits' rows at the scored positions, in reading order.
    with torch.no_grad():
        logits = reference(input_ids=ids, attention_mask=attention).logits
        rows, targets = masked_logits(ours, ids, attention, labels)
    scored = labels != IGNORE_INDEX
    assert torch.allclose(rows, logits[scored], rtol=1e-12, atol=1e-12)
    assert torch.equal(targets, labels[scored])


def test_static_cap_pads_with_ignored_rows_and_keeps_the_loss():
    ids, attention, labels = tiny_batch(seed=1)
    model = build_model("random", **TINY).double().eval()
    n = int((labels != IGNORE_INDEX).sum())
    exact = mlm_loss(model, ids, attention, labels)
    capped = mlm_loss(model, ids, attention, labels, max_masked=n + 7)
    assert torch.allclose(exact, capped, rtol=1e-12)
    index, targets = masked_rows(labels, max_masked=n + 7)
    assert index.shape == (n + 7,) and int((targets == IGNORE_INDEX).sum()) == 7
    # A cap below the count keeps the first positions in order and drops the rest.
    index, targets = masked_rows(labels, max_masked=n - 2)
    exact_index, exact_targets = masked_rows(labels)
    assert torch.equal(index, exact_index[: n - 2]) and torch.equal(targets, exact_targets[: n - 2])


def test_ft_init_copies_the_matrix_and_changes_nothing_else():
    rng = np.random.default_rng(0)
    matrix = rng.normal(size=(TINY["vocab_size"], TINY["hidden_size"])).astype(np.float32)
    matrix[7] = 0.0  # a token without a vector keeps the zero fallback
    tiny = build_model("random", seed=3, **TINY)
    ft = build_model(_Alignment(matrix), seed=3, **TINY)
    embedding = ft.bert.embeddings.word_embeddings.weight.detach().numpy()
    assert np.array_equal(embedding, matrix)
    assert np.array_equal(ft.cls.predictions.decoder.weight.detach().numpy(), matrix)  # tied
    assert not np.allclose(tiny.bert.embeddings.word_embeddings.weight.detach().numpy(), matrix)
    tiny_params = dict(tiny.named_parameters())
    for name, param in ft.named_parameters():
        if name == "bert.embeddings.word_embeddings.weight":
            continue
        assert torch.equal(param, tiny_params[name]), name


def test_a_matrix_works_as_the_alignment_does_and_a_folder_is_refused():
    """build_model computes from memory; reading a static/ folder is the machinery's (pipeline.vectors.static_files)."""
    matrix = np.random.default_rng(1).normal(size=(TINY["vocab_size"], TINY["hidden_size"])).astype(np.float32)
    from_matrix = build_model(matrix, **TINY).bert.embeddings.word_embeddings.weight
    assert np.array_equal(from_matrix.detach().numpy(), matrix)
    assert torch.equal(from_matrix, build_model(_Alignment(matrix), **TINY).bert.embeddings.word_embeddings.weight)
    with pytest.raises(ValueError, match="load_aligned"):
        build_model(Path("runs/some-run/static"), **TINY)


def test_mismatched_matrix_is_refused_naming_both_shapes():
    wrong = np.zeros((TINY["vocab_size"] + 1, TINY["hidden_size"]), dtype=np.float32)
    with pytest.raises(ValueError) as err:
        build_model(_Alignment(wrong), **TINY)
    message = str(err.value)
    assert f"({TINY['vocab_size'] + 1}, {TINY['hidden_size']})" in message
    assert f"({TINY['vocab_size']}, {TINY['hidden_size']})" in message


@pytest.mark.parametrize("other", ["eager", PADDED_ATTENTION])
def test_attention_implementations_agree(other):
    """sdpa_padded (head dim 7 -> 8, scale kept at 1/sqrt(7)) computes the same attention as sdpa and eager."""
    ids, attention, labels = tiny_batch(seed=2)
    base = build_model("random", **TINY).double().eval()
    alt = use_attention(build_model("random", **TINY).double().eval(), other)
    assert alt.config._attn_implementation == other
    a = mlm_loss(base, ids, attention, labels)
    b = mlm_loss(alt, ids, attention, labels)
    a.backward()
    b.backward()
    assert torch.allclose(a, b, rtol=1e-12)
    base_params = dict(base.named_parameters())
    for name, param in alt.named_parameters():
        assert torch.allclose(param.grad, base_params[name].grad, rtol=1e-9, atol=1e-12), name


def test_padded_attention_really_pads():
    """Guard against a silent no-op: the padded kernel must see a head dim that is a multiple of 8."""
    import helpers.model as hm

    seen = []
    original = hm.sdpa_attention_forward

    def spy(module, q, k, v, mask, **kw):
        seen.append(q.shape[-1])
        return original(module, q, k, v, mask, **kw)

    hm.sdpa_attention_forward = spy
    try:
        ids, attention, _ = tiny_batch()
        model = use_attention(build_model("random", **TINY).eval(), PADDED_ATTENTION)
        out = model.bert(input_ids=ids, attention_mask=attention).last_hidden_state
    finally:
        hm.sdpa_attention_forward = original
    assert seen and all(d % 8 == 0 for d in seen)
    assert out.shape == (*ids.shape, TINY["hidden_size"])


def test_masked_rows_matches_a_python_loop():
    _, _, labels = tiny_batch(seed=4)
    index, targets = masked_rows(labels)
    flat = labels.reshape(-1).tolist()
    expected = [i for i, v in enumerate(flat) if v != IGNORE_INDEX]
    assert index.tolist() == expected
    assert targets.tolist() == [flat[i] for i in expected]


def test_ignore_index_has_one_definition():
    import helpers.masking
    import helpers.model

    assert "IGNORE_INDEX = " not in Path(helpers.model.__file__).read_text()
    assert helpers.model.IGNORE_INDEX is helpers.masking.IGNORE_INDEX == -100


def test_uniform_predictor_loss_is_log_vocab_size():
    """A model whose logits are all equal scores log(V) on every masked position (exercise 3's answer)."""
    ids, attention, labels = tiny_batch(seed=6)
    model = build_model("random", **TINY).double().eval()
    with torch.no_grad():
        model.cls.predictions.decoder.weight.zero_()
        model.cls.predictions.bias.zero_()
        loss = mlm_loss(model, ids, attention, labels)
    assert loss.item() == pytest.approx(np.log(TINY["vocab_size"]), rel=1e-12)


class _Alignment:
    """Stands in for helpers.static_vectors.Alignment: anything with .matrix and .report works."""

    def __init__(self, matrix: np.ndarray) -> None:
        self.matrix = matrix
        self.report = {"fallback": "zero"}



def test_four_d_mask_gives_the_same_hidden_states():
    """What sync_free_mask hands SDPA on CUDA, checked on the CPU against transformers' 2-D path."""
    ids, attention, _ = tiny_batch(seed=5)
    model = build_model("random", **TINY).double().eval()
    two_d = model.bert(input_ids=ids, attention_mask=attention).last_hidden_state
    four_d = model.bert(input_ids=ids, attention_mask=attention.bool()[:, None, None, :]).last_hidden_state
    assert torch.allclose(two_d, four_d, rtol=1e-12, atol=1e-12)
    assert not torch.allclose(two_d, model.bert(input_ids=ids).last_hidden_state)  # the mask matters here
