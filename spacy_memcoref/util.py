"""Small helpers shared by the readers, the converters and the CLI, and the
package's one name for a mention as token indices (TokenSpan)."""

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterable, Iterator, List, Tuple, Union

from .errors import DataFormatError

# A mention (or any token range) as (start, end) token indices, both
# INCLUSIVE: doc[start : end + 1]. Every layer says TokenSpan for it.
TokenSpan = Tuple[int, int]
# clusters of mentions: each a list of TokenSpans
Clusters = List[List[TokenSpan]]


def _naming(err: OSError, path: Path) -> OSError:
    """The same error about `path` (not the temporary file it names)."""
    try:
        return type(err)(err.errno, err.strerror or str(err), str(path))
    except TypeError:  # an OSError subclass with another constructor
        return OSError(err.errno, err.strerror or str(err), str(path))


def current_umask() -> int:
    """The process's umask (reading it means setting it; it is set back at once)."""
    umask = os.umask(0)
    os.umask(umask)
    return umask


@contextlib.contextmanager
def atomic_output_dir(path: Union[str, Path]) -> Iterator[Path]:
    """Yield a temporary folder beside `path`; move it into place only on success.

    A folder written half-way (a pipeline whose save failed) must never look
    like a finished one. mkdtemp makes the folder private (0700); it gets the
    mode a plain mkdir would give (0777 less the umask) before it is moved,
    so the result reads like any other folder the user writes.

    path (Union[str, Path]): the final folder: new, or an empty folder (replaced).
    YIELDS (Path): the temporary folder to write into.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        yield tmp
        os.chmod(tmp, 0o777 & ~current_umask())
        if path.is_dir():
            path.rmdir()  # empty, or this raises rather than lose anything
        tmp.rename(path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


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
            os.chmod(tmp_path, 0o666 & ~current_umask())
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


def _inside(path: Path, folder: Path) -> bool:
    """Whether `path` lies below `folder` (both resolved, so "x/../x/y" and
    a symbolic link to the folder count)."""
    return folder.resolve() in path.resolve().parents


def _refuse(output: Path, reason: str) -> None:
    raise DataFormatError(output, None, f"{reason}; give another output path")


def refuse_overwriting_input(inputs: Iterable[Union[str, Path]], output: Union[str, Path]) -> None:
    """Raise when the output path and an input path are the same or one lies
    inside the other: writing the output would destroy or change what is
    read (a DocBin written over a corpus file, a file written into the
    folder a converter searches, a pipeline written into the pipeline it
    copies, a folder of inputs replaced by a file). The one home of this
    rule for every command that reads files and writes one.

    inputs (Iterable[Union[str, Path]]): the files, and the folders whose
        files, a command reads (for a folder it searches: the folder).
    output (Union[str, Path]): the file or folder it writes.
    RAISES DataFormatError: naming the output and the input.
    """
    output = Path(output)
    sources = [Path(source) for source in inputs]
    # the most precise reason first: a file that is read is named as such,
    # even when the folder it was found in is an input too
    for source in sources:
        if same_file(source, output):
            _refuse(output, f"the output is also the input {source}: writing it would destroy the input")
    for source in sources:
        if source.is_dir() and _inside(output, source):
            _refuse(output, f"the output is inside the input folder {source}: writing it would change the input")
        if _inside(source, output):
            _refuse(output, f"the output is a folder that holds the input {source}: writing it would destroy the input")


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


def file_sha256(path) -> str:
    """RETURNS (str): the hex SHA-256 of a file's bytes, read a MiB at a time."""
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as file_:
        for block in iter(lambda: file_.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
