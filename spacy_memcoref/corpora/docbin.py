"""Reading DocBin (.spacy) files, with errors that name the file: the one
reader behind `export`, `predict`, `tune-gap-threshold` and `visualize`."""

from pathlib import Path
from typing import TYPE_CHECKING, List, Optional, Union

from ..errors import DataFormatError

if TYPE_CHECKING:  # pragma: no cover
    from spacy.tokens import Doc, DocBin
    from spacy.vocab import Vocab


# a DocBin is zlib-compressed msgpack: zlib's first byte at its default
# window size, then a check byte
ZLIB_HEADER = b"\x78"


def docbin_error(path: Union[str, Path], head: bytes, err: Exception) -> DataFormatError:
    """Why bytes starting with `head` did not load as a DocBin: a file that
    begins like one is truncated or corrupt (spaCy's own message, E1014, then
    suggests converting spaCy v2 JSON, which misleads); anything else is not
    a DocBin at all. The one home of this rule (predict, export, annotate)."""
    if head[:1] == ZLIB_HEADER:
        return DataFormatError(
            path,
            None,
            "a truncated or corrupt DocBin (.spacy) file: it starts like one but does not decompress "
            "and decode to the end (was it copied or written completely?)",
        )
    return DataFormatError(path, None, f"not a DocBin (.spacy) file: {err}")


def load_docbin(path: Union[str, Path]) -> "DocBin":
    """Load a DocBin that holds at least one Doc (user data included).

    path (Union[str, Path]): the .spacy file.
    RETURNS (DocBin): the DocBin.
    RAISES DataFormatError: no such file, not a DocBin, or no Docs in it.
    RAISES OSError: the file cannot be read.
    """
    from spacy.tokens import DocBin

    path = Path(path)
    if not path.exists():
        raise DataFormatError(path, None, "no such file (expected a DocBin .spacy file)")
    if not path.is_file():
        raise DataFormatError(path, None, "not a file (expected a DocBin .spacy file)")
    try:
        docbin = DocBin(store_user_data=True).from_disk(path)
    except OSError:
        raise
    except Exception as err:  # zlib / msgpack / srsly errors of a file that is not a DocBin
        with open(path, "rb") as file_:
            head = file_.read(2)
        raise docbin_error(path, head, err) from None
    if len(docbin) == 0:
        raise DataFormatError(path, None, "the DocBin holds no Docs")
    return docbin


def read_docbin(path: Union[str, Path], vocab: Optional["Vocab"] = None) -> List["Doc"]:
    """The Docs of a DocBin (see load_docbin for the errors).

    path (Union[str, Path]): the .spacy file.
    vocab (Optional[Vocab]): the vocab the Docs are made with (a pipeline's,
        to run it over them); default a new one (the strings come from the DocBin).
    RETURNS (List[Doc]): the Docs, in order.
    """
    from spacy.vocab import Vocab

    docbin = load_docbin(path)
    return list(docbin.get_docs(vocab if vocab is not None else Vocab()))
