"""The current PeTra computes what its reference computes: a frozen copy of
the implementation that the controller's speed work (issue 10) replaced
(commit 2cd503e, the per-token Python step), on the same weights and
inputs. Compared: memory logs (entity, overwrite, coref, usage) in eval mode
(batched, one document at a time, streamed in chunks with the memory
carried), the loss, and the gradients of the loss w.r.t. every parameter in
eval and training mode (training: dropout and the Gumbel-softmax OVERWRITE
sample drawn from the same seed), for vanilla PeTra and the learned-init /
fixed-key variants; all to atol 1e-5. Plus: the number of host reads
(.item(), .tolist(), int(), bool() of a tensor) a forward pass makes does not
grow with the document length (no sync inside the per-token loop).
"""

from typing import Dict, List, Optional, Sequence, Tuple

import pytest
import torch
from torch import Tensor, nn

from spacy_memcoref.models.petra.pytorch_petra import (
    LOG_KEYS,
    MemoryLog,
    PeTra,
    SparseGold,
    gold_token_pairs,
    link_probabilities,
)

from conftest import petra_args

# Frozen with the reference (values of commit 2cd503e).
LOG_EPS = 1e-8
PROB_EPS = 1e-6
_UNUSED_BONUS = 11.5
ATOL = 1e-5


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _first_argmax(scores: Tensor) -> Tensor:
    n = scores.shape[-1]
    is_max = scores == scores.max(dim=-1, keepdim=True).values
    rank = torch.arange(n, 0, -1, device=scores.device, dtype=scores.dtype)
    return (is_max.to(scores.dtype) * rank).argmax(dim=-1)


class ReferencePeTra(PeTra):
    """PeTra with forward, run_controller, _overwrite_choice and get_loss as
    they were before the speed work (verbatim but for docstrings). Do not
    edit: it is the reference the tests compare against."""

    def forward(
        self,
        features: Sequence[Tensor],
        gold: Optional[Sequence[Optional[SparseGold]]] = None,
    ) -> Tuple[Optional[Tensor], List[MemoryLog]]:
        if gold is not None and len(gold) != len(features):
            raise ValueError(f"gold has {len(gold)} entries but there are {len(features)} documents")
        h, lengths = self.encode(features)
        padded, _ = self.run_controller(h, lengths)
        logs = [{key: padded[key][b, : int(n)] for key in LOG_KEYS} for b, n in enumerate(lengths.tolist())]
        loss = None
        if gold is not None:
            loss = self.get_loss(logs, gold)
        return loss, logs

    def run_controller(
        self,
        h: Tensor,
        lengths: Tensor,
        *,
        state: Optional[Tuple[Tensor, Tensor]] = None,
    ) -> Tuple[Dict[str, Tensor], Tuple[Tensor, Tensor]]:
        batch_size, t_max, d = h.shape
        n, k = self.num_cells, self.fixed_key_size
        device, dtype = h.device, h.dtype
        lengths = lengths.to(device)
        # MLP1 does not depend on memory: all tokens at once.
        entity = torch.sigmoid(self.entity_mlp(h).squeeze(-1))  # [B, T]
        # First layer of MLP2 on [h; m; h*m; u], split by block so that the
        # h block is computed once a token, not once a cell.
        w1, b1 = self.sim_mlp[0].weight, self.sim_mlp[0].bias
        w_h, w_m, w_hm, w_u = w1[:, :d], w1[:, d : 2 * d], w1[:, 2 * d : 3 * d], w1[:, 3 * d]
        sim_from_h = nn.functional.linear(h, w_h, b1)  # [B, T, mlp]
        upd_w, upd_b = self.update.weight, self.update.bias
        upd_from_h = nn.functional.linear(h, upd_w[:, :d], upd_b)  # [B, T, H]
        upd_w_m = upd_w[:, d:]
        zero_col = torch.zeros(batch_size, 1, device=device, dtype=dtype)
        key = None
        if self.init_key is not None:
            key = self.init_key.to(dtype).unsqueeze(0).expand(batch_size, n, k)

        if state is None:
            mem, usage = self.initial_memory(batch_size, device, dtype)
        else:
            mem, usage = state
        ent_log, over_log, coref_log, usage_log = [], [], [], []
        for t in range(t_max):
            h_t = h[:, t]  # [B, H]
            e_t = entity[:, t]  # [B]
            hid = (
                sim_from_h[:, t].unsqueeze(1)
                + nn.functional.linear(mem, w_m)
                + nn.functional.linear(h_t.unsqueeze(1) * mem, w_hm)
                + usage.unsqueeze(-1) * w_u
            )
            sim = self.sim_mlp[2](self.sim_mlp[1](hid)).squeeze(-1)  # [B, N]
            unused = usage == 0
            # COREF is impossible for a cell that was never written.
            scores = torch.cat([sim.masked_fill(unused, float("-inf")), zero_col], dim=-1)
            probs = e_t.unsqueeze(-1) * torch.softmax(scores, dim=-1)
            coref = probs[:, :n]
            new_ent = probs[:, n]
            overwrite = new_ent.unsqueeze(-1) * self._overwrite_choice(usage, sim, unused)
            candidate = torch.tanh(upd_from_h[:, t].unsqueeze(1) + nn.functional.linear(mem, upd_w_m))
            new_mem = (
                (1.0 - overwrite - coref).unsqueeze(-1) * mem
                + overwrite.unsqueeze(-1) * h_t.unsqueeze(1)
                + coref.unsqueeze(-1) * candidate
            )
            if key is not None:
                new_mem = torch.cat([key, new_mem[..., k:]], dim=-1)
            new_usage = torch.clamp(overwrite + coref + self.usage_decay * usage, max=1.0)
            active = (lengths > t).unsqueeze(-1)  # [B, 1]
            mem = torch.where(active.unsqueeze(-1), new_mem, mem)
            usage = torch.where(active, new_usage, usage)
            ent_log.append(e_t)
            over_log.append(overwrite)
            coref_log.append(coref)
            usage_log.append(usage)
        if t_max == 0:
            empty = torch.zeros(batch_size, 0, n, device=device, dtype=dtype)
            logs = {"entity": entity, "overwrite": empty, "coref": empty, "usage": empty}
        else:
            logs = {
                "entity": torch.stack(ent_log, dim=1),
                "overwrite": torch.stack(over_log, dim=1),
                "coref": torch.stack(coref_log, dim=1),
                "usage": torch.stack(usage_log, dim=1),
            }
        return logs, (mem, usage)

    def _overwrite_choice(self, usage: Tensor, sim: Tensor, unused: Tensor) -> Tensor:
        if self.training:
            logits = torch.log(torch.clamp(1.0 - usage, min=LOG_EPS))
            if self._prefers_similar_unused:
                masked = sim.masked_fill(~unused, float("-inf"))
                any_unused = unused.any(dim=-1, keepdim=True)
                pref = torch.log_softmax(masked.masked_fill(~any_unused, 0.0), dim=-1)
                logits = torch.where(unused, logits + _UNUSED_BONUS + pref, logits)
            gumbel = -torch.log(torch.empty_like(usage).exponential_().clamp_min(LOG_EPS))
            return torch.softmax((logits + gumbel) / self.temperature, dim=-1)
        scores = -usage
        if self._prefers_similar_unused:
            any_unused = unused.any(dim=-1, keepdim=True)
            by_sim = sim.detach().masked_fill(~unused, float("-inf"))
            scores = torch.where(any_unused, by_sim, scores)
        index = _first_argmax(scores)
        return nn.functional.one_hot(index, self.num_cells).to(usage.dtype)

    def get_loss(self, logs: Sequence[MemoryLog], gold: Sequence[Optional[SparseGold]]) -> Tensor:
        coref_terms: List[Tensor] = []
        weight_terms: List[Tensor] = []
        ent_sum: List[Tensor] = []
        ent_count = 0
        # A zero that is part of the graph, so backward() works on a batch
        # with nothing to learn from.
        loss = torch.stack([log["entity"].sum() for log in logs]).sum() * 0.0
        for b, (log, g) in enumerate(zip(logs, gold)):
            if g is None:
                continue
            n_tokens = int(log["entity"].shape[0])
            pairs, labels, weights = gold_token_pairs(g, n_tokens, doc_index=b)
            device, dtype = log["entity"].device, log["entity"].dtype
            if pairs:
                pair_t = torch.tensor(pairs, dtype=torch.long, device=device)
                y = torch.tensor(labels, dtype=dtype, device=device)
                w = torch.tensor(weights, dtype=dtype, device=device)
                p = link_probabilities(log, pair_t)
                p = p + (p.clamp(PROB_EPS, 1.0 - PROB_EPS) - p).detach()
                bce = -(y * torch.log(p) + (1.0 - y) * torch.log(1.0 - p))
                coref_terms.append((w * bce).sum())
                weight_terms.append(w.sum())
            outside = torch.ones(n_tokens, dtype=torch.bool, device=device)
            for start, end in g.spans:
                outside[start : end + 1] = False
            ent_sum.append(log["entity"][outside].sum())
            ent_count += int(outside.sum().item())
        if coref_terms:
            loss = loss + torch.stack(coref_terms).sum() / torch.stack(weight_terms).sum()
        if ent_count > 0:
            loss = loss + self.entity_loss_weight * torch.stack(ent_sum).sum() / ent_count
        return loss


# -- fixtures ---------------------------------------------------------------------

D_IN = 12
LENGTHS = (23, 1, 0, 40, 17)
VARIANTS = [
    pytest.param({}, id="vanilla"),
    pytest.param({"learned_init": True}, id="learned_init"),
    pytest.param({"fixed_key_size": 5}, id="fixed_key"),
    pytest.param({"learned_init": True, "fixed_key_size": 5}, id="learned_init+fixed_key"),
]


def _models(variant: Dict, *, dropout: float = 0.0, seed: int = 0) -> Tuple[PeTra, ReferencePeTra]:
    """The current PeTra and the reference on the same weights. Entities are
    frequent and new entities common, so cells fill up and get reused: the
    logs hold every kind of decision."""
    kwargs = petra_args(hidden_size=16, num_cells=4, mlp_size=14, dropout=dropout, **variant)
    torch.manual_seed(seed)
    model = PeTra(D_IN, **kwargs)
    with torch.no_grad():
        model.entity_mlp[2].bias.fill_(0.5)
        d = model.hidden_size
        model.sim_mlp[0].weight[:, d : 3 * d].mul_(6.0)  # the m^i and h_t * m^i blocks
        model.sim_mlp[2].weight.mul_(4.0)
        model.sim_mlp[2].bias.fill_(-1.0)
    ref = ReferencePeTra(D_IN, **kwargs)
    ref.load_state_dict(model.state_dict())
    return model, ref


def _features(lengths: Sequence[int] = LENGTHS, seed: int = 1) -> List[Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return [2.0 * torch.randn(n, D_IN, generator=gen) for n in lengths]


def _gold() -> List[Optional[SparseGold]]:
    return [
        SparseGold(spans=[(2, 3), (7, 7), (15, 16)], pairs=[(0, 1, 1.0), (1, 2, 0.0)]),
        None,
        SparseGold(),
        SparseGold(spans=[(0, 1), (10, 12), (30, 30), (38, 39)], pairs=[(0, 2, 1.0), (1, 3, 0.0), (0, 3, 1.0)]),
        None,
    ]


def _assert_logs_close(got: Sequence[Dict[str, Tensor]], want: Sequence[Dict[str, Tensor]]) -> None:
    assert len(got) == len(want)
    for b, (g, w) in enumerate(zip(got, want)):
        for key in LOG_KEYS:
            assert g[key].shape == w[key].shape, (b, key)
            assert torch.allclose(g[key], w[key], atol=ATOL, rtol=0), (b, key, float((g[key] - w[key]).abs().max()))


def _assert_varied(logs: Sequence[Dict[str, Tensor]], n_cells: int) -> None:
    """Not a vacuous comparison: new entities go to several cells, some cells
    are overwritten again, COREF carries real mass, and usage ties (cells at
    the clamp of 1) make the lowest-index rule matter."""
    over = torch.cat([log["overwrite"] for log in logs])
    coref = torch.cat([log["coref"] for log in logs])
    usage = torch.cat([log["usage"] for log in logs])
    picked = over.argmax(dim=-1)[over.max(dim=-1).values >= 0.3]
    assert len(set(picked.tolist())) >= min(3, n_cells)
    assert len(picked) > n_cells
    assert float(coref.max()) > 0.25
    assert bool(((usage == 1.0).sum(dim=-1) >= 2).any())


# -- eval: logs ----------------------------------------------------------------------


@pytest.mark.parametrize("variant", VARIANTS)
def test_eval_batched_logs_and_final_memory_match_reference(variant):
    model, ref = _models(variant)
    model.eval(), ref.eval()
    feats = _features()
    with torch.no_grad():
        _, got = model(feats)
        _, want = ref(feats)
        _assert_logs_close(got, want)
        _assert_varied(want, model.num_cells)
        # run_controller's final memory: each document's as of its last token
        h, lengths = model.encode(feats)
        _, (mem, usage) = model.run_controller(h, lengths)
        _, (ref_mem, ref_usage) = ref.run_controller(h, lengths)
    assert torch.allclose(mem, ref_mem, atol=ATOL, rtol=0)
    assert torch.allclose(usage, ref_usage, atol=ATOL, rtol=0)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
def test_eval_one_document_a_call_matches_reference(variant, grad):
    """One document without autograd takes the folded-weights path; with
    autograd on, the batched one."""
    model, ref = _models(variant)
    model.eval(), ref.eval()
    with torch.set_grad_enabled(grad):
        for x in _features((23, 1, 0, 120)):
            _, got = model([x])
            _, want = ref([x])
            _assert_logs_close(got, want)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
def test_padded_single_document_stops_at_its_length(variant, grad):
    """run_controller on one document padded past its length (lengths < T)."""
    model, ref = _models(variant)
    model.eval(), ref.eval()
    with torch.set_grad_enabled(grad):
        h, _ = model.encode(_features((30,)))
        lengths = torch.tensor([21])
        got, state = model.run_controller(h, lengths)
        want, ref_state = ref.run_controller(h, lengths)
    _assert_logs_close([{k: got[k][0, :21] for k in LOG_KEYS}], [{k: want[k][0, :21] for k in LOG_KEYS}])
    for g, w in zip(state, ref_state):
        assert torch.allclose(g, w, atol=ATOL, rtol=0)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("lengths", [(60,), (60, 45)], ids=["one_doc", "two_docs"])
def test_streamed_chunks_match_reference(variant, lengths):
    """Reading in chunks with the memory carried (state=...) gives the same
    logs and memory as the reference read in the same chunks."""
    model, ref = _models(variant)
    model.eval(), ref.eval()
    with torch.no_grad():
        h, lengths_t = model.encode(_features(lengths))
        state = ref_state = None
        for start in range(0, h.shape[1], 7):
            chunk = h[:, start : start + 7]
            left = torch.clamp(lengths_t - start, min=0, max=chunk.shape[1])
            got, state = model.run_controller(chunk, left, state=state)
            want, ref_state = ref.run_controller(chunk, left, state=ref_state)
            for b, n in enumerate(left.tolist()):
                _assert_logs_close([{k: got[k][b, :n] for k in LOG_KEYS}], [{k: want[k][b, :n] for k in LOG_KEYS}])
            for g, w in zip(state, ref_state):
                assert torch.allclose(g, w, atol=ATOL, rtol=0)


# -- loss and gradients ----------------------------------------------------------------


def _loss_and_grads(model: PeTra, feats, gold, seed: int):
    model.zero_grad(set_to_none=True)
    torch.manual_seed(seed)  # dropout on h_t and the Gumbel-softmax sample
    loss, logs = model(feats, gold)
    loss.backward()
    grads = {name: p.grad for name, p in model.named_parameters()}
    return loss.detach(), [{k: v.detach() for k, v in log.items()} for log in logs], grads


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("training", [False, True], ids=["eval", "train"])
def test_loss_logs_and_gradients_match_reference(variant, training):
    model, ref = _models(variant, dropout=0.3)
    model.train(training), ref.train(training)
    model.set_temperature(0.5), ref.set_temperature(0.5)
    feats, gold = _features(), _gold()
    loss, logs, grads = _loss_and_grads(model, feats, gold, seed=7)
    ref_loss, ref_logs, ref_grads = _loss_and_grads(ref, feats, gold, seed=7)
    assert torch.allclose(loss, ref_loss, atol=ATOL, rtol=0), (float(loss), float(ref_loss))
    _assert_logs_close(logs, ref_logs)
    if not training:
        _assert_varied(ref_logs, model.num_cells)
    assert grads.keys() == ref_grads.keys()
    for name, grad in grads.items():
        want = ref_grads[name]
        if want is None:
            assert grad is None or not grad.any(), name
            continue
        assert grad is not None, name
        assert torch.allclose(grad, want, atol=ATOL, rtol=1e-4), (name, float((grad - want).abs().max()))
    # the comparison has something to compare: gradients reach the controller
    assert float(ref_grads["sim_mlp.0.weight"].abs().max()) > 1e-4
    assert float(ref_grads["update.weight"].abs().max()) > 1e-4


# -- no host sync inside the per-token loop ----------------------------------------------


def test_host_reads_do_not_grow_with_document_length(monkeypatch):
    """Every way a tensor's value reaches Python (item, tolist, int, float,
    bool) is counted: a forward pass (batched, one document, and with a loss)
    makes the same number on a 10-token and on a 200-token batch."""
    counts = {"n": 0}

    def counting(name):
        original = getattr(torch.Tensor, name)

        def wrapper(self, *args, **kwargs):
            counts["n"] += 1
            return original(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, wrapper)

    for name in ("item", "tolist", "__int__", "__float__", "__bool__", "__index__"):
        counting(name)
    model, _ = _models({})

    def reads(lengths, grad, gold):
        counts["n"] = 0
        with torch.set_grad_enabled(grad):
            model(_features(lengths), gold)
        return counts["n"]

    for training in (False, True):
        model.train(training)
        for grad in (False, True):
            assert reads((10, 7), grad, None) == reads((200, 150), grad, None)
            assert reads((10,), grad, None) == reads((200,), grad, None)
        one = [SparseGold(spans=[(0, 1), (3, 4)], pairs=[(0, 1, 1.0)])]
        assert reads((10,), True, one) == reads((200,), True, one)
