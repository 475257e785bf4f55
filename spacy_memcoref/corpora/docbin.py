"""Reading DocBin (.spacy) files, with errors that name the file: the one
reader behind `export`, `predict`, `tune-gap-threshold` and `visualize`."""
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional, Union

from ..errors import DataFormatError

if TYPE_CHECKING:  # pragma: no cover
    from spacy.tokens import Doc, DocBin
    from spacy.vocab import Vocab


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
        raise DataFormatError(path, None, f"not a DocBin (.spacy) file: {err}") from None
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
