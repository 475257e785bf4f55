"""spaCy scorer `spacy_memcoref.coref_scorer.v1`: MUC, B3, CEAFe, LEA and CoNLL F1.

Clusters are read from the span groups f"{prefix}_{i}" (i = 1, 2, ...) of the
reference and predicted Docs (`doc_helpers.clusters.char_clusters`). The two
Docs may be tokenized differently, so mentions are identified by CHARACTER
offsets (start_char, end_char). Each
Example is one document; counts are micro-averaged over the Examples like the
CoNLL-2012 reference scorer does over documents.

This module imports only spaCy; the metrics are imported when scoring.
"""

from typing import Any, Callable, Dict, Iterable, Optional

from spacy.training import Example
from spacy.util import registry

from ..doc_helpers.clusters import CLUSTER_PREFIX, char_clusters


def score_coref_examples(examples: Iterable[Example], *, span_cluster_prefix: str = CLUSTER_PREFIX) -> Dict[str, float]:
    """Score the predicted clusters of Examples against the reference clusters.

    examples (Iterable[Example]): one Example per document.
    span_cluster_prefix (str): the span-group prefix of the clusters.
    RETURNS (Dict[str, float]): `coref_{mentions,muc,b3,ceafe,lea}_{p,r,f}`
        and `coref_conll_f`, fractions in [0, 1].
    """
    from .coref_metrics import CorefEvaluator

    evaluator = CorefEvaluator()
    for example in examples:
        evaluator.add_document(
            char_clusters(example.reference, span_cluster_prefix),
            char_clusters(example.predicted, span_cluster_prefix),
        )
    return evaluator.scores()


@registry.scorers("spacy_memcoref.coref_scorer.v1")
def make_coref_scorer(span_cluster_prefix: str = CLUSTER_PREFIX) -> Callable[..., Dict[str, float]]:
    """Make the coreference scorer.

    span_cluster_prefix (str): default span-group prefix of the clusters; a
        `span_cluster_prefix` keyword given at scoring time overrides it.
    RETURNS (Callable): score_coref(examples, **kwargs) -> Dict[str, float].
    """
    default_prefix = span_cluster_prefix

    def score_coref(
        examples: Iterable[Example], *, span_cluster_prefix: Optional[str] = None, **kwargs: Any
    ) -> Dict[str, float]:
        prefix = default_prefix if span_cluster_prefix is None else span_cluster_prefix
        return score_coref_examples(examples, span_cluster_prefix=prefix)

    return score_coref
