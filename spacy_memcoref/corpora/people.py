"""People-counting files (PeTra paper §3.5): a TSV with a header row, then
one document a line, ``ID<TAB>text<TAB>count`` (count: the number of people
the text mentions)."""

from pathlib import Path
from typing import Dict, List, Tuple, Union

from ..errors import DataFormatError, quote
from ..util import iter_lines

PeopleRow = Tuple[int, str, str, int]  # (line, ID, text, count)


def read_people_tsv(path: Union[str, Path]) -> List[PeopleRow]:
    """Read a people-counting TSV: a header row, then ID<TAB>text<TAB>count.

    path (Union[str, Path]): the TSV.
    RETURNS (List[Tuple[int, str, str, int]]): (line, ID, text, count).
    RAISES DataFormatError: naming the line and what is wrong with it.
    """
    rows = []
    seen: Dict[str, int] = {}
    header = False
    for line, text in iter_lines(path):
        fields = text.split("\t")
        if not header:
            if len(fields) != 3:
                raise DataFormatError(
                    path,
                    line,
                    f"expected a header row of 3 tab-separated columns (ID, text, count), found {len(fields)}",
                )
            header = True
            continue
        if text == "":
            continue
        if len(fields) != 3:
            raise DataFormatError(
                path, line, f"expected 3 tab-separated columns (ID, text, count), found {len(fields)}"
            )
        ex_id, doc_text, count = fields
        if not ex_id:
            raise DataFormatError(path, line, "column ID is empty")
        if ex_id in seen:
            raise DataFormatError(path, line, f"duplicate ID {quote(ex_id)} (first on line {seen[ex_id]})")
        if not count.isdigit():
            raise DataFormatError(path, line, f"column count must be a non-negative integer, found {quote(count)}")
        seen[ex_id] = line
        rows.append((line, ex_id, doc_text, int(count)))
    if not header:
        raise DataFormatError(path, None, "empty file: expected a header row (ID, text, count) and data rows")
    if not rows:
        raise DataFormatError(path, 1, "no data rows after the header")
    return rows
