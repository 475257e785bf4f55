"""Speaker turns of a pasted chat transcript: one `Name: text` line a turn.

A user who pastes a chat gives no `doc.spans["speakers"]`, yet its turns
are what the s2e models' same-speaker term and the decoding rules read
(decoders/constraints.py: two speakers' "I", a speaker's name). When the
whole text has the transcript's shape, its turns are found from the text:

    Anna: Are you coming on Saturday?
    Ben: Of course! Should I bring anything?
    Anna: Maybe some drinks.

A line opens a turn when it starts with a name of one to three capitalised
words and a colon, then text. Lines that open none continue the turn
before them (a message over two lines). The text is a transcript only
when its first line opens a turn, at least three lines do, two names or
more speak and one of them twice or more, and turn lines are at least half
of its lines. A heading or header word (HEADINGS: a recipe's "Ingredients:"
and "Method:", an email's "From:" / "To:" / "Subject:", repeated in a reply
chain, a note's "PS:") opens no turn. A last line that is a name and a
colon alone opens none either: it continues the turn before it.

The search runs at prediction only: training reads a corpus's own turns.
"""

from typing import List, Optional, Tuple

import regex
from spacy.tokens import Doc, Span

SPEAKERS_KEY = "speakers"  # the span group of speaker turns, one span a turn, label the speaker

# a turn's opening: up to three capitalised words of any script ("Anna",
# "Dr. Lee", "Mary Ann", "Łukasz", "Q") and a colon, then the turn's text on
# the same line
TURN_OPENING = regex.compile(r"[ \t]*(?P<name>\p{Lu}[\w'’.\-]*(?:[ \t]\p{Lu}[\w'’.\-]*){0,2})[ \t]*:[ \t]*\S")
# what opens a line as a heading or a header, not a turn (lower case): an
# email's headers (a reply chain repeats them), a recipe's or a form's parts
HEADINGS = frozenset(
    """from to cc bcc subject date sent re fw fwd reply-to attachment attachments note notes nb ps p.s. pps
    ingredients method directions instructions serves servings yield prep cook time total tip tips warning
    caution update edit step summary location address phone tel email e-mail website url source sources title
    author caption""".split()
)
MIN_TURNS = 3


def transcript_turns(doc: Doc) -> Optional[List[Span]]:
    """The Doc's speaker turns when its text is a chat transcript (the
    module's rule): one span a turn, from its speaker's name to its last
    line's end, label the name as written. None when the text is no
    transcript."""
    text = doc.text
    # (first non-blank char, end char, speaker name or None) a non-blank line
    lines: List[Tuple[int, int, Optional[str]]] = []
    offset = 0
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        if body.strip():
            match = TURN_OPENING.match(body)
            name = match.group("name") if match else None
            if name is not None and name.lower() in HEADINGS:
                name = None
            lines.append((offset + len(body) - len(body.lstrip()), offset + len(body), name))
        offset += len(line)
    opened = [name for _, _, name in lines if name is not None]
    if (
        not lines
        or lines[0][2] is None
        or len(opened) < MIN_TURNS
        or 2 * len(opened) < len(lines)
        or len(set(opened)) < 2
        or max(opened.count(name) for name in set(opened)) < 2
    ):
        return None
    turns: List[Span] = []
    bounds: List[Tuple[int, int, str]] = []  # a turn's (start, end, name), continuation lines joined to it
    for start, end, name in lines:
        if name is not None:
            bounds.append((start, end, name))
        else:
            bounds[-1] = (bounds[-1][0], end, bounds[-1][2])
    for start, end, label in bounds:
        span = doc.char_span(start, end, label=label, alignment_mode="expand")
        if span is not None and len(span):
            turns.append(span)
    return turns if len(turns) >= MIN_TURNS else None


def find_transcript_speakers(doc: Doc) -> bool:
    """Give a Doc without speaker turns those of its transcript
    (`transcript_turns`), in doc.spans["speakers"]; a Doc that has turns
    (a corpus's, a stream's) keeps its own. RETURNS whether turns were set."""
    if SPEAKERS_KEY in doc.spans or len(doc) == 0:
        return False
    turns = transcript_turns(doc)
    if turns is None:
        return False
    doc.spans[SPEAKERS_KEY] = turns
    return True
