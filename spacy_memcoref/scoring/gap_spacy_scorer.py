"""spaCy scorer `spacy_memcoref.gap_scorer.v1`: GAP F1 (overall, masculine,
feminine) and bias, like the official GAP scorer, for Examples whose
reference Docs carry GAP annotation (doc.spans["gap"], doc.user_data["gap"]);
plus the coreference metrics of `spacy_memcoref.coref_scorer.v1` over the
Examples without GAP annotation, when there are any.

A decision (is A / B linked to the pronoun?) is read from the predicted Doc
by `gap_decisions.gap_decisions`, the rule `export gap` uses too: stored link
probabilities (PeTra), else the memory log (PeTra), else the clusters (s2e).

The threshold is the component's cfg["gap_threshold"] (spaCy passes a
component's cfg to its scorer), else the scorer's `threshold` (0.5): a fixed
0.5 in training, the tuned value once `tune-gap-threshold` stored one. The
component's cfg["gap_calibration"] calibrates probabilities read from the
memory log the same way the model's decoder calibrates the ones it stores,
so checkpoint selection in `spacy train` scores calibrated probabilities.
Choosing both on validation data is tuning.gap's.

Only spaCy is imported at module level (torch only to read a memory log).
"""

import math
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from spacy.training import Example
from spacy.util import registry

from ..decoders.petra import DEFAULT_GAP_THRESHOLD
from ..doc_helpers.clusters import CLUSTER_PREFIX
from ..doc_helpers.gap_annotation import has_gap_annotation
from .gap_decisions import gap_decisions, gap_gold

GAP_KEYS = (
    "gap_p",
    "gap_r",
    "gap_f",
    "gap_p_masc",
    "gap_r_masc",
    "gap_f_masc",
    "gap_p_fem",
    "gap_r_fem",
    "gap_f_fem",
    "gap_bias",
)


def score_gap_examples(
    examples: Iterable[Example],
    *,
    threshold: float = DEFAULT_GAP_THRESHOLD,
    span_cluster_prefix: str = CLUSTER_PREFIX,
    calibration: Optional[Sequence[float]] = None,
) -> Dict[str, Optional[float]]:
    """GAP scores of the GAP Examples, coreference scores of the others.

    examples (Iterable[Example]): the Examples.
    threshold (float): decision threshold for link probabilities.
    calibration (Optional[Sequence[float]]): [scale, shift] for link
        probabilities read from a memory log (gap_decisions, case 2).
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
        system[key] = gap_decisions(
            example.predicted,
            example.reference,
            prefix=span_cluster_prefix,
            threshold=threshold,
            calibration=calibration,
        )
    scores: Dict[str, Optional[float]] = {key: None for key in GAP_KEYS}
    if gold:
        for key, value in gap_scores(gold, system).items():
            scores[key] = None if isinstance(value, float) and math.isnan(value) else value
    if others:
        scores.update(score_coref_examples(others, span_cluster_prefix=span_cluster_prefix))
    return scores


@registry.scorers("spacy_memcoref.gap_scorer.v1")
def make_gap_scorer(
    span_cluster_prefix: str = CLUSTER_PREFIX, threshold: float = DEFAULT_GAP_THRESHOLD
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
        gap_calibration: Optional[Sequence[float]] = None,
        **kwargs: Any,
    ) -> Dict[str, Optional[float]]:
        prefix = default_prefix if span_cluster_prefix is None else span_cluster_prefix
        t = default_threshold if gap_threshold is None else float(gap_threshold)
        return score_gap_examples(examples, threshold=t, span_cluster_prefix=prefix, calibration=gap_calibration)

    return score_gap
