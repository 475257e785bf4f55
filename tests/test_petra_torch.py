"""Tests of the pure-torch PeTra model (spacy_memcoref.models.petra.pytorch_petra)."""

import math

import numpy
import pytest
import torch

from spacy_memcoref.models.petra.pytorch_petra import (
    PeTra,
    SparseGold,
    gold_token_pairs,
    link_probabilities,
    span_link_probability,
)
from spacy_memcoref.decoders.petra import decode_clusters, people_count

from conftest import petra_args


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


def _random_log(seed, n_tokens, n_cells):
    """A valid memory log: e in (0.05, 0.95), [c, n] = e * Dirichlet,
    o = n * a random distribution over cells."""
    gen = torch.Generator().manual_seed(seed)
    e = 0.05 + 0.9 * torch.rand(n_tokens, generator=gen, dtype=torch.float64)
    gamma = -torch.log(torch.rand(n_tokens, n_cells + 1, generator=gen, dtype=torch.float64))
    probs = gamma / gamma.sum(-1, keepdim=True)
    coref = e[:, None] * probs[:, :n_cells]
    new = e * probs[:, n_cells]
    pick = torch.softmax(3 * torch.randn(n_tokens, n_cells, generator=gen, dtype=torch.float64), -1)
    over = new[:, None] * pick
    usage = torch.rand(n_tokens, n_cells, generator=gen, dtype=torch.float64)
    return {"entity": e, "overwrite": over, "coref": coref, "usage": usage}


def _brute_force_link(log, i, j):
    """Eq. 9 written plainly, O(T) per cell per pair."""
    if i > j:
        i, j = j, i
    o, c = log["overwrite"].tolist(), log["coref"].tolist()
    total = 0.0
    for k in range(len(o[0])):
        keep = 1.0
        for t in range(i + 1, j + 1):
            keep *= 1.0 - o[t][k]
        total += (o[i][k] + c[i][k]) * c[j][k] * keep
    return total


# -- the controller, worked by hand ------------------------------------------


def test_controller_hand_worked_three_tokens_two_cells():
    model = PeTra(1, **petra_args(hidden_size=2, num_cells=2, mlp_size=2, dropout=0.0)).double().eval()
    with torch.no_grad():
        # MLP1: logit = relu(h[0])  ->  e_t = sigmoid(h_t[0])
        model.entity_mlp[0].weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0]]))
        model.entity_mlp[0].bias.zero_()
        model.entity_mlp[2].weight.copy_(torch.tensor([[1.0, 0.0]]))
        model.entity_mlp[2].bias.zero_()
        # MLP2 on [h; m; h*m; u]: hidden = [relu(h.m), relu(u)],
        # sim = relu(h.m) + u - 0.5
        model.sim_mlp[0].weight.copy_(torch.tensor([[0, 0, 0, 0, 1, 1, 0], [0, 0, 0, 0, 0, 0, 1]], dtype=torch.float64))
        model.sim_mlp[0].bias.zero_()
        model.sim_mlp[2].weight.copy_(torch.tensor([[1.0, 1.0]]))
        model.sim_mlp[2].bias.fill_(-0.5)
        # MLP3: candidate = tanh(h + m)
        model.update.weight.copy_(torch.tensor([[1, 0, 1, 0], [0, 1, 0, 1]], dtype=torch.float64))
        model.update.bias.zero_()
    ln3, ln4, ln9 = math.log(3), math.log(4), math.log(9)
    hs = [(ln3, 0.5), (ln4, -1.0), (ln9, 0.2)]
    h = torch.tensor([hs], dtype=torch.float64)
    one = torch.tensor([1])
    with torch.no_grad():
        out, _ = model.run_controller(h, torch.tensor([3]))
        # the same document one token at a time, carrying the memory state,
        # to see m after every step
        steps, state = [], None
        for t in range(3):
            step_log, state = model.run_controller(h[:, t : t + 1], one, state=state)
            steps.append(state)

    def dot(a, b):
        return a[0] * b[0] + a[1] * b[1]

    def relu(x):
        return max(0.0, x)

    def tanh2(a, b):
        return (math.tanh(a[0] + b[0]), math.tanh(a[1] + b[1]))

    def close(tensor, expected):
        expected = torch.tensor(expected, dtype=torch.float64)
        assert torch.allclose(tensor, expected, atol=1e-6, rtol=0), (tensor, expected)

    # t = 0: e0 = sigmoid(ln 3) = 3/(3+1) = 0.75. Both cells unused (u = 0),
    # so COREF is masked: softmax([-inf, -inf, 0]) = [0, 0, 1];
    # c0 = [0, 0], n0 = 0.75. OVERWRITE -> argmin u = cell 0 (tie, lowest).
    e0 = 0.75
    c0 = [0.0, 0.0]
    o0 = [0.75, 0.0]
    # m_cell0 = (1 - 0.75 - 0) * 0 + 0.75 * h0 = (0.75 ln3, 0.375); cell 1 stays 0.
    m0 = [(0.75 * ln3, 0.375), (0.0, 0.0)]
    # u = min(1, o + c + 0.98 * 0) = [0.75, 0]
    u0 = [0.75, 0.0]
    close(steps[0][0][0], m0)
    close(steps[0][1][0], u0)

    # t = 1: e1 = sigmoid(ln 4) = 4/5 = 0.8.
    e1 = 0.8
    # sim_cell0 = relu(h1 . m0) + u - 0.5 = (0.75 ln4 ln3 - 0.375) + 0.75 - 0.5 ~ 1.0173;
    # cell 1 is unused -> masked.
    s = relu(dot(hs[1], m0[0])) + u0[0] - 0.5
    assert abs(s - 1.017259) < 1e-5
    # [c1_0, c1_1, n1] = 0.8 * softmax([s, -inf, 0]) = 0.8 * [e^s, 0, 1] / (e^s + 1)
    c1 = [e1 * _sigmoid(s), 0.0]  # ~ 0.5875
    n1 = e1 * _sigmoid(-s)  # ~ 0.2125
    # OVERWRITE -> least used cell = cell 1 (u = 0 < 0.75).
    o1 = [0.0, n1]
    # cell 0: (1 - 0 - c1_0) m0 + c1_0 tanh(h1 + m0); cell 1: (1 - n1) * 0 + n1 h1
    cand = tanh2(hs[1], m0[0])
    m1 = [
        tuple((1 - c1[0]) * m0[0][x] + c1[0] * cand[x] for x in range(2)),
        tuple(n1 * hs[1][x] for x in range(2)),
    ]
    # u_cell0 = min(1, 0.5875 + 0.98 * 0.75 = 1.3225) = 1 (the clamp acts); u_cell1 = n1
    u1 = [min(1.0, c1[0] + 0.98 * u0[0]), min(1.0, n1)]
    assert u1[0] == 1.0
    close(steps[1][0][0], m1)
    close(steps[1][1][0], u1)

    # t = 2: e2 = sigmoid(ln 9) = 9/10 = 0.9; both cells used now.
    e2 = 0.9
    s0 = relu(dot(hs[2], m1[0])) + u1[0] - 0.5
    s1 = relu(dot(hs[2], m1[1])) + u1[1] - 0.5
    z = math.exp(s0) + math.exp(s1) + 1.0
    c2 = [e2 * math.exp(s0) / z, e2 * math.exp(s1) / z]
    n2 = e2 / z
    # least used: u1 = [1, ~0.21] -> cell 1, which also gets COREF mass:
    # m_cell1 = (1 - o - c) m + o h2 + c tanh(h2 + m)
    o2 = [0.0, n2]
    m2 = []
    for i in range(2):
        cand = tanh2(hs[2], m1[i])
        m2.append(tuple((1 - o2[i] - c2[i]) * m1[i][x] + o2[i] * hs[2][x] + c2[i] * cand[x] for x in range(2)))
    u2 = [min(1.0, o2[i] + c2[i] + 0.98 * u1[i]) for i in range(2)]
    close(steps[2][0][0], m2)
    close(steps[2][1][0], u2)

    close(out["entity"][0], [e0, e1, e2])
    close(out["coref"][0], [c0, c1, c2])
    close(out["overwrite"][0], [o0, o1, o2])
    close(out["usage"][0], [u0, u1, u2])
    close(step_log["usage"][0], [u2])


# -- link probabilities ---------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_link_probabilities_match_brute_force(seed):
    gen = torch.Generator().manual_seed(100 + seed)
    n_tokens = int(torch.randint(2, 31, (1,), generator=gen))
    n_cells = int(torch.randint(1, 6, (1,), generator=gen))
    log = _random_log(seed, n_tokens, n_cells)
    pairs = [(i, j) for i in range(n_tokens) for j in range(n_tokens) if i != j]
    got = link_probabilities(log, torch.tensor(pairs))
    expected = torch.tensor([_brute_force_link(log, i, j) for i, j in pairs], dtype=torch.float64)
    assert got.shape == (len(pairs),)
    assert torch.allclose(got, expected, rtol=1e-9, atol=1e-12)
    # symmetric
    swapped = link_probabilities(log, torch.tensor(pairs)[:, [1, 0]])
    assert torch.allclose(got, swapped, rtol=0, atol=0)


def test_link_probabilities_rejects_self_pairs_and_bad_shapes():
    log = _random_log(0, 5, 2)
    with pytest.raises(ValueError, match="i == j"):
        link_probabilities(log, torch.tensor([[1, 2], [3, 3]]))
    with pytest.raises(ValueError, match=r"\[P, 2\]"):
        link_probabilities(log, torch.tensor([1, 2]))
    with pytest.raises(ValueError, match="outside"):
        link_probabilities(log, torch.tensor([[0, 5]]))
    assert link_probabilities(log, torch.zeros(0, 2, dtype=torch.long)).shape == (0,)


def test_span_link_probability_is_max_over_token_pairs():
    log = _random_log(3, 12, 3)
    best = max(_brute_force_link(log, i, j) for i in range(1, 4) for j in range(7, 9))
    got = span_link_probability(log, (1, 3), (7, 8))
    assert abs(float(got) - best) < 1e-12
    # order of the spans does not matter
    assert float(span_link_probability(log, (7, 8), (1, 3))) == float(got)
    assert float(span_link_probability(log, (4, 4), (4, 4))) == 1.0


# -- controller invariants ------------------------------------------------------


def _trained_like_model(seed=0, **kwargs):
    torch.manual_seed(seed)
    model = PeTra(8, **petra_args(hidden_size=16, num_cells=3, mlp_size=16, dropout=0.0, **kwargs))
    with torch.no_grad():
        # make entities frequent so cells fill up and get overwritten
        model.entity_mlp[2].bias.fill_(2.0)
    return model.eval()


def test_coref_never_to_unused_cell_usage_bounded_overwrite_lowest_least_used_deterministic():
    model = _trained_like_model()
    with torch.no_grad():
        model.sim_mlp[2].bias.fill_(-3.0)  # new entities often: cells fill, then get reused
    torch.manual_seed(1)
    feats = [3 * torch.randn(n, 8) for n in (40, 17, 1)]
    with torch.no_grad():
        _, logs = model(feats)
        _, again = model(feats)
    for log, log2 in zip(logs, again):
        for key in log:
            assert torch.equal(log[key], log2[key])
        n_tokens, n_cells = log["coref"].shape
        before = torch.zeros(n_cells)
        for t in range(n_tokens):
            unused = before == 0
            assert torch.all(log["coref"][t][unused] == 0)
            least = before.min()
            expected_cell = int(torch.nonzero(before == least)[0])
            new = log["entity"][t] - log["coref"][t].sum()
            row = torch.zeros(n_cells)
            row[expected_cell] = new
            assert torch.allclose(log["overwrite"][t], row, atol=1e-6)
            before = log["usage"][t]
        assert torch.all(log["usage"] >= 0) and torch.all(log["usage"] <= 1)
    # the long document does fill all cells and then overwrites used ones
    assert people_count(logs[0]["overwrite"].numpy(), 0.5) > 3


def test_training_mode_overwrite_carries_the_new_entity_mass_and_checks_the_temperature():
    """Training mode (Gumbel-softmax over cells): the overwrite row sums to the
    new-entity mass, usage stays in [0, 1], a zero temperature is refused."""
    model = _trained_like_model()
    model.train()
    model.set_temperature(0.25)
    _, logs = model([torch.randn(10, 8)])
    log = logs[0]
    new = log["entity"] - log["coref"].sum(-1)
    assert torch.allclose(log["overwrite"].sum(-1), new, atol=1e-6)
    assert torch.all((log["usage"] >= 0) & (log["usage"] <= 1))
    with pytest.raises(ValueError, match="temperature"):
        model.set_temperature(0.0)


def test_batched_forward_equals_per_document_forward():
    model = _trained_like_model()
    torch.manual_seed(2)
    feats = [torch.randn(n, 8) for n in (5, 1, 12, 0, 7)]
    with torch.no_grad():
        _, batched = model(feats)
        for doc, log in zip(feats, batched):
            _, (single,) = model([doc])
            for key in ("entity", "overwrite", "coref", "usage"):
                assert log[key].shape == single[key].shape
                assert torch.allclose(log[key], single[key], atol=1e-5), key
    assert batched[3]["entity"].shape == (0,)
    assert batched[3]["usage"].shape == (0, 3)
    assert batched[1]["overwrite"].shape == (1, 3)


@pytest.mark.parametrize("variant", [{"learned_init": True}, {"fixed_key_size": 4}])
def test_memory_variants(variant):
    model = _trained_like_model(**variant)
    torch.manual_seed(3)
    with torch.no_grad():
        h, lengths = model.encode([torch.randn(9, 8)])
        mem0, usage0 = model.initial_memory(1, h.device, h.dtype)
        out, (mem, _) = model.run_controller(h, lengths)
    assert torch.all(usage0 == 0)  # u_0 = 0: learned cells still count as unused
    assert torch.all(out["coref"][0, 0] == 0)  # no COREF into the initial memory
    if "fixed_key_size" in variant:
        assert torch.equal(mem[0, :, :4], model.init_key.detach())
        assert torch.all(mem0[0, :, 4:] == 0)
    else:
        assert torch.equal(mem0[0], model.init_memory.detach())
    # the first overwrite goes to the unused cell most similar to h_0
    h0 = h[0, 0].expand(3, -1)
    with torch.no_grad():
        sim = model.sim_mlp(torch.cat([h0, mem0[0], h0 * mem0[0], torch.zeros(3, 1)], -1)).squeeze(-1)
    assert int(torch.nonzero(out["overwrite"][0, 0])[0]) == int(sim.argmax())
    # training mode (Gumbel-softmax with the similarity preference) has finite gradients
    model.train()
    loss, _ = model([torch.randn(9, 8)], [SparseGold([(1, 1), (5, 6)], [(0, 1, 1.0)])])
    loss.backward()
    for name, param in model.named_parameters():
        assert param.grad is not None and torch.isfinite(param.grad).all(), name


# -- loss -------------------------------------------------------------------------


def test_gold_token_pairs_implied_and_given_weights():
    gold = SparseGold(spans=[(0, 2), (4, 4), (6, 7)], pairs=[(0, 1, 1.0), (1, 2, 0.0)])
    pairs, labels, weights = gold_token_pairs(gold, 9)
    table = {p: (y, w) for p, y, w in zip(pairs, labels, weights)}
    assert table == {
        (0, 1): (1.0, 1.0),
        (0, 2): (1.0, 1.0),
        (6, 7): (1.0, 1.0),
        (0, 4): (1.0, 5.0),
        (1, 4): (1.0, 5.0),
        (2, 4): (1.0, 5.0),
        (4, 6): (0.0, 50.0),
        (4, 7): (0.0, 50.0),
    }
    with pytest.raises(ValueError, match="span 0"):
        gold_token_pairs(SparseGold(spans=[(3, 9)]), 9)
    with pytest.raises(ValueError, match="span index"):
        gold_token_pairs(SparseGold(spans=[(0, 0)], pairs=[(0, 1, 1.0)]), 9)


def test_loss_is_weighted_bce_on_real_probabilities_plus_entity_term():
    model = PeTra(4, **petra_args(hidden_size=4, num_cells=2, mlp_size=4, entity_loss_weight=0.1))
    logs = [_random_log(7, 8, 2), _random_log(8, 6, 2)]
    gold = [
        SparseGold(spans=[(1, 2), (5, 5)], pairs=[(0, 1, 1.0)]),
        SparseGold(spans=[(0, 0), (3, 3)], pairs=[(0, 1, 0.0)]),
    ]
    loss = model.get_loss(logs, gold)
    terms, total_w = 0.0, 0.0
    # doc 0: implied (1, 2) w=1 y=1; given (1, 5), (2, 5) w=5 y=1
    # doc 1: given (0, 3) w=50 y=0
    for log, pairs in ((logs[0], [(1, 2, 1, 1.0), (1, 5, 1, 5.0), (2, 5, 1, 5.0)]), (logs[1], [(0, 3, 0, 50.0)])):
        for i, j, y, w in pairs:
            p = _brute_force_link(log, i, j)
            terms += w * -(y * math.log(p) + (1 - y) * math.log(1 - p))
            total_w += w
    outside = [0, 3, 4, 6, 7]
    ent = sum(float(logs[0]["entity"][t]) for t in outside)
    ent += sum(float(logs[1]["entity"][t]) for t in (1, 2, 4, 5))
    expected = terms / total_w + 0.1 * ent / 9
    assert abs(float(loss.detach()) - expected) < 1e-9


def test_first_mention_targets_are_overwrite_for_an_entitys_first_span_and_coref_after():
    from spacy_memcoref.models.petra.pytorch_petra import first_mention_targets

    # spans: "his mother" (0-1) and "his" (0) start together, both first of their entity: kept (0.0);
    # (4) is "his" again (1.0), (6-7) a new entity (0.0), (9) the mother again (1.0); a second entity
    # starting at 11 whose start is shared with a later span of "his" conflicts and is left out
    gold = SparseGold(
        spans=[(0, 1), (0, 0), (4, 4), (6, 7), (9, 9), (11, 12), (11, 11)],
        pairs=[(1, 2, 1.0), (0, 4, 1.0), (0, 1, 0.0), (2, 3, 0.0), (1, 6, 1.0)],
    )
    assert first_mention_targets(gold) == {0: 0.0, 4: 1.0, 6: 0.0, 9: 1.0}
    assert first_mention_targets(SparseGold(spans=[(2, 2)])) == {2: 0.0}  # a singleton: a new entity


def test_the_action_loss_is_bce_on_the_coref_share_at_mention_starts():
    logs = [_random_log(7, 8, 2)]
    gold = [SparseGold(spans=[(1, 2), (5, 5)], pairs=[(0, 1, 1.0)])]
    plain = PeTra(4, **petra_args(hidden_size=4, num_cells=2, mlp_size=4, action_loss_weight=0.0))
    with_action = PeTra(4, **petra_args(hidden_size=4, num_cells=2, mlp_size=4, action_loss_weight=0.5))
    extra = float(with_action.get_loss(logs, gold).detach()) - float(plain.get_loss(logs, gold).detach())
    coref, over = logs[0]["coref"], logs[0]["overwrite"]

    def share(t):  # COREF's share of the token's actions
        return float(coref[t].sum()) / (float(coref[t].sum()) + float(over[t].sum()))

    first, later = share(1), share(5)  # token 1 must OVERWRITE, token 5 COREF
    expected = 0.5 * (-math.log(1 - first) - math.log(later)) / 2
    assert abs(extra - expected) < 1e-9
    with pytest.raises(ValueError, match="action_loss_weight"):
        PeTra(4, **petra_args(hidden_size=4, num_cells=2, mlp_size=4, action_loss_weight=-1.0))


def test_loss_gradient_flows_for_confidently_wrong_links():
    log = _random_log(0, 4, 1)
    over = torch.zeros(4, 1, dtype=torch.float64)
    over[0, 0] = 0.999999999
    coref = torch.zeros(4, 1, dtype=torch.float64)
    coref[3, 0] = 0.999999999
    coref.requires_grad_(True)
    log = {"entity": log["entity"], "overwrite": over, "coref": coref, "usage": log["usage"]}
    model = PeTra(4, **petra_args(hidden_size=4, num_cells=1, mlp_size=4))
    loss = model.get_loss([log], [SparseGold(spans=[(0, 0), (3, 3)], pairs=[(0, 1, 0.0)])])
    assert math.isfinite(float(loss.detach()))
    loss.backward()
    assert float(coref.grad[3, 0]) > 0  # pushed down, not stuck at the clamp


def test_overfits_tiny_synthetic_docs():
    torch.manual_seed(0)
    feats = [torch.randn(n, 16) for n in (9, 12, 10)]
    gold = [
        SparseGold([(1, 2), (5, 5), (8, 8)], [(0, 2, 1.0), (1, 2, 0.0), (0, 1, 0.0)]),
        SparseGold([(0, 0), (3, 4), (10, 10)], [(0, 2, 0.0), (1, 2, 1.0), (0, 1, 0.0)]),
        SparseGold([(2, 2), (4, 6), (9, 9)], [(0, 2, 1.0), (1, 2, 0.0), (0, 1, 0.0)]),
    ]
    model = PeTra(16, **petra_args(hidden_size=32, num_cells=4, mlp_size=32, dropout=0.0))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    model.train()
    losses = []
    for step in range(200):
        if step and step % 50 == 0:
            model.set_temperature(model.temperature / 2)
        loss, _ = model(feats, gold)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert sum(losses[-10:]) / 10 < 0.3 * losses[0]
    model.eval()
    with torch.no_grad():
        _, logs = model(feats)
    for log, g in zip(logs, gold):
        for a, b, label in g.pairs:
            p = float(span_link_probability(log, g.spans[a], g.spans[b]))
            assert (p > 0.5) == (label == 1.0), (g, a, b, p)


# -- decoding and counting ----------------------------------------------------------


def _hand_log():
    rows = [
        # e,   o,          c
        (0.9, [0.8, 0.0], [0.0, 0.0]),  # 0 OVERWRITE cell 0: entity (0, ep 0)
        (0.9, [0.0, 0.05], [0.85, 0.0]),  # 1 COREF cell 0: same run -> mention (0, 1)
        (0.1, [0.0, 0.05], [0.05, 0.0]),  # 2 not an entity
        (0.9, [0.0, 0.7], [0.2, 0.0]),  # 3 OVERWRITE cell 1: entity (1, ep 0)
        (0.8, [0.0, 0.0], [0.7, 0.1]),  # 4 COREF cell 0: mention (4, 4) of (0, 0)
        (0.9, [0.6, 0.0], [0.1, 0.2]),  # 5 OVERWRITE cell 0: new episode (0, 1)
        (0.9, [0.0, 0.1], [0.8, 0.0]),  # 6 COREF cell 0 -> (0, 1): mention (5, 6)
        (0.9, [0.1, 0.0], [0.0, 0.8]),  # 7 COREF cell 1: mention (7, 7) of (1, 0)
    ]
    return {
        "entity": numpy.array([r[0] for r in rows], dtype=numpy.float32),
        "overwrite": numpy.array([r[1] for r in rows], dtype=numpy.float32),
        "coref": numpy.array([r[2] for r in rows], dtype=numpy.float32),
        "usage": numpy.zeros((8, 2), dtype=numpy.float32),
    }


def test_decode_clusters_by_cell_episode():
    log = _hand_log()
    assert decode_clusters(log) == [[(0, 1), (4, 4)], [(3, 3), (7, 7)]]
    assert decode_clusters(log, min_mentions=1) == [[(0, 1), (4, 4)], [(3, 3), (7, 7)], [(5, 6)]]
    torch_log = {k: torch.from_numpy(v) for k, v in log.items()}
    assert decode_clusters(torch_log) == decode_clusters(log)
    # a higher threshold drops token 4 (e = 0.8)
    assert decode_clusters(log, threshold=0.85) == [[(3, 3), (7, 7)]]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_matches_cpu():
    model = _trained_like_model()
    torch.manual_seed(4)
    feats = [torch.randn(n, 8) for n in (6, 11, 0)]
    gold = [SparseGold([(0, 0), (4, 5)], [(0, 1, 1.0)]), None, SparseGold()]
    with torch.no_grad():
        loss_cpu, logs_cpu = model(feats, gold)
        model_gpu = _trained_like_model().cuda()
        loss_gpu, logs_gpu = model_gpu([x.cuda() for x in feats], gold)
    assert abs(loss_cpu.item() - loss_gpu.item()) < 1e-4
    for a, b in zip(logs_cpu, logs_gpu):
        for key in a:
            assert b[key].device.type == "cuda"
            assert torch.allclose(a[key], b[key].cpu(), atol=1e-4)
    pairs = torch.tensor([[0, 5], [3, 1]], device="cuda")
    assert link_probabilities(logs_gpu[0], pairs).device.type == "cuda"
    assert span_link_probability(logs_gpu[0], (0, 0), (4, 5)).device.type == "cuda"
    as_numpy = lambda log: {k: v.detach().float().cpu().numpy() for k, v in log.items()}  # noqa: E731
    assert decode_clusters(as_numpy(logs_gpu[1])) == decode_clusters(as_numpy(logs_cpu[1]))
    assert people_count(logs_gpu[1]["overwrite"].cpu().numpy(), 0.5) == people_count(
        logs_cpu[1]["overwrite"].numpy(), 0.5
    )
    # training (cuDNN's GRU backward needs train mode, which Thinc sets)
    for variant in ({}, {"learned_init": True}, {"fixed_key_size": 4}):
        m = _trained_like_model(**variant).cuda()
        with torch.no_grad():
            m([x.cuda() for x in feats])
        m.train()
        m([x.cuda() for x in feats], gold)[0].backward()
        for name, param in m.named_parameters():
            assert param.grad is not None and torch.isfinite(param.grad).all(), name


# -- configuration errors -----------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"num_cells": 0}, "num_cells must be >= 1"),
        ({"usage_decay": 0.0}, r"usage_decay \(gamma\) must be in \(0, 1\]"),
        ({"usage_decay": 1.5}, r"usage_decay \(gamma\) must be in \(0, 1\]"),
        ({"hidden_size": 0}, "hidden_size must be >= 1"),
        ({"mlp_size": 0}, "mlp_size must be >= 1"),
        ({"fixed_key_size": 8, "hidden_size": 8}, "fixed_key_size must be smaller"),
        ({"dropout": 1.0}, "dropout"),
        ({"temperature": -1.0}, "temperature"),
    ],
)
def test_bad_constructor_values(kwargs, message):
    with pytest.raises(ValueError, match=message):
        PeTra(4, **petra_args(**kwargs))


def test_bad_inputs():
    model = PeTra(4, **petra_args(hidden_size=4, num_cells=2, mlp_size=4))
    with pytest.raises(ValueError, match=r"shape \[T, 4\]"):
        model([torch.randn(3, 5)])
    with pytest.raises(ValueError, match="gold has 2 entries"):
        model([torch.randn(3, 4)], [None, None])


def test_scalar_mix_by_hand():
    from spacy_memcoref.models.petra.pytorch_petra_head import ScalarMix

    mix = ScalarMix(3)
    x = torch.tensor([[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]])  # three layers of width 2
    # weights 0: the mean of the layers, times gamma 1
    assert torch.allclose(mix(x), torch.tensor([[3.0, 4.0]]))
    with torch.no_grad():
        mix.weights.copy_(torch.tensor([0.0, 0.0, 1e4]))
        mix.gamma.fill_(2.0)
    assert torch.allclose(mix(x), torch.tensor([[10.0, 12.0]]))
    assert mix(torch.zeros(0, 6)).shape == (0, 2)
    with pytest.raises(ValueError, match="not 3 layers"):
        mix(torch.zeros(1, 7))
