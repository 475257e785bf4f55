"""GAP (Webster et al. 2018) reader, DocBin converter and system-file writer.

A GAP TSV has a header row and the columns
`ID Text Pronoun Pronoun-offset A A-offset A-coref B B-offset B-coref URL`.
Each row becomes one Doc, tokenized by the pipeline's tokenizer, with

- `doc.spans["gap"]`: the A, B and pronoun spans, labels "A", "B", "PRONOUN".
  Character offsets are Python `str` offsets; a span whose ends do not fall
  on token boundaries is expanded to the covering tokens (never dropped).
- `doc.user_data["gap"]`: `{"id": str, "A-coref": bool, "B-coref": bool, "url": str}`.
- `doc.spans["coref_clusters_1"]`: the positive links, i.e. the pronoun with A
  and/or B where their label is TRUE (absent when both are FALSE).

(The keys and labels are `doc_helpers.gap_annotation`'s; the cluster group
follows `doc_helpers.clusters`.)

Coreference labels are read like the official scorer reads them:
`value.lower() == "true"` / `"false"`, so TRUE, True, true (any case) are
accepted; anything else (including surrounding spaces) is an error here,
where the official scorer would print "Unexpected label!" and go on.

A system file (what the official scorer reads as `--system_tsv`) has no header
and the columns `ID A-coref B-coref`, written here as TRUE/FALSE. This module
only reads and writes: deciding a Doc's A-coref / B-coref is scoring's
(`scoring.gap_decisions`, `scoring.gap_export`).
"""

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Tuple, Union

import spacy
from spacy.language import Language
from spacy.tokens import Doc, DocBin, Span, SpanGroup

from ..doc_helpers.clusters import write_clusters
from ..doc_helpers.gap_annotation import GAP_SPANS_KEY, GAP_USER_DATA_KEY, LABEL_A, LABEL_B, LABEL_PRONOUN
from ..errors import DataFormatError, quote
from ..util import atomic_output, iter_lines, refuse_overwriting_input
from .gender_swap import gender_swapped_doc

GAP_COLUMNS: Tuple[str, ...] = (
    "ID",
    "Text",
    "Pronoun",
    "Pronoun-offset",
    "A",
    "A-offset",
    "A-coref",
    "B",
    "B-offset",
    "B-coref",
    "URL",
)
SYSTEM_COLUMNS: Tuple[str, ...] = ("ID", "A-coref", "B-coref")

_OFFSET_RE = re.compile(r"[0-9]+")


@dataclass(frozen=True)
class GapRow:
    """One validated row of a GAP TSV.

    line (int): 1-based line number in the file.
    """

    line: int
    id: str
    text: str
    pronoun: str
    pronoun_offset: int
    a: str
    a_offset: int
    a_coref: bool
    b: str
    b_offset: int
    b_coref: bool
    url: str


@dataclass
class GapStats:
    """Counts collected while reading a GAP TSV.

    rows (int): data rows read.
    expansions (int): spans (of 3 a row) not aligned to token boundaries and
        expanded to the covering tokens.
    expanded_rows (int): rows with at least one expanded span.
    expanded (List[Tuple[str, str, str, str]]): (id, label, TSV string, span text)
        of every expansion.
    """

    rows: int = 0
    expansions: int = 0
    expanded_rows: int = 0
    expanded: List[Tuple[str, str, str, str]] = field(default_factory=list)


def parse_gap_label(value: Optional[str]) -> Optional[bool]:
    """Read a coref label the way the official GAP scorer does.

    value (Optional[str]): the column value.
    RETURNS (Optional[bool]): True for "true", False for "false" (any case, as
        `value.lower()` in the official scorer), None for anything else.
    """
    if value is None:
        return None
    lowered = value.lower()
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    return None


def format_gap_label(value: bool) -> str:
    """RETURNS (str): "TRUE" or "FALSE", as in the GAP files."""
    return "TRUE" if value else "FALSE"


def _parse_offset(path: Path, line: int, column: str, value: str) -> int:
    if not _OFFSET_RE.fullmatch(value):
        raise DataFormatError(path, line, f"column {column} must be a non-negative integer, found {quote(value)}")
    return int(value)


def _parse_label(path: Path, line: int, column: str, value: str) -> bool:
    label = parse_gap_label(value)
    if label is None:
        raise DataFormatError(path, line, f"column {column} must be TRUE or FALSE (any case), found {quote(value)}")
    return label


def _check_mention(path: Path, line: int, column: str, text: str, string: str, offset: int) -> None:
    if not string:
        raise DataFormatError(path, line, f"column {column} is empty")
    end = offset + len(string)
    if end > len(text):
        raise DataFormatError(
            path,
            line,
            f"{column}-offset {offset} + len({quote(string)}) = {end} is outside the text ({len(text)} characters)",
        )
    found = text[offset:end]
    if found != string:
        raise DataFormatError(
            path, line, f"text at {column}-offset {offset} is {quote(found)}, not the {column} column {quote(string)}"
        )


def read_gap_rows(path: Union[str, Path]) -> Iterator[GapRow]:
    """Read and validate a GAP TSV (header row first), without tokenizing.

    Raises DataFormatError (file, line, reason) on an empty file, a missing or
    unexpected header, a row without exactly 11 tab-separated columns, an empty
    or duplicate ID, an offset that is not an integer or lies outside the text,
    text at an offset that differs from the named string, a coref value other
    than TRUE/FALSE (any case), or a file with a header and no rows. Blank lines
    are not rows (the official scorer's csv reader skips them too).

    path (Union[str, Path]): the GAP TSV.
    YIELDS (GapRow): the rows in file order.
    """
    path = Path(path)
    n_cols = len(GAP_COLUMNS)
    seen: Dict[str, int] = {}
    header_seen = False
    for line, text in iter_lines(path):
        if not header_seen:
            fields = text.split("\t")
            if tuple(fields) != GAP_COLUMNS:
                if len(fields) == n_cols and _OFFSET_RE.fullmatch(fields[3]):
                    reason = "missing header: the first line is a data row"
                else:
                    reason = f"unexpected header {quote(fields, limit=200)}"
                raise DataFormatError(path, line, f"{reason}; expected the columns {' '.join(GAP_COLUMNS)}")
            header_seen = True
            continue
        if text == "":
            continue
        fields = text.split("\t")
        if len(fields) != n_cols:
            raise DataFormatError(
                path, line, f"expected {n_cols} tab-separated columns ({' '.join(GAP_COLUMNS)}), found {len(fields)}"
            )
        ex_id, doc_text, pron, pron_off, a, a_off, a_coref, b, b_off, b_coref, url = fields
        if not ex_id:
            raise DataFormatError(path, line, "column ID is empty")
        if ex_id in seen:
            raise DataFormatError(path, line, f"duplicate ID {quote(ex_id)} (first on line {seen[ex_id]})")
        seen[ex_id] = line
        row = GapRow(
            line=line,
            id=ex_id,
            text=doc_text,
            pronoun=pron,
            pronoun_offset=_parse_offset(path, line, "Pronoun-offset", pron_off),
            a=a,
            a_offset=_parse_offset(path, line, "A-offset", a_off),
            a_coref=_parse_label(path, line, "A-coref", a_coref),
            b=b,
            b_offset=_parse_offset(path, line, "B-offset", b_off),
            b_coref=_parse_label(path, line, "B-coref", b_coref),
            url=url,
        )
        _check_mention(path, line, "Pronoun", doc_text, pron, row.pronoun_offset)
        _check_mention(path, line, "A", doc_text, a, row.a_offset)
        _check_mention(path, line, "B", doc_text, b, row.b_offset)
        yield row
    if not header_seen:
        raise DataFormatError(path, None, f"empty file: expected a header row ({' '.join(GAP_COLUMNS)}) and data rows")
    if not seen:
        raise DataFormatError(path, 1, "no data rows after the header")


@functools.lru_cache(maxsize=4)
def _blank(lang: str) -> Language:
    return spacy.blank(lang)


def _make_doc_fn(nlp_or_tokenizer: Optional[Union[Language, Callable[[str], Doc]]], lang: str) -> Callable[[str], Doc]:
    if nlp_or_tokenizer is None:
        return _blank(lang).make_doc
    if isinstance(nlp_or_tokenizer, Language):
        return nlp_or_tokenizer.make_doc
    if callable(nlp_or_tokenizer):
        return nlp_or_tokenizer
    raise TypeError(f"expected a spaCy Language or a tokenizer (str -> Doc), got {type(nlp_or_tokenizer)!r}")


def gap_row_to_doc(
    row: GapRow, make_doc: Callable[[str], Doc], *, path: Union[str, Path] = "<gap>"
) -> Tuple[Doc, List[Tuple[str, str, str]]]:
    """Make the Doc of one GAP row.

    row (GapRow): a validated row.
    make_doc (Callable[[str], Doc]): the tokenizer.
    path (Union[str, Path]): the source file, for error messages.
    RETURNS (Tuple[Doc, List[Tuple[str, str, str]]]): the Doc and its expansions
        as (label, TSV string, span text).
    """
    doc = make_doc(row.text)
    if doc.text != row.text:
        raise DataFormatError(path, row.line, "the tokenizer changed the text; character offsets cannot be mapped")
    expansions: List[Tuple[str, str, str]] = []
    spans: Dict[str, Span] = {}
    for label, string, offset in (
        (LABEL_A, row.a, row.a_offset),
        (LABEL_B, row.b, row.b_offset),
        (LABEL_PRONOUN, row.pronoun, row.pronoun_offset),
    ):
        end = offset + len(string)
        span = doc.char_span(offset, end, label=label)
        if span is None:
            span = doc.char_span(offset, end, label=label, alignment_mode="expand")
            if span is None or len(span) == 0:
                raise DataFormatError(path, row.line, f"{label} {quote(string)} at {offset} covers no token")
            expansions.append((label, string, span.text))
        spans[label] = span
    doc.spans[GAP_SPANS_KEY] = SpanGroup(
        doc, name=GAP_SPANS_KEY, spans=[spans[LABEL_A], spans[LABEL_B], spans[LABEL_PRONOUN]]
    )
    doc.user_data[GAP_USER_DATA_KEY] = {"id": row.id, "A-coref": row.a_coref, "B-coref": row.b_coref, "url": row.url}
    linked = [spans[LABEL_PRONOUN]]
    if row.a_coref:
        linked.append(spans[LABEL_A])
    if row.b_coref:
        linked.append(spans[LABEL_B])
    if len(linked) > 1:
        linked.sort(key=lambda s: (s.start, s.end))
        write_clusters(doc, [linked])
    return doc, expansions


def read_gap(
    path: Union[str, Path],
    nlp_or_tokenizer: Optional[Union[Language, Callable[[str], Doc]]] = None,
    *,
    lang: str = "en",
    stats: Optional[GapStats] = None,
) -> Iterator[Doc]:
    """Read a GAP TSV as Docs, one a row (see the module docstring).

    path (Union[str, Path]): the GAP TSV, with its header row.
    nlp_or_tokenizer (Optional[Union[Language, Callable[[str], Doc]]]): the
        pipeline whose tokenizer splits the texts, or a tokenizer; default
        spacy.blank(lang).
    lang (str): language of the blank pipeline when nlp_or_tokenizer is None.
    stats (Optional[GapStats]): updated in place with rows and expansions.
    YIELDS (Doc): one Doc a row, in file order.
    """
    make_doc: Optional[Callable[[str], Doc]] = None
    for row in read_gap_rows(path):
        if make_doc is None:  # after the first row validates: bad files fail fast
            try:
                make_doc = _make_doc_fn(nlp_or_tokenizer, lang)
            except ImportError as err:  # spacy.blank of an unknown language
                raise DataFormatError(path, None, f"unknown language code {quote(lang)} (--lang): {err}") from None
        doc, expansions = gap_row_to_doc(row, make_doc, path=path)
        if stats is not None:
            stats.rows += 1
            stats.expansions += len(expansions)
            stats.expanded_rows += bool(expansions)
            stats.expanded.extend((row.id, *exp) for exp in expansions)
        yield doc


def gap_to_docbin(
    input_path: Union[str, Path], output_path: Union[str, Path], *, lang: str = "en", gender_swap: bool = False
) -> Dict[str, int]:
    """Convert a GAP TSV to a DocBin (store_user_data=True). Nothing is written
    unless the whole file converts.

    input_path (Union[str, Path]): the GAP TSV.
    output_path (Union[str, Path]): the .spacy file to write.
    lang (str): language whose blank tokenizer splits the texts.
    gender_swap (bool): write every text with its third-person pronouns
        swapped (corpora.gender_swap; same IDs, spans and labels), to score a
        model on the same texts with the other gender against the original
        gold file: the per-gender F1 then measures the model's own gender gap,
        apart from how hard each gender's texts are.
    RETURNS (Dict[str, int]): rows, docs, expansions, expanded_rows, tokens,
        links (positive A/B labels).
    """
    refuse_overwriting_input([input_path], output_path)
    stats = GapStats()
    docbin = DocBin(store_user_data=True)
    n_docs = n_tokens = n_links = 0
    for doc in read_gap(input_path, lang=lang, stats=stats):
        if gender_swap:
            doc = gender_swapped_doc(doc)
        docbin.add(doc)
        n_docs += 1
        n_tokens += len(doc)
        data = doc.user_data[GAP_USER_DATA_KEY]
        n_links += int(data["A-coref"]) + int(data["B-coref"])
    with atomic_output(output_path) as tmp:
        docbin.to_disk(tmp)
    return {
        "rows": stats.rows,
        "docs": n_docs,
        "expansions": stats.expansions,
        "expanded_rows": stats.expanded_rows,
        "tokens": n_tokens,
        "links": n_links,
    }


def write_gap_system_rows(rows: Iterable[Tuple[str, bool, bool]], path: Union[str, Path]) -> int:
    """Write a GAP system file: ID<TAB>A-coref<TAB>B-coref lines (TRUE/FALSE,
    no header), atomically.

    rows (Iterable[Tuple[str, bool, bool]]): (ID, A linked, B linked).
    path (Union[str, Path]): the system TSV to write (nothing on error).
    RETURNS (int): rows written.
    """
    n_rows = 0
    with atomic_output(path) as tmp:
        with tmp.open("w", encoding="utf-8", newline="") as file_:
            for ex_id, a_linked, b_linked in rows:
                file_.write(f"{ex_id}\t{format_gap_label(a_linked)}\t{format_gap_label(b_linked)}\n")
                n_rows += 1
    return n_rows
