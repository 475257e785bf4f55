"""The package's errors: bad input data (naming the file, line and reason), a
model that cannot be loaded (naming the file), and the failures of corpus
annotation (which the annotate engines raise and the runner and the CLI
catch); and the helpers that keep their messages short."""

from pathlib import Path
from typing import Any, Optional, Union

# Longest quoted input in a message, and longest reason: a 10 MB bad field
# must not be echoed whole to the terminal.
QUOTE_LIMIT = 60
REASON_LIMIT = 600


def quote(value: Any, limit: int = QUOTE_LIMIT) -> str:
    """repr() of a piece of input for an error message, cut to a readable length.

    value (Any): the offending input (usually a str).
    limit (int): the longest repr kept whole.
    RETURNS (str): e.g. `'(12'`, or `'xxxx...xx' (10000000 characters)` when long.
    """
    text = repr(value)
    if len(text) <= limit:
        return text
    head = max(limit * 2 // 3, 1)
    tail = max(limit - head - 3, 1)
    size = f" ({len(value) if isinstance(value, (str, bytes)) else len(text)} characters)"
    return f"{text[:head]}...{text[-tail:]}{size}"


def clip(text: str, limit: int = QUOTE_LIMIT) -> str:
    """`text` as it is when short, else cut like `quote` (without the quotes)."""
    if len(text) <= limit:
        return text
    head = max(limit * 2 // 3, 1)
    return f"{text[:head]}...{text[-max(limit - head - 3, 1) :]} ({len(text)} characters)"


def shorten(message: str, limit: int = REASON_LIMIT) -> str:
    """A message cut in the middle when it is longer than `limit` characters."""
    if len(message) <= limit:
        return message
    head = limit * 3 // 4
    tail = limit - head
    return f"{message[:head]} ...[{len(message) - head - tail} characters cut]... {message[-tail:]}"


class DataFormatError(ValueError):
    """Malformed input data.

    path (Union[str, Path]): the file that holds the problem.
    line (Optional[int]): 1-based line number, or None when the problem is not
        tied to one line (an empty file, an unreadable path).
    reason (str): what is wrong, in words a user can act on (cut to
        REASON_LIMIT characters; quote input with `quote`).
    """

    def __init__(self, path: Union[str, Path], line: Optional[int], reason: str) -> None:
        self.path = str(path)
        self.line = line
        self.reason = shorten(reason)
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {self.reason}")


class ModelLoadError(ValueError):
    """A component's model that cannot be loaded from its saved bytes: a
    truncated or corrupt file, weights that fail their checksum or are refused.
    Raised `from` the deserializer's own error.

    source (Union[str, Path]): the file the bytes were read from (a Path), or
        what they are when they come from no file (a str, e.g. "the 'memcoref'
        component's model bytes").
    what (str): the model, e.g. "the coreference model".
    reason (str): why, usually the deserializer's message (cut to REASON_LIMIT
        characters).
    """

    def __init__(self, source: Union[str, Path], what: str, reason: str) -> None:
        self.path: Optional[Path] = source if isinstance(source, Path) else None
        self.reason = shorten(" ".join(reason.split()) or "unknown error")
        super().__init__(f"{source}: cannot load {what}: {self.reason}")


class AnnotateError(RuntimeError):
    """Corpus annotation's workers failed (a process that keeps dying, a
    failed Ray job); the shards written so far are kept."""


class Terminated(AnnotateError):
    """The annotate run was stopped by SIGTERM: the workers were stopped and
    the shards written so far are kept, so that a rerun resumes."""


class CheckpointError(ValueError):
    """A training checkpoint that cannot be continued: of another config or
    format, damaged, or none where one was asked for.

    path (Optional[Path]): the checkpoint (or output) folder, where known.
    reason (str): why.
    """

    def __init__(self, path: Optional[Path], reason: str) -> None:
        self.path = Path(path) if path is not None else None
        self.reason = shorten(reason)
        super().__init__(f"{path}: {self.reason}" if path is not None else self.reason)


class TrainingStopped(RuntimeError):
    """Training stopped at a signal (SIGTERM, SIGINT) or at a requested step,
    after writing a checkpoint that `memcoref train --resume` continues.

    step (int): the updates done.
    checkpoint (Path): the checkpoint written.
    """

    def __init__(self, step: int, checkpoint: Path) -> None:
        self.step = step
        self.checkpoint = Path(checkpoint)
        super().__init__(f"training stopped after {step} updates; checkpoint {checkpoint}")


class PretrainedError(ValueError):
    """A shipped model that cannot be found, or whose files fail their checks."""


class EncoderNotFound(PretrainedError):
    """A shipped model's base encoder is nowhere to be found (encoder_source)."""


class EncoderMismatch(PretrainedError):
    """A base encoder was found, but its weights are not the ones trained on."""
