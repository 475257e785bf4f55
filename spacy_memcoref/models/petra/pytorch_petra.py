"""PeTra: a bounded-memory people tracker (Toshniwal, Ettinger, Gimpel &
Livescu 2020, "PeTra: A Sparsely Supervised Memory Model for People
Tracking", ACL). Pure PyTorch: this module never imports spaCy or Thinc.

A document is a float tensor of token features [T, d_in] from a frozen
encoder. A left-to-right GRU gives h_t; a controller reads h_t and acts on N
memory cells (m^i, u^i): at each token it takes the soft actions IGNORE,
OVERWRITE (a new entity, written to the least used cell) or COREF (cell i).
The per-token probabilities are the *memory log*:

    entity     [T]     e_t
    overwrite  [T, N]  o_t^i
    coref      [T, N]  c_t^i
    usage      [T, N]  u_t^i, after the update at t

Time is O(T·N) and, while streaming, the controller state is O(N·d). The
functions below turn a log into GAP link probabilities (paper Eq. 9), span
links and clusters; none of them builds a T×T tensor (the people count is
the decoder's: decoders.petra.people_count).

Decisions where the paper leaves room (each cited where it is made):

- Memory init (§2.4 variants): vanilla m_0 = 0, u_0 = 0, no parameters.
  ``learned_init``: m_0 is learned, u_0 stays 0 (usage counts *writes*, so a
  learned cell is still "unused": COREF is masked on it and it is the
  preferred OVERWRITE target). ``fixed_key_size=k``: the first k dims of each
  cell are learned keys that updates never change; the rest starts at 0.
  In both variants the cells are no longer interchangeable, so among the
  unused cells OVERWRITE picks the one most similar to h_t (as the authors'
  released code does); otherwise (and always in vanilla PeTra) it picks the
  least used cell, ties to the lowest index.
- OVERWRITE in training (§2.2): a Gumbel-softmax sample whose class weights
  are (1 - u^i), i.e. softmax((log(1 - u) + g) / tau); its mode is the
  inference choice argmin u. tau is set from outside (``set_temperature``).
- MLP1 and MLP2 are Linear-ReLU-Linear; MLP3 (the COREF write candidate) is
  tanh(Linear([h_t; m^i])), so memory stays in the range of the GRU state.
- Link probability (§2.5, Eq. 9): for i < j
      P_CL(i, j) = sum_k (o_i^k + c_i^k) · c_j^k · prod_{t=i+1..j} (1 - o_t^k)
  The no-overwrite product runs over (i, j] (as the authors' code computes
  it: a prefix-sum difference S_j - S_i). P_CL is symmetric: (j, i) is
  scored as (i, j). A token is never linked to itself: i == j is an error.
- Loss (§2.5, §3.3): labels on token pairs. Inside a span, every token is
  linked to the span's first token (label 1, weight 1); a given span pair
  labels every cross token pair (weight 5 if positive, 50 if negative); a
  given label overrides an implied one for the same token pair. BCE on real
  probabilities clamped to [eps, 1 - eps] (straight-through clamp, so a
  confidently wrong link still gets a gradient), summed with weights and
  divided by the total weight of the batch. Entity loss: mean e_t over the
  batch's tokens outside labelled spans, times ``entity_loss_weight``. Tokens
  inside labelled spans get no extra entity term: the coref term already
  pushes their e_t up (P_CL(i, j) <= e_i · e_j). Action loss (not in the
  paper; ``action_loss_weight`` > 0, for full clusters): at the first token
  of each labelled span, COREF's share of the token's actions,
  sum_k c_t^k / sum_k (o_t^k + c_t^k) (so not e_t, the entity loss's), is
  pushed to 0 where the span is its entity's first (the memory must
  OVERWRITE: a new entity) and to 1 where an earlier span is of its entity
  (``first_mention_targets``), BCE averaged over those tokens.
  The pair loss alone is met by giving each entity a cell of its own by
  COREF, which works while a training segment holds fewer entities than
  cells and never teaches OVERWRITE.
- Clusters (decoders.petra.decode_clusters, numpy only): an entity is (cell, overwrite episode); a token
  with e_t >= threshold joins the entity of its argmax action; a mention is a
  maximal run of such tokens with the same entity; entities with fewer than
  ``min_mentions`` (default 2) mentions are dropped, like spaCy's coref
  clusters (singletons are not clusters).
- Entity vectors (decoders.petra.PeTraDecoder.entity_vectors): asked to
  (``record``), the controller also keeps, for every token, the state right
  after the update at t of the cell the token's argmax action chose (the
  cell decoding puts it in, unless a decoding rule moves it), [T, H], and
  the whole memory [N, H] after the tokens it is given (those a rule may
  move: pronouns), never all cells at all tokens. Keeping them changes
  nothing in the log.
"""

from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Mapping, Optional, Sequence, Set, Tuple, Union, cast

import numpy
import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_sequence, pad_packed_sequence

from ...doc_helpers import LOG_KEYS  # the package's constant: imports neither spaCy nor torch
from ...util import TokenSpan

# Floor for probabilities inside a log.
LOG_EPS = 1e-8
# Clamp for probabilities inside the BCE (float32 cannot hold 1 - 1e-8).
PROB_EPS = 1e-6
# Log-weight that makes an unused cell win OVERWRITE over any used cell in
# training, for the learned-init / fixed-key variants (about 1e5 : 1).
_UNUSED_BONUS = 11.5

POSITIVE_WEIGHT = 5.0
NEGATIVE_WEIGHT = 50.0
SAME_SPAN_WEIGHT = 1.0

MemoryLog = Dict[str, Tensor]
# what run_controller and forward keep beside the log when asked (`record`);
# not memory-log keys (LOG_KEYS)
CELL_KEY = "cell"  # [T, H]: after the update at t, the cell of the token's argmax action
SNAPSHOT_KEY = "snapshot"  # [P, N, H]: the whole memory after the update at each kept token
LogLike = Mapping[str, Union[Tensor, numpy.ndarray]]


@dataclass
class SparseGold:
    """GAP-style sparse labels for one document.

    spans (List[TokenSpan]): labelled mentions as inclusive token ranges
        (start, end).
    pairs (List[Tuple[int, int, float]]): (span index, span index, label),
        label 1.0 for coreferent spans and 0.0 for spans known to differ.
    """

    spans: List[TokenSpan] = field(default_factory=list)
    pairs: List[Tuple[int, int, float]] = field(default_factory=list)


def _mlp(n_in: int, n_hidden: int, n_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(n_in, n_hidden), nn.ReLU(), nn.Linear(n_hidden, n_out))


class PeTra(nn.Module):
    """GRU + memory controller. ``forward`` takes a list of documents.

    input_size (int): d_in, the width of the token features.
    hidden_size (int): GRU state size = memory cell size d.
    num_cells (int): N, the number of memory cells.
    mlp_size (int): hidden width of MLP1 (entity) and MLP2 (similarity).
    usage_decay (float): gamma in (0, 1], usage decay per token.
    entity_loss_weight (float): lambda, weight of the entity mention loss.
    dropout (float): dropout on h_t in training.
    learned_init (bool): learn the initial memory m_0 (u_0 stays 0).
    fixed_key_size (int): k > 0 makes the first k dims of each cell a learned
        key that is never overwritten; 0 turns it off. With learned_init too,
        the key replaces the first k dims of the learned m_0.
    temperature (float): initial Gumbel-softmax temperature tau.
    positive_weight (float): the loss weight of a token pair labelled
        coreferent (GAP's 5: paper §3.3).
    negative_weight (float): the loss weight of a token pair labelled
        not coreferent (GAP's 50).
    action_loss_weight (float): weight of the action loss (the module
        docstring; 0: none, as the paper).

    The arguments but the temperature have no defaults: the builder
    (models.petra.petra_model.build_petra) is their home.
    """

    def __init__(
        self,
        input_size: int,
        *,
        hidden_size: int,
        num_cells: int,
        mlp_size: int,
        usage_decay: float,
        entity_loss_weight: float,
        dropout: float,
        learned_init: bool,
        fixed_key_size: int,
        positive_weight: float,
        negative_weight: float,
        action_loss_weight: float,
        temperature: float = 1.0,
    ) -> None:
        super().__init__()
        _check_int("input_size", input_size, 1)
        _check_int("hidden_size", hidden_size, 1)
        _check_int("num_cells", num_cells, 1)
        _check_int("mlp_size", mlp_size, 1)
        _check_int("fixed_key_size", fixed_key_size, 0)
        if fixed_key_size >= hidden_size:
            raise ValueError(
                f"fixed_key_size must be smaller than hidden_size ({hidden_size}) so each "
                f"cell keeps value dims, got {fixed_key_size}"
            )
        if not (0.0 < float(usage_decay) <= 1.0):
            raise ValueError(f"usage_decay (gamma) must be in (0, 1], got {usage_decay}")
        if not (0.0 <= float(dropout) < 1.0):
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        if not float(entity_loss_weight) >= 0.0:
            raise ValueError(f"entity_loss_weight must be >= 0, got {entity_loss_weight}")
        for name, weight in (("positive_weight", positive_weight), ("negative_weight", negative_weight)):
            if not float(weight) > 0.0:
                raise ValueError(f"{name} must be > 0, got {weight}")
        if not float(action_loss_weight) >= 0.0:
            raise ValueError(f"action_loss_weight must be >= 0, got {action_loss_weight}")
        self.positive_weight = float(positive_weight)
        self.negative_weight = float(negative_weight)
        self.action_loss_weight = float(action_loss_weight)
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_cells = num_cells
        self.mlp_size = mlp_size
        self.usage_decay = float(usage_decay)
        self.entity_loss_weight = float(entity_loss_weight)
        self.learned_init = bool(learned_init)
        self.fixed_key_size = fixed_key_size
        self.temperature = 1.0
        self.set_temperature(temperature)

        self.gru = nn.GRU(input_size, hidden_size, num_layers=1, batch_first=True)
        self.dropout = nn.Dropout(dropout)
        # MLP1: entity score from h_t.
        self.entity_mlp = _mlp(hidden_size, mlp_size, 1)
        # MLP2: similarity from [h_t; m^i; h_t * m^i; u^i] (this order).
        self.sim_mlp = _mlp(3 * hidden_size + 1, mlp_size, 1)
        # MLP3: COREF write candidate tanh(W [h_t; m^i] + b).
        self.update = nn.Linear(2 * hidden_size, hidden_size)
        self.init_memory: Optional[nn.Parameter] = None
        self.init_key: Optional[nn.Parameter] = None
        if self.learned_init:
            self.init_memory = nn.Parameter(0.1 * torch.randn(num_cells, hidden_size))
        if fixed_key_size > 0:
            self.init_key = nn.Parameter(0.1 * torch.randn(num_cells, fixed_key_size))

    # -- configuration -----------------------------------------------------

    def set_temperature(self, tau: float) -> None:
        """Set the Gumbel-softmax temperature used for OVERWRITE in training
        (the schedule, e.g. halving every few epochs, lives outside).

        tau (float): > 0.
        """
        if not float(tau) > 0.0:
            raise ValueError(f"Gumbel-softmax temperature must be > 0, got {tau}")
        self.temperature = float(tau)

    @property
    def _prefers_similar_unused(self) -> bool:
        return self.learned_init or self.fixed_key_size > 0

    # -- model ---------------------------------------------------------------

    def forward(
        self,
        features: Sequence[Tensor],
        gold: Optional[Sequence[Optional[SparseGold]]] = None,
        *,
        record: Optional[Sequence[Sequence[int]]] = None,
    ) -> Tuple[Optional[Tensor], List[MemoryLog]]:
        """Read a batch of documents.

        features (Sequence[Tensor]): one [T_b, d_in] float tensor a document,
            all on one device; T_b may be 0.
        gold (Optional[Sequence[Optional[SparseGold]]]): labels a document
            (None for an unlabelled one), or None for no loss.
        record (Optional[Sequence[Sequence[int]]]): keep the cell states
            (run_controller's `record`): a document's token positions whose
            whole memory to keep, one sequence a document; None: keep none.
        RETURNS (Tuple[Optional[Tensor], List[Dict[str, Tensor]]]): the loss
            (None without gold) and a memory log a document, in input order,
            with `record` also CELL_KEY [T_b, H] and SNAPSHOT_KEY [P_b, N, H]
            (the positions sorted, without repeats). The logs are views of
            the padded batch and keep the autograd graph when it is on;
            detach them before storing.
        """
        if gold is not None and len(gold) != len(features):
            raise ValueError(f"gold has {len(gold)} entries but there are {len(features)} documents")
        lens = [int(x.shape[0]) for x in features]
        kept = None if record is None else _snapshot_positions(record, lens)
        h, lengths = self.encode(features)
        padded, _ = self.run_controller(h, lengths, record=kept)
        # lengths from the host-side shapes: no device sync to slice the logs
        logs = [{key: padded[key][b, :n] for key in LOG_KEYS} for b, n in enumerate(lens)]
        if kept is not None:
            offset = 0
            for b, n in enumerate(lens):
                logs[b][CELL_KEY] = padded[CELL_KEY][b, :n]
                logs[b][SNAPSHOT_KEY] = padded[SNAPSHOT_KEY][offset : offset + len(kept[b])]
                offset += len(kept[b])
        loss = None
        if gold is not None:
            loss = self.get_loss(logs, gold)
        return loss, logs

    def encode(self, features: Sequence[Tensor]) -> Tuple[Tensor, Tensor]:
        """Run the GRU over the documents, packed.

        features (Sequence[Tensor]): [T_b, d_in] a document.
        RETURNS (Tuple[Tensor, Tensor]): h [B, T_max, H] (zeros past a
            document's end, dropout applied in training) and lengths [B]
            (long, on the features' device).
        """
        if len(features) == 0:
            raise ValueError("PeTra needs at least one document")
        device = features[0].device
        dtype = cast(Tensor, self.gru.weight_ih_l0).dtype
        for b, x in enumerate(features):
            if x.dim() != 2 or x.shape[1] != self.input_size:
                raise ValueError(f"document {b}: features must have shape [T, {self.input_size}], got {tuple(x.shape)}")
            if x.device != device:
                raise ValueError(f"document {b} is on {x.device}, document 0 on {device}")
        lens = [int(x.shape[0]) for x in features]
        lengths = torch.tensor(lens, dtype=torch.long, device=device)
        t_max = max(lens)
        h = torch.zeros(len(features), t_max, self.hidden_size, device=device, dtype=dtype)
        nonempty = [b for b, n in enumerate(lens) if n > 0]
        if nonempty:
            packed = pack_sequence([features[b].to(dtype) for b in nonempty], enforce_sorted=False)
            out, _ = self.gru(packed)
            out, _ = pad_packed_sequence(out, batch_first=True, total_length=t_max)
            if len(nonempty) == len(features):
                h = out
            else:
                index = torch.tensor(nonempty, dtype=torch.long, device=device)
                h = h.index_copy(0, index, out)
        return self.dropout(h), lengths

    def initial_memory(self, batch_size: int, device: torch.device, dtype: torch.dtype) -> Tuple[Tensor, Tensor]:
        """The memory before the first token.

        RETURNS (Tuple[Tensor, Tensor]): m_0 [B, N, H] and u_0 [B, N] (zeros).
        """
        n, d, k = self.num_cells, self.hidden_size, self.fixed_key_size
        if self.init_memory is not None:
            mem = self.init_memory.to(dtype).unsqueeze(0).expand(batch_size, n, d)
        else:
            mem = torch.zeros(batch_size, n, d, device=device, dtype=dtype)
        if self.init_key is not None:
            key = self.init_key.to(dtype).unsqueeze(0).expand(batch_size, n, k)
            mem = torch.cat([key, mem[..., k:]], dim=-1)
        usage = torch.zeros(batch_size, n, device=device, dtype=dtype)
        return mem, usage

    def run_controller(
        self,
        h: Tensor,
        lengths: Tensor,
        *,
        state: Optional[Tuple[Tensor, Tensor]] = None,
        record: Optional[Sequence[Sequence[int]]] = None,
    ) -> Tuple[Dict[str, Tensor], Tuple[Tensor, Tensor]]:
        """Step the controller over a padded batch; a document stops updating
        its memory after its last token.

        Everything that does not depend on the memory is computed for all
        tokens at once before the loop (MLP1; the h_t blocks of MLP2's first
        layer and of MLP3, with their biases); inside it, one step is about
        twenty tensor ops on the whole batch: one matmul of the memory with
        the m^i blocks of MLP2 and MLP3 together, one with the h_t * m^i block
        of MLP2, and element-wise ops. For one document without autograd
        (inference on a long document, streaming) h_t is folded into MLP2's
        weights instead, W_m + W_hm diag(h_t), one [H, mlp] matrix a token:
        a third fewer multiply-adds. No host sync happens inside the loop
        (the one ``lengths`` read is before it).

        h (Tensor): [B, T_max, H] GRU states.
        lengths (Tensor): [B] document lengths.
        state (Optional[Tuple[Tensor, Tensor]]): memory (m [B, N, H],
            u [B, N]) to start from, e.g. to continue a document read in
            chunks; None starts from the initial memory.
        record (Optional[Sequence[Sequence[int]]]): also keep, for every
            token, the state after its update of the cell its argmax action
            over [o_t; c_t] chose (the first on ties, as decoders.petra
            decodes), CELL_KEY [B, T_max, H], and the whole memory after the
            update at the given positions of each document (one sequence a
            document, inside it), SNAPSHOT_KEY [P, N, H], by document, then
            position, without repeats; None (training, streaming): neither.
            An argmax and a row copy a token, a copy of the memory a kept
            position, no host sync; the log is the same either way.
        RETURNS (Tuple[Dict[str, Tensor], Tuple[Tensor, Tensor]]): padded
            logs (entity [B, T_max], overwrite/coref/usage [B, T_max, N];
            with `record` the two above) and the final memory (m, u), each
            document's as of its last token.
        """
        batch_size, t_max, d = h.shape
        n, k, n_mlp = self.num_cells, self.fixed_key_size, self.mlp_size
        device, dtype = h.device, h.dtype
        lengths = lengths.to(device)
        # MLP1 does not depend on memory: all tokens at once.
        entity = torch.sigmoid(self.entity_mlp(h).squeeze(-1))  # [B, T]
        if state is None:
            mem, usage = self.initial_memory(batch_size, device, dtype)
        else:
            mem, usage = state
        snap_steps: Dict[int, Tuple[int, int]] = {}  # step -> its rows of snap_rows
        snap_rows: Optional[Tensor] = None  # the documents to copy the memory of, step by step
        snap_order: Optional[Tensor] = None  # the copies in (document, position) order
        if record is not None:
            # checked against T_max, not each length: no host read of the lengths
            kept = _snapshot_positions(record, [t_max] * batch_size)
            by_step: Dict[int, List[int]] = {}
            for b, positions in enumerate(kept):
                for t in positions:
                    by_step.setdefault(t, []).append(b)
            flat: List[Tuple[int, int]] = []  # (document, position), in copy order
            for t in sorted(by_step):
                snap_steps[t] = (len(flat), len(flat) + len(by_step[t]))
                flat.extend((b, t) for b in by_step[t])
            snap_rows = torch.tensor([b for b, _ in flat], dtype=torch.long, device=device)
            order = sorted(range(len(flat)), key=lambda i: flat[i])
            snap_order = torch.tensor(order, dtype=torch.long, device=device)
        if t_max == 0:
            empty = torch.zeros(batch_size, 0, n, device=device, dtype=dtype)
            logs = {"entity": entity, "overwrite": empty, "coref": empty, "usage": empty}
            if record is not None:
                logs[CELL_KEY] = torch.zeros(batch_size, 0, d, device=device, dtype=dtype)
                logs[SNAPSHOT_KEY] = torch.zeros(0, n, d, device=device, dtype=dtype)
            return logs, (mem, usage)
        # MLP2's first layer reads [h; m; h*m; u] and MLP3 reads [h; m]: split
        # both by block. The h blocks (and the biases) for all tokens at once,
        # [B, T, mlp + H]; the m blocks of both as one [H, mlp + H] matrix.
        sim_first, sim_last = cast(nn.Linear, self.sim_mlp[0]), cast(nn.Linear, self.sim_mlp[2])
        w1, b1 = sim_first.weight, sim_first.bias
        upd_w, upd_b = self.update.weight, self.update.bias
        from_h = nn.functional.linear(h, torch.cat([w1[:, :d], upd_w[:, :d]]), torch.cat([b1, upd_b]))
        w_mem = torch.cat([w1[:, d : 2 * d], upd_w[:, d:]]).t()  # [H, mlp + H]
        w_hm = w1[:, 2 * d : 3 * d].t()  # [H, mlp]
        w_u = w1[:, 3 * d]  # [mlp]
        w2, b2 = sim_last.weight[0], sim_last.bias  # [mlp], [1]
        key = None
        if self.init_key is not None:
            key = self.init_key.to(dtype).unsqueeze(0).expand(batch_size, n, k)
        # Documents shorter than the batch's longest stop updating after their
        # last token; before the shortest one ends no mask is needed. One
        # host read of the lengths, outside the loop.
        min_len = min(int(lengths.min()), t_max)
        # What each step reads, with time on dim 1: h_t [B, 1, H], e_t [B, 1],
        # then per path below; the mask [B, 1] last when there is one.
        sources = [h.unsqueeze(2), entity.unsqueeze(-1)]
        # One document and no autograd graph: fold h_t into MLP2's weights.
        # (Not for a batch: one [H, mlp] matrix a document a token costs more
        # than it saves there; not with autograd: it would keep one a token.)
        fold_h = batch_size == 1 and not torch.is_grad_enabled()
        if fold_h:
            w_m_c = w1[:, d : 2 * d].t().contiguous()  # [H, mlp]
            w_hm_c = w_hm.contiguous()
            # [W_m + W_hm diag(h_t) | U_m] in one buffer for all tokens: the
            # first block is rewritten each token (a fresh [H, mlp] matrix a
            # token would also fragment the heap between the small log
            # tensors kept each step), the second is MLP3's m block
            w_eff = w_mem.new_empty(1, d, n_mlp + d)
            w_eff[0, :, n_mlp:] = upd_w[:, d:].t()
            w_eff_m = w_eff[..., :n_mlp]
            # h_t as a column [1, H, 1]
            sources.append(h.unsqueeze(-1))
        sources.append(from_h.unsqueeze(2))  # [B, 1, mlp + H]
        if min_len < t_max:
            steps = torch.arange(t_max, device=device)
            sources.append((steps.unsqueeze(0) < lengths.unsqueeze(1)).unsqueeze(-1))  # [B, 1]
        zero_col = torch.zeros(batch_size, 1, device=device, dtype=dtype)
        cells = torch.arange(n, device=device)
        rows = batch_size * n
        over_log, coref_log, usage_log = [], [], []
        cell_log: List[Tensor] = []
        # each document's first row in the memory as [B * N, H]
        cell_offsets: Optional[Tensor] = None
        if batch_size > 1:
            cell_offsets = torch.arange(batch_size, device=device) * n
        snap_log: List[Tensor] = []
        for t, step in enumerate(zip(*(_time_steps(x) for x in sources))):
            h_t, e_t = step[0], step[1]
            if fold_h:
                # [m^i (W_m + W_hm diag(h_t)) + (h_t W_h + b1) | m^i U_m + (h_t U_h + b)]
                torch.addcmul(w_m_c, step[2], w_hm_c, out=w_eff_m)  # [1, H, mlp]
                proj = torch.baddbmm(step[3], mem, w_eff)  # [1, N, mlp + H]
                hid = torch.addcmul(proj[..., :n_mlp], usage.unsqueeze(-1), w_u).reshape(rows, n_mlp)
            else:
                # [m^i W_m + (h_t W_h + b1) | m^i U_m + (h_t U_h + b)] for all cells
                proj = torch.matmul(mem, w_mem) + step[2]  # [B, N, mlp + H]
                hid = torch.addcmul(proj[..., :n_mlp], usage.unsqueeze(-1), w_u)
                hid = torch.addmm(hid.reshape(rows, n_mlp), (h_t * mem).reshape(rows, d), w_hm)
            candidate = torch.tanh(proj[..., n_mlp:])
            sim = torch.addmv(b2, hid.relu(), w2).view(batch_size, n)  # [B, N]
            unused = usage == 0
            # COREF is impossible for a cell that was never written.
            scores = torch.cat([sim.masked_fill(unused, float("-inf")), zero_col], dim=-1)
            probs = e_t * torch.softmax(scores, dim=-1)
            coref = probs[:, :n]
            overwrite = self._overwrite_choice(usage, sim, unused, probs[:, n:], cells)
            written = overwrite + coref
            new_mem = mem * (1.0 - written).unsqueeze(-1)
            new_mem = torch.addcmul(new_mem, overwrite.unsqueeze(-1), h_t)
            new_mem = torch.addcmul(new_mem, coref.unsqueeze(-1), candidate)
            if key is not None:
                new_mem = torch.cat([key, new_mem[..., k:]], dim=-1)
            new_usage = torch.clamp(torch.add(written, usage, alpha=self.usage_decay), max=1.0)
            if t < min_len:
                mem, usage = new_mem, new_usage
            else:
                active = step[-1]  # [B, 1]
                mem = torch.where(active.unsqueeze(-1), new_mem, mem)
                usage = torch.where(active, new_usage, usage)
            over_log.append(overwrite)
            coref_log.append(coref)
            usage_log.append(usage)
            if snap_rows is not None:
                # the cell of the argmax action (OVERWRITE i or COREF i: cell i)
                action = torch.cat([overwrite, coref], dim=-1).argmax(dim=-1).remainder_(n)  # [B]
                if cell_offsets is not None:
                    action = action.add_(cell_offsets)
                cell_log.append(mem.reshape(rows, d).index_select(0, action))  # [B, H]
                if t in snap_steps:
                    first, last = snap_steps[t]
                    snap_log.append(mem.index_select(0, snap_rows[first:last]))
        logs = {
            "entity": entity,
            "overwrite": torch.stack(over_log, dim=1),
            "coref": torch.stack(coref_log, dim=1),
            "usage": torch.stack(usage_log, dim=1),
        }
        if snap_rows is not None and snap_order is not None:
            logs[CELL_KEY] = torch.stack(cell_log, dim=1)
            snaps = torch.cat(snap_log) if snap_log else mem.new_zeros(0, n, d)
            logs[SNAPSHOT_KEY] = snaps.index_select(0, snap_order)
        return logs, (mem, usage)

    def _overwrite_choice(self, usage: Tensor, sim: Tensor, unused: Tensor, new_ent: Tensor, cells: Tensor) -> Tensor:
        """o_t: the new-entity probability put on the cell a new entity goes to.

        Inference: all of it on the least used cell, ties to the lowest index
        (variants with learned init: the most similar unused cell first).
        Training: spread by a Gumbel-softmax with class weights (1 - u) at
        self.temperature.

        usage (Tensor): [B, N] u before the update.
        sim (Tensor): [B, N] MLP2 scores.
        unused (Tensor): [B, N] usage == 0.
        new_ent (Tensor): [B, 1] probability of a new entity.
        cells (Tensor): arange(N) on the device.
        RETURNS (Tensor): [B, N].
        """
        if self.training:
            logits = torch.log(torch.clamp(1.0 - usage, min=LOG_EPS))
            if self._prefers_similar_unused:
                masked = sim.masked_fill(~unused, float("-inf"))
                any_unused = unused.any(dim=-1, keepdim=True)
                pref = torch.log_softmax(masked.masked_fill(~any_unused, 0.0), dim=-1)
                logits = torch.where(unused, logits + _UNUSED_BONUS + pref, logits)
            gumbel = -torch.log(torch.empty_like(usage).exponential_().clamp_min(LOG_EPS))
            return new_ent * torch.softmax((logits + gumbel) / self.temperature, dim=-1)
        # argmin / argmax return the FIRST extreme index (documented), so ties
        # go to the lowest cell on every device.
        if self._prefers_similar_unused:
            any_unused = unused.any(dim=-1, keepdim=True)
            by_sim = sim.detach().masked_fill(~unused, float("-inf"))
            index = torch.where(any_unused, by_sim, -usage).argmax(dim=-1, keepdim=True)
        else:
            index = usage.argmin(dim=-1, keepdim=True)
        return torch.where(cells == index, new_ent, 0.0)

    # -- loss ------------------------------------------------------------------

    def get_loss(self, logs: Sequence[MemoryLog], gold: Sequence[Optional[SparseGold]]) -> Tensor:
        """Sparse-supervision loss (paper §2.5, §3.3) over a batch.

        logs (Sequence[Dict[str, Tensor]]): memory logs, one a document.
        gold (Sequence[Optional[SparseGold]]): labels, None for a document
            without labels (it adds nothing to the loss).
        RETURNS (Tensor): coref BCE (weighted mean) + lambda * entity loss.
        """
        coref_terms: List[Tensor] = []
        weight_terms: List[Tensor] = []
        ent_sum: List[Tensor] = []
        ent_count = 0
        action_terms: List[Tensor] = []
        action_count = 0
        # A zero that is part of the graph, so backward() works on a batch
        # with nothing to learn from.
        loss = torch.stack([log["entity"].sum() for log in logs]).sum() * 0.0
        for b, (log, g) in enumerate(zip(logs, gold)):
            if g is None:
                continue
            n_tokens = int(log["entity"].shape[0])
            pairs, labels, weights = gold_token_pairs(
                g, n_tokens, doc_index=b, positive_weight=self.positive_weight, negative_weight=self.negative_weight
            )
            device, dtype = log["entity"].device, log["entity"].dtype
            if pairs:
                pair_t = torch.tensor(pairs, dtype=torch.long, device=device)
                y = torch.tensor(labels, dtype=dtype, device=device)
                w = torch.tensor(weights, dtype=dtype, device=device)
                coref_terms.append((w * _bce(link_probabilities(log, pair_t), y)).sum())
                weight_terms.append(w.sum())
            outside = torch.ones(n_tokens, dtype=torch.bool, device=device)
            inside: Set[int] = set()
            for start, end in g.spans:
                outside[start : end + 1] = False
                inside.update(range(start, end + 1))
            # a masked sum, not boolean indexing (which syncs with the device)
            ent_sum.append(torch.where(outside, log["entity"], 0.0).sum())
            ent_count += n_tokens - len(inside)  # counted on the host: no device sync
            if self.action_loss_weight > 0.0:
                targets = first_mention_targets(g)
                if targets:
                    tokens = torch.tensor(sorted(targets), dtype=torch.long, device=device)
                    y = torch.tensor([targets[t] for t in sorted(targets)], dtype=dtype, device=device)
                    # COREF's share of the token's actions, c / (o + c): the entity
                    # probability e_t (o + c = e_t) is the entity loss's, not this one's
                    co = log["coref"][tokens].sum(dim=-1)
                    p = co / (co + log["overwrite"][tokens].sum(dim=-1)).clamp(min=LOG_EPS)
                    action_terms.append(_bce(p, y).sum())
                    action_count += len(targets)
        if coref_terms:
            loss = loss + torch.stack(coref_terms).sum() / torch.stack(weight_terms).sum()
        if ent_count > 0:
            loss = loss + self.entity_loss_weight * torch.stack(ent_sum).sum() / ent_count
        if action_count > 0:
            loss = loss + self.action_loss_weight * torch.stack(action_terms).sum() / action_count
        return loss


def _bce(p: Tensor, y: Tensor) -> Tensor:
    """Elementwise BCE of real probabilities `p` against labels `y`, `p`
    clamped to [PROB_EPS, 1 - PROB_EPS] straight through (a confidently
    wrong probability still gets a gradient)."""
    p = p + (p.clamp(PROB_EPS, 1.0 - PROB_EPS) - p).detach()
    return -(y * torch.log(p) + (1.0 - y) * torch.log(1.0 - p))


def _time_steps(x: Tensor, block: int = 256) -> Iterator[Tensor]:
    """x[:, t] for t = 0, 1, ...: views made a block of steps at a time (one
    unbind a block rather than one indexing op a token, and never all T views
    at once, which would hold about 0.5 KB a token).

    x (Tensor): [B, T, ...].
    RETURNS (Iterator[Tensor]): [B, ...] views.
    """
    for start in range(0, x.shape[1], block):
        yield from x[:, start : start + block].unbind(1)


def _snapshot_positions(record: Sequence[Sequence[int]], lengths: Sequence[int]) -> List[List[int]]:
    """Each document's positions to keep the whole memory at: sorted, without
    repeats. RAISES ValueError: not one sequence a document, or a position
    outside its document."""
    if len(record) != len(lengths):
        raise ValueError(f"record has {len(record)} entries but there are {len(lengths)} documents")
    kept = []
    for b, (positions, n) in enumerate(zip(record, lengths)):
        found = sorted({int(t) for t in positions})
        if found and not (0 <= found[0] and found[-1] < n):
            raise ValueError(f"document {b}: record asks for a position outside 0..{n - 1}: {found}")
        kept.append(found)
    return kept


def _check_int(name: str, value: int, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")


def gold_token_pairs(
    gold: SparseGold,
    n_tokens: int,
    *,
    doc_index: int = 0,
    positive_weight: float = POSITIVE_WEIGHT,
    negative_weight: float = NEGATIVE_WEIGHT,
) -> Tuple[List[Tuple[int, int]], List[float], List[float]]:
    """Token-pair labels for the loss (paper §3.3), validated.

    gold (SparseGold): the document's labels.
    n_tokens (int): document length T.
    RETURNS (Tuple[List[Tuple[int, int]], List[float], List[float]]): token
        pairs (i < j), labels and weights. Inside a span every token links to
        the first (1.0, weight 1); a given span pair labels every cross token
        pair (weight `positive_weight`, GAP's 5, or `negative_weight`, GAP's
        50), overriding implied labels (and a
        later given pair overrides an earlier one on a shared token pair);
        pairs of a token with itself (overlapping spans) are left out.
    """
    where = f"document {doc_index}"
    for s, (start, end) in enumerate(gold.spans):
        if not (0 <= start <= end < n_tokens):
            raise ValueError(
                f"{where}: span {s} = ({start}, {end}) is not an inclusive token range "
                f"inside a document of {n_tokens} tokens"
            )
    table: Dict[Tuple[int, int], Tuple[float, float]] = {}
    for start, end in gold.spans:
        for t in range(start + 1, end + 1):
            table[(start, t)] = (1.0, SAME_SPAN_WEIGHT)
    for a, b, label in gold.pairs:
        if not (0 <= a < len(gold.spans) and 0 <= b < len(gold.spans)):
            raise ValueError(f"{where}: pair ({a}, {b}) names a span index outside 0..{len(gold.spans) - 1}")
        label = float(label)
        if not (0.0 <= label <= 1.0):
            raise ValueError(f"{where}: pair ({a}, {b}) has label {label}, not in [0, 1]")
        weight = positive_weight if label >= 0.5 else negative_weight
        a0, a1 = gold.spans[a]
        b0, b1 = gold.spans[b]
        for i in range(a0, a1 + 1):
            for j in range(b0, b1 + 1):
                if i != j:
                    table[(min(i, j), max(i, j))] = (label, weight)
    pairs = sorted(table)
    return pairs, [table[p][0] for p in pairs], [table[p][1] for p in pairs]


def first_mention_targets(gold: SparseGold) -> Dict[int, float]:
    """The action loss's targets: {first token of a labelled span: 0.0 where
    the span is the first of its entity (OVERWRITE), 1.0 where an earlier
    span is of its entity (COREF)}. Entities: spans joined by pairs labelled
    1; a span in none is an entity of its own. A token where two spans
    start with different targets ("his" and "his mother") is left out.

    gold (SparseGold): the document's (or training segment's) labels.
    RETURNS (Dict[int, float]): token -> target.
    """
    parent = list(range(len(gold.spans)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b, label in gold.pairs:
        if float(label) >= 0.5 and 0 <= a < len(parent) and 0 <= b < len(parent):
            parent[find(a)] = find(b)
    seen: Set[int] = set()
    found: Dict[int, Set[float]] = {}
    for index in sorted(range(len(gold.spans)), key=lambda i: (gold.spans[i][0], -gold.spans[i][1])):
        entity = find(index)
        found.setdefault(gold.spans[index][0], set()).add(1.0 if entity in seen else 0.0)
        seen.add(entity)
    return {t: next(iter(v)) for t, v in found.items() if len(v) == 1}


# -- functions over a memory log ------------------------------------------------


def link_probabilities(log: LogLike, pairs: Union[Tensor, Sequence[Sequence[int]]]) -> Tensor:
    """Coreference link probability P_CL (paper Eq. 9) for token pairs:

        P_CL(i, j) = sum_k (o_i^k + c_i^k) * c_j^k * prod_{t=i+1..j} (1 - o_t^k)

    for i < j, in log space with prefix sums; (j, i) is scored as (i, j).
    O(T·N + P·N), never a T×T tensor.

    log (Mapping): a memory log (tensors or arrays) with overwrite and coref [T, N].
    pairs (Tensor): [P, 2] token indices, i != j.
    RETURNS (Tensor): [P] probabilities (differentiable w.r.t. the log).
    """
    over = torch.as_tensor(log["overwrite"])
    coref = torch.as_tensor(log["coref"], device=over.device)
    pairs = torch.as_tensor(pairs, dtype=torch.long, device=over.device)
    if pairs.numel() == 0:
        return over.new_zeros(0)
    if pairs.dim() != 2 or pairs.shape[1] != 2:
        raise ValueError(f"pairs must have shape [P, 2], got {tuple(pairs.shape)}")
    n_tokens = over.shape[0]
    if bool(((pairs < 0) | (pairs >= n_tokens)).any()):
        raise ValueError(f"pairs hold a token index outside 0..{n_tokens - 1}")
    first = pairs.min(dim=1).values
    second = pairs.max(dim=1).values
    if bool((first == second).any()):
        raise ValueError("a pair links a token to itself (i == j); P_CL needs i != j")
    # S[t] = sum_{s <= t} log(1 - o_s); S[j] - S[i] = sum over (i, j]. Float64
    # keeps the difference exact on long documents.
    no_over = torch.log(torch.clamp(1.0 - over.double(), min=LOG_EPS))
    prefix = torch.cumsum(no_over, dim=0)
    kept = prefix[second] - prefix[first]  # [P, N]
    first_in = torch.log(torch.clamp((over + coref)[first].double(), min=LOG_EPS))
    second_co = torch.log(torch.clamp(coref[second].double(), min=LOG_EPS))
    return torch.exp(torch.logsumexp(first_in + second_co + kept, dim=-1)).to(over.dtype)


def span_link_probability(log: LogLike, span_a: TokenSpan, span_b: TokenSpan) -> Tensor:
    """GAP decision score of two spans (paper §3.3): the max of P_CL over
    their token pairs.

    span_a (TokenSpan): inclusive token range.
    span_b (TokenSpan): inclusive token range.
    RETURNS (Tensor): a 0-dim probability (1.0 for the same single token).
    """
    pairs = [(i, j) for i in range(span_a[0], span_a[1] + 1) for j in range(span_b[0], span_b[1] + 1) if i != j]
    over = torch.as_tensor(log["overwrite"])
    if not pairs:
        if span_a[1] < span_a[0] or span_b[1] < span_b[0]:
            raise ValueError(f"empty span in {span_a}, {span_b}")
        return over.new_ones(())
    return link_probabilities(log, torch.tensor(pairs, device=over.device)).max()
