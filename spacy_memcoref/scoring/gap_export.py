"""`export gap`: a GAP system file (ID<TAB>A-coref<TAB>B-coref, TRUE/FALSE,
no header) from annotated GAP Docs, decided by `gap_decisions` (the rule the
spaCy scorer uses) and written by the GAP corpus module."""

from pathlib import Path
from typing import Dict, Iterable, List, Tuple, Union

from spacy.tokens import Doc

from ..corpora.docbin import load_docbin
from ..corpora.gap import write_gap_system_rows
from ..doc_helpers.clusters import CLUSTER_PREFIX
from ..doc_helpers.gap_annotation import gap_id_from_doc
from ..errors import DataFormatError, quote
from ..util import refuse_overwriting_input
from .gap_decisions import gap_decisions_from_doc


def gap_system_rows(
    docs: Iterable[Doc], *, prefix: str = CLUSTER_PREFIX, source: Union[str, Path] = "<docs>"
) -> List[Tuple[str, bool, bool]]:
    """(ID, A linked, B linked) for every Doc, in order.

    docs (Iterable[Doc]): GAP Docs with predictions.
    prefix (str): the cluster prefix.
    source (Union[str, Path]): named in errors (the DocBin the Docs came from).
    RETURNS (List[Tuple[str, bool, bool]]): the rows.
    RAISES DataFormatError: a Doc without GAP annotation, or an ID twice.
    """
    rows: List[Tuple[str, bool, bool]] = []
    seen: Dict[str, int] = {}
    for i, doc in enumerate(docs):
        try:
            ex_id = gap_id_from_doc(doc)
            a_linked, b_linked = gap_decisions_from_doc(doc, prefix)
        except ValueError as err:
            raise DataFormatError(source, None, f"doc {i} (0-based): {err}") from None
        if ex_id in seen:
            raise DataFormatError(
                source, None, f"doc {i} (0-based): duplicate GAP ID {quote(ex_id)} (first in doc {seen[ex_id]})"
            )
        if any(c in ex_id for c in "\t\r\n"):
            raise DataFormatError(
                source, None, f"doc {i} (0-based): GAP ID {quote(ex_id)} contains a tab or line break"
            )
        seen[ex_id] = i
        rows.append((ex_id, a_linked, b_linked))
    return rows


def docbin_to_gap_system(
    input_path: Union[str, Path], output_path: Union[str, Path], *, prefix: str = CLUSTER_PREFIX
) -> int:
    """Write the GAP system file of a DocBin of annotated GAP Docs.

    input_path (Union[str, Path]): the DocBin (.spacy).
    output_path (Union[str, Path]): the system TSV to write (nothing on error).
    prefix (str): the cluster prefix.
    RETURNS (int): rows written.
    """
    from spacy.vocab import Vocab

    docbin = load_docbin(input_path)
    refuse_overwriting_input([input_path], output_path)
    rows = gap_system_rows(docbin.get_docs(Vocab()), prefix=prefix, source=Path(input_path))
    return write_gap_system_rows(rows, output_path)
