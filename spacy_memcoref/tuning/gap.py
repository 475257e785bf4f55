"""Choosing PeTra's GAP decisions on validation data: the calibration of the
link probabilities (Platt scaling, scoring.calibration.fit_platt) and the
decision threshold with the best overall GAP F1 (paper §3.3: chosen on
validation, used on test)."""

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from spacy.language import Language
from spacy.tokens import Doc

from ..corpora.docbin import read_docbin
from ..decoders.calibration import calibrate
from ..decoders.petra import gap_linked
from ..doc_helpers.gap_annotation import GAP_PROBS_KEY, has_gap_annotation
from ..errors import DataFormatError, quote
from ..scoring.calibration import expected_calibration_error, fit_platt, reliability_table
from ..scoring.gap_decisions import gap_gold, stored_gap_probabilities
from ..scoring.gap_metrics import gap_scores
from .grid import PROBABILITY_GRID, best_on_grid
from .run import annotate_docs, petra_component
from .save import save_with_settings

Gold = Dict[str, Tuple[str, bool, bool]]
Probabilities = Dict[str, Tuple[float, float]]


def tune_gap_threshold(
    gold: Gold, probs: Probabilities, grid: Iterable[float] = PROBABILITY_GRID
) -> Tuple[float, List[Tuple[float, Dict[str, float]]]]:
    """The GAP decision threshold with the best overall F1.

    gold (Dict[str, Tuple[str, bool, bool]]): ID -> (gender, A-coref, B-coref).
    probs (Dict[str, Tuple[float, float]]): ID -> (p_A, p_B).
    grid (Iterable[float]): thresholds to try (default 0.01, 0.02, ..., 1.00).
    RETURNS (Tuple[float, List[Tuple[float, Dict[str, float]]]]): the best
        threshold (ties: the middle of the tied thresholds, tuning.grid) and
        (threshold, gap_scores) for every threshold tried.
    """
    table = []
    for t in grid:
        system = {key: (gap_linked(p_a, t), gap_linked(p_b, t)) for key, (p_a, p_b) in probs.items()}
        table.append((float(t), gap_scores(gold, system)))
    if not table:
        raise ValueError("no thresholds to try")
    return best_on_grid(table, lambda scores: scores["gap_f"]), table


def raw_gap_probabilities(doc: Doc) -> Optional[Tuple[float, float]]:
    """(p_A, p_B) before calibration: gap_probs' "A_raw"/"B_raw" where the
    decoder calibrated them, else "A"/"B"; None without gap_probs."""
    probs = doc.user_data.get(GAP_PROBS_KEY)
    if isinstance(probs, dict) and "A_raw" in probs and "B_raw" in probs:
        return float(probs["A_raw"]), float(probs["B_raw"])
    return stored_gap_probabilities(doc)


def gap_gold_and_probabilities(
    docs: Iterable[Doc], *, source: Union[str, Path], component: str
) -> Tuple[Gold, Probabilities]:
    """The gold labels and raw (uncalibrated) link probabilities of GAP Docs
    annotated by a PeTra component.

    docs (Iterable[Doc]): the annotated validation Docs.
    source (Union[str, Path]): the file they came from (named in errors).
    component (str): the component that annotated them (named in errors).
    RETURNS (Tuple[Dict, Dict]): ID -> (gender, A-coref, B-coref) and
        ID -> (p_A, p_B).
    RAISES DataFormatError: a Doc without GAP annotation, or an ID twice.
    RAISES ValueError: the component wrote no link probabilities.
    """
    gold: Gold = {}
    probs: Probabilities = {}
    for i, doc in enumerate(docs):
        if not has_gap_annotation(doc):
            raise DataFormatError(
                source, None, f"doc {i} (0-based) has no GAP annotation (convert GAP with `convert gap`)"
            )
        ex_id, gender, gold_a, gold_b = gap_gold(doc)
        if ex_id in gold:
            raise DataFormatError(source, None, f"doc {i} (0-based): duplicate GAP ID {quote(ex_id)}")
        p = raw_gap_probabilities(doc)
        if p is None:
            raise ValueError(f"component {component!r} wrote no link probabilities (doc.user_data['{GAP_PROBS_KEY}'])")
        gold[ex_id] = (gender, gold_a, gold_b)
        probs[ex_id] = p
    return gold, probs


def tune_gap_decisions(gold: Gold, raw: Probabilities, before: Sequence[float], *, fit: bool = True) -> Dict[str, Any]:
    """Calibrate and choose the threshold: Platt scaling on the A and B
    candidates (with `fit`; else the calibration `before` is kept), then the
    threshold with the best GAP F1 on the calibrated probabilities.

    gold (Gold), raw (Probabilities): gap_gold_and_probabilities' output.
    before (Sequence[float]): the component's calibration now.
    fit (bool): fit a new calibration.
    RETURNS (Dict[str, Any]): "calibration" (rounded to 6 decimals: the
        value stored in config.cfg is the one used), "threshold", "table"
        (tune_gap_threshold's) and "reliability" ({"before", "after"}: the
        calibration, its ECE and its reliability_table bins).
    """
    keys = sorted(gold)
    raw_p = [p for key in keys for p in raw[key]]
    labels = [g for key in keys for g in gold[key][1:]]
    before = list(before)
    after = [round(v, 6) for v in fit_platt(raw_p, labels)] if fit else before
    probs = {key: tuple(calibrate(p, after) for p in raw[key]) for key in keys}
    best, table = tune_gap_threshold(gold, probs)
    reliability = {}
    for label, calibration in (("before", before), ("after", after)):
        rows = reliability_table([calibrate(p, calibration) for p in raw_p], labels)
        reliability[label] = {"calibration": calibration, "ece": expected_calibration_error(rows), "bins": rows}
    return {"calibration": after, "threshold": best, "table": table, "reliability": reliability}


@dataclass
class GapThresholdResult:
    """PeTra's GAP decisions chosen on validation data (`tune-gap-threshold`).

    nlp (Language): the pipeline (its component not yet changed: `save`).
    component (str): the PeTra component tuned.
    n_docs (int): the validation documents.
    calibration (List[float]): the calibration chosen ([scale, shift]).
    threshold (float): the best threshold on the calibrated probabilities.
    table (List[Tuple[float, Dict[str, float]]]): (threshold, gap_scores) for every threshold.
    reliability (Dict[str, Dict[str, Any]]): "before" and "after": the
        calibration, its ECE and its reliability_table bins.
    """

    nlp: Any = field(repr=False)
    component: str
    n_docs: int
    calibration: List[float]
    threshold: float
    table: List[Tuple[float, Dict[str, float]]]
    reliability: Dict[str, Dict[str, Any]]

    def scores(self, threshold: float) -> Dict[str, float]:
        """The GAP scores at a threshold of the grid."""
        return dict(self.table)[threshold]

    def table_lines(self) -> List[str]:
        """The reliability tables (before and after calibration), then the
        scores at every threshold, the best one marked."""
        lines = []
        for label, reliability in self.reliability.items():
            calibration, rows = reliability["calibration"], reliability["bins"]
            lines.append(
                f"reliability {label} (scale {calibration[0]:.3f}, shift {calibration[1]:.3f}; "
                f"ECE {100 * reliability['ece']:.1f}) on {sum(row['n'] for row in rows)} candidates:"
            )
            lines.append(f"{'bin':>11} {'n':>5} {'mean p':>7} {'linked':>7}")
            for row in rows:
                lines.append(
                    f"  {row['low']:.1f}-{row['high']:.1f} {row['n']:5d} {row['mean_p']:7.3f} {row['rate']:7.3f}"
                )
        lines.append(f"{'threshold':>9} {'P':>6} {'R':>6} {'F1':>6} {'F1 masc':>8} {'F1 fem':>7}")
        for t, scores in self.table:
            mark = "  <- best" if t == self.threshold else ""
            lines.append(
                f"{t:9.2f} {100 * scores['gap_p']:6.1f} {100 * scores['gap_r']:6.1f} {100 * scores['gap_f']:6.1f}"
                f" {100 * scores['gap_f_masc']:8.1f} {100 * scores['gap_f_fem']:7.1f}{mark}"
            )
        return lines

    def save(self, output: Union[str, Path]) -> Dict[str, Any]:
        """Save the pipeline to `output` with the threshold and calibration
        in the component's cfg and config.cfg (tuning.save.save_with_settings)."""
        return save_with_settings(
            self.nlp, self.component, {"gap_threshold": self.threshold, "gap_calibration": self.calibration}, output
        )

    def stored_line(self, output: Union[str, Path]) -> str:
        """The line that says what was chosen and where it was stored."""
        after = self.calibration
        return (
            f"calibration [{after[0]:.4f}, {after[1]:.4f}]; best threshold {self.threshold:.2f} "
            f"(GAP F1 {100 * self.scores(self.threshold)['gap_f']:.1f} on {self.n_docs} docs, "
            f"{100 * self.scores(0.5)['gap_f']:.1f} at 0.5); stored as components.{self.component}.gap_threshold "
            f"and gap_calibration in {output}"
        )

    def summary(self) -> Dict[str, Any]:
        """The threshold, calibration, reliability and the best scores
        (undefined ones null): the command's JSON line."""
        best = self.scores(self.threshold)
        clean = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in best.items()}
        return {
            "threshold": self.threshold,
            "calibration": self.calibration,
            "gap_f_at_0.5": self.scores(0.5)["gap_f"],
            "reliability": self.reliability,
            **clean,
        }


def tune_pipeline_gap_threshold(
    nlp: Language,
    input_path: Union[str, Path],
    *,
    component: Optional[str] = None,
    calibrate: bool = True,
    batch_size: int = 16,
) -> GapThresholdResult:
    """Calibrate a pipeline's PeTra GAP link probabilities and choose its
    decision threshold on a DocBin of GAP validation Docs (`tune-gap-threshold`).

    nlp (Language): the pipeline.
    input_path (Union[str, Path]): the DocBin (from `convert gap`).
    component (Optional[str]): the PeTra component (default: the first one).
    calibrate (bool): fit the calibration first (else keep the component's).
    batch_size (int): Docs a nlp.pipe batch.
    RETURNS (GapThresholdResult): what was chosen; nothing is saved.
    RAISES ValueError: no PeTra component; Docs without GAP annotation or
        link probabilities; a bad DocBin (DataFormatError).
    """
    name, pipe = petra_component(nlp, component)
    docs = read_docbin(input_path, nlp.vocab)
    annotated = annotate_docs(nlp, docs, batch_size, pipe.prefix)
    gold, raw = gap_gold_and_probabilities(annotated, source=input_path, component=name)
    tuned = tune_gap_decisions(gold, raw, pipe.decoder.calibration(), fit=calibrate)
    return GapThresholdResult(
        nlp, name, len(gold), tuned["calibration"], tuned["threshold"], tuned["table"], tuned["reliability"]
    )
