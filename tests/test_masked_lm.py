"""BERT's masked-token selection (transformer_lib.pipeline.masked_lm, chapter 14)."""

import pytest
import torch

from transformer_lib.pipeline.masked_lm import IGNORE_INDEX, mask_tokens
from transformer_lib.pipeline.tokenizer import BOS_ID, EOS_ID, PAD_ID

V, MASK = 1000, 1000  # [MASK] as a new id after the vocabulary


def batch(B=400, T=50, n_pad=10):
    ids = torch.randint(5, V, (B, T))
    ids[:, 0], ids[:, T - n_pad - 1] = BOS_ID, EOS_ID
    ids[:, T - n_pad :] = PAD_ID
    return ids


def test_proportions_over_many_draws():
    ids = batch()
    out = mask_tokens(ids, MASK, V, seed=0)
    real = ids > EOS_ID  # the 38 content tokens of each row
    n = out.selected.sum().item()
    assert abs(n / real.sum().item() - 0.15) < 0.01
    shares = [(out.how == k).sum().item() / n for k in (1, 2, 3)]
    for share, want in zip(shares, (0.8, 0.1, 0.1)):
        assert abs(share - want) < 0.02, shares
    assert (out.inputs[out.how == 1] == MASK).all()
    assert (out.inputs[out.how == 3] == ids[out.how == 3]).all()
    random = out.inputs[out.how == 2]
    assert ((random >= 5) & (random < V)).all()  # never a special token or [MASK]
    assert (random != ids[out.how == 2]).float().mean() > 0.99  # mostly a change


def test_special_tokens_and_padding_never_selected_or_changed():
    ids = batch()
    out = mask_tokens(ids, MASK, V, rate=1.0, seed=1)
    special = ids <= EOS_ID
    assert not out.selected[special].any()
    assert out.selected[~special].all()
    assert (out.inputs[special] == ids[special]).all()
    assert (out.targets[special] == IGNORE_INDEX).all()
    assert (out.targets[~special] == ids[~special]).all()


def test_targets_and_unselected_inputs():
    ids = batch()
    out = mask_tokens(ids, MASK, V, seed=2)
    assert (out.targets[out.selected] == ids[out.selected]).all()
    assert (out.targets[~out.selected] == IGNORE_INDEX).all()
    assert (out.inputs[~out.selected] == ids[~out.selected]).all()
    assert (out.how[~out.selected] == 0).all()
    assert out.inputs.shape == out.targets.shape == ids.shape


def test_seed_makes_it_reproducible():
    ids = batch(B=20)
    a, b = mask_tokens(ids, MASK, V, seed=3), mask_tokens(ids, MASK, V, seed=3)
    c = mask_tokens(ids, MASK, V, seed=4)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert not torch.equal(a.selected, c.selected)


@pytest.mark.parametrize("rate", [0.0, -0.1, 1.5])
def test_bad_rate_is_a_clear_error(rate):
    with pytest.raises(ValueError, match="rate must be in"):
        mask_tokens(batch(B=2), MASK, V, rate=rate)


def test_float_ids_are_an_error():
    with pytest.raises(ValueError, match="integer token ids"):
        mask_tokens(torch.zeros(2, 3), MASK, V)
