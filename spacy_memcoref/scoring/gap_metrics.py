"""GAP metrics, computed exactly like the official scorer
(`gap_scorer.py`, Webster et al. 2018):

- every gold example contributes two decisions (A and B) to the overall
  tally and to the tally of its gender; the gender comes from the gold pronoun
  string, lower-cased, looked up in {she, her, hers: feminine; he, his, him:
  masculine} (any other pronoun is an error, where the official scorer asserts);
- a system decision that is missing (an ID absent from the system file) counts
  as a false negative, whatever the gold label; system IDs not in the gold
  file are ignored;
- P = tp/(tp+fp), R = tp/(tp+fn), F1 = 2PR/(P+R), each 0 when its denominator
  is 0, computed in percent like the official scorer and returned as
  fractions; bias = F1(feminine) / F1(masculine), undefined (NaN here, "-" in
  the official scorecard) when either F1 is 0.

Stricter than the official scorer (which prints a warning and goes on): a
system line with a label other than TRUE/FALSE (any case), without exactly 3
tab-separated columns, with an empty or duplicate ID, and an empty system file
raise DataFormatError. A first system line equal to the header
"ID<TAB>A-coref<TAB>B-coref" is skipped (the official scorer reads it as an
example "ID" that no gold row has, i.e. ignores it).
"""

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterator, List, Mapping, Optional, Tuple, Union

from ..corpora.gap import SYSTEM_COLUMNS, parse_gap_label, read_gap_rows
from ..errors import DataFormatError, quote
from ..util import iter_lines

MASCULINE = "masculine"
FEMININE = "feminine"
GENDERS: Tuple[str, str] = (MASCULINE, FEMININE)

# The official scorer's constants.PRONOUNS (reflexives are not in GAP).
PRONOUN_GENDERS: Dict[str, str] = {
    "she": FEMININE,
    "her": FEMININE,
    "hers": FEMININE,
    "he": MASCULINE,
    "his": MASCULINE,
    "him": MASCULINE,
}

GoldTable = Mapping[str, Tuple[str, bool, bool]]
SystemTable = Mapping[str, Tuple[Optional[bool], Optional[bool]]]


def pronoun_gender(pronoun: str) -> Optional[str]:
    """The gender the official scorer gives a pronoun.

    pronoun (str): the pronoun string (any case).
    RETURNS (Optional[str]): "masculine", "feminine", or None when the official
        scorer does not know the pronoun.
    """
    return PRONOUN_GENDERS.get(pronoun.lower())


@dataclass
class GapCounts:
    """Decision counts of one tally (overall or one gender)."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    def precision_pct(self) -> float:
        """RETURNS (float): precision in percent, as the official scorer computes it."""
        denominator = self.tp + self.fp
        return 100.0 * self.tp / denominator if denominator else 0.0

    def recall_pct(self) -> float:
        """RETURNS (float): recall in percent, as the official scorer computes it."""
        denominator = self.tp + self.fn
        return 100.0 * self.tp / denominator if denominator else 0.0

    def f1_pct(self) -> float:
        """RETURNS (float): F1 in percent, as the official scorer computes it."""
        precision = self.precision_pct()
        recall = self.recall_pct()
        denominator = precision + recall
        return 2 * precision * recall / denominator if denominator else 0.0


def gap_counts(gold: GoldTable, system: SystemTable) -> Tuple[Dict[Optional[str], GapCounts], int]:
    """Tally the decisions like the official scorer's calculate_scores.

    gold (Mapping[str, Tuple[str, bool, bool]]): ID -> (gender, A-coref, B-coref).
    system (Mapping[str, Tuple[Optional[bool], Optional[bool]]]): ID ->
        (A linked, B linked); a missing ID or a None decision is a false negative.
    RETURNS (Tuple[Dict[Optional[str], GapCounts], int]): counts under None
        (overall), "masculine" and "feminine"; and the number of gold IDs
        missing from the system.
    """
    counts: Dict[Optional[str], GapCounts] = {None: GapCounts(), MASCULINE: GapCounts(), FEMININE: GapCounts()}
    missing = 0
    for ex_id, (gender, gold_a, gold_b) in gold.items():
        if gender not in counts or gender is None:
            raise ValueError(f"GAP example {ex_id!r}: gender must be {MASCULINE!r} or {FEMININE!r}, got {gender!r}")
        decision = system.get(ex_id)
        if decision is None:
            missing += 1
            sys_a: Optional[bool] = None
            sys_b: Optional[bool] = None
        else:
            sys_a, sys_b = decision
        for key in (None, gender):
            tally = counts[key]
            for gold_label, sys_label in ((gold_a, sys_a), (gold_b, sys_b)):
                if sys_label is None:
                    tally.fn += 1
                elif gold_label and sys_label:
                    tally.tp += 1
                elif not gold_label and sys_label:
                    tally.fp += 1
                elif not gold_label and not sys_label:
                    tally.tn += 1
                else:
                    tally.fn += 1
    return counts, missing


def _bias_pct(counts: Dict[Optional[str], GapCounts]) -> float:
    f1_masc = counts[MASCULINE].f1_pct()
    f1_fem = counts[FEMININE].f1_pct()
    if f1_masc and f1_fem:
        return f1_fem / f1_masc
    return math.nan


def scores_from_counts(counts: Dict[Optional[str], GapCounts]) -> Dict[str, float]:
    """The score dict of a tally (see gap_scores)."""
    overall, masc, fem = counts[None], counts[MASCULINE], counts[FEMININE]
    return {
        "gap_p": overall.precision_pct() / 100.0,
        "gap_r": overall.recall_pct() / 100.0,
        "gap_f": overall.f1_pct() / 100.0,
        "gap_p_masc": masc.precision_pct() / 100.0,
        "gap_r_masc": masc.recall_pct() / 100.0,
        "gap_f_masc": masc.f1_pct() / 100.0,
        "gap_p_fem": fem.precision_pct() / 100.0,
        "gap_r_fem": fem.recall_pct() / 100.0,
        "gap_f_fem": fem.f1_pct() / 100.0,
        "gap_bias": _bias_pct(counts),
    }


def gap_scores(gold: GoldTable, system: SystemTable) -> Dict[str, float]:
    """GAP scores, like the official scorer, for in-memory use.

    gold (Mapping[str, Tuple[str, bool, bool]]): ID -> (gender, A-coref,
        B-coref), gender "masculine" or "feminine" (see pronoun_gender).
    system (Mapping[str, Tuple[Optional[bool], Optional[bool]]]): ID -> (A
        linked, B linked). A gold ID missing here counts as two false
        negatives, as in the official scorer; extra IDs are ignored.
    RETURNS (Dict[str, float]): gap_p, gap_r, gap_f (overall), gap_p_masc,
        gap_r_masc, gap_f_masc, gap_p_fem, gap_r_fem, gap_f_fem as fractions in
        [0, 1]; gap_bias = gap_f_fem / gap_f_masc (a ratio; 1 is unbiased),
        NaN when either F1 is 0 (the official scorer prints "-").
    """
    counts, _ = gap_counts(gold, system)
    return scores_from_counts(counts)


def read_gap_gold(path: Union[str, Path]) -> Dict[str, Tuple[str, bool, bool]]:
    """Read a gold GAP TSV for scoring (validated like read_gap_rows).

    path (Union[str, Path]): the gold GAP TSV, with its header.
    RETURNS (Dict[str, Tuple[str, bool, bool]]): ID -> (gender, A-coref, B-coref).
    """
    gold: Dict[str, Tuple[str, bool, bool]] = {}
    for row in read_gap_rows(path):
        gender = pronoun_gender(row.pronoun)
        if gender is None:
            raise DataFormatError(
                path,
                row.line,
                f"pronoun {quote(row.pronoun)} has no gender in the official scorer's list ({', '.join(PRONOUN_GENDERS)})",
            )
        gold[row.id] = (gender, row.a_coref, row.b_coref)
    return gold


def _lines_with_endings(path: Union[str, Path]) -> Iterator[str]:
    for _, text in iter_lines(path):
        yield text + "\n"


def read_gap_system(path: Union[str, Path]) -> Dict[str, Tuple[bool, bool]]:
    """Read a GAP system file (no header; ID, A-coref, B-coref), parsed with
    the same csv settings as the official scorer.

    path (Union[str, Path]): the system TSV.
    RETURNS (Dict[str, Tuple[bool, bool]]): ID -> (A linked, B linked).
    """
    path = Path(path)
    system: Dict[str, Tuple[bool, bool]] = {}
    seen: Dict[str, int] = {}
    reader = csv.reader(_lines_with_endings(path), delimiter="\t")
    n_cols = len(SYSTEM_COLUMNS)
    try:
        for fields in reader:
            line = reader.line_num
            if not fields:  # a blank line, skipped by the official scorer's csv.DictReader too
                continue
            if line == 1 and tuple(fields) == SYSTEM_COLUMNS:
                continue
            if len(fields) != n_cols:
                raise DataFormatError(
                    path,
                    line,
                    f"expected {n_cols} tab-separated columns ({' '.join(SYSTEM_COLUMNS)}), found {len(fields)}",
                )
            ex_id, a_value, b_value = fields
            if not ex_id:
                raise DataFormatError(path, line, "column ID is empty")
            if ex_id in seen:
                raise DataFormatError(path, line, f"duplicate ID {quote(ex_id)} (first on line {seen[ex_id]})")
            labels = []
            for column, value in (("A-coref", a_value), ("B-coref", b_value)):
                label = parse_gap_label(value)
                if label is None:
                    raise DataFormatError(
                        path, line, f"column {column} must be TRUE or FALSE (any case), found {quote(value)}"
                    )
                labels.append(label)
            seen[ex_id] = line
            system[ex_id] = (labels[0], labels[1])
    except csv.Error as err:
        raise DataFormatError(path, reader.line_num, f"cannot parse the line: {err}") from None
    if not system:
        raise DataFormatError(path, None, "empty system file: no rows (expected ID<TAB>A-coref<TAB>B-coref lines)")
    return system


def _fmt_bias(bias: float) -> str:
    return "-" if math.isnan(bias) else f"{bias:.2f}"


def gap_table(counts: Dict[Optional[str], GapCounts], *, missing: int = 0, extra: int = 0) -> List[str]:
    """A readable table of a tally, with the official scorer's rounding.

    counts (Dict[Optional[str], GapCounts]): from gap_counts.
    missing (int): gold IDs without a system row.
    extra (int): system IDs without a gold row.
    RETURNS (List[str]): the lines.
    """
    rows = [f"{'':<10} {'P':>6} {'R':>6} {'F1':>6} {'tp':>6} {'fp':>6} {'fn':>6} {'tn':>6}"]
    for key, name in ((None, "Overall"), (MASCULINE, "Masculine"), (FEMININE, "Feminine")):
        c = counts[key]
        rows.append(
            f"{name:<10} {c.precision_pct():6.1f} {c.recall_pct():6.1f} {c.f1_pct():6.1f}"
            f" {c.tp:6d} {c.fp:6d} {c.fn:6d} {c.tn:6d}"
        )
    rows.append(f"Bias (F/M): {_fmt_bias(_bias_pct(counts))}")
    if missing:
        rows.append(f"Missing system rows: {missing} (each scored as 2 false negatives, as the official scorer does)")
    if extra:
        rows.append(f"System rows not in the gold file: {extra} (ignored, as the official scorer does)")
    return rows


def score_gap_files(gold_path: Union[str, Path], system_path: Union[str, Path]) -> Tuple[Dict[str, float], List[str]]:
    """Score a GAP system file against a gold GAP TSV like the official scorer.

    gold_path (Union[str, Path]): the gold GAP TSV, with its header.
    system_path (Union[str, Path]): the system TSV (ID, A-coref, B-coref; no header).
    RETURNS (Tuple[Dict[str, float], List[str]]): the scores (see gap_scores)
        and a readable table.
    """
    gold = read_gap_gold(gold_path)
    system = read_gap_system(system_path)
    counts, missing = gap_counts(gold, system)
    extra = sum(1 for ex_id in system if ex_id not in gold)
    return scores_from_counts(counts), gap_table(counts, missing=missing, extra=extra)
