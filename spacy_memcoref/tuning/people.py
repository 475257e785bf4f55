"""Choosing PeTra's people-count alpha (paper §3.5) on development documents,
and counting the people in texts with it (`count-people`)."""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy
from spacy.language import Language

from ..corpora.people import PeopleRow, read_people_tsv
from ..decoders.petra import DEFAULT_ALPHA, PEOPLE_ALPHA_KEY, people_count
from ..errors import DataFormatError
from ..scoring.people import count_errors
from .grid import PROBABILITY_GRID, best_on_grid
from .run import petra_component, pipe_all
from .save import save_with_settings


def choose_alpha(
    overwrites: list, gold: list, grid: Sequence[float] = PROBABILITY_GRID
) -> Tuple[float, List[Tuple[float, int, int]]]:
    """The people-counting threshold with the fewest wrong counts, then the
    smallest total absolute error (ties: the middle of the tied alphas,
    tuning.grid).

    overwrites (List[numpy.ndarray]): o_t^i [T, N] a document.
    gold (List[int]): the gold counts.
    grid (Sequence[float]): alphas to try.
    RETURNS (Tuple[float, List[Tuple[float, int, int]]]): the best alpha and
        (alpha, wrong counts, total absolute error) for every alpha.
    """
    alphas = numpy.asarray(grid, dtype=numpy.float32)
    predicted = numpy.stack(
        [
            (numpy.asarray(o, dtype=numpy.float32).reshape(-1)[None, :] >= alphas[:, None]).sum(axis=1)
            for o in overwrites
        ],
        axis=1,
    )  # [alphas, docs]
    diff = numpy.abs(predicted - numpy.asarray(gold)[None, :])
    table = [(float(a), int((d != 0).sum()), int(d.sum())) for a, d in zip(grid, diff)]
    best = best_on_grid([(a, (errors, abs_err)) for a, errors, abs_err in table], lambda e: (-e[0], -e[1]))
    return best, table


@dataclass
class PeopleRows:
    """The documents of `count-people`: those scored, and those alpha is
    chosen on (none: alpha is not chosen).

    rows (List[PeopleRow]): (line, ID, text, count) of the documents scored.
    dev_rows (List[PeopleRow]): those to choose alpha on.
    dev_option (Optional[str]): where dev_rows came from, as the command
        says it ("--dev PATH" or "--dev-fraction"); None without.
    """

    rows: List[PeopleRow]
    dev_rows: List[PeopleRow]
    dev_option: Optional[str] = None


def read_people_rows(
    input_path: Union[str, Path], *, dev_path: Optional[Union[str, Path]] = None, dev_fraction: Optional[float] = None
) -> PeopleRows:
    """The documents of a people TSV (corpora.people), and the development
    ones: a TSV of their own, or the leading `dev_fraction` of the input's
    rows (file order; at least one row on either side).

    RAISES DataFormatError: a bad TSV, or too few rows to split.
    """
    rows = read_people_tsv(input_path)
    dev_rows = read_people_tsv(dev_path) if dev_path is not None else []
    if dev_fraction is not None:
        if len(rows) < 2:
            raise DataFormatError(input_path, None, "--dev-fraction needs at least 2 rows")
        n_dev = max(1, min(len(rows) - 1, int(round(dev_fraction * len(rows)))))
        dev_rows, rows = rows[:n_dev], rows[n_dev:]
    dev_option = f"--dev {dev_path}" if dev_path is not None else "--dev-fraction" if dev_fraction is not None else None
    return PeopleRows(rows, dev_rows, dev_option)


@dataclass
class PeopleCountResult:
    """The people counts of a PeTra pipeline and their errors.

    nlp (Language): the pipeline (its component not changed: `save`).
    component (str): the PeTra component.
    rows (List[PeopleRow]): the documents scored.
    counts (List[int]): the predicted count of each.
    alpha (float): the overwrite threshold used.
    alpha_source (str): where alpha came from.
    n_wrong (int): documents with a wrong count.
    abs_err (int): the total absolute error.
    """

    nlp: Any = field(repr=False)
    component: str
    rows: List[PeopleRow]
    counts: List[int]
    alpha: float
    alpha_source: str
    n_wrong: int
    abs_err: int

    @property
    def mae(self) -> float:
        """The mean absolute error a document."""
        return self.abs_err / len(self.rows)

    def table_lines(self) -> List[str]:
        """Each document's gold and predicted count, then alpha and the errors."""
        lines = [f"{'ID':<20} {'gold':>5} {'pred':>5} {'diff':>5}"]
        for (_, ex_id, _, gold), predicted in zip(self.rows, self.counts):
            lines.append(f"{ex_id:<20} {gold:5d} {predicted:5d} {predicted - gold:+5d}")
        lines.append(f"alpha = {self.alpha:.2f} ({self.alpha_source})")
        lines.append(
            f"errors: {self.n_wrong} of {len(self.rows)} docs have a wrong count; mean absolute error {self.mae:.2f}"
        )
        return lines

    def save(self, output: Union[str, Path]) -> Dict[str, Any]:
        """Save the pipeline to `output` with alpha in the component's cfg
        and config.cfg (tuning.save.save_with_settings)."""
        return save_with_settings(self.nlp, self.component, {PEOPLE_ALPHA_KEY: float(self.alpha)}, output)

    def stored_line(self, output: Union[str, Path]) -> str:
        return f"stored alpha in components.{self.component} cfg ({PEOPLE_ALPHA_KEY}) of {output}"

    def summary(self) -> Dict[str, Any]:
        """alpha, the errors, the documents and the mean absolute error: the command's JSON line."""
        return {"alpha": self.alpha, "errors": self.n_wrong, "docs": len(self.rows), "mae": self.mae}


def count_pipeline_people(
    nlp: Language,
    data: PeopleRows,
    *,
    alpha: Optional[float] = None,
    component: Optional[str] = None,
    batch_size: int = 16,
) -> PeopleCountResult:
    """People counting (PeTra paper §3.5) with a pipeline: predicted count =
    the number of (token, cell) with overwrite probability o_t^i >= alpha.
    alpha: as given; else chosen on data.dev_rows; else the component's
    stored one; else DEFAULT_ALPHA.

    nlp (Language): the pipeline.
    data (PeopleRows): read_people_rows' documents.
    alpha (Optional[float]): the overwrite threshold, or None.
    component (Optional[str]): the PeTra component (default: the first one).
    batch_size (int): Docs a nlp.pipe batch.
    RETURNS (PeopleCountResult): the counts and their errors; nothing is saved.
    RAISES ValueError: no PeTra component, or one that writes no memory log.
    """
    name, pipe = petra_component(nlp, component)

    def overwrite_logs(selected: List[PeopleRow]) -> list:
        logs = []
        for doc in pipe_all(nlp, [text for _, _, text, _ in selected], batch_size):
            log = doc._.memory_log
            if log is None:
                raise ValueError(f"component {name!r} wrote no doc._.memory_log")
            logs.append(log["overwrite"])
        return logs

    stored_alpha = getattr(getattr(pipe, "decoder", None), "people_alpha", None)
    if alpha is not None:
        source = "--alpha"
    elif data.dev_rows:
        alpha, _ = choose_alpha(overwrite_logs(data.dev_rows), [c for *_, c in data.dev_rows])
        source = f"chosen on {len(data.dev_rows)} dev docs ({data.dev_option})"
    elif stored_alpha is not None:
        alpha, source = stored_alpha, f"the component's cfg ({PEOPLE_ALPHA_KEY})"
    else:
        alpha, source = DEFAULT_ALPHA, "default (choose one with --dev or --dev-fraction)"
    logs = overwrite_logs(data.rows)
    golds = [gold for *_, gold in data.rows]
    counts = [people_count(over, alpha) for over in logs]
    n_wrong, abs_err = count_errors(counts, golds)
    return PeopleCountResult(nlp, name, data.rows, counts, alpha, source, n_wrong, abs_err)
