"""Choosing s2e's link threshold on dev data.

A mention links to its best antecedent when the pair scores above
`link_threshold` (the null antecedent scores 0). Trained with the mention
loss, the pair scores are calibrated against the rarity of mentions among
all spans, so 0 can link far too little; the antecedent ranking does not
depend on the threshold, so the model predicts once a document and the
decoder (decoders.s2e.S2EDecoder) decodes that prediction at every threshold.
"""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from spacy.language import Language
from spacy.training import Example

from ..corpora.docbin import read_docbin
from ..decoders.s2e import S2EDecoder
from ..doc_helpers.clusters import write_clusters
from ..scoring.spacy_scorer import score_coref_examples
from .grid import LINK_THRESHOLDS, best_on_grid
from .run import coref_component
from .save import save_with_settings

SCORE_KEYS = (
    "coref_conll_f",
    "coref_muc_f",
    "coref_b3_f",
    "coref_ceafe_f",
    "coref_lea_f",
    "coref_mentions_p",
    "coref_mentions_r",
)
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
    pipe: Any,
    examples: Sequence[Example],
    predictions: Sequence[Dict[str, Any]],
    thresholds: Iterable[float] = LINK_THRESHOLDS,
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


@dataclass
class LinkThresholdResult:
    """The link threshold of one pipeline's s2e component, chosen on dev data.

    model (str): the pipeline, as the user named it.
    nlp (Language): the pipeline (its component not yet changed: `save`).
    component (str): the s2e component tuned.
    threshold (float): the best threshold.
    table (Dict[float, Dict[str, float]]): the scores at every threshold.
    n_docs (int): the dev documents.
    """

    model: str
    nlp: Any = field(repr=False)
    component: str
    threshold: float
    table: Dict[float, Dict[str, float]]
    n_docs: int

    @property
    def conll_f(self) -> float:
        """The best threshold's CoNLL F1 (to 1e-10, as best_threshold compares)."""
        return round(self.table[self.threshold]["coref_conll_f"], 10)

    def checkpoint_line(self) -> str:
        """The line that sums up this checkpoint among several (--also)."""
        return f"{self.model}: best threshold {self.threshold:.2f}, CoNLL F1 {100 * self.conll_f:.2f}"

    def table_lines(self) -> List[str]:
        """The scores at every threshold, the best one marked."""
        lines = [f"{'threshold':>9} {'MUC':>6} {'B3':>6} {'CEAFe':>6} {'CoNLL':>6} {'ment R':>7} {'ment P':>7}"]
        for t, scores in self.table.items():
            mark = "  <- best" if t == self.threshold else ""
            lines.append(
                f"{t:9.2f} {100 * scores['coref_muc_f']:6.1f} {100 * scores['coref_b3_f']:6.1f} {100 * scores['coref_ceafe_f']:6.1f}"
                f" {100 * scores['coref_conll_f']:6.1f} {100 * scores['coref_mentions_r']:7.1f} {100 * scores['coref_mentions_p']:7.1f}{mark}"
            )
        return lines

    def save(self, output: Union[str, Path]) -> Dict[str, Any]:
        """Save the pipeline to `output` with the threshold in the
        component's cfg and config.cfg (tuning.save.save_with_settings)."""
        return save_with_settings(self.nlp, self.component, {"link_threshold": self.threshold}, output)

    def stored_line(self, output: Union[str, Path], *, among_several: bool = False) -> str:
        """The line that says what was chosen and where it was stored."""
        return (
            f"best threshold {self.threshold:.2f} (CoNLL F1 {100 * self.table[self.threshold]['coref_conll_f']:.2f} on {self.n_docs} docs); "
            f"stored as components.{self.component}.link_threshold in {output}"
            + (f" (from {self.model})" if among_several else "")
        )

    def summary(self, *, among_several: bool = False) -> Dict[str, Any]:
        """The threshold and its scores (and, among several, the model): the command's JSON line."""
        return {
            "threshold": self.threshold,
            **self.table[self.threshold],
            **({"model": self.model} if among_several else {}),
        }


def tune_pipeline_link_threshold(
    nlp: Language, dev_path: Union[str, Path], *, component: Optional[str] = None, model: str = ""
) -> LinkThresholdResult:
    """The best link threshold of a pipeline's s2e component on a DocBin of
    dev Docs with gold clusters (`tune-link-threshold`): the gold Docs
    themselves, clusters dropped, as `predict` runs them (speakers kept).

    nlp (Language): the pipeline.
    dev_path (Union[str, Path]): the dev DocBin (from `convert conll`).
    component (Optional[str]): the s2e component (default: the first
        coreference component).
    model (str): the pipeline's name, for messages and the result.
    RETURNS (LinkThresholdResult): the threshold and the table; nothing is saved.
    RAISES ValueError: no such component, or not an s2e one; a bad or empty
        DocBin (DataFormatError).
    """
    name, pipe = coref_component(nlp, component, model)
    references = read_docbin(dev_path, nlp.vocab)
    examples = [Example(ref.copy(), ref) for ref in references]
    best, table = tune_link_threshold(pipe, examples)
    return LinkThresholdResult(model, nlp, name, best, table, len(examples))
