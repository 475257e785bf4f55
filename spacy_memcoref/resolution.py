"""Resolved text: a Doc's text with pronouns replaced by the entity they
refer to, and a map from every character of it back to `doc.text`.

It reads the clusters from the Doc's `coref_clusters_*` span groups, so it
works on the output of either model, on Docs from a DocBin and on clusters
set by hand. spaCy only (no torch). The rules, in order:

1. A cluster's representative is its first proper-noun mention, else its
   first non-pronoun mention; a cluster of pronouns only is left alone.
2. Personal pronouns (subject and object) become the representative's text;
   the representative and the other nominal mentions stay as they are.
3. Possessives become the representative's possessive ("Alice's", "the kids'");
   standalone "hers", "theirs", ... likewise. "her" is possessive when the
   tagger says so (tag PRP$ or Poss=Yes); without a tagger when the next
   token is a word that can start a noun phrase (not punctuation, not a
   function word, not the end of the text).
4. Reflexives ("herself") are kept.
5. Case follows position: a replacement that starts a sentence is
   capitalized; a representative that began with a capitalized common word
   ("The president") is lower-cased mid-sentence.
6. Nothing is replaced twice: an edit overlapping one already made (a token
   in two clusters, a mention inside another replaced one) is skipped.
7. First- and second-person pronouns inside quotation marks are kept (they
   refer to the speaker and the listener).

Proper nouns: with a tagger, a mention holding a PROPN token; without one, a
mention holding a title-case word that is not a pronoun or a function word.
Sentence starts: the Doc's sentence boundaries when it has them, else the
first token and the tokens after ". ! ?" (and an opening quote after them).
"""
import bisect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple

from .doc_helpers.clusters import CLUSTER_PREFIX, cluster_span_groups

if TYPE_CHECKING:  # pragma: no cover
    from spacy.tokens import Doc, Span, Token

# pronoun forms, lower-cased; person 1/2 matter inside quotations
SUBJECT_OBJECT = {
    "he": 3, "him": 3, "she": 3, "it": 3, "they": 3, "them": 3,
    "i": 1, "me": 1, "we": 1, "us": 1, "you": 2, "thee": 2, "thou": 2, "ye": 2,
}  # fmt: skip
POSSESSIVE_DETERMINERS = {"his": 3, "its": 3, "their": 3, "my": 1, "our": 1, "your": 2, "thy": 2}
STANDALONE_POSSESSIVES = {"hers": 3, "theirs": 3, "mine": 1, "ours": 1, "yours": 2}
REFLEXIVES = {
    "himself", "herself", "itself", "themselves", "themself", "myself",
    "ourselves", "yourself", "yourselves", "oneself",
}  # fmt: skip
OTHER_PRONOUNS = {
    "this", "that", "these", "those", "who", "whom", "whose", "which", "what",
    "one", "ones", "someone", "somebody", "anyone", "everyone", "nobody", "something",
    "anything", "everything", "nothing", "here", "there", "where", "when",
}  # fmt: skip
PRONOUNS = set(SUBJECT_OBJECT) | set(POSSESSIVE_DETERMINERS) | set(STANDALONE_POSSESSIVES) | REFLEXIVES | {"her"} | OTHER_PRONOUNS
# words that may be capitalized without naming anything, and words after
# which an ambiguous "her" is an object, not a determiner
FUNCTION_WORDS = {
    "the", "a", "an", "this", "that", "these", "those", "some", "any", "no", "every", "each",
    "all", "both", "either", "neither", "another", "such", "what", "which", "whose",
    "and", "or", "but", "nor", "so", "yet", "if", "then", "than", "as", "because", "while",
    "when", "where", "whether", "though", "although", "since", "until", "unless", "before", "after",
    "to", "of", "in", "on", "at", "by", "for", "with", "from", "into", "onto", "about", "over", "under",
    "up", "down", "out", "off", "through", "across", "around", "against", "between", "among",
    "toward", "towards", "upon", "without", "within", "behind", "beside", "near", "like",
    "is", "are", "was", "were", "be", "been", "being", "am", "do", "does", "did", "have", "has", "had",
    "will", "would", "shall", "should", "can", "could", "may", "might", "must",
    "not", "never", "too", "very", "again", "also", "just", "only", "even", "still", "already",
    "now", "here", "there", "how", "why", "who", "whom",
    "mr", "mrs", "ms", "dr",
}  # fmt: skip
SENTENCE_END = {".", "!", "?", "...", "…"}
OPEN_QUOTES = {"“", "«", "``", "„"}
CLOSE_QUOTES = {"”", "»", "''"}
TOGGLE_QUOTES = {'"'}


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

        start (int), end (int): 0 <= start <= end <= len(self.text).
        RETURNS (Tuple[int, int]): (source_start, source_end).
        """
        if not (isinstance(start, int) and isinstance(end, int) and 0 <= start <= end <= len(self.text)):
            raise ValueError(f"need 0 <= start <= end <= {len(self.text)}, got ({start!r}, {end!r})")
        source_start = self._source_position(start, as_end=False)
        if start == end:
            return source_start, source_start
        return source_start, self._source_position(end, as_end=True)


def resolve(doc: "Doc", *, prefix: str = CLUSTER_PREFIX) -> Resolved:
    """Replace the pronouns of each cluster by its representative (the rules
    at the top of this module).

    doc (Doc): a Doc with clusters in doc.spans[f"{prefix}_{N}"] (none: the
        resolved text is doc.text).
    prefix (str): the cluster prefix.
    RETURNS (Resolved): .text, .edits, .to_source(start, end).
    """
    tagged = is_tagged(doc)
    sentence_starts = _sentence_starts(doc)
    quoted = _quoted(doc)
    candidates: List[Tuple[int, int, int, str]] = []  # (start_char, end_char, order, text)
    for cluster in cluster_span_groups(doc, prefix):
        mentions = sorted((span for span in cluster if len(span)), key=lambda s: (s.start, -s.end))
        representative = _representative(mentions, tagged)
        if representative is None:
            continue
        name = " ".join(representative.text.split())
        for mention in mentions:
            if mention.start == representative.start and mention.end == representative.end:
                continue
            form = _pronoun_form(mention, tagged, quoted)
            if form is None:
                continue
            token = mention[0]
            text = _possessive(name) if form == "possessive" else name
            text = _case(text, representative, tagged, start_of_sentence=token.i in sentence_starts)
            candidates.append((token.idx, token.idx + len(token.text), len(candidates), text))
    edits: List[Edit] = []
    shift = 0
    last_end = -1
    for start, end, _, text in sorted(candidates):
        if start < last_end:
            continue  # overlaps an edit already made: nothing is replaced twice
        target_start = start + shift
        edits.append(Edit(start, end, text, target_start, target_start + len(text)))
        shift += len(text) - (end - start)
        last_end = end
    return Resolved(doc.text, edits)


def _is_pronoun_token(token: "Token", tagged: bool) -> bool:
    if token.lower_ in PRONOUNS:
        return True
    return tagged and token.pos_ == "PRON"


def _is_proper(span: "Span", tagged: bool) -> bool:
    if tagged:
        return any(token.pos_ == "PROPN" or token.tag_ in ("NNP", "NNPS") for token in span)
    return any(
        token.is_title and token.is_alpha and token.lower_ not in PRONOUNS and token.lower_ not in FUNCTION_WORDS
        for token in span
    )


def is_tagged(doc: "Doc") -> bool:
    """Whether the Doc has part-of-speech tags (a scan of its tokens: ask
    once a Doc, not once a cluster)."""
    return doc.has_annotation("TAG") or doc.has_annotation("POS")


def representative_of(mentions: Sequence["Span"], tagged: bool) -> Optional["Span"]:
    """A cluster's representative (rule 1): its first proper-noun mention,
    else its first non-pronoun mention, else None.

    mentions (Sequence[Span]): the cluster's mentions, in text order.
    tagged (bool): is_tagged(doc).
    """
    return _representative(mentions, tagged)


def _representative(mentions: Sequence["Span"], tagged: bool) -> Optional["Span"]:
    nominal = [m for m in mentions if not (len(m) == 1 and _is_pronoun_token(m[0], tagged))]
    for mention in nominal:
        if _is_proper(mention, tagged):
            return mention
    return nominal[0] if nominal else None


def _pronoun_form(mention: "Span", tagged: bool, quoted: Sequence[bool]) -> Optional[str]:
    """'personal', 'possessive' or None (kept) for a mention."""
    if len(mention) != 1:
        return None
    token = mention[0]
    word = token.lower_
    person = SUBJECT_OBJECT.get(word) or POSSESSIVE_DETERMINERS.get(word) or STANDALONE_POSSESSIVES.get(word)
    if word == "her":
        person = 3
    if person is None:
        return None  # reflexives, relatives, demonstratives and nouns are kept
    if person in (1, 2) and quoted[token.i]:
        return None
    if word == "her":
        return "possessive" if _her_is_possessive(token, tagged) else "personal"
    if word in SUBJECT_OBJECT:
        return "personal"
    return "possessive"


def _her_is_possessive(token: "Token", tagged: bool) -> bool:
    if tagged and token.tag_:
        return token.tag_ == "PRP$"
    if tagged and token.morph.get("Poss"):
        return token.morph.get("Poss") == ["Yes"]
    if tagged and token.pos_:
        return token.pos_ == "DET"
    doc = token.doc
    if token.i + 1 >= len(doc):
        return False
    following = doc[token.i + 1]
    if not (following.is_alpha or following.like_num) or following.lower_ in FUNCTION_WORDS or following.lower_ in PRONOUNS:
        return False
    return True


def _possessive(name: str) -> str:
    return name + ("'" if name.endswith(("s", "S")) else "'s")


def _case(text: str, representative: "Span", tagged: bool, *, start_of_sentence: bool) -> str:
    if not text:
        return text
    if start_of_sentence:
        return text[0].upper() + text[1:]
    first = representative[0]
    common = first.pos_ != "PROPN" if tagged and first.pos_ else (first.lower_ in FUNCTION_WORDS or first.lower_ in PRONOUNS)
    if first.is_title and common:
        return text[0].lower() + text[1:]
    return text


def _sentence_starts(doc: "Doc") -> set:
    if doc.has_annotation("SENT_START"):
        return {token.i for token in doc if token.is_sent_start}
    starts = {0}
    after_end = False
    quotes = OPEN_QUOTES | CLOSE_QUOTES | TOGGLE_QUOTES
    for token in doc:
        if token.text in SENTENCE_END:
            after_end = True
        elif after_end and token.text not in quotes:
            starts.add(token.i)
            after_end = False
    return starts


def _quoted(doc: "Doc") -> List[bool]:
    """For each token, whether it stands inside quotation marks."""
    inside = False
    flags = []
    for token in doc:
        text = token.text
        if text in OPEN_QUOTES:
            inside = True
            flags.append(False)
        elif text in CLOSE_QUOTES:
            inside = False
            flags.append(False)
        elif text in TOGGLE_QUOTES:
            inside = not inside
            flags.append(False)
        else:
            flags.append(inside)
    return flags


def resolved_text(doc: "Doc") -> str:
    """doc._.coref_resolved: resolve(doc).text, computed when read."""
    return resolve(doc).text


def register_extension() -> None:
    """Register doc._.coref_resolved (a getter: nothing stored on the Doc)."""
    from spacy.tokens import Doc

    if not Doc.has_extension("coref_resolved"):
        Doc.set_extension("coref_resolved", getter=resolved_text)


# the edits of a Resolved as JSON-ready records (annotate --resolved)
def edits_as_records(resolved: Resolved) -> List[Dict[str, object]]:
    """RETURNS (List[Dict]): one {"source": [start, end], "target": [start,
    end], "text": inserted} a replacement."""
    return [{"source": list(e.source), "target": list(e.target), "text": e.text} for e in resolved.edits]
