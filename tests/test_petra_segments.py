"""PeTra's training segments (models/petra/training_segments.py): long
documents cut where no labelled span is split, labels kept within a
segment, pairs across segments counted, short documents untouched."""

import pytest
import torch

from spacy_memcoref.models.petra.pytorch_petra import SparseGold
from spacy_memcoref.models.petra.training_segments import cut_points, split_for_training


def test_cuts_every_max_tokens_and_never_inside_a_span():
    assert cut_points(10, [], 4) == [0, 4, 8]
    assert cut_points(8, [], 4) == [0, 4]
    assert cut_points(4, [], 4) == [0]
    # the cut at 4 would split (3, 5): it moves back to 3; then 3 + 4 = 7 splits (6, 8) -> 6
    assert cut_points(12, [(3, 5), (6, 8)], 4) == [0, 3, 6, 10]
    # nested: the cut at 4 would split (1, 4), around (2, 3): it moves back to 1
    assert cut_points(9, [(2, 3), (1, 4)], 4) == [0, 1, 5]
    # a span longer than a segment moves no cut: (1, 6) is split, (2, 5) is not
    assert cut_points(9, [(2, 5), (1, 6)], 4) == [0, 2, 6]
    assert cut_points(10, [(0, 6)], 4) == [0, 4, 8]
    with pytest.raises(ValueError, match="max_tokens"):
        cut_points(5, [], 0)


def test_split_keeps_the_labels_of_each_segment_and_counts_the_pairs_across():
    x = torch.arange(12, dtype=torch.float32).reshape(12, 1)
    gold = SparseGold(spans=[(0, 1), (3, 5), (6, 6), (10, 11)], pairs=[(0, 1, 1.0), (1, 2, 0.0), (2, 3, 1.0)])
    feats, golds, dropped = split_for_training([x], [gold], 4)
    # cuts: 0, 3 (not 4: (3, 5)), 7, 11 would split (10, 11) -> 10
    assert [f[:, 0].tolist() for f in feats] == [[0, 1, 2], [3, 4, 5, 6], [7, 8, 9], [10, 11]]
    assert [g.spans for g in golds] == [[(0, 1)], [(0, 2), (3, 3)], [], [(0, 1)]]
    assert [g.pairs for g in golds] == [[], [(0, 1, 0.0)], [], []]
    assert dropped == 2  # (0, 1) and (2, 3) cross segments


def test_short_documents_and_zero_are_untouched():
    x = torch.zeros(5, 2)
    gold = SparseGold(spans=[(0, 1), (3, 4)], pairs=[(0, 1, 1.0)])
    feats, golds, dropped = split_for_training([x, x], [gold, None], 8)
    assert feats[0] is x and golds == [gold, None] and dropped == 0
    feats, golds, dropped = split_for_training([torch.zeros(50, 2)], [gold], 0)
    assert len(feats) == 1 and golds == [gold] and dropped == 0
    # a document without labels is cut too (its tokens still train the entity score)
    feats, golds, _ = split_for_training([torch.zeros(9, 2)], [None], 4)
    assert [f.shape[0] for f in feats] == [4, 4, 1] and golds == [None, None, None]


def _head(segment_tokens: int):
    from spacy_memcoref.models.petra.pytorch_petra_head import PeTraHead

    kwargs = dict(
        hidden_size=8,
        num_cells=3,
        mlp_size=8,
        usage_decay=0.98,
        entity_loss_weight=1.0,
        dropout=0.0,
        learned_init=False,
        fixed_key_size=0,
        positive_weight=5.0,
        negative_weight=0.5,
        action_loss_weight=0.0,
    )
    head = PeTraHead(
        petra_kwargs=kwargs,
        entity_threshold=0.5,
        min_mentions=2,
        temperature_halving_steps=0,
        mix_layers=0,
        train_segment_tokens=segment_tokens,
    )
    head.train()
    return head


def test_the_head_trains_on_segments_as_on_the_documents_cut_by_hand():
    """A training batch through the head with train_segment_tokens = 4 has
    the loss of the same PeTra on the segments given as documents (the
    Gumbel draws seeded alike); with 0 the loss is the whole document's."""
    torch.manual_seed(0)
    x = torch.randn(12, 5)
    gold = SparseGold(spans=[(0, 1), (3, 5), (6, 6), (10, 11)], pairs=[(0, 1, 1.0), (1, 2, 0.0), (2, 3, 1.0)])
    head = _head(4)
    petra = head._build(5, torch.device("cpu"))  # built first: its initial weights draw random numbers
    torch.manual_seed(1)
    loss, _ = head([(x, None)], [gold])
    feats, golds, _ = split_for_training([x], [gold], 4)
    torch.manual_seed(1)
    by_hand, _ = petra(feats, golds)
    assert torch.isfinite(loss) and torch.equal(loss, by_hand)
    head.train_segment_tokens = 0
    torch.manual_seed(1)
    whole, _ = head([(x, None)], [gold])
    torch.manual_seed(1)
    whole_by_hand, _ = petra([x], [gold])
    assert torch.equal(whole, whole_by_hand) and not torch.equal(whole, loss)
    # predicting reads the whole document whatever the setting
    head.train_segment_tokens = 4
    head.eval()
    with torch.no_grad():
        _, (prediction,) = head([(x, None)])
    assert prediction.memory_log["entity"].shape == (12,)


def test_the_pair_weights_are_settings():
    from spacy_memcoref.models.petra.pytorch_petra import gold_token_pairs

    gold = SparseGold(spans=[(0, 0), (2, 2), (4, 4)], pairs=[(0, 1, 1.0), (0, 2, 0.0)])
    assert gold_token_pairs(gold, 5)[2] == [5.0, 50.0]  # GAP's (paper §3.3)
    assert gold_token_pairs(gold, 5, positive_weight=2.0, negative_weight=0.5)[2] == [2.0, 0.5]
