"""The GAP annotation of a Doc (written by the GAP converter, read by the
models, scoring and pictures):

- ``doc.spans["gap"]``: the A, B and pronoun spans, labels "A", "B", "PRONOUN";
- ``doc.user_data["gap"]``: ``{"id", "A-coref", "B-coref", "url"}``;
- ``doc.user_data["gap_probs"]``: ``{"A": p_A, "B": p_B}`` link probabilities
  written by a probabilistic model (PeTra), plus ``"threshold"``, the
  component's decision threshold.
"""

from typing import TYPE_CHECKING, Dict, Optional, Tuple

if TYPE_CHECKING:  # pragma: no cover
    from spacy.tokens import Doc, Span

GAP_SPANS_KEY = "gap"
GAP_USER_DATA_KEY = "gap"
GAP_PROBS_KEY = "gap_probs"
LABEL_A = "A"
LABEL_B = "B"
LABEL_PRONOUN = "PRONOUN"
GAP_LABELS: Tuple[str, str, str] = (LABEL_A, LABEL_B, LABEL_PRONOUN)


def has_gap_annotation(doc: "Doc") -> bool:
    """RETURNS (bool): whether the Doc carries GAP spans and labels."""
    data = doc.user_data.get(GAP_USER_DATA_KEY)
    return GAP_SPANS_KEY in doc.spans and isinstance(data, dict) and "A-coref" in data and "B-coref" in data


def gap_reference_spans(doc: "Doc") -> Optional[Tuple["Span", "Span", "Span"]]:
    """The (A, B, PRONOUN) spans of doc.spans["gap"], or None when the group
    does not hold exactly one span of each label."""
    found = {}
    for span in doc.spans.get(GAP_SPANS_KEY, []):
        if span.label_ in found:
            return None
        found[span.label_] = span
    if not all(label in found for label in GAP_LABELS):
        return None
    return found[LABEL_A], found[LABEL_B], found[LABEL_PRONOUN]


def gap_spans(doc: "Doc") -> Dict[str, "Span"]:
    """The A, B and PRONOUN spans of a GAP Doc, or an error saying what is wrong.

    doc (Doc): a Doc made by the GAP reader (or with the same doc.spans["gap"]).
    RETURNS (Dict[str, Span]): label -> span for "A", "B", "PRONOUN".
    RAISES ValueError: no such group, a label twice, or a label missing.
    """
    if GAP_SPANS_KEY not in doc.spans:
        raise ValueError(f'no doc.spans["{GAP_SPANS_KEY}"] (not a GAP Doc; convert GAP with `convert gap`)')
    found: Dict[str, "Span"] = {}
    for span in doc.spans[GAP_SPANS_KEY]:
        if span.label_ in found:
            raise ValueError(f'doc.spans["{GAP_SPANS_KEY}"] has more than one span labelled {span.label_!r}')
        found[span.label_] = span
    missing = [label for label in GAP_LABELS if label not in found]
    if missing:
        raise ValueError(f'doc.spans["{GAP_SPANS_KEY}"] has no span labelled {", ".join(missing)}')
    return found


def gap_id_from_doc(doc: "Doc") -> str:
    """RETURNS (str): doc.user_data["gap"]["id"] (ValueError when absent)."""
    data = doc.user_data.get(GAP_USER_DATA_KEY)
    if not isinstance(data, dict) or not data.get("id"):
        raise ValueError(
            f'no doc.user_data["{GAP_USER_DATA_KEY}"]["id"] (not a GAP Doc; convert GAP with `convert gap`)'
        )
    return str(data["id"])
