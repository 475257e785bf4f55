"""The memory loss of the s2e head (memory_loss_cells > 0): the memory it
teaches is the one decoders.memory reads (the same cells, the same kept
mentions, the same evictions, checked against read_memory driven by the
gold links); its value is the softmax over the held entities by hand, in
any chunking; a small pipeline trained with it alone overfits three
documents read through that memory; bad sizes are refused."""

import math
import random

import pytest
import spacy
import torch

from spacy_memcoref.decoders.memory import COREF, OVERWRITE, read_memory
from spacy_memcoref.models.s2e.memory_targets import NONE, memory_targets
from spacy_memcoref.models.s2e.pytorch_s2e import S2EDocument, S2EHead

from conftest import conll_f1, make_examples, overfit_s2e, s2e_config, s2e_head_args


def test_targets_by_hand():
    # cells 2, mentions 2: cluster 1's third mention arrives after a spurious candidate evicted it
    held, target = memory_targets([1, 0, 1, 2, 0, 2, 1], cells=2, mentions=2)
    assert target.tolist() == [NONE, NONE, 0, NONE, NONE, 1, NONE]
    assert held[2].tolist() == [[0, NONE], [1, NONE]]
    assert held[6].tolist() == [[4, NONE], [3, 5]]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("cells, mentions", [(1, 1), (2, 3), (3, 1), (4, 2), (50, 50)])
def test_targets_are_what_the_decoder_does_with_the_gold_links(seed, cells, mentions):
    """read_memory given, for each candidate, every earlier mention of its
    gold cluster as an antecedent above the threshold takes the decisions
    memory_targets says the gold ones are."""
    rng = random.Random(seed)
    n = 40
    ids = [rng.choice([0, 0, 1, 2, 3, 4, 5]) for _ in range(n)]
    choices = [[c for c in range(q - 1, -1, -1) if ids[q] and ids[c] == ids[q]] for q in range(n)]
    scores = [[1.0] * len(row) for row in choices]
    links = (list(range(n)), list(range(n)), [row[0] if row else -1 for row in choices], [1.0] * n)
    reading = read_memory(links, (choices, scores), 0.0, cells, mentions)
    held, target = memory_targets(ids, cells, mentions)
    for q in range(n):
        if target[q] == NONE:
            assert reading.actions[q] == OVERWRITE
        else:
            assert reading.actions[q] == COREF and reading.cells[q] == int(target[q])
        # the cell q went to keeps what memory_targets says the next candidate sees
        if q + 1 < n:
            kept = [c for c in held[q + 1, reading.cells[q]].tolist() if c != NONE]
            assert q in kept or mentions == 1
            assert len(kept) == reading.kept_after[q]


def _head(**options):
    torch.manual_seed(0)
    head = S2EHead(
        **s2e_head_args(hidden_size=8, dropout=0.0, max_width=2, top_lambda=1.0, use_speakers=False, **options)
    )
    head(([S2EDocument(torch.zeros(3, 6))]), None)  # materialize the lazy layers
    return head


@pytest.mark.parametrize("chunk_size", [1, 3, 512])
def test_loss_is_the_softmax_over_held_entities_by_hand(chunk_size):
    head = _head(memory_loss_cells=2, memory_loss_mentions=2, chunk_size=chunk_size)
    head.mention_loss_weight = 0.0
    doc = S2EDocument(torch.randn(9, 6, generator=torch.Generator().manual_seed(1)))
    gold = [[(0, 0), (3, 3), (7, 7)], [(1, 2), (5, 5), (8, 8)]]
    loss = float(head.document_loss(doc, gold))
    (starts, ends, m, queries, keys, _), _, _ = head._candidates(doc)
    pairs, _ = head._antecedent_chunk(queries, keys, m, None, 0, len(starts), starts, ends)
    spans = list(zip(starts.tolist(), ends.tolist()))
    cluster = {span: i for i, c in enumerate(gold, start=1) for span in c}
    ids = [cluster.get(span, 0) for span in spans]
    # the memory by hand: 2 cells, each (cluster id, kept: first and latest), LRU eviction
    cells, used, expected = [], [], 0.0
    for q, g in enumerate(ids):
        rows = [max(float(pairs[q, c]) for c in kept) for _, kept in cells]
        mine = next((j for j, (e, _) in enumerate(cells) if g and e == g), None)
        gold_score = rows[mine] if mine is not None else 0.0
        expected += math.log(sum(math.exp(v) for v in rows + [0.0])) - gold_score
        if mine is not None:
            cells[mine] = (g, [cells[mine][1][0], q])
            used[mine] = q
        elif len(cells) < 2:
            cells.append((g, [q]))
            used.append(q)
        else:
            j = min(range(2), key=lambda i: used[i])
            cells[j], used[j] = (g, [q]), q
    assert loss == pytest.approx(expected, rel=1e-5)


def test_the_loss_trains_the_head():
    head = _head(memory_loss_cells=2, memory_loss_mentions=2)
    doc = S2EDocument(torch.randn(9, 6, generator=torch.Generator().manual_seed(1)))
    gold = [[(0, 0), (3, 3), (7, 7)], [(1, 2), (5, 5)]]
    head.document_loss(doc, gold).backward()
    grads = {name: p.grad for name, p in head.named_parameters()}
    assert grads["antecedent_s2s.weight"] is not None and float(grads["antecedent_s2s.weight"].abs().sum()) > 0


def test_a_pipeline_trained_with_the_memory_loss_overfits_through_the_memory(tmp_path):
    trained, _, losses = overfit_s2e(memory_loss_cells=3, memory_loss_mentions=2)
    assert losses[-1] < 0.1 * losses[0]
    trained.to_disk(tmp_path / "s2e")
    memory = {"components": {"memcoref": {"memory_cells": 3, "memory_mentions": 2}}}
    nlp = spacy.load(tmp_path / "s2e", config=memory)
    assert conll_f1(nlp, make_examples(nlp)) >= 0.95


@pytest.mark.parametrize(
    "override, message",
    [
        ({"memory_loss_cells": -1}, "memory_loss_cells"),
        ({"memory_loss_cells": 2.5}, "memory_loss_cells"),
        ({"memory_loss_mentions": 0}, "memory_loss_mentions"),
    ],
)
def test_bad_memory_loss_sizes_are_refused(override, message):
    with pytest.raises(ValueError, match=message):
        spacy.blank("en").add_pipe("memcoref", config=s2e_config(**override))


MEMORY_PRESETS = {"petra_ontogum.cfg": "s2e.cfg", "petra_ontogum_base_scratch.cfg": "s2e_base.cfg"}


@pytest.mark.parametrize("memory_preset, s2e_preset", sorted(MEMORY_PRESETS.items()))
def test_memory_presets_are_their_s2e_presets_plus_the_memory(memory_preset, s2e_preset):
    """The memory presets differ from the s2e presets they are made from in
    the memory's settings alone, and train for the memory they read
    through, also when the project sets the cells."""
    from pathlib import Path

    from spacy.util import load_config

    configs = Path(__file__).parent.parent / "configs"
    memory = load_config(configs / memory_preset, interpolate=True)
    s2e = load_config(configs / s2e_preset, interpolate=True)
    component = memory["components"]["memcoref"]
    assert (component["memory_cells"], component["memory_mentions"]) == (40, 8)
    assert (component["model"]["memory_loss_cells"], component["model"]["memory_loss_mentions"]) == (40, 8)
    for key in ("memory_cells", "memory_mentions"):
        del component[key]
    for key in ("memory_loss_cells", "memory_loss_mentions"):
        del component["model"][key]
    assert memory == s2e
    overridden = load_config(
        configs / memory_preset, overrides={"components.memcoref.memory_cells": 12}, interpolate=True
    )
    assert overridden["components"]["memcoref"]["model"]["memory_loss_cells"] == 12
