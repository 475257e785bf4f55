"""GAP decisions: is A / B linked to the pronoun? One rule, shared by the
spaCy scorer (`spacy_memcoref.gap_scorer.v1`, `tune-gap-threshold`) and the
system-file export (`export gap`).

The candidate and pronoun spans are the GAP spans of the reference Doc
(``doc.spans["gap"]``, exactly one A, B and PRONOUN, else a ValueError);
the decisions are read from the predicted Doc, which may be tokenized
differently (for `export gap` it is the same Doc):

1. ``doc.user_data["gap_probs"]`` (written by PeTra when the Doc it read had
   GAP spans): p >= threshold; a ``gap_probs`` without "A" and "B" is an
   error;
2. else ``doc._.memory_log`` (PeTra, when the predicted Doc was made from the
   raw text, as in `spacy train`): the paper's link probability (Eq. 9, max
   over token pairs) of the reference spans aligned to the predicted tokens
   (by characters, expanded to the covering tokens; 0 for a pronoun that
   covers no token), calibrated with the given [scale, shift]
   (`decoders.calibration`; the decoder stores its own in
   ``gap_probs``, so case 1 is calibrated already), p >= threshold;
3. else the predicted clusters (s2e): a candidate is linked when it shares a
   character with a mention of a cluster (`doc_helpers.clusters`) that
   shares a character with the pronoun, the spans aligned as in 2 (on one
   Doc: shares a token).

The threshold is the one given (the scorer passes the component's
cfg["gap_threshold"], else its own), else the one stored in
``gap_probs["threshold"]``, else 0.5.

Only spaCy is imported at module level; torch only for case 2.
"""

from typing import Dict, List, Optional, Sequence, Tuple

from spacy.tokens import Doc, Span

from ..decoders.calibration import calibrate
from ..decoders.petra import DEFAULT_GAP_THRESHOLD, gap_linked
from ..doc_helpers.clusters import CLUSTER_PREFIX, char_clusters
from ..doc_helpers.gap_annotation import (
    GAP_LABELS,
    GAP_PROBS_KEY,
    GAP_USER_DATA_KEY,
    LABEL_PRONOUN,
    gap_reference_spans,
    gap_spans,
)
from ..doc_helpers.gold import align_span
from ..doc_helpers.memory_log import get_memory_log

CharRange = Tuple[int, int]


def _stored_threshold(doc: Doc, threshold: Optional[float]) -> float:
    if threshold is not None:
        return float(threshold)
    probs = doc.user_data.get(GAP_PROBS_KEY)
    if isinstance(probs, dict) and "threshold" in probs:
        return float(probs["threshold"])
    return DEFAULT_GAP_THRESHOLD


def stored_gap_probabilities(doc: Doc) -> Optional[Tuple[float, float]]:
    """(p_A, p_B) from doc.user_data["gap_probs"], None when there are none.

    RAISES ValueError: a gap_probs dict without "A" and "B".
    """
    probs = doc.user_data.get(GAP_PROBS_KEY)
    if probs is None or not isinstance(probs, dict):
        return None
    if "A" not in probs or "B" not in probs:
        raise ValueError(f'no doc.user_data["{GAP_PROBS_KEY}"] with "A" and "B" link probabilities')
    return float(probs["A"]), float(probs["B"])


def _aligned_char_ranges(predicted: Doc, spans: Dict[str, Span]) -> List[Optional[CharRange]]:
    """The A, B and PRONOUN spans aligned to the predicted tokens (expanded),
    as character ranges; None for a span that covers no predicted token."""
    ranges: List[Optional[CharRange]] = []
    for label in GAP_LABELS:
        aligned = align_span(predicted, spans[label])
        if aligned is None:
            ranges.append(None)
        else:
            last = predicted[aligned[1]]
            ranges.append((predicted[aligned[0]].idx, last.idx + len(last)))
    return ranges


def _log_probabilities(predicted: Doc, spans: Dict[str, Span]) -> Optional[Tuple[float, float]]:
    log = get_memory_log(predicted)
    if log is None:
        return None
    cand_a, cand_b, pronoun = (align_span(predicted, spans[label]) for label in GAP_LABELS)
    if pronoun is None:
        return 0.0, 0.0
    from ..models.petra.pytorch_petra import span_link_probability

    p_a = float(span_link_probability(log, cand_a, pronoun)) if cand_a is not None else 0.0
    p_b = float(span_link_probability(log, cand_b, pronoun)) if cand_b is not None else 0.0
    return p_a, p_b


def _overlaps(x: CharRange, y: CharRange) -> bool:
    return x[0] < y[1] and y[0] < x[1]


def _cluster_decisions(predicted: Doc, spans: Dict[str, Span], prefix: str) -> Tuple[bool, bool]:
    cand_a, cand_b, pronoun = _aligned_char_ranges(predicted, spans)
    if pronoun is None:
        return False, False
    a_linked = b_linked = False
    for cluster in char_clusters(predicted, prefix):
        if any(_overlaps(m, pronoun) for m in cluster):
            a_linked = a_linked or (cand_a is not None and any(_overlaps(m, cand_a) for m in cluster))
            b_linked = b_linked or (cand_b is not None and any(_overlaps(m, cand_b) for m in cluster))
    return a_linked, b_linked


def _probabilities(
    predicted: Doc, spans: Dict[str, Span], calibration: Optional[Sequence[float]]
) -> Optional[Tuple[float, float]]:
    probs = stored_gap_probabilities(predicted)
    if probs is None:
        probs = _log_probabilities(predicted, spans)
        if probs is not None and calibration is not None:
            probs = (calibrate(probs[0], calibration), calibrate(probs[1], calibration))
    return probs


def gap_decisions(
    predicted: Doc,
    reference: Optional[Doc] = None,
    *,
    prefix: str = CLUSTER_PREFIX,
    threshold: Optional[float] = None,
    calibration: Optional[Sequence[float]] = None,
) -> Tuple[bool, bool]:
    """(A linked, B linked): the rule of the module docstring.

    predicted (Doc): the annotated Doc.
    reference (Optional[Doc]): the gold Doc with doc.spans["gap"]; default
        the predicted Doc itself.
    prefix (str): the cluster prefix (case 3).
    threshold (Optional[float]): decision threshold for link probabilities;
        None: the stored one, else 0.5.
    calibration (Optional[Sequence[float]]): [scale, shift] for probabilities
        read from the memory log (case 2); None: raw.
    RETURNS (Tuple[bool, bool]): the decisions.
    RAISES ValueError: the reference has no well-formed GAP spans, or the
        predicted Doc's gap_probs has no "A" and "B".
    """
    spans = gap_spans(predicted if reference is None else reference)
    probs = _probabilities(predicted, spans, calibration)
    if probs is not None:
        t = _stored_threshold(predicted, threshold)
        return gap_linked(probs[0], t), gap_linked(probs[1], t)
    return _cluster_decisions(predicted, spans, prefix)


def gap_decisions_from_doc(
    doc: Doc, prefix: str = CLUSTER_PREFIX, threshold: Optional[float] = None
) -> Tuple[bool, bool]:
    """gap_decisions of a GAP Doc that holds both its GAP spans and the
    predictions (what `export gap` reads).

    RETURNS (Tuple[bool, bool]): (A linked, B linked).
    """
    return gap_decisions(doc, prefix=prefix, threshold=threshold)


# ----- gold labels of GAP Docs ---------------------------------------------------------


def gap_gold(reference: Doc) -> Tuple[str, str, bool, bool]:
    """(id, gender, A-coref, B-coref) of a GAP reference Doc, for the scorer.

    RETURNS (Tuple[str, str, bool, bool]): gender is "masculine"/"feminine".
    RAISES ValueError: malformed GAP spans, or a pronoun without a gender.
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
