"""A bounded mention-level memory over s2e's mention proposals: the
"Learning to Ignore" model (Toshniwal et al. 2020) read over a trained s2e
pipeline's kept candidates, against that pipeline's own decoding, on the
same documents and the same features, side by side in one run.

The s2e pipeline is frozen: its encoder and head give each document's kept
candidates (spans in text order), their mention scores, their antecedent
endpoint features and every candidate pair's antecedent score. The memory
reads the candidates left to right with N cells, one entity a cell, each
keeping the entity's first mention and its M - 1 latest ones. At each
candidate it takes one action:

- COREF with cell j: the best pair score over the cell's kept mentions is
  above the link threshold, and the best of the cells;
- OVERWRITE: a new entity, in an empty cell, else in the least recently
  used one (the entity there leaves the memory), when no cell is chosen
  and the mention score is above a bar;
- IGNORE: not a mention.

Clusters are the entities with 2+ mentions. Scored on the dev documents
(gold tokens and sentences, no speakers, no decoding rules) by the
project's scorer, beside s2e's own decoding over the same features (best
antecedent above the link threshold among all preceding candidates, union
of the links), which the memory equals when unbounded.

--grid: the untrained readings, one knob at a time (cells, mentions a cell,
eviction, the bar). Else a learned correction is added to each action's
score (zero at the start: the untrained reading), trained with full cluster
supervision on the training documents (teacher forcing: COREF to the gold
entity's cell when it is in memory, OVERWRITE for a gold mention whose
entity is not, IGNORE for the rest).

    python benchmarks/mention_memory.py --model s2e-ontogum --dev corpus/ontogum/dev.spacy --cache runs/mm --grid
    python benchmarks/mention_memory.py --train corpus/ontogum/train.spacy \\
        --dev corpus/ontogum/dev.spacy --cache runs/mm [--cells 40] [--members 8] [--epochs 6] [--seed 0]
"""

import argparse
import random
import sys
import time
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import torch
from spacy.tokens import Doc, DocBin
from torch import Tensor, nn

from _common import machine_line, quiet, set_threads, table

NEG = -1e4
# distance (tokens) from the cell's latest mention: the s2e head's buckets
DISTANCE_EDGES = torch.tensor([0, 1, 2, 3, 4, 7, 15, 31, 63, 127, 255])
SIZE_EDGES = torch.tensor([1, 2, 4, 8, 16])
N_FEATURES = 3 + len(DISTANCE_EDGES) + 1 + len(SIZE_EDGES) + 1


@dataclass
class Candidates:
    """One document as the frozen s2e sees it."""

    doc_id: str
    starts: List[int]
    ends: List[int]
    mention_scores: Tensor  # [K]
    endpoints: Tensor  # [K, D]
    pair_scores: Tensor  # [K, K]: f(c, q) at [q, c], NEG where c >= q
    gold_ids: List[int]  # the candidate's gold cluster (0: none)
    gold_clusters: List[List[Tuple[int, int]]]  # token spans, end inclusive
    s2e_clusters: List[List[Tuple[int, int]]]


def gold_token_clusters(doc: Doc) -> List[List[Tuple[int, int]]]:
    from spacy_memcoref.doc_helpers.clusters import numbered_clusters

    return [[(s.start, s.end - 1) for s in group] for _, group in numbered_clusters(doc)]


def extract(nlp, docs: Sequence[Doc]) -> Tuple[List[Candidates], float]:
    """Run the frozen s2e over gold-token copies of the documents (sentences
    kept, speakers dropped) and keep what the memory reads."""
    from spacy_memcoref.decoders.s2e import clusters_from_links
    from spacy_memcoref.models.encoder.encoder import encode_for_inference
    from spacy_memcoref.models.s2e.pytorch_s2e import gold_cluster_ids
    from spacy_memcoref.pipeline.coref_component import coref_components

    _, component = coref_components(nlp, "s2e")[0]
    threshold = component.cfg.get("link_threshold")
    tok2vec, head_layer = component.model.layers[0], component.model.layers[1]
    head = head_layer.shims[0]._model
    head.eval()
    make_input = head_layer.attrs["make_head_input"]
    out: List[Candidates] = []
    for n, gold in enumerate(docs):
        doc = Doc(
            nlp.vocab,
            words=[t.text for t in gold],
            spaces=[bool(t.whitespace_) for t in gold],
            sent_starts=[bool(t.is_sent_start) for t in gold],
        )
        with torch.no_grad():
            vectors = encode_for_inference(tok2vec, [doc])[0]
            tokens = torch.as_tensor(vectors.get() if hasattr(vectors, "get") else vectors).float()
            head_input = make_input(doc, tokens)
            candidates, _, _ = head._candidates(head_input)
            starts, ends, mention_scores, queries, keys, speakers = candidates
            k = starts.shape[0]
            pairs, lo = head._antecedent_chunk(queries, keys, mention_scores, speakers, 0, k, starts, ends)
            assert lo == 0
            pairs = pairs.masked_fill(pairs < NEG, NEG)
            endpoints = torch.cat([head.antecedent_start(tokens[starts]), head.antecedent_end(tokens[ends])], -1)
        clusters = gold_token_clusters(gold)
        ids = gold_cluster_ids(starts, ends, clusters, len(gold)).tolist()
        best = pairs.max(dim=1)
        links = [int(c) if float(s) > threshold and int(q) > 0 else -1 for q, (s, c) in enumerate(zip(*best))]
        s2e = clusters_from_links(starts.tolist(), ends.tolist(), links)
        out.append(
            Candidates(
                gold.user_data.get("doc_id", str(n)),
                starts.tolist(),
                ends.tolist(),
                mention_scores.float(),
                endpoints.float(),
                pairs.float(),
                ids,
                clusters,
                [list(map(tuple, c)) for c in s2e],
            )
        )
        print(f"  [{n + 1}/{len(docs)}] {out[-1].doc_id}: {len(gold)} tokens, {k} candidates", file=sys.stderr)
    return out, float(threshold)


def features(nlp, path: str, limit: Optional[int], cache: Optional[str], name: str):
    """extract() over a DocBin, kept in (and read back from) the cache folder."""
    from pathlib import Path

    stored = Path(cache) / f"{name}.{limit or 'all'}.pt" if cache else None
    if stored is not None and stored.exists():
        return torch.load(stored, weights_only=False)
    docs = list(DocBin().from_disk(path).get_docs(nlp.vocab))[:limit]
    result = extract(nlp, docs)
    if stored is not None:
        stored.parent.mkdir(parents=True, exist_ok=True)
        torch.save(result, stored)
    return result


class MentionMemory(nn.Module):
    """The learned scores of the memory's actions (see the module docstring).
    Two decisions a candidate: a cell to join (COREF) or none, then, for
    none, OVERWRITE against IGNORE. Before training it is the untrained
    bounded reading: a cell scores the best s2e pair score over its kept
    mentions less the link threshold against 0 for none, OVERWRITE the
    mention score less new_threshold against IGNORE; what it learns is
    added to those, from zero."""

    def __init__(
        self,
        width: int,
        link_threshold: float,
        new_threshold: float,
        project: int = 128,
        hidden: int = 150,
        dropout: float = 0.3,
    ) -> None:
        super().__init__()
        self.link_threshold = link_threshold
        self.new_threshold = new_threshold
        self.project = nn.Linear(width, project)
        self.pair = nn.Sequential(
            nn.Linear(3 * project + N_FEATURES, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, 1)
        )
        nn.init.zeros_(self.pair[-1].weight)
        nn.init.zeros_(self.pair[-1].bias)
        self.new = nn.Sequential(nn.Linear(project + 1, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, 1))
        nn.init.zeros_(self.new[-1].weight)
        nn.init.zeros_(self.new[-1].bias)
        self.dropout = nn.Dropout(dropout)

    def read(
        self, doc: Candidates, cells: int, members: int, gold: bool, train: bool
    ) -> Tuple[Optional[Tensor], List[List[Tuple[int, int]]]]:
        """Read one document. gold: teacher forcing and the summed loss;
        else greedy actions. A cell keeps its entity's first mention and its
        members - 1 latest; a full memory overwrites its least recently used
        cell. RETURNS (loss or None, clusters)."""
        feats = self.dropout(self.project(doc.endpoints)) if train else self.project(doc.endpoints)
        k = len(doc.starts)
        entity: List[Optional[int]] = [None] * cells
        kept: List[List[int]] = [[] for _ in range(cells)]
        total: List[Optional[Tensor]] = [None] * cells
        count = [0] * cells
        used = [-1] * cells
        clusters: Dict[int, List[int]] = {}
        next_entity = 1
        losses: List[Tensor] = []
        for q in range(k):
            live = [j for j in range(cells) if entity[j] is not None]
            scores: List[Tensor] = []
            if live:
                pair_rows = [doc.pair_scores[q, kept[j]] for j in live]
                f_best = torch.stack([r.max() for r in pair_rows])
                f_first = torch.stack([r[0] for r in pair_rows])
                f_latest = torch.stack([r[-1] for r in pair_rows])
                distance = torch.tensor([max(0, doc.starts[q] - doc.ends[kept[j][-1]]) for j in live])
                size = torch.tensor([count[j] for j in live])
                side = torch.cat(
                    [
                        torch.stack([f_best, f_first, f_latest], -1) / 10.0,
                        nn.functional.one_hot(torch.bucketize(distance, DISTANCE_EDGES), len(DISTANCE_EDGES) + 1),
                        nn.functional.one_hot(torch.bucketize(size, SIZE_EDGES), len(SIZE_EDGES) + 1),
                    ],
                    -1,
                ).float()
                means = torch.stack([total[j] / count[j] for j in live])
                mine = feats[q].expand_as(means)
                learned = self.pair(torch.cat([mine, means, mine * means, side], -1)).squeeze(-1)
                scores.append(f_best - self.link_threshold + learned)
            m = doc.mention_scores[q : q + 1]
            new = (m - self.new_threshold + self.new(torch.cat([feats[q], m / 10.0]))).view(1)
            # two decisions: which cell, or none (score 0: the link threshold); then, for none,
            # OVERWRITE against IGNORE. Untrained, it is the bounded reading exactly.
            link_scores = torch.cat(scores + [feats.new_zeros(1)])
            if gold:
                g = doc.gold_ids[q]
                target_cell = next((i for i, j in enumerate(live) if entity[j] == g), None) if g else None
                target = target_cell if target_cell is not None else len(live)
                losses.append(torch.logsumexp(link_scores, 0) - link_scores[target])
                if target_cell is None:
                    losses.append(nn.functional.binary_cross_entropy_with_logits(new, new.new_tensor([float(g > 0)])))
                action = target if target_cell is not None else (len(live) if g else len(live) + 1)
                label = g
            else:
                best = int(link_scores.argmax())
                action = best if best < len(live) else (len(live) if float(new) > 0 else len(live) + 1)
                label = next_entity
            if action == len(live) + 1:  # IGNORE
                continue
            if action == len(live):  # OVERWRITE
                empty = [j for j in range(cells) if entity[j] is None]
                j = empty[0] if empty else min(range(cells), key=lambda c: used[c])
                if not gold:
                    next_entity += 1
                entity[j], kept[j], count[j] = label, [q], 1
                total[j] = feats[q]
            else:
                j = live[action]
                kept[j] = kept[j][:1] + (kept[j][1:] + [q])[-(members - 1) :] if members > 1 else kept[j]
                count[j] += 1
                total[j] = total[j] + feats[q]
            used[j] = q
            clusters.setdefault(entity[j], []).append(q)
        loss = torch.stack(losses).sum() if losses else None
        spans = [
            [(doc.starts[q], doc.ends[q]) for q in members_] for members_ in clusters.values() if len(members_) > 1
        ]
        return loss, spans


def bounded(
    doc: Candidates, cells: int, members: int, new_threshold: float, link_threshold: float, evict: str
) -> List[List[Tuple[int, int]]]:
    """The bounded memory with the s2e scores alone, in its general form.
    A cell keeps its entity's first mention and its `members` - 1 latest
    ones; COREF scores a cell by its best pair score over those; a candidate
    no cell takes becomes a new entity when its mention score is above
    new_threshold. A full memory evicts by `evict`: "lru" (the least
    recently used cell) or "weakest" (the cell whose best mention score is
    lowest, a singleton before any cluster)."""
    entity: List[Optional[int]] = [None] * cells
    kept: List[List[int]] = [[] for _ in range(cells)]
    strength = [0.0] * cells
    used = [-1] * cells
    clusters: Dict[int, List[int]] = {}
    next_entity = 0
    for q in range(len(doc.starts)):
        best, best_score = None, link_threshold
        for j in range(cells):
            if entity[j] is None:
                continue
            s = max(float(doc.pair_scores[q, c]) for c in kept[j])
            if s > best_score:
                best, best_score = j, s
        m = float(doc.mention_scores[q])
        if best is not None:
            j = best
            kept[j] = kept[j][:1] + (kept[j][1:] + [q])[-(members - 1) :] if members > 1 else kept[j]
        elif m > new_threshold:
            empty = [c for c in range(cells) if entity[c] is None]
            if empty:
                j = empty[0]
            elif evict == "lru":
                j = min(range(cells), key=lambda c: used[c])
            else:
                j = min(range(cells), key=lambda c: (len(clusters[entity[c]]) > 1, strength[c], used[c]))
            next_entity += 1
            entity[j], kept[j], strength[j] = next_entity, [q], m
        else:
            continue
        used[j] = q
        strength[j] = max(strength[j], m)
        clusters.setdefault(entity[j], []).append(q)
    return [[(doc.starts[q], doc.ends[q]) for q in ms] for ms in clusters.values() if len(ms) > 1]


def decoding_grid(dev: Sequence[Candidates], threshold: float) -> None:
    """Where the untrained bounded reading loses against s2e: one knob at a time."""
    import itertools

    quantiles = torch.quantile(torch.cat([d.mention_scores for d in dev]), torch.tensor([0.1, 0.3, 0.5, 0.7]))
    print("mention-score quantiles 10/30/50/70%:", [round(float(x), 2) for x in quantiles])
    rows = []
    for cells, members, new_t, evict in itertools.chain(
        [(10000, 10000, -1e9, "lru")],
        [(20, m, -1e9, e) for m in (2, 4, 8) for e in ("lru", "weakest")],
        [(20, 4, float(t), e) for t in quantiles for e in ("lru", "weakest")],
        [(c, 4, -1e9, "weakest") for c in (10, 40, 80)],
        [
            (c, m, t, e)
            for c in (40, 80)
            for m in (4, 8)
            for t in (-1e9, float(quantiles[1]), float(quantiles[2]))
            for e in ("lru", "weakest")
        ],
    ):
        scores = score(dev, [bounded(d, cells, members, new_t, threshold, evict) for d in dev])
        rows.append(row(f"cells {cells}, members {members}, new > {new_t:.2f}, evict {evict}", scores, "-"))
        print(rows[-1], file=sys.stderr)
    print(table(["reading", "dev CoNLL F1", "mentions R / P", "MUC / B3 / CEAFe", "run"], rows))


def score(docs: Sequence[Candidates], responses: Sequence[List[List[Tuple[int, int]]]]) -> Dict[str, float]:
    from spacy_memcoref.scoring.coref_metrics import CorefEvaluator

    evaluator = CorefEvaluator()
    for doc, response in zip(docs, responses):
        evaluator.add_document(doc.gold_clusters, response)
    return evaluator.scores()


def row(name: str, scores: Dict[str, float], extra: str) -> List[object]:
    pct = lambda key: f"{100 * scores[key]:.2f}"  # noqa: E731
    return [
        name,
        pct("coref_conll_f"),
        f"{pct('coref_mentions_r')} / {pct('coref_mentions_p')}",
        f"{pct('coref_muc_f')} / {pct('coref_b3_f')} / {pct('coref_ceafe_f')}",
        extra,
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="s2e-ontogum", help="a shipped s2e model's name or a pipeline folder")
    parser.add_argument("--train", default=None, help="the training documents (not needed with --grid)")
    parser.add_argument("--dev", required=True)
    parser.add_argument("--cells", type=int, default=40)
    parser.add_argument("--members", type=int, default=8, help="mentions a cell keeps: its first and latest")
    parser.add_argument(
        "--new-quantile", type=float, default=0.3, help="OVERWRITE's mention-score bar: this quantile of dev's"
    )
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=int, default=None, help="the first N documents of each set")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument(
        "--cache", default=None, help="a folder: keep the frozen pipeline's features there and reuse them"
    )
    parser.add_argument("--extract-only", action="store_true", help="write the feature cache and stop")
    parser.add_argument("--grid", action="store_true", help="the untrained bounded readings' knobs, then stop")
    args = parser.parse_args()
    if args.train is None and not args.grid:
        parser.error("--train is needed to train the memory (only --grid reads without it)")
    threads = set_threads(args.threads)
    quiet()
    import spacy_memcoref

    print(machine_line(threads))
    started = time.perf_counter()
    nlp = spacy_memcoref.load(args.model) if "/" not in args.model else __import__("spacy").load(args.model)
    dev, threshold = features(nlp, args.dev, args.limit, args.cache, "dev")
    # the untrained readings need no training documents
    train = [] if args.grid else features(nlp, args.train, args.limit, args.cache, "train")[0]
    if args.extract_only:
        return
    print(f"features: {time.perf_counter() - started:.0f} s; link threshold {threshold}", file=sys.stderr)
    if args.grid:
        print(
            table(
                ["reading", "dev CoNLL F1", "mentions R / P", "MUC / B3 / CEAFe", "run"],
                [row("s2e (the pipeline's decoding, unbounded)", score(dev, [d.s2e_clusters for d in dev]), "-")],
            )
        )
        decoding_grid(dev, threshold)
        return

    rows = [
        row("s2e (the pipeline's decoding, unbounded)", score(dev, [d.s2e_clusters for d in dev]), "-"),
        row(
            f"bounded memory, {args.cells} x {args.members}, s2e scores alone (lru)",
            score(
                dev,
                [bounded(d, args.cells, args.members, -1e9, threshold, "lru") for d in dev],
            ),
            "-",
        ),
    ]
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    new_threshold = float(torch.quantile(torch.cat([d.mention_scores for d in dev]), args.new_quantile))
    memory = MentionMemory(train[0].endpoints.shape[1], threshold, new_threshold)
    memory.eval()
    with torch.no_grad():
        scores = score(dev, [memory.read(d, args.cells, args.members, gold=False, train=False)[1] for d in dev])
    rows.append(row(f"learned memory, {args.cells} x {args.members}, before training", scores, "-"))
    print(f"epoch 0: dev CoNLL F1 {100 * scores['coref_conll_f']:.2f}", file=sys.stderr)
    optimizer = torch.optim.Adam(memory.parameters(), lr=args.lr)
    steps = args.epochs * len(train)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: max(0.0, 1 - s / steps))
    best: Tuple[float, int] = (-1.0, 0)
    for epoch in range(1, args.epochs + 1):
        t0 = time.perf_counter()
        memory.train()
        order = list(range(len(train)))
        random.shuffle(order)
        total = 0.0
        for i in order:
            loss, _ = memory.read(train[i], args.cells, args.members, gold=True, train=True)
            if loss is None:
                continue
            optimizer.zero_grad()
            (loss / max(1, len(train[i].starts))).backward()
            nn.utils.clip_grad_norm_(memory.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            total += float(loss)
        memory.eval()
        with torch.no_grad():
            scores = score(dev, [memory.read(d, args.cells, args.members, gold=False, train=False)[1] for d in dev])
        print(
            f"epoch {epoch}: loss {total:.0f}, dev CoNLL F1 {100 * scores['coref_conll_f']:.2f}"
            f" ({time.perf_counter() - t0:.0f} s)",
            file=sys.stderr,
        )
        rows.append(row(f"learned memory, {args.cells} x {args.members}, epoch {epoch}", scores, f"seed {args.seed}"))
        best = max(best, (scores["coref_conll_f"], epoch))
    print(
        table(
            ["reading", "dev CoNLL F1", "mentions R / P", "MUC / B3 / CEAFe", "run"],
            rows,
        )
    )
    print(f"best epoch {best[1]}: {100 * best[0]:.2f}; {time.perf_counter() - started:.0f} s in all")


if __name__ == "__main__":
    main()
