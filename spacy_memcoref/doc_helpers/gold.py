"""Gold targets for training, aligned to the predicted tokens by character
offsets (predicted and reference Docs may be tokenized differently)."""
from typing import List, Optional, Tuple

from spacy.tokens import Doc, Span
from spacy.training import Example

from .clusters import token_clusters

TokenSpan = Tuple[int, int]  # inclusive token indices
Clusters = List[List[TokenSpan]]


def align_span(predicted: Doc, span: Span) -> Optional[TokenSpan]:
    """Map a reference span onto the predicted tokens by character offsets,
    expanding to the covering tokens.

    predicted (Doc): the Doc the model reads.
    span (Span): a span of the reference Doc (same text).
    RETURNS (Optional[TokenSpan]): inclusive (start, end), or None when the
        characters cover no predicted token (e.g. only whitespace).
    """
    if len(predicted) == 0:
        return None
    aligned = predicted.char_span(span.start_char, span.end_char, alignment_mode="expand")
    if aligned is None or len(aligned) == 0:
        return None
    return aligned.start, aligned.end - 1


def aligned_gold_clusters(example: Example, prefix: str) -> Tuple[Clusters, int]:
    """The reference Doc's clusters on the predicted Doc's tokens.

    A gold mention whose characters do not start and end on predicted token
    boundaries cannot be aligned: it is left out and counted, never a crash.

    RETURNS (Tuple[Clusters, int]): the aligned clusters and the number of
        gold mentions that could not be aligned.
    """
    predicted, reference = example.predicted, example.reference
    same_tokens = predicted.text == reference.text and len(predicted) == len(reference) and all(
        p.idx == r.idx for p, r in zip(predicted, reference)
    )
    gold = token_clusters(reference, prefix)
    if same_tokens:
        return gold, 0
    clusters: Clusters = []
    n_missed = 0
    for cluster in gold:
        aligned = []
        for start, end in cluster:
            span = predicted.char_span(reference[start].idx, reference[end].idx + len(reference[end]))
            if span is None:
                n_missed += 1
            else:
                aligned.append((span.start, span.end - 1))
        if aligned:
            clusters.append(aligned)
    return clusters, n_missed


def copy_speakers(example: Example, key: str = "speakers") -> None:
    """Give the predicted Doc the reference's speaker turns when it has none.

    Speakers are an input (known at test time in OntoNotes), not gold, but
    `spacy train` makes the predicted Doc from the raw text alone.
    """
    predicted, reference = example.predicted, example.reference
    if key in predicted.spans or key not in reference.spans or len(predicted) == 0:
        return
    turns = []
    for span in reference.spans[key]:
        aligned = predicted.char_span(span.start_char, span.end_char, label=span.label_, alignment_mode="expand")
        if aligned is not None:
            turns.append(aligned)
    predicted.spans[key] = turns
