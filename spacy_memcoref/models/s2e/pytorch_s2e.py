"""The s2e coreference head (Kirstain, Ram & Levy 2021) as a pure PyTorch module.

Mentions and antecedents are scored from span *endpoint* token vectors only.
Memory stays linear in document length: mention candidates are enumerated per
width (at most ``max_width`` of them per token, never a T x T matrix) and the
antecedent matrix over the kept candidates is built in row chunks, so
inference holds at most ``chunk x K`` scores at a time (and ``chunk x
max_antecedents`` with the optional window).

At inference the head predicts each kept candidate's best antecedent and
that pair's score (``S2EPrediction.links``), and its ANTECEDENT_CHOICES best
ones (``S2EPrediction.choices``), so that a decoder that rules a link out
takes the next best; deciding which of them link (the link threshold, the
rules of decoders.constraints) and building the clusters is the decoder's
(decoders.s2e).
"""

import math
from dataclasses import dataclass, replace
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import torch
from torch import Tensor, nn

from ...decoders.predictions import Links, S2EPrediction
from ...doc_helpers.gold import PronounGold
from ...util import Clusters

NEG_INF = -1e30
# the best antecedents kept a candidate at inference: where the decoder rules
# the best out, the next ones stand in (beyond 8 they rarely pass the threshold)
ANTECEDENT_CHOICES = 8
# Upper edges of the log-scale distance buckets (tokens from the end of the
# antecedent to the start of the mention): 0, 1, 2, 3, 4, 5-7, 8-15, 16-31,
# 32-63, 64-127, 128-255, 256+ (Lee et al. 2017 use the same kind of buckets).
DISTANCE_BUCKET_EDGES = (0, 1, 2, 3, 4, 7, 15, 31, 63, 127, 255)


@dataclass
class S2EDocument:
    """One document's inputs to the head.

    tokens (Tensor): [T, d] token vectors.
    sent_ids (Optional[Tensor]): [T] sentence index a token, or None when the
        Doc has no sentence boundaries (mentions may then cross sentences).
    speaker_ids (Optional[Tensor]): [T] speaker index a token, -1 unknown.
    mirror (Optional[Tensor]): [T, d] the token vectors of the Doc's gender
        mirror (he <-> she, father <-> mother, ...; token i for token i), read
        at prediction when the head's gender_mirror is on; None: none.
    """

    tokens: Tensor
    sent_ids: Optional[Tensor] = None
    speaker_ids: Optional[Tensor] = None
    mirror: Optional[Tensor] = None


INIT_STD = 0.02  # BERT-style initialization, as the reference code uses


def _init_linear(layer: nn.Linear) -> None:
    # torch's default (Kaiming-uniform) makes the bilinear products large
    # enough to saturate the first softmaxes; small weights train far better.
    nn.init.normal_(layer.weight, std=INIT_STD)
    nn.init.zeros_(layer.bias)


class _LazyLinear(nn.LazyLinear):
    """LazyLinear (the encoder's width is known only once it has run; the
    state dict restores the shape when a pipeline is loaded) with the same
    small initialization as the other layers."""

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            _init_linear(self)


def _span_scores(
    start_scores: Tensor,
    end_scores: Tensor,
    start_bilinear: Tensor,
    m_end: Tensor,
    sent_ids: Optional[Tensor],
    max_width: int,
) -> Tuple[Tensor, Tensor, Tensor]:
    """Every span of width <= max_width (within one sentence when sentences
    are known), one width at a time, scored start + end + bilinear: the
    paper's mention score, given its three terms a token.

    RETURNS (Tuple[Tensor, Tensor, Tensor]): starts, ends (inclusive), scores.
    """
    n_tokens = start_scores.shape[0]
    positions = torch.arange(n_tokens, device=start_scores.device)
    start_parts: List[Tensor] = []
    end_parts: List[Tensor] = []
    score_parts: List[Tensor] = []
    same_sentence: List[Tensor] = []
    for width in range(min(max_width, n_tokens)):
        n = n_tokens - width
        joint = (start_bilinear[:n] * m_end[width:]).sum(-1)
        score_parts.append(start_scores[:n] + end_scores[width:] + joint)
        start_parts.append(positions[:n])
        end_parts.append(positions[width:])
        if sent_ids is not None:
            same_sentence.append(sent_ids[:n] == sent_ids[width:])
    starts, ends, scores = torch.cat(start_parts), torch.cat(end_parts), torch.cat(score_parts)
    if sent_ids is not None:
        # one mask for all widths: far cheaper than indexing each width
        keep = torch.cat(same_sentence)
        starts, ends, scores = starts[keep], ends[keep], scores[keep]
    return starts, ends, scores


def _mlp(hidden_size: int, dropout: float) -> nn.Module:
    return nn.Sequential(_LazyLinear(hidden_size), nn.GELU(), nn.Dropout(dropout))


class S2EHead(nn.Module):
    """Bilinear mention and antecedent scores over span endpoints.

    hidden_size (int): width of the endpoint projections m^s, m^e, a^s, a^e.
    dropout (float): dropout after each projection.
    max_width (int): longest mention candidate, in tokens (the paper's l).
    top_lambda (float): keep the ceil(top_lambda * T) best candidates.
    max_antecedents (Optional[int]): consider only this many preceding
        candidates as antecedents (None: all), bounding memory on books.
    use_speakers (bool): add a learned same-speaker / different-speaker term
        to the antecedent score when speaker ids are given.
    chunk_size (int): query rows of the antecedent matrix built at once.
    use_distance (bool): add a learned bias per log-scale distance bucket to
        the antecedent score. The paper has no such feature because its
        Longformer sees 4,096 tokens at once; with short strided encoder
        windows the token vectors carry no document position, and without
        it a pronoun cannot prefer a recent antecedent to a distant one.
    mention_loss_weight (float): weight of an auxiliary binary cross-entropy
        on every candidate's mention score (gold mention or not). The paper
        trains mention scores only through the antecedent loss; on small
        data that lets the head push every kept candidate to "null" before
        gold mentions enter the top-k. 0 gives the paper's loss.
    all_mentions_loss_weight (float): weight of a binary cross-entropy of a
        separate span scorer (its own v_s, v_e and B over m^s, m^e) that
        tells every GUM mention (doc_helpers.gold.MentionGold), singletons
        included, from other spans. Its score never enters pair scores: the
        endpoint features learn what a mention is while the mention score
        keeps meaning "a mention that corefers". On Docs without GUM's layer
        (clusters alone) it learns the cluster mentions. Training-only;
        0 builds no scorer.
    memory_loss_cells (int), memory_loss_mentions (int): 0 (the default): the
        antecedent loss is the paper's, over every preceding candidate.
        N > 0: the loss of the bounded entity memory's decisions (the
        component's memory_cells / memory_mentions, decoders.memory): each
        candidate chooses among the entities a memory of N cells holds when
        every earlier decision was the gold one (memory_targets), an entity
        scored by its best pair score over the mentions its cell keeps, or
        none (0: it starts an entity). So the head learns the choice the
        memory makes when predicting, among the entities it still holds.
        No parameters of their own: a pipeline trained either way loads
        into the other.

    The arguments have no defaults: the builder (models.s2e.s2e_model.build_s2e)
    is their home.
    """

    distance_edges: Tensor  # a buffer: DISTANCE_BUCKET_EDGES on the head's device

    def __init__(
        self,
        *,
        hidden_size: int,
        dropout: float,
        max_width: int,
        top_lambda: float,
        max_antecedents: Optional[int],
        use_speakers: bool,
        chunk_size: int,
        use_distance: bool,
        mention_loss_weight: float,
        all_mentions_loss_weight: float,
        memory_loss_cells: int,
        memory_loss_mentions: int,
    ) -> None:
        super().__init__()
        self.memory_loss_cells = memory_loss_cells
        self.memory_loss_mentions = memory_loss_mentions
        self.use_distance = use_distance
        self.mention_loss_weight = mention_loss_weight
        self.max_width = max_width
        self.top_lambda = top_lambda
        self.max_antecedents = max_antecedents
        self.use_speakers = use_speakers
        self.chunk_size = chunk_size
        self.mention_start = _mlp(hidden_size, dropout)
        self.mention_end = _mlp(hidden_size, dropout)
        self.antecedent_start = _mlp(hidden_size, dropout)
        self.antecedent_end = _mlp(hidden_size, dropout)
        self.mention_start_score = nn.Linear(hidden_size, 1)  # v_s
        self.mention_end_score = nn.Linear(hidden_size, 1)  # v_e
        self.mention_bilinear = nn.Linear(hidden_size, hidden_size)  # B_m
        # The four antecedent bilinear terms, applied to the query's endpoints:
        # start-to-start, end-to-end, start-to-end, end-to-start.
        self.antecedent_s2s = nn.Linear(hidden_size, hidden_size)
        self.antecedent_e2e = nn.Linear(hidden_size, hidden_size)
        self.antecedent_s2e = nn.Linear(hidden_size, hidden_size)
        self.antecedent_e2s = nn.Linear(hidden_size, hidden_size)
        # [different speaker, same speaker], added when both are known.
        self.speaker_bias = nn.Parameter(torch.zeros(2))
        self.distance_bias = nn.Parameter(torch.zeros(len(DISTANCE_BUCKET_EDGES) + 1))
        self.register_buffer("distance_edges", torch.tensor(DISTANCE_BUCKET_EDGES), persistent=False)
        self.all_mentions_loss_weight = all_mentions_loss_weight
        # predicting, read S2EDocument.mirror too and score by the mean of the
        # two readings (models.thinc_glue.set_gender_mirror sets it; not saved)
        self.gender_mirror = False
        # only when asked for, so pipelines saved without it still load
        self.all_mentions_scorer = (
            nn.ModuleDict(
                {
                    "start": nn.Linear(hidden_size, 1),
                    "end": nn.Linear(hidden_size, 1),
                    "bilinear": nn.Linear(hidden_size, hidden_size),
                }
            )
            if all_mentions_loss_weight > 0
            else None
        )
        for module in self.modules():
            if type(module) is nn.Linear:
                _init_linear(module)

    # ----- mention candidates -------------------------------------------------

    def score_mentions(self, tokens: Tensor, sent_ids: Optional[Tensor]) -> Tuple[Tensor, Tensor, Tensor]:
        """Score every span of width <= max_width (within one sentence when
        sentences are known), one width at a time: O(T * max_width) scores.

        RETURNS (Tuple[Tensor, Tensor, Tensor]): starts, ends (inclusive), scores.
        """
        return self._score_mentions(tokens, sent_ids)[0]

    def _score_mentions(self, tokens: Tensor, sent_ids: Optional[Tensor]):
        """score_mentions, and the endpoint features (m^s, m^e) it used."""
        m_start = self.mention_start(tokens)
        m_end = self.mention_end(tokens)
        spans = _span_scores(
            self.mention_start_score(m_start).squeeze(-1),
            self.mention_end_score(m_end).squeeze(-1),
            self.mention_bilinear(m_start),
            m_end,
            sent_ids,
            self.max_width,
        )
        return spans, (m_start, m_end)

    def top_candidates(self, starts: Tensor, ends: Tensor, scores: Tensor, n_tokens: int) -> Tensor:
        """Indices of the ceil(lambda * T) best candidates, in text order
        (by start, then end), so "c before q" is "lower index"."""
        k = min(max(1, math.ceil(self.top_lambda * n_tokens)), scores.shape[0])
        top = torch.topk(scores.detach(), k, sorted=False).indices
        order = starts[top] * (n_tokens + 1) + ends[top]
        return top[torch.argsort(order)]

    # ----- antecedents --------------------------------------------------------

    def _antecedent_window(self, q0: int) -> int:
        if self.max_antecedents is None:
            return 0
        return max(0, q0 - self.max_antecedents)

    def _antecedent_chunk(
        self,
        queries: Tensor,
        keys: Tensor,
        mention_scores: Tensor,
        speakers: Optional[Tensor],
        q0: int,
        q1: int,
        starts: Optional[Tensor] = None,
        ends: Optional[Tensor] = None,
    ) -> Tuple[Tensor, int]:
        """f(c, q) for queries q0..q1-1 against candidates lo..q1-1, with
        invalid pairs (c >= q, or beyond the window) at -inf.

        RETURNS (Tuple[Tensor, int]): [q1-q0, q1-lo] scores, and lo.
        """
        lo = self._antecedent_window(q0)
        scores = queries[q0:q1] @ keys[lo:q1].T
        scores = scores + mention_scores[q0:q1, None] + mention_scores[None, lo:q1]
        if speakers is not None:
            q_spk = speakers[q0:q1, None]
            c_spk = speakers[None, lo:q1]
            known = (q_spk >= 0) & (c_spk >= 0)
            bias = torch.where(q_spk == c_spk, self.speaker_bias[1], self.speaker_bias[0])
            scores = scores + torch.where(known, bias, torch.zeros_like(bias))
        if self.use_distance and starts is not None and ends is not None:
            distance = (starts[q0:q1, None] - ends[None, lo:q1]).clamp(min=0)
            scores = scores + self.distance_bias[torch.bucketize(distance, self.distance_edges)]
        q_index = torch.arange(q0, q1, device=scores.device)[:, None]
        c_index = torch.arange(lo, q1, device=scores.device)[None, :]
        valid = c_index < q_index
        if self.max_antecedents is not None:
            valid = valid & (q_index - c_index <= self.max_antecedents)
        return scores.masked_fill(~valid, NEG_INF), lo

    def _antecedent_inputs(self, tokens: Tensor, starts: Tensor, ends: Tensor) -> Tuple[Tensor, Tensor]:
        """Fold the four bilinear terms into one 2h-wide dot product:
        f_a(c, q) = (S2S a^s_q + E2S a^e_q) . a^s_c + (E2E a^e_q + S2E a^s_q) . a^e_c,
        the same sum as the four terms, with half the width of the K x K
        product. The projections run only on the kept candidates' endpoints
        (about lambda * T rows), not on every token."""
        a_start = self.antecedent_start(tokens[starts])
        a_end = self.antecedent_end(tokens[ends])
        queries = torch.cat(
            [
                self.antecedent_s2s(a_start) + self.antecedent_e2s(a_end),
                self.antecedent_e2e(a_end) + self.antecedent_s2e(a_start),
            ],
            dim=-1,
        )
        keys = torch.cat([a_start, a_end], dim=-1)
        return queries, keys

    # ----- one document -------------------------------------------------------

    def _candidates(self, doc: S2EDocument):
        tokens = doc.tokens
        n_tokens = tokens.shape[0]
        (all_starts, all_ends, all_scores), features = self._score_mentions(tokens, doc.sent_ids)
        if doc.mirror is not None:
            # the mirror's span scores in the same order (the same spans): the
            # candidates kept are the best by the mean of the two readings
            all_scores = (all_scores + self.score_mentions(doc.mirror, doc.sent_ids)[2]) / 2
        top = self.top_candidates(all_starts, all_ends, all_scores, n_tokens)
        starts, ends, mention_scores = all_starts[top], all_ends[top], all_scores[top]
        queries, keys = self._antecedent_inputs(tokens, starts, ends)
        speakers = None
        if self.use_speakers and doc.speaker_ids is not None:
            speakers = doc.speaker_ids[starts]
        candidates = (starts, ends, mention_scores, queries, keys, speakers)
        return candidates, (all_starts, all_ends, all_scores), features

    def document_loss(self, doc: S2EDocument, gold: Union[Clusters, Any]) -> Tensor:
        """Marginal log-likelihood of the gold antecedents among the kept
        candidates; null is gold for a candidate that is not a gold mention or
        has no kept gold antecedent (as in the paper's reference code), plus
        the mention loss and the all-mentions loss asked for.

        gold (Union[Clusters, MentionGold, PronounGold]): the clusters, or a
            doc_helpers.gold.MentionGold (clusters and GUM's mentions) for
            the all-mentions scorer, or a GAP row's PronounGold (then
            pronoun_loss alone).
        RETURNS (Tensor): summed over the kept candidates.
        """
        if isinstance(gold, PronounGold):
            return self.pronoun_loss(doc, gold)
        aux = None if isinstance(gold, list) else gold
        clusters: Clusters = gold if aux is None else aux.clusters
        n_tokens = doc.tokens.shape[0]
        candidates, (all_starts, all_ends, all_scores), (m_start, m_end) = self._candidates(doc)
        starts, ends, mention_scores, queries, keys, speakers = candidates
        cluster_ids = gold_cluster_ids(starts, ends, clusters, n_tokens)
        n_cand = starts.shape[0]
        loss = doc.tokens.new_zeros(())
        if self.all_mentions_scorer is not None:
            scorer = self.all_mentions_scorer
            any_starts, any_ends, any_scores = _span_scores(
                scorer["start"](m_start).squeeze(-1),
                scorer["end"](m_end).squeeze(-1),
                scorer["bilinear"](m_start),
                m_end,
                doc.sent_ids,
                self.max_width,
            )
            # without GUM's layer (clusters alone), the mentions the data marks
            every_mention = clusters + ([] if aux is None else [[span] for span in aux.mentions])
            loss = loss + self.all_mentions_loss_weight * self._span_bce(
                any_starts, any_ends, any_scores, every_mention, n_tokens
            )
        if self.mention_loss_weight > 0:
            loss = loss + self.mention_loss_weight * self._span_bce(
                all_starts, all_ends, all_scores, clusters, n_tokens
            )
        if self.memory_loss_cells > 0:
            return loss + self._memory_loss(candidates, cluster_ids)
        for q0 in range(0, n_cand, self.chunk_size):
            q1 = min(n_cand, q0 + self.chunk_size)
            scores, lo = self._antecedent_chunk(queries, keys, mention_scores, speakers, q0, q1, starts, ends)
            q_ids = cluster_ids[q0:q1, None]
            gold_pairs = (q_ids > 0) & (q_ids == cluster_ids[None, lo:q1]) & (scores > NEG_INF / 2)
            no_gold = ~gold_pairs.any(dim=1, keepdim=True)
            null = scores.new_zeros((q1 - q0, 1))
            all_scores = torch.cat([scores, null], dim=1)
            gold_mask = torch.cat([gold_pairs, no_gold], dim=1)
            gold_scores = all_scores.masked_fill(~gold_mask, NEG_INF)
            loss = loss + (torch.logsumexp(all_scores, 1) - torch.logsumexp(gold_scores, 1)).sum()
        return loss

    def pronoun_loss(self, doc: S2EDocument, gold: PronounGold) -> Tensor:
        """GAP's choice between two people: -log of the right candidate's
        share of the pronoun's two pair scores (softplus(wrong - right)).

        Only the antecedent part of the score (the bilinear terms and the
        distance) takes part: the mention scores would teach that the wrong
        candidate, a real mention of another person, is no mention. Neither
        span need be among the kept candidates, and the pronoun may come
        first (the right candidate follows the pronoun in 353 of GAP
        development's 1,799 rows with one right candidate): a pair is
        scored earlier span to later, as prediction scores it.
        """
        spans = sorted({gold.pronoun, gold.right, gold.wrong})
        device = doc.tokens.device
        starts = torch.tensor([start for start, _ in spans], device=device)
        ends = torch.tensor([end for _, end in spans], device=device)
        queries, keys = self._antecedent_inputs(doc.tokens, starts, ends)
        no_mention_scores = queries.new_zeros((len(spans),))
        scores, _ = self._antecedent_chunk(queries, keys, no_mention_scores, None, 0, len(spans), starts, ends)
        p = spans.index(gold.pronoun)

        def pair(span: Tuple[int, int]) -> Tensor:
            i = spans.index(span)
            return scores[max(i, p), min(i, p)]

        return nn.functional.softplus(pair(gold.wrong) - pair(gold.right))

    def _memory_loss(self, candidates: Tuple[Tensor, ...], cluster_ids: Tensor) -> Tensor:
        """The bounded memory's choice under teacher forcing (memory_targets):
        -log softmax of the gold choice among the held entities' scores (each
        the best pair score over its cell's kept mentions) and none (0),
        summed over the kept candidates. A gold cell whose kept mentions are
        all outside the antecedent window counts as none."""
        from .memory_targets import NONE, memory_targets

        starts, ends, mention_scores, queries, keys, speakers = candidates
        held, target = memory_targets(cluster_ids.tolist(), self.memory_loss_cells, self.memory_loss_mentions)
        held, target = held.to(starts.device), target.to(starts.device)
        n_cand = starts.shape[0]
        loss = mention_scores.new_zeros(())
        for q0 in range(0, n_cand, self.chunk_size):
            q1 = min(n_cand, q0 + self.chunk_size)
            scores, lo = self._antecedent_chunk(queries, keys, mention_scores, speakers, q0, q1, starts, ends)
            rows = held[q0:q1]  # [q, cells, mentions]
            present = (rows != NONE) & (rows >= lo)
            columns = (rows - lo).clamp(min=0).flatten(1)  # [q, cells * mentions]
            picked = scores.gather(1, columns).view(rows.shape)
            picked = picked.masked_fill(~present, NEG_INF)
            cell_scores = picked.max(dim=2).values  # [q, cells]: NEG_INF for an empty cell
            all_scores = torch.cat([cell_scores, cell_scores.new_zeros((q1 - q0, 1))], dim=1)
            gold = target[q0:q1].clone()
            chosen = all_scores.gather(1, gold.clamp(min=0)[:, None]).squeeze(1)
            gold[(gold == NONE) | (chosen < NEG_INF / 2)] = all_scores.shape[1] - 1
            gold_scores = all_scores.gather(1, gold[:, None]).squeeze(1)
            loss = loss + (torch.logsumexp(all_scores, 1) - gold_scores).sum()
        return loss

    def _span_bce(self, starts: Tensor, ends: Tensor, scores: Tensor, positives: Clusters, n_tokens: int) -> Tensor:
        """Binary cross-entropy of span scores against "is one of positives'
        spans", summed and divided by max_width: about max_width spans a
        token, so it is a per-token sum like the antecedent loss (a sum over
        ~lambda * T candidates)."""
        is_mention = (gold_cluster_ids(starts, ends, positives, n_tokens) > 0).to(scores.dtype)
        bce = nn.functional.binary_cross_entropy_with_logits(scores, is_mention, reduction="sum")
        return bce / self.max_width

    @property
    def reads_gum_layer(self) -> bool:
        """Whether training reads GUM's mentions where a Doc has them (a
        MentionGold a document): all_mentions_loss_weight uses them when
        there, the cluster mentions alone when not."""
        return self.all_mentions_scorer is not None

    @torch.no_grad()
    def document_links(self, doc: S2EDocument) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
        """Each kept candidate's best antecedent and that pair's score.

        RETURNS (Tuple[Tensor, Tensor, Tensor, Tensor]): starts, ends (kept
            candidates in text order), best antecedent index (-1: none
            precedes), its score (NEG_INF when none precedes).
        """
        starts, ends, choices, choice_scores = self.document_choices(doc)
        return starts, ends, choices[:, 0], choice_scores[:, 0]

    @torch.no_grad()
    def document_choices(self, doc: S2EDocument, k: int = ANTECEDENT_CHOICES) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
        """Each kept candidate's k best antecedents, best first.

        RETURNS (Tuple[Tensor, Tensor, Tensor, Tensor]): starts, ends (kept
            candidates in text order), [n, k] antecedent indices (-1: none),
            [n, k] their scores (NEG_INF where none).
        """
        if not self.gender_mirror:
            doc = replace(doc, mirror=None)
        candidates, _, _ = self._candidates(doc)
        starts, ends, mention_scores, queries, keys, speakers = candidates
        mirror_queries = mirror_keys = None
        if doc.mirror is not None:
            mirror_queries, mirror_keys = self._antecedent_inputs(doc.mirror, starts, ends)
        n_cand = starts.shape[0]
        chosen, chosen_scores = [], []
        for q0 in range(0, n_cand, self.chunk_size):
            q1 = min(n_cand, q0 + self.chunk_size)
            scores, lo = self._antecedent_chunk(queries, keys, mention_scores, speakers, q0, q1, starts, ends)
            if mirror_queries is not None and mirror_keys is not None:
                # the mean of the two readings' pair scores (the mention
                # scores in both are already the mean); invalid pairs stay
                # at NEG_INF in both
                mirror_scores, _ = self._antecedent_chunk(
                    mirror_queries, mirror_keys, mention_scores, speakers, q0, q1, starts, ends
                )
                scores = (scores + mirror_scores) / 2
            top_scores, top = scores.topk(min(k, scores.shape[1]), dim=1)
            if top.shape[1] < k:  # fewer candidates than k in the whole document
                pad = k - top.shape[1]
                top = torch.cat([top, top.new_zeros(top.shape[0], pad)], dim=1)
                top_scores = torch.cat([top_scores, top_scores.new_full((top.shape[0], pad), NEG_INF)], dim=1)
            valid = top_scores > NEG_INF / 2
            chosen.append(torch.where(valid, top + lo, torch.full_like(top, -1)))
            chosen_scores.append(torch.where(valid, top_scores, torch.full_like(top_scores, NEG_INF)))
        return starts, ends, torch.cat(chosen), torch.cat(chosen_scores)

    def predicted_links(self, doc: S2EDocument) -> Optional[Links]:
        """`document_links` as Python lists (decoders.predictions.Links), the
        scores as the float32 values they are; None for a document without
        tokens."""
        return self.prediction(doc).links

    def prediction(self, doc: S2EDocument) -> S2EPrediction:
        """One document's prediction: its links and choices, the choices
        best first and only the real ones (none after -1); no links for a
        document without tokens."""
        if doc.tokens.shape[0] == 0:
            return S2EPrediction()
        starts, ends, choices, scores = self.document_choices(doc)
        scores = scores.float()
        # each kept candidate's antecedent endpoint features, the model's own
        # view of what a mention refers to, for the entity vectors (two MLPs
        # over the candidates' endpoints; only the kept candidates: every
        # mention the decoder writes is one)
        endpoints = torch.cat(
            [self.antecedent_start(doc.tokens[starts]), self.antecedent_end(doc.tokens[ends])], dim=-1
        )
        links = (starts.tolist(), ends.tolist(), choices[:, 0].tolist(), scores[:, 0].tolist())
        kept_choices, kept_scores = [], []
        for row, row_scores in zip(choices.tolist(), scores.tolist()):
            n = next((i for i, c in enumerate(row) if c < 0), len(row))
            kept_choices.append(row[:n])
            kept_scores.append(row_scores[:n])
        return S2EPrediction(
            links=links, choices=(kept_choices, kept_scores), endpoints=endpoints.detach().float().cpu().numpy()
        )

    def forward(
        self, docs: Sequence[S2EDocument], golds: Optional[Sequence[Clusters]] = None
    ) -> Tuple[Optional[Tensor], List[S2EPrediction]]:
        """Loss over a batch (when golds are given) or predicted links.

        docs (Sequence[S2EDocument]): the batch.
        golds (Optional[Sequence[Clusters]]): gold clusters a document (or a
            doc_helpers.gold.MentionGold, see document_loss).
        RETURNS (Tuple[Optional[Tensor], List[S2EPrediction]]): the summed
            loss (None without golds, or when no document has a token), and a
            `prediction` a document (an empty one while training).
        """
        if golds is None:
            return None, [self.prediction(doc) for doc in docs]
        if len(golds) != len(docs):
            raise ValueError(f"{len(docs)} documents but {len(golds)} gold cluster lists")
        # a gold of None: a document with nothing to learn (a GAP row whose
        # pronoun refers to neither candidate or to both)
        losses = [
            self.document_loss(doc, gold) for doc, gold in zip(docs, golds) if doc.tokens.shape[0] and gold is not None
        ]
        loss = torch.stack(losses).sum() if losses else None
        return loss, [S2EPrediction() for _ in docs]


def gold_cluster_ids(starts: Tensor, ends: Tensor, gold: Clusters, n_tokens: int) -> Tensor:
    """Cluster id (from 1) of each candidate span, 0 when it is not a gold
    mention. A span in two gold clusters keeps the first."""
    ids = torch.zeros_like(starts)
    if not gold:
        return ids
    key_to_id: Dict[int, int] = {}
    for cluster_id, cluster in enumerate(gold, start=1):
        for start, end in cluster:
            key_to_id.setdefault(start * (n_tokens + 1) + end, cluster_id)
    gold_keys = torch.tensor(sorted(key_to_id), device=starts.device, dtype=starts.dtype)
    gold_vals = torch.tensor([key_to_id[k] for k in sorted(key_to_id)], device=starts.device, dtype=starts.dtype)
    cand_keys = starts * (n_tokens + 1) + ends
    pos = torch.searchsorted(gold_keys, cand_keys).clamp(max=gold_keys.shape[0] - 1)
    hit = gold_keys[pos] == cand_keys
    return torch.where(hit, gold_vals[pos], ids)
