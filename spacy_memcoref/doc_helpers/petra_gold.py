"""Sparse gold for PeTra (paper §2.5, §3.3), aligned to the predicted tokens.

GAP labels three spans a text (A, B and the pronoun) and two links; nothing
else in the text is labelled, so the loss must stay on those spans. This
module turns an Example into (spans, pairs):

- spans: inclusive token ranges on the PREDICTED Doc, found from the
  reference spans' character offsets with alignment_mode="expand" (a span
  that does not start or end on a predicted token boundary grows to the
  covering tokens, as the GAP converter does; it is never dropped unless it
  covers no token at all);
- pairs: (span index, span index, label) with label 1.0 (coreferent) or 0.0.

GAP (doc.spans["gap"] with labels A, B, PRONOUN and doc.user_data["gap"] with
A-coref and B-coref): spans [A, B, PRONOUN], pairs (A, P, A-coref),
(B, P, B-coref) and (A, B, x) with x = 1.0 when both A and B corefer with the
pronoun (then they are one entity, as in GAP's "Mary Smith ... Mary" rows) and
0.0 otherwise (GAP's candidates are two different people).

Docs without GAP annotation but with full clusters (doc.spans[f"{prefix}_N"],
e.g. converted CoNLL-2012) give every aligned mention as a span and every
mention pair as a pair: 1.0 within a cluster, 0.0 across clusters.

No torch here: the model builder wraps the result in pytorch_petra.SparseGold.
"""

from typing import List, Optional, Tuple

from spacy.training import Example

from ..util import TokenSpan
from .clusters import cluster_span_groups
from .gap_annotation import GAP_USER_DATA_KEY, LABEL_A, LABEL_B, LABEL_PRONOUN, gap_reference_spans, has_gap_annotation
from .gold import align_span

SpanPair = Tuple[int, int, float]
SparseTarget = Tuple[List[TokenSpan], List[SpanPair]]


def gap_sparse_target(example: Example) -> Tuple[Optional[SparseTarget], int]:
    """Sparse GAP gold of an Example on its predicted tokens.

    example (Example): reference with GAP annotation.
    RETURNS (Tuple[Optional[SparseTarget], int]): (spans, pairs) — None when
        the reference has no (well-formed) GAP annotation — and the number of
        GAP spans that cover no predicted token (left out with their pairs).
    """
    reference, predicted = example.reference, example.predicted
    if not has_gap_annotation(reference):
        return None, 0
    spans_abp = gap_reference_spans(reference)
    if spans_abp is None:
        return None, 0
    labels = reference.user_data[GAP_USER_DATA_KEY]
    a_coref, b_coref = bool(labels["A-coref"]), bool(labels["B-coref"])
    index = {}
    spans: List[TokenSpan] = []
    n_missed = 0
    for name, span in zip((LABEL_A, LABEL_B, LABEL_PRONOUN), spans_abp):
        aligned = align_span(predicted, span)
        if aligned is None:
            n_missed += 1
            continue
        index[name] = len(spans)
        spans.append(aligned)
    pairs: List[SpanPair] = []
    wanted = (
        (LABEL_A, LABEL_PRONOUN, 1.0 if a_coref else 0.0),
        (LABEL_B, LABEL_PRONOUN, 1.0 if b_coref else 0.0),
        (LABEL_A, LABEL_B, 1.0 if (a_coref and b_coref) else 0.0),
    )
    for first, second, label in wanted:
        if first in index and second in index:
            pairs.append((index[first], index[second], label))
    return (spans, pairs), n_missed


def cluster_sparse_target(example: Example, prefix: str) -> Tuple[Optional[SparseTarget], int]:
    """Sparse gold from full clusters: every aligned mention a span, every
    mention pair a pair (1.0 in a cluster, 0.0 across).

    example (Example): reference with doc.spans[f"{prefix}_N"].
    prefix (str): the cluster prefix.
    RETURNS (Tuple[Optional[SparseTarget], int]): (spans, pairs) — None when
        the reference has no cluster — and the number of mentions that cover
        no predicted token.
    """
    reference, predicted = example.reference, example.predicted
    groups = cluster_span_groups(reference, prefix)
    if not groups:
        return None, 0
    spans: List[TokenSpan] = []
    cluster_of: List[int] = []
    n_missed = 0
    for c, group in enumerate(groups):
        for span in group:
            aligned = align_span(predicted, span)
            if aligned is None:
                n_missed += 1
                continue
            spans.append(aligned)
            cluster_of.append(c)
    pairs: List[SpanPair] = [
        (i, j, 1.0 if cluster_of[i] == cluster_of[j] else 0.0)
        for i in range(len(spans))
        for j in range(i + 1, len(spans))
    ]
    return (spans, pairs), n_missed


def petra_sparse_target(example: Example, prefix: str) -> Tuple[Optional[SparseTarget], int]:
    """GAP gold when the reference has GAP annotation, else gold from its
    full clusters, else None (the document adds nothing to the loss).

    example (Example): the training example.
    prefix (str): the cluster prefix (for the full-cluster case).
    RETURNS (Tuple[Optional[SparseTarget], int]): (spans, pairs) or None, and
        the number of gold spans that could not be aligned.
    """
    target, missed = gap_sparse_target(example)
    if target is not None or has_gap_annotation(example.reference):
        return target, missed
    return cluster_sparse_target(example, prefix)
