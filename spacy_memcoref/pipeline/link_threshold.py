"""Choosing s2e's link threshold on dev data.

A mention links to its best antecedent when the pair scores above
`link_threshold` (the null antecedent scores 0). Trained with the mention
loss, the pair scores are calibrated against the rarity of mentions among
all spans, so 0 can link far too little; the antecedent ranking does not
depend on the threshold, and the pair scores are computed once a document,
so trying many thresholds costs one pass over the documents.
"""
from pathlib import Path
from typing import Any, Dict, Iterable, List, Sequence, Tuple

from spacy.language import Language
from spacy.training import Example

from ..doc_helpers.clusters import write_clusters

# -6.0, -5.75, ..., 2.0
THRESHOLDS: Tuple[float, ...] = tuple(x / 4 for x in range(-24, 9))
SCORE_KEYS = ("coref_conll_f", "coref_muc_f", "coref_b3_f", "coref_ceafe_f", "coref_lea_f", "coref_mentions_p", "coref_mentions_r")


def s2e_parts(pipe: Any) -> Tuple[Any, Any, Any]:
    """(encoder, torch head, head-input builder) of an s2e component.

    RAISES ValueError: the component's model is not s2e.
    """
    layers = getattr(pipe.model, "layers", [])
    head_layer = layers[1] if len(layers) > 1 else None
    shims = getattr(head_layer, "shims", [])
    head = shims[0]._model if shims else None
    if head is None or not hasattr(head, "document_links"):
        raise ValueError(f"the component {getattr(pipe, 'name', '?')!r} is not an s2e model (spacy_memcoref.S2E.v1)")
    return layers[0], head, head_layer.attrs["make_head_input"]


def pair_links(pipe: Any, docs: Sequence[Any]) -> List[Any]:
    """`S2EHead.document_links` of each Doc (the encoder runs as at inference)."""
    from thinc.api import xp2torch

    from ..models.encoder import encode_for_inference

    tok2vec, head, make_input = s2e_parts(pipe)
    head.eval()
    links = []
    for doc in docs:
        if len(doc) == 0:
            links.append(None)
            continue
        vectors = encode_for_inference(tok2vec, [doc])[0]
        links.append(head.document_links(make_input(doc, xp2torch(vectors, device=next(head.parameters()).device))))
    return links


def scores_by_threshold(
    examples: Sequence[Example], links: Sequence[Any], prefix: str, thresholds: Iterable[float] = THRESHOLDS
) -> Dict[float, Dict[str, float]]:
    """Coreference scores (fractions) of the examples' predicted Docs decoded
    at each threshold; the predicted Docs are left with the last decoding."""
    from ..models.pytorch_s2e import links_to_clusters
    from ..scoring.spacy_scorer import score_coref_examples

    if len(examples) != len(links):
        raise ValueError(f"{len(examples)} examples but {len(links)} link sets")
    table: Dict[float, Dict[str, float]] = {}
    for threshold in thresholds:
        for eg, doc_links in zip(examples, links):
            doc = eg.predicted
            clusters = links_to_clusters(doc_links, threshold) if doc_links is not None else []
            write_clusters(doc, [[doc[s : e + 1] for s, e in cluster] for cluster in clusters], prefix)
        scores = score_coref_examples(examples, span_cluster_prefix=prefix)
        table[float(threshold)] = {k: float(scores.get(k) or 0.0) for k in SCORE_KEYS}
    return table


def best_threshold(table: Dict[float, Dict[str, float]]) -> float:
    """The threshold with the best CoNLL F1; on a tie, the one nearest 0."""
    if not table:
        raise ValueError("no thresholds were scored")
    return max(table, key=lambda t: (round(table[t]["coref_conll_f"], 10), -abs(t)))


def save_with_link_threshold(nlp: Language, component: str, threshold: float, output: Path) -> None:
    """Save the pipeline with `threshold` as the component's model
    link_threshold, in the head and in config.cfg."""
    from thinc.api import Config

    _, head, _ = s2e_parts(nlp.get_pipe(component))
    head.link_threshold = float(threshold)
    nlp.to_disk(output)
    config_path = Path(output) / "config.cfg"
    config = Config().from_disk(config_path, interpolate=False)
    config["components"][component]["model"]["link_threshold"] = float(threshold)
    config.to_disk(config_path)
