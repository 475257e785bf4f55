"""Gold targets for training, aligned to the predicted tokens by character
offsets (predicted and reference Docs may be tokenized differently)."""

import warnings
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

from spacy.tokens import Doc, Span
from spacy.training import Example

from ..util import Clusters, TokenSpan
from .clusters import token_clusters


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


def _same_tokens(predicted: Doc, reference: Doc) -> bool:
    return (
        predicted.text == reference.text
        and len(predicted) == len(reference)
        and all(p.idx == r.idx for p, r in zip(predicted, reference))
    )


def aligned_gold_clusters(example: Example, prefix: str) -> Tuple[Clusters, int]:
    """The reference Doc's clusters on the predicted Doc's tokens.

    A gold mention whose characters do not start and end on predicted token
    boundaries cannot be aligned: it is left out and counted, never a crash.

    RETURNS (Tuple[Clusters, int]): the aligned clusters and the number of
        gold mentions that could not be aligned.
    """
    predicted, reference = example.predicted, example.reference
    same_tokens = _same_tokens(predicted, reference)
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


# GUM's own entity layer on a reference Doc (corpora.gum_entities): every
# mention, singletons included, labelled with its entity type, and the same
# spans in a parallel group labelled with their information status.
GUM_MENTIONS_KEY = "gum_mentions"
GUM_INFSTAT_KEY = "gum_infstat"


@dataclass
class MentionGold:
    """A document's gold for s2e's all-mentions scorer, beside its clusters.

    clusters (Clusters): the coreference clusters (aligned_gold_clusters).
    mentions (List[TokenSpan]): every mention GUM marks, singletons
        included, on the predicted tokens.
    """

    clusters: Clusters
    mentions: List[TokenSpan] = field(default_factory=list)


class NoGumLayerWarning(UserWarning):
    """A training Doc has no GUM entity layer, so all_mentions_loss_weight
    learns from its cluster mentions alone. The message names no document,
    so Python's default filter shows it once, not once a Doc."""


def gold_with_gum_mentions(example: Example, prefix: str) -> Tuple[MentionGold, int]:
    """The clusters (as aligned_gold_clusters) and GUM's mentions, on the
    predicted tokens. A Doc without GUM's layer gets a MentionGold with no
    GUM mentions, and a NoGumLayerWarning: all_mentions_loss_weight's
    "every mention" is then the cluster mentions (as in OntoNotes, which
    marks no singletons).

    RETURNS (Tuple[MentionGold, int]): the gold and the number of gold
        mentions (cluster or GUM) that could not be aligned.
    """
    clusters, n_missed = aligned_gold_clusters(example, prefix)
    predicted, reference = example.predicted, example.reference
    if GUM_MENTIONS_KEY not in reference.spans:
        warnings.warn(
            f"training Docs without doc.spans[{GUM_MENTIONS_KEY!r}]: all_mentions_loss_weight learns from their "
            "cluster mentions only (convert with --gum-entities to learn from every mention GUM marks)",
            NoGumLayerWarning,
        )
        return MentionGold(clusters), n_missed
    same_tokens = _same_tokens(predicted, reference)
    gold = MentionGold(clusters)
    for span in reference.spans[GUM_MENTIONS_KEY]:
        if same_tokens:
            aligned: Optional[TokenSpan] = (span.start, span.end - 1)
        else:
            found = predicted.char_span(span.start_char, span.end_char)
            aligned = (found.start, found.end - 1) if found is not None and len(found) else None
        if aligned is None:
            n_missed += 1
            continue
        gold.mentions.append(aligned)
    return gold, n_missed


@dataclass
class PronounGold:
    """GAP's sparse gold for s2e: a pronoun, the candidate name it refers to
    and the one it does not, on the predicted tokens. Nothing else in a GAP
    text is labelled, so s2e learns from these three spans alone (the
    antecedent part of the pair score, pytorch_s2e.S2EHead.pronoun_loss):
    the text's other mentions are neither mentions nor non-mentions to it.

    pronoun, right, wrong (TokenSpan): inclusive token ranges.
    """

    pronoun: TokenSpan
    right: TokenSpan
    wrong: TokenSpan


def gap_pronoun_gold(example: Example) -> Tuple[Optional[PronounGold], int]:
    """The PronounGold of a GAP Example (doc_helpers.gap_annotation), or None
    where GAP gives no choice to learn: the pronoun refers to neither
    candidate, or to both (A and B are then one person), or the three spans
    overlap on the predicted tokens.

    RETURNS (Tuple[Optional[PronounGold], int]): the gold, and the number of
        GAP spans that cover no predicted token (the row is then left out).
    """
    from .gap_annotation import GAP_USER_DATA_KEY, gap_reference_spans

    spans = gap_reference_spans(example.reference)
    if spans is None:
        return None, 0
    labels = example.reference.user_data[GAP_USER_DATA_KEY]
    a_coref, b_coref = bool(labels["A-coref"]), bool(labels["B-coref"])
    aligned = [align_span(example.predicted, span) for span in spans]
    n_missed = sum(1 for span in aligned if span is None)
    if n_missed or a_coref == b_coref:
        return None, n_missed
    a, b, pronoun = aligned
    assert a is not None and b is not None and pronoun is not None
    right, wrong = (a, b) if a_coref else (b, a)
    if _overlap(a, b) or _overlap(a, pronoun) or _overlap(b, pronoun):
        return None, 0
    return PronounGold(pronoun=pronoun, right=right, wrong=wrong), 0


def _overlap(x: TokenSpan, y: TokenSpan) -> bool:
    return x[0] <= y[1] and y[0] <= x[1]
