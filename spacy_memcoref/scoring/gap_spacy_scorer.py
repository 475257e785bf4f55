"""spaCy scorer `spacy_memcoref.gap_scorer.v1`: GAP F1 (overall, masculine,
feminine) and bias, like the official GAP scorer, for Examples whose
reference Docs carry GAP annotation (doc.spans["gap"], doc.user_data["gap"]);
plus the coreference metrics of `spacy_memcoref.coref_scorer.v1` over the
Examples without GAP annotation, when there are any.

A decision (is A / B linked to the pronoun?) is read from the predicted Doc:

1. doc.user_data["gap_probs"] (written by PeTra when the predicted Doc has
   GAP spans): p >= threshold;
2. else doc._.memory_log (PeTra, when the predicted Doc was made from the
   raw text, as in `spacy train`): the paper's link probability (Eq. 9, max
   over token pairs) of the reference spans aligned to the predicted tokens
   (by characters, expanded), p >= threshold;
3. else the predicted clusters (s2e): a candidate is linked when it shares a
   token with a mention of a cluster that shares a token with the pronoun.

The threshold is the component's cfg["gap_threshold"] (spaCy passes a
component's cfg to its scorer), else the scorer's `threshold` (0.5): a fixed
0.5 in training, the tuned value once `tune-gap-threshold` stored one.

Only spaCy is imported at module level; torch only for case 2.
"""
import math
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from spacy.tokens import Doc
from spacy.training import Example
from spacy.util import registry

from ..doc_helpers.clusters import CLUSTER_PREFIX, char_clusters
from ..doc_helpers.gap_annotation import (
    GAP_PROBS_KEY,
    GAP_USER_DATA_KEY,
    LABEL_PRONOUN,
    gap_reference_spans,
    has_gap_annotation,
)
from ..doc_helpers.gold import align_span
from ..doc_helpers.memory_log import MEMORY_LOG_ATTR

DEFAULT_THRESHOLD = 0.5
GAP_KEYS = (
    "gap_p", "gap_r", "gap_f", "gap_p_masc", "gap_r_masc", "gap_f_masc",
    "gap_p_fem", "gap_r_fem", "gap_f_fem", "gap_bias",
)


def _chars_overlap(x: Tuple[int, int], y: Tuple[int, int]) -> bool:
    return x[0] < y[1] and y[0] < x[1]


def _cluster_decisions(predicted: Doc, spans_abp, prefix: str) -> Tuple[bool, bool]:
    """Cluster-overlap decisions with the reference spans aligned (expanded)
    to the predicted tokens, compared by character ranges."""
    ranges = []
    for span in spans_abp:
        aligned = align_span(predicted, span)
        if aligned is None:
            ranges.append(None)
        else:
            ranges.append((predicted[aligned[0]].idx, predicted[aligned[1]].idx + len(predicted[aligned[1]])))
    cand_a, cand_b, pronoun = ranges
    a_linked = b_linked = False
    if pronoun is None:
        return False, False
    for cluster in char_clusters(predicted, prefix):
        if any(_chars_overlap(m, pronoun) for m in cluster):
            a_linked = a_linked or (cand_a is not None and any(_chars_overlap(m, cand_a) for m in cluster))
            b_linked = b_linked or (cand_b is not None and any(_chars_overlap(m, cand_b) for m in cluster))
    return a_linked, b_linked


def gap_link_probabilities(predicted: Doc, reference: Doc) -> Optional[Tuple[float, float]]:
    """(p_A, p_B) of a GAP Example from the predicted Doc: its
    user_data["gap_probs"], else its memory log with the reference spans
    aligned to its tokens; None when it has neither.

    predicted (Doc): the annotated Doc.
    reference (Doc): the gold Doc with doc.spans["gap"].
    RETURNS (Optional[Tuple[float, float]]): the probabilities.
    """
    probs = predicted.user_data.get(GAP_PROBS_KEY)
    if isinstance(probs, dict) and "A" in probs and "B" in probs:
        return float(probs["A"]), float(probs["B"])
    log = predicted._.get(MEMORY_LOG_ATTR) if predicted.has_extension(MEMORY_LOG_ATTR) else None
    if log is None:
        return None
    spans_abp = gap_reference_spans(reference)
    if spans_abp is None:
        return None
    cand_a, cand_b, pronoun = (align_span(predicted, span) for span in spans_abp)
    if pronoun is None:
        return 0.0, 0.0
    from ..models.pytorch_petra import span_link_probability

    p_a = float(span_link_probability(log, cand_a, pronoun)) if cand_a is not None else 0.0
    p_b = float(span_link_probability(log, cand_b, pronoun)) if cand_b is not None else 0.0
    return p_a, p_b


def gap_decisions(example: Example, threshold: float, prefix: str = CLUSTER_PREFIX) -> Tuple[bool, bool]:
    """(A linked, B linked) of one GAP Example (see the module docstring).

    example (Example): reference with GAP annotation, predicted annotated.
    threshold (float): decision threshold for link probabilities.
    prefix (str): the cluster prefix (for the cluster fallback).
    RETURNS (Tuple[bool, bool]): the decisions.
    """
    probs = gap_link_probabilities(example.predicted, example.reference)
    if probs is not None:
        return probs[0] >= threshold, probs[1] >= threshold
    spans_abp = gap_reference_spans(example.reference)
    if spans_abp is None:
        return False, False
    return _cluster_decisions(example.predicted, spans_abp, prefix)


def gap_gold(reference: Doc) -> Tuple[str, str, bool, bool]:
    """(id, gender, A-coref, B-coref) of a GAP reference Doc.

    RETURNS (Tuple[str, str, bool, bool]): gender is "masculine"/"feminine".
    """
    from .gap_metrics import pronoun_gender

    data = reference.user_data[GAP_USER_DATA_KEY]
    spans_abp = gap_reference_spans(reference)
    if spans_abp is None:
        raise ValueError(f"GAP example {data.get('id')!r}: doc.spans['gap'] needs one A, one B and one PRONOUN span")
    pronoun = spans_abp[2]
    gender = pronoun_gender(pronoun.text)
    if gender is None:
        raise ValueError(
            f"GAP example {data.get('id')!r}: pronoun {pronoun.text!r} ({LABEL_PRONOUN}) has no gender in "
            "the official GAP scorer's list"
        )
    return str(data.get("id")), gender, bool(data["A-coref"]), bool(data["B-coref"])


def score_gap_examples(
    examples: Iterable[Example], *, threshold: float = DEFAULT_THRESHOLD, span_cluster_prefix: str = CLUSTER_PREFIX
) -> Dict[str, Optional[float]]:
    """GAP scores of the GAP Examples, coreference scores of the others.

    examples (Iterable[Example]): the Examples.
    threshold (float): decision threshold for link probabilities.
    span_cluster_prefix (str): the cluster prefix.
    RETURNS (Dict[str, Optional[float]]): gap_p, gap_r, gap_f and their
        _masc/_fem variants, gap_bias (None where undefined, and all None
        when no Example has GAP annotation); plus coref_* when some Examples
        have no GAP annotation.
    """
    from .gap_metrics import gap_scores
    from .spacy_scorer import score_coref_examples

    gold: Dict[str, Tuple[str, bool, bool]] = {}
    system: Dict[str, Tuple[bool, bool]] = {}
    others: List[Example] = []
    for i, example in enumerate(examples):
        if not has_gap_annotation(example.reference):
            others.append(example)
            continue
        ex_id, gender, gold_a, gold_b = gap_gold(example.reference)
        key = ex_id if ex_id not in gold else f"{ex_id}#{i}"
        gold[key] = (gender, gold_a, gold_b)
        system[key] = gap_decisions(example, threshold, span_cluster_prefix)
    scores: Dict[str, Optional[float]] = {key: None for key in GAP_KEYS}
    if gold:
        for key, value in gap_scores(gold, system).items():
            scores[key] = None if isinstance(value, float) and math.isnan(value) else value
    if others:
        scores.update(score_coref_examples(others, span_cluster_prefix=span_cluster_prefix))
    return scores


@registry.scorers("spacy_memcoref.gap_scorer.v1")
def make_gap_scorer(
    span_cluster_prefix: str = CLUSTER_PREFIX, threshold: float = DEFAULT_THRESHOLD
) -> Callable[..., Dict[str, Optional[float]]]:
    """Make the GAP scorer.

    span_cluster_prefix (str): default cluster prefix.
    threshold (float): default decision threshold; a `gap_threshold` keyword
        at scoring time (the component's cfg) overrides it.
    RETURNS (Callable): score_gap(examples, **kwargs) -> scores.
    """
    if not (0.0 <= float(threshold) <= 1.0):
        raise ValueError(f"spacy_memcoref.gap_scorer.v1: threshold must be in [0, 1], got {threshold!r}")
    default_prefix, default_threshold = span_cluster_prefix, float(threshold)

    def score_gap(
        examples: Iterable[Example],
        *,
        span_cluster_prefix: Optional[str] = None,
        gap_threshold: Optional[float] = None,
        **kwargs: Any,
    ) -> Dict[str, Optional[float]]:
        prefix = default_prefix if span_cluster_prefix is None else span_cluster_prefix
        t = default_threshold if gap_threshold is None else float(gap_threshold)
        return score_gap_examples(examples, threshold=t, span_cluster_prefix=prefix)

    return score_gap


# ----- choosing the decision threshold on validation data ---------------------------

THRESHOLD_GRID: Tuple[float, ...] = tuple(round(i / 100, 2) for i in range(1, 101))


def tune_gap_threshold(
    gold: Dict[str, Tuple[str, bool, bool]],
    probs: Dict[str, Tuple[float, float]],
    grid: Iterable[float] = THRESHOLD_GRID,
) -> Tuple[float, List[Tuple[float, Dict[str, float]]]]:
    """The GAP decision threshold with the best overall F1 (paper §3.3: chosen
    on validation, used on test).

    gold (Dict[str, Tuple[str, bool, bool]]): ID -> (gender, A-coref, B-coref).
    probs (Dict[str, Tuple[float, float]]): ID -> (p_A, p_B).
    grid (Iterable[float]): thresholds to try (default 0.01, 0.02, ..., 1.00).
    RETURNS (Tuple[float, List[Tuple[float, Dict[str, float]]]]): the best
        threshold — among thresholds tied on the best F1 the middle one (the
        lower of the two middles), so the choice sits inside the plateau —
        and (threshold, gap_scores) for every threshold tried.
    """
    from .gap_metrics import gap_scores

    table = []
    for t in grid:
        system = {key: (p_a >= t, p_b >= t) for key, (p_a, p_b) in probs.items()}
        table.append((float(t), gap_scores(gold, system)))
    if not table:
        raise ValueError("no thresholds to try")
    best_f = max(scores["gap_f"] for _, scores in table)
    tied = [t for t, scores in table if scores["gap_f"] == best_f]
    return tied[(len(tied) - 1) // 2], table
