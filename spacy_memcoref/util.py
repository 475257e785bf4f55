"""Small helpers shared by the readers, the converters and the CLI."""
import contextlib
import os
import tempfile
from pathlib import Path
from typing import Iterable, Iterator, Tuple, Union

from .errors import DataFormatError


def _naming(err: OSError, path: Path) -> OSError:
    """The same error about `path` (not the temporary file it names)."""
    try:
        return type(err)(err.errno, err.strerror or str(err), str(path))
    except TypeError:  # an OSError subclass with another constructor
        return OSError(err.errno, err.strerror or str(err), str(path))


@contextlib.contextmanager
def atomic_output(path: Union[str, Path]) -> Iterator[Path]:
    """Yield a temporary path beside `path`; move it into place only on success.

    A converter that fails half-way must never leave a half-written output
    file, so writers write to the temporary path and this renames it at the
    end. An OSError about the temporary file (disk full, no permission, the
    output is a directory) is raised naming `path`, the file the user asked for.

    path (Union[str, Path]): the final output path.
    YIELDS (Path): the temporary path to write to.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as err:
        raise _naming(err, path) from None
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        try:
            yield tmp_path
            # mkstemp makes the file private (0600); give it the usual umask mode
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp_path, 0o666 & ~umask)
            os.replace(tmp_path, path)
        except OSError as err:
            if str(tmp_path) not in (err.filename, err.filename2):
                raise
            raise _naming(err, path) from None
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def same_file(first: Union[str, Path], second: Union[str, Path]) -> bool:
    """True when two paths name one file: the same resolved path, or the same
    file under two names (a hard or symbolic link)."""
    first, second = Path(first), Path(second)
    try:
        if first.exists() and second.exists():
            return os.path.samefile(first, second)
    except OSError:
        pass
    return first.resolve() == second.resolve()


def refuse_overwriting_input(inputs: Iterable[Union[str, Path]], output: Union[str, Path]) -> None:
    """Raise when the output path is one of the inputs: writing it would
    destroy the input.

    inputs (Iterable[Union[str, Path]]): the files a command reads.
    output (Union[str, Path]): the file it writes.
    RAISES DataFormatError: naming the output and the input.
    """
    for source in inputs:
        if same_file(source, output):
            raise DataFormatError(
                output, None, f"the output is also the input {source}: writing it would destroy the input; "
                "give another output path"
            )


def iter_lines(path: Union[str, Path]) -> Iterator[Tuple[int, str]]:
    """Yield (1-based line number, line without its line ending) of a UTF-8
    text file. A byte-order mark at the start is dropped.

    path (Union[str, Path]): the file.
    YIELDS (Tuple[int, str]): line number and text.
    """
    with Path(path).open("rb") as file_:
        for i, raw in enumerate(file_, start=1):
            if raw.endswith(b"\n"):
                raw = raw[:-1]
            if raw.endswith(b"\r"):
                raw = raw[:-1]
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise DataFormatError(path, i, f"not valid UTF-8 ({err.reason} at byte {err.start})") from None
            if i == 1 and text.startswith("\ufeff"):
                text = text[1:]
            yield i, text
