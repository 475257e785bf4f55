"""Choosing s2e's link threshold on dev data.

A mention links to its best antecedent when the pair scores above
`link_threshold` (the null antecedent scores 0). Trained with the mention
loss, the pair scores are calibrated against the rarity of mentions among
all spans, so 0 can link far too little; the antecedent ranking does not
depend on the threshold, so the model predicts once a document and the
decoder (decoders.s2e.S2EDecoder) decodes that prediction at every threshold.
"""
from typing import Any, Dict, Iterable, List, Sequence, Tuple

from spacy.training import Example

from ..decoders.s2e import S2EDecoder
from ..doc_helpers.clusters import write_clusters
from ..scoring.spacy_scorer import score_coref_examples
from .grid import LINK_THRESHOLDS, best_on_grid

SCORE_KEYS = ("coref_conll_f", "coref_muc_f", "coref_b3_f", "coref_ceafe_f", "coref_lea_f", "coref_mentions_p", "coref_mentions_r")
# ties go to the threshold nearest the paper's decision (the null antecedent's score)
TIE_ANCHOR = 0.0


def s2e_decoder(pipe: Any) -> Any:
    """The decoder of an s2e component.

    RAISES ValueError: the component's model is not s2e.
    """
    decoder = getattr(getattr(pipe, "model", None), "attrs", {}).get("decoder")
    if not isinstance(decoder, S2EDecoder):
        raise ValueError(f"the component {getattr(pipe, 'name', '?')!r} is not an s2e model (spacy_memcoref.S2E.v1)")
    return decoder


def predict_each(pipe: Any, docs: Sequence[Any]) -> List[Dict[str, Any]]:
    """The component's prediction of each Doc, one Doc at a time (the model
    runs as at inference; nothing is written)."""
    s2e_decoder(pipe)
    return [pipe.predict([doc])[0] for doc in docs]


def scores_by_threshold(
    pipe: Any, examples: Sequence[Example], predictions: Sequence[Dict[str, Any]], thresholds: Iterable[float] = LINK_THRESHOLDS
) -> Dict[float, Dict[str, float]]:
    """Coreference scores (fractions) of the examples' predicted Docs decoded
    at each threshold; the predicted Docs are left with the last decoding."""
    decoder = s2e_decoder(pipe)
    if len(examples) != len(predictions):
        raise ValueError(f"{len(examples)} examples but {len(predictions)} predictions")
    table: Dict[float, Dict[str, float]] = {}
    for threshold in thresholds:
        for eg, prediction in zip(examples, predictions):
            doc = eg.predicted
            clusters = decoder.clusters(prediction, threshold, doc=doc)
            write_clusters(doc, [[doc[s : e + 1] for s, e in cluster] for cluster in clusters], pipe.prefix)
        scores = score_coref_examples(examples, span_cluster_prefix=pipe.prefix)
        table[float(threshold)] = {k: float(scores.get(k) or 0.0) for k in SCORE_KEYS}
    return table


def best_threshold(table: Dict[float, Dict[str, float]]) -> float:
    """The threshold with the best CoNLL F1 (to 1e-10); on a tie, the one
    nearest 0 (tuning.grid.best_on_grid)."""
    return best_on_grid(list(table.items()), lambda scores: round(scores["coref_conll_f"], 10), nearest=TIE_ANCHOR)


def tune_link_threshold(
    pipe: Any, examples: Sequence[Example], thresholds: Iterable[float] = LINK_THRESHOLDS
) -> Tuple[float, Dict[float, Dict[str, float]]]:
    """The best link threshold of an s2e component on dev examples, and the
    scores at every threshold tried.

    pipe: the s2e component.
    examples (Sequence[Example]): predicted Docs (written over) and gold ones.
    thresholds (Iterable[float]): the grid (default -6.00, -5.75, ..., 2.00).
    RETURNS (Tuple[float, Dict[float, Dict[str, float]]]): best_threshold and
        the table of scores_by_threshold.
    """
    predictions = predict_each(pipe, [eg.predicted for eg in examples])
    table = scores_by_threshold(pipe, examples, predictions, thresholds)
    return best_threshold(table), table
