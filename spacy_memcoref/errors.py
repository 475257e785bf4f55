"""Errors raised on bad input data, naming the file, line and reason."""
from pathlib import Path
from typing import Optional, Union


class DataFormatError(ValueError):
    """Malformed input data.

    path (Union[str, Path]): the file that holds the problem.
    line (Optional[int]): 1-based line number, or None when the problem is not
        tied to one line (an empty file, an unreadable path).
    reason (str): what is wrong, in words a user can act on.
    """

    def __init__(self, path: Union[str, Path], line: Optional[int], reason: str) -> None:
        self.path = str(path)
        self.line = line
        self.reason = reason
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {reason}")
