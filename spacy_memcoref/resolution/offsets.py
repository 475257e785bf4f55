"""The offsets of a resolved text: `Edit` (one replacement, its characters
in doc.text and in the resolved text), `Resolved` (the resolved text, its
edits and `to_source`, the map from any character range of it back to
doc.text) and `edits_as_records` (the edits as JSON-ready records, for
`annotate --resolved`). Pure Python: no spaCy, nothing about words.
"""

import bisect
import numbers
from dataclasses import dataclass
from typing import Dict, List, Tuple


@dataclass(frozen=True)
class Edit:
    """One replacement: the characters [source_start, source_end) of
    doc.text became `text`, at [target_start, target_end) of the resolved
    text."""

    source_start: int
    source_end: int
    text: str
    target_start: int
    target_end: int

    @property
    def source(self) -> Tuple[int, int]:
        return (self.source_start, self.source_end)

    @property
    def target(self) -> Tuple[int, int]:
        return (self.target_start, self.target_end)


class Resolved:
    """A Doc's resolved text and its way back to the source.

    text (str): the resolved text.
    source_text (str): doc.text.
    edits (List[Edit]): the replacements, in text order.
    """

    def __init__(self, source_text: str, edits: List[Edit]) -> None:
        self.source_text = source_text
        self.edits = edits
        pieces = []
        last = 0
        for edit in edits:
            pieces.append(source_text[last : edit.source_start])
            pieces.append(edit.text)
            last = edit.source_end
        pieces.append(source_text[last:])
        self.text = "".join(pieces)
        self._target_starts = [edit.target_start for edit in edits]

    def __repr__(self) -> str:
        return f"Resolved({len(self.edits)} edits, {len(self.text)} characters)"

    def _source_position(self, position: int, *, as_end: bool) -> int:
        # the last edit starting at or before position (or before it, for an end)
        i = bisect.bisect_right(self._target_starts, position - 1 if as_end else position) - 1
        if i >= 0:
            edit = self.edits[i]
            inside = edit.target_start < position <= edit.target_end if as_end else position < edit.target_end
            if inside:
                return edit.source_end if as_end else edit.source_start
            return edit.source_end + (position - edit.target_end)
        return position

    def to_source(self, start: int, end: int) -> Tuple[int, int]:
        """The character range of doc.text that [start, end) of the resolved
        text came from: untouched characters map to themselves; a range
        touching a replacement covers the whole mention it replaced.

        start (int), end (int): integers (Python's or numpy's; not bools)
            with 0 <= start <= end <= len(self.text).
        RETURNS (Tuple[int, int]): (source_start, source_end).
        """
        for name, value in (("start", start), ("end", end)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise ValueError(f"{name} must be an integer (not a bool), got {value!r} ({type(value).__name__})")
        start, end = int(start), int(end)
        if not 0 <= start <= end <= len(self.text):
            raise ValueError(f"need 0 <= start <= end <= {len(self.text)}, got ({start}, {end})")
        source_start = self._source_position(start, as_end=False)
        if start == end:
            return source_start, source_start
        return source_start, self._source_position(end, as_end=True)


# the edits of a Resolved as JSON-ready records (annotate --resolved)
def edits_as_records(resolved: Resolved) -> List[Dict[str, object]]:
    """RETURNS (List[Dict]): one {"source": [start, end], "target": [start,
    end], "text": inserted} a replacement."""
    return [{"source": list(e.source), "target": list(e.target), "text": e.text} for e in resolved.edits]
