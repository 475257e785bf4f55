"""Coreference metrics: MUC, B-cubed, CEAFe, LEA and the CoNLL F1.

Pure Python (numpy/scipy only for the CEAF assignment); no spaCy, no torch.

The numbers are those of the CoNLL-2012 reference scorer (`scorer.pl`, v8.01,
`lib/CorScorer.pm`), document by document and micro-averaged the way its
`all` mode does: each metric gives, per document, a recall numerator and
denominator and a precision numerator and denominator; these are summed over
documents and only then turned into P, R and F1. LEA (Moosavi & Strube 2016)
is not in `scorer.pl`; it follows the coval implementation
(github.com/ns-moosavi/coval), where a singleton entity has one "self-link".

A mention is any hashable key (e.g. `(start, end)` token or character
offsets); a cluster is a sequence of mentions. Malformed input is handled as
`scorer.pl` handles it (see `prepare_document`):

- a mention repeated in the key keeps one identity; each occurrence still
  counts in the cluster(s) it occurs in;
- a response mention that is also a key mention and occurs again later in the
  response (in the same or another cluster) is dropped at its later
  occurrences (clusters that become empty disappear); a repeated response
  mention that is *not* in the key is kept at every occurrence;
- "later" follows the order of the clusters and of the mentions in them, so
  give clusters in the order the entities first occur in the document, as
  `scorer.pl` reads them, when you need identical numbers on such input;
- twinless mentions and singletons count in B3, CEAFe and LEA; MUC ignores
  singletons (they have no links);
- an empty key or response is fine (P or R is 0, never a division by zero).

Unlike `scorer.pl`, which refuses to score (exit 1) once it has seen more than
ten repeated response mentions in one run, this module never refuses; the
number of repeats is kept in `DocumentCounts.repeated_response_mentions`.
"""

from dataclasses import dataclass, field
from typing import Dict, Hashable, Iterable, List, Sequence, Tuple

Mention = Hashable
Cluster = Sequence[Mention]
Counts = Tuple[float, float, float, float]
"""(recall numerator, recall denominator, precision numerator, precision denominator)"""

METRICS = ("mentions", "muc", "b3", "ceafe", "lea")
"""Metric names, in the order the score tables list them."""

CONLL_METRICS = ("muc", "b3", "ceafe")
"""The metrics whose F1s the CoNLL F1 averages."""


@dataclass
class PreparedDocument:
    """One document's clusters as integer mention ids, after the clean-up that
    `scorer.pl` (IdentifMentions) applies.

    key (List[List[int]]): the key clusters.
    response (List[List[int]]): the response clusters, repeated key mentions
        and empty clusters removed.
    n_key_mentions (int): distinct key mentions.
    n_response_mentions (int): distinct response mentions.
    n_exact (int): key mentions the response has with exactly the same bounds.
    repeated_response_mentions (int): response mentions dropped as repeats.
    """

    key: List[List[int]]
    response: List[List[int]]
    n_key_mentions: int
    n_response_mentions: int
    n_exact: int
    repeated_response_mentions: int


def prepare_document(key_clusters: Iterable[Cluster], response_clusters: Iterable[Cluster]) -> PreparedDocument:
    """Map the mentions of one document to integer ids as `scorer.pl` does.

    key_clusters (Iterable[Cluster]): gold clusters; empty clusters are ignored.
    response_clusters (Iterable[Cluster]): system clusters; empty clusters are ignored.
    RETURNS (PreparedDocument): the clusters as ids plus the mention counts.
    """
    key = [list(c) for c in key_clusters if len(c)]
    response = [list(c) for c in response_clusters if len(c)]
    # Every key occurrence gets a fresh id; a repeated key mention ends up
    # with the id of its last occurrence (perl overwrites %id).
    key_ids: Dict[Mention, int] = {}
    id_count = 0
    for cluster in key:
        for mention in cluster:
            key_ids[mention] = id_count
            id_count += 1
    # Response mentions with exactly the bounds of a key mention take its id;
    # a later occurrence of such a mention is dropped.
    ids: Dict[Mention, int] = {}
    exact = 0
    repeated = 0
    cleaned: List[List[Mention]] = []
    for cluster in response:
        kept = []
        for mention in cluster:
            if mention in ids:
                repeated += 1
                continue
            if mention in key_ids:
                ids[mention] = key_ids[mention]
                exact += 1
            kept.append(mention)
        if kept:
            cleaned.append(kept)
    # Response mentions not in the key get new ids (a repeat reuses its id).
    for cluster in cleaned:
        for mention in cluster:
            if mention not in ids:
                ids[mention] = id_count
                id_count += 1
    return PreparedDocument(
        key=[[key_ids[m] for m in c] for c in key],
        response=[[ids[m] for m in c] for c in cleaned],
        n_key_mentions=len(key_ids),
        n_response_mentions=len(ids),
        n_exact=exact,
        repeated_response_mentions=repeated,
    )


def _last_cluster_index(clusters: List[List[int]]) -> Dict[int, int]:
    """Map each id to the index of the last cluster holding it (perl's Indexa)."""
    index: Dict[int, int] = {}
    for i, cluster in enumerate(clusters):
        for m in cluster:
            index[m] = i
    return index


def mention_counts(doc: PreparedDocument) -> Counts:
    """Mention identification (exact bounds), as `scorer.pl` prints it.

    doc (PreparedDocument): the prepared document.
    RETURNS (Counts): (recall num, recall den, precision num, precision den).
    """
    return (doc.n_exact, doc.n_key_mentions, doc.n_exact, doc.n_response_mentions)


def muc_counts(doc: PreparedDocument) -> Counts:
    """MUC (Vilain et al. 1995): links kept by the partition of the other side.

    doc (PreparedDocument): the prepared document.
    RETURNS (Counts): (recall num, recall den, precision num, precision den).
    """
    key_index = _last_cluster_index(doc.key)
    correct = 0
    for cluster in doc.response:
        # A mention counts when a later mention of the same response cluster
        # lies in the same key cluster: sum over key clusters of (overlap - 1).
        seen: Dict[int, int] = {}
        for m in cluster:
            k = key_index.get(m)
            if k is not None:
                seen[k] = seen.get(k, 0) + 1
        correct += sum(n - 1 for n in seen.values())
    key_links = sum(len(c) - 1 for c in doc.key)
    response_links = sum(len(c) - 1 for c in doc.response)
    return (correct, key_links, correct, response_links)


def b3_counts(doc: PreparedDocument) -> Counts:
    """B-cubed (Bagga & Baldwin 1998) over all mentions, twinless ones included.

    doc (PreparedDocument): the prepared document.
    RETURNS (Counts): (recall num, recall den, precision num, precision den).
    """
    key_index = _last_cluster_index(doc.key)
    key_sets = [set(c) for c in doc.key]
    recall_num = 0.0
    precision_num = 0.0
    for cluster in doc.response:
        size = len(cluster)
        for m in cluster:
            k = key_index.get(m)
            if k is None:
                continue
            common = sum(1 for other in cluster if other in key_sets[k])
            precision_num += common / size
            recall_num += common / len(doc.key[k])
    key_mentions = sum(len(c) for c in doc.key)
    response_mentions = sum(len(c) for c in doc.response)
    return (recall_num, key_mentions, precision_num, response_mentions)


def _phi4(key: List[int], response: List[int], response_set: set) -> float:
    """2 |K & R| / (|K| + |R|), counting repeated key ids, as scorer.pl does."""
    common = sum(1 for m in key if m in response_set)
    return 2.0 * common / (len(key) + len(response))


def ceafe_counts(doc: PreparedDocument) -> Counts:
    """Entity-based CEAF (Luo 2005) with phi4 similarity and the best one-to-one
    alignment of key and response entities.

    doc (PreparedDocument): the prepared document.
    RETURNS (Counts): (recall num, recall den, precision num, precision den).
    """
    similarity = 0.0
    if doc.key and doc.response:
        import numpy
        from scipy.optimize import linear_sum_assignment

        response_sets = [set(c) for c in doc.response]
        scores = numpy.zeros((len(doc.key), len(doc.response)), dtype="float64")
        index: Dict[int, List[int]] = {}
        for j, cluster in enumerate(doc.response):
            for m in cluster:
                index.setdefault(m, []).append(j)
        # Only entity pairs that share a mention have a non-zero similarity.
        for i, cluster in enumerate(doc.key):
            for j in {j for m in cluster for j in index.get(m, ())}:
                scores[i, j] = _phi4(cluster, doc.response[j], response_sets[j])
        rows, cols = linear_sum_assignment(scores, maximize=True)
        similarity = float(scores[rows, cols].sum())
    return (similarity, len(doc.key), similarity, len(doc.response))


def _lea_side(inputs: List[List[int]], outputs: List[List[int]], out_index: Dict[int, int]) -> Tuple[float, float]:
    num = 0.0
    den = 0.0
    for cluster in inputs:
        size = len(cluster)
        if size == 1:
            m = cluster[0]
            common = 1 if m in out_index and len(outputs[out_index[m]]) == 1 else 0
            links = 1.0
        else:
            links = size * (size - 1) / 2.0
            groups: Dict[int, int] = {}
            for m in cluster:
                j = out_index.get(m)
                if j is not None:
                    groups[j] = groups.get(j, 0) + 1
            common = sum(n * (n - 1) // 2 for n in groups.values())
        num += size * common / links
        den += size
    return num, den


def lea_counts(doc: PreparedDocument) -> Counts:
    """LEA (Moosavi & Strube 2016): each entity weighted by its size, scored by
    the fraction of its links the other side resolves; a singleton has one
    self-link, resolved when the other side has it as a singleton too (coval).

    doc (PreparedDocument): the prepared document.
    RETURNS (Counts): (recall num, recall den, precision num, precision den).
    """
    recall_num, recall_den = _lea_side(doc.key, doc.response, _last_cluster_index(doc.response))
    precision_num, precision_den = _lea_side(doc.response, doc.key, _last_cluster_index(doc.key))
    return (recall_num, recall_den, precision_num, precision_den)


_COUNTERS = {
    "mentions": mention_counts,
    "muc": muc_counts,
    "b3": b3_counts,
    "ceafe": ceafe_counts,
    "lea": lea_counts,
}


@dataclass
class DocumentCounts:
    """The per-metric counts of one document.

    counts (Dict[str, Counts]): metric name -> (recall num, recall den,
        precision num, precision den).
    repeated_response_mentions (int): response mentions dropped as repeats.
    """

    counts: Dict[str, Counts]
    repeated_response_mentions: int = 0


def document_counts(key_clusters: Iterable[Cluster], response_clusters: Iterable[Cluster]) -> DocumentCounts:
    """Score one document with every metric.

    key_clusters (Iterable[Cluster]): gold clusters.
    response_clusters (Iterable[Cluster]): system clusters.
    RETURNS (DocumentCounts): the counts of each metric in METRICS.
    """
    doc = prepare_document(key_clusters, response_clusters)
    return DocumentCounts(
        counts={name: _COUNTERS[name](doc) for name in METRICS},
        repeated_response_mentions=doc.repeated_response_mentions,
    )


def prf(counts: Counts) -> Tuple[float, float, float]:
    """Precision, recall and F1 from summed counts, as `scorer.pl` (ShowRPF)
    computes them: 0 where a denominator is 0.

    counts (Counts): (recall num, recall den, precision num, precision den).
    RETURNS (Tuple[float, float, float]): (precision, recall, F1).
    """
    r_num, r_den, p_num, p_den = counts
    p = p_num / p_den if p_den else 0.0
    r = r_num / r_den if r_den else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return float(p), float(r), float(f)


@dataclass
class CorefEvaluator:
    """Accumulates per-document counts and micro-averages them over documents.

    >>> ev = CorefEvaluator()
    >>> ev.add_document([[(0, 0), (2, 3)]], [[(0, 0), (2, 3)]])
    >>> ev.scores()["coref_conll_f"]
    1.0
    """

    totals: Dict[str, List[float]] = field(default_factory=lambda: {name: [0.0, 0.0, 0.0, 0.0] for name in METRICS})
    n_documents: int = 0
    repeated_response_mentions: int = 0

    def add_document(self, key_clusters: Iterable[Cluster], response_clusters: Iterable[Cluster]) -> DocumentCounts:
        """Score one document and add its counts to the totals.

        key_clusters (Iterable[Cluster]): gold clusters of the document.
        response_clusters (Iterable[Cluster]): system clusters of the document
            (empty when the response lacks the document).
        RETURNS (DocumentCounts): this document's counts.
        """
        doc_counts = document_counts(key_clusters, response_clusters)
        for name, values in doc_counts.counts.items():
            total = self.totals[name]
            for i, value in enumerate(values):
                total[i] += value
        self.n_documents += 1
        self.repeated_response_mentions += doc_counts.repeated_response_mentions
        return doc_counts

    def counts(self, metric: str) -> Counts:
        """The summed (recall num, recall den, precision num, precision den) of
        a metric in METRICS."""
        r_num, r_den, p_num, p_den = self.totals[metric]
        return (r_num, r_den, p_num, p_den)

    def scores(self) -> Dict[str, float]:
        """P, R and F1 of each metric (fractions in [0, 1]) and the CoNLL F1.

        RETURNS (Dict[str, float]): keys `coref_{metric}_{p,r,f}` for metric in
            mentions, muc, b3, ceafe, lea, and `coref_conll_f`.
        """
        scores: Dict[str, float] = {}
        for name in METRICS:
            p, r, f = prf(self.counts(name))
            scores[f"coref_{name}_p"] = p
            scores[f"coref_{name}_r"] = r
            scores[f"coref_{name}_f"] = f
        scores["coref_conll_f"] = sum(scores[f"coref_{name}_f"] for name in CONLL_METRICS) / len(CONLL_METRICS)
        return scores

    def table(self) -> List[str]:
        """A readable table: one row per metric with recall, precision and F1 in percent.

        RETURNS (List[str]): the rows, header first.
        """
        labels = {"mentions": "mentions", "muc": "MUC", "b3": "B3", "ceafe": "CEAFe", "lea": "LEA"}
        rows = [f"{'metric':<10}{'recall':>10}{'precision':>11}{'F1':>9}"]
        for name in METRICS:
            p, r, f = prf(self.counts(name))
            rows.append(f"{labels[name]:<10}{100 * r:>10.2f}{100 * p:>11.2f}{100 * f:>9.2f}")
        conll = self.scores()["coref_conll_f"]
        rows.append(f"{'CoNLL':<10}{'':>10}{'':>11}{100 * conll:>9.2f}")
        return rows
