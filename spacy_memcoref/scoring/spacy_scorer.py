"""spaCy scorer `spacy_memcoref.coref_scorer.v1`: MUC, B3, CEAFe, LEA and CoNLL F1.

Clusters are read from the span groups f"{prefix}_{i}" (i = 1, 2, ...) of the
reference and predicted Docs. The two Docs may be tokenized differently, so
mentions are identified by CHARACTER offsets (start_char, end_char). Each
Example is one document; counts are micro-averaged over the Examples like the
CoNLL-2012 reference scorer does over documents.

This module imports only spaCy; the metrics are imported when scoring.
"""
import re
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from spacy.tokens import Doc
from spacy.training import Example
from spacy.util import registry

DEFAULT_PREFIX = "coref_clusters"


def doc_char_clusters(doc: Doc, prefix: str = DEFAULT_PREFIX) -> List[List[Tuple[int, int]]]:
    """The clusters of a Doc as lists of (start_char, end_char) mentions.

    doc (Doc): the Doc.
    prefix (str): the span-group prefix; groups f"{prefix}_{i}" with an
        integer i are read, in order of i; empty groups are skipped.
    RETURNS (List[List[Tuple[int, int]]]): the clusters.
    """
    pattern = re.compile(re.escape(prefix) + r"_(\d+)$")
    numbered = []
    for name, group in doc.spans.items():
        match = pattern.match(name)
        if match and len(group):
            numbered.append((int(match.group(1)), [(span.start_char, span.end_char) for span in group]))
    numbered.sort(key=lambda item: item[0])
    return [mentions for _, mentions in numbered]


def score_coref_examples(examples: Iterable[Example], *, span_cluster_prefix: str = DEFAULT_PREFIX) -> Dict[str, float]:
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
            doc_char_clusters(example.reference, span_cluster_prefix),
            doc_char_clusters(example.predicted, span_cluster_prefix),
        )
    return evaluator.scores()


@registry.scorers("spacy_memcoref.coref_scorer.v1")
def make_coref_scorer(span_cluster_prefix: str = DEFAULT_PREFIX) -> Callable[..., Dict[str, float]]:
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
