"""Naming an entity: which mention of a cluster represents it and the
name it is written with (rules 1 and 2 of the package docstring).

`representative_of` picks the first proper-noun mention, else the first
mention that can name something alone (not a pronoun, a clitic or an
event's verb); `representative_name` is its text without a final
possessive marker or an aside, or the proper name inside a description
("his sister Anna" -> "Anna"). Also here: what counts as a proper noun and
as a pronoun ("US", "IT" in capitals are names), `is_tagged`, and
`_head_part`, the words of a noun phrase before "of", "who", a comma ...,
which the number of a name (agreement) reads too. spaCy Docs only.
"""

import re
from typing import TYPE_CHECKING, Optional, Sequence

from .words import (
    CAPITALS_ALSO_NAMES,
    DETERMINER_AFTER_VERB,
    FUNCTION_WORDS,
    HEAD_STOPS,
    NOMINAL_POS,
    NOMINAL_TAGS,
    NOT_NAMES,
    OPEN_QUOTES,
    OWNER_WORDS,
    PLURAL_WORDS,
    POSSESSIVE_MARKERS,
    PRONOUNS,
    RELATIVE_PRONOUNS,
    SENTENCE_END,
    SINGULAR_ENDINGS,
    SUBJECT_BEFORE_VERB,
    TOGGLE_QUOTES,
    WORD_CHARACTER,
    _apostrophes,
    _word,
)

if TYPE_CHECKING:  # pragma: no cover
    from spacy.tokens import Doc, Span, Token


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
    first = None
    for mention in mentions:
        if not _can_represent(mention, tagged):
            continue
        if _is_proper(mention, tagged):
            return mention
        if first is None:
            first = mention
    return first


def _can_represent(mention: "Span", tagged: bool) -> bool:
    """Not a lone pronoun, clitic or possessive marker ("'s" in "Let's"),
    not a lone word of another kind than a noun (_names_alone), and a name
    that holds a word character."""
    if len(mention) == 1:
        token = mention[0]
        if _is_pronoun_token(token, tagged) or _word(token) in NOT_NAMES:
            return False
        return WORD_CHARACTER.search(token.text) is not None and _names_alone(token, tagged)
    return WORD_CHARACTER.search(_name(mention, tagged)) is not None


def _names_alone(token: "Token", tagged: bool) -> bool:
    """Whether a one-word mention can name its cluster: with a tagger, a
    noun, proper noun or number; without one, a word that is not a function
    word and is a number, has a capital letter ("Alice", "MSG"; not an
    "-ing" word at a sentence start, "Using") or is a lower-case plural
    ("researchers", "people"): a lower-case word that is not plural may be a
    verb (an event mention: "swear", "left") or a mass noun, and is not
    taken; nor is a word ending in s that its neighbours make a verb ("it
    takes": `_verb_by_its_neighbours`). Left to a tagger: other verbs ending
    in "s" ("horse obeys"), a capitalized verb or adjective at a sentence
    start ("Add", "Old")."""
    if tagged and token.pos_:
        return token.pos_ in NOMINAL_POS
    if tagged and token.tag_:
        return token.tag_.startswith(NOMINAL_TAGS)
    lower = token.lower_
    if lower in FUNCTION_WORDS:
        return False  # "was", "Is", "Both"
    if token.like_num:
        return True
    if not token.is_lower:
        # a capital that starts a sentence says nothing: there an "-ing" word is a verb ("Using")
        return not (lower.endswith("ing") and _may_start_sentence(token))
    if lower in PLURAL_WORDS:
        return True
    return lower.endswith("s") and not lower.endswith(SINGULAR_ENDINGS) and not _verb_by_its_neighbours(token)


def _verb_by_its_neighbours(token: "Token") -> bool:
    """Without a tagger: whether a lower-case word ending in s is a verb
    ("it takes", "theory explains a") rather than a plural noun, by the
    words beside it: a singular subject pronoun before it ("everyone
    craves"), or a determiner after it. On OntoGUM's every such word that
    `_names_alone` would take for a plural (not a function word, not ending
    in SINGULAR_ENDINGS), by its gold tags: 198 verbs (VBZ) and 5 others
    after the pronouns (15 and 0 of them after "everyone" and the like),
    203 verbs and 41 others before the determiners ("some cases a")."""
    doc = token.doc
    before = _word(doc[token.i - 1]) if token.i > 0 else ""
    after = _word(doc[token.i + 1]) if token.i + 1 < len(doc) else ""
    return before in SUBJECT_BEFORE_VERB or after in DETERMINER_AFTER_VERB


def _may_start_sentence(token: "Token") -> bool:
    """A sentence start as one token shows it (the Doc's boundary, or ". ! ?"
    or a quote before it): cheap, for a check made once a mention."""
    if token.i == 0 or token.is_sent_start:
        return True
    before = token.doc[token.i - 1]
    return before.text in SENTENCE_END or before.text in OPEN_QUOTES or before.text in TOGGLE_QUOTES


def _is_pronoun_token(token: "Token", tagged: bool) -> bool:
    if _word(token) in PRONOUNS and _written_as_pronoun(token, tagged):
        return True
    return tagged and token.pos_ == "PRON"


def _written_as_pronoun(token: "Token", tagged: bool) -> bool:
    """False for "US", "IT" and "WHO" in capitals, which are also names:
    with a tagger unless it tags the word a pronoun; without one, unless a
    word beside it is in capitals too (shouted text). Other pronouns in
    capitals ("HIM", emphasis) are pronouns."""
    text = token.text
    if len(text) < 2 or not text.isupper() or token.lower_ not in CAPITALS_ALSO_NAMES:
        return True
    if tagged and token.pos_:
        return token.pos_ == "PRON"
    if tagged and token.tag_:
        return token.tag_.startswith(("PRP", "WP"))
    doc = token.doc
    beside = (doc[j] for j in (token.i - 1, token.i + 1) if 0 <= j < len(doc))
    return any(word.is_alpha and len(word.text) > 1 and word.is_upper for word in beside)


def _is_proper(span: "Span", tagged: bool) -> bool:
    if tagged:
        return any(token.pos_ == "PROPN" or token.tag_ in ("NNP", "NNPS") for token in span)
    return any(
        token.is_title and token.is_alpha and token.lower_ not in PRONOUNS and token.lower_ not in FUNCTION_WORDS
        for token in span
    )


def representative_name(representative: "Span", tagged: Optional[bool] = None) -> str:
    """A cluster's name (rule 2): the representative's text, whitespace runs
    made one space, without a final possessive marker ("Mary's", "Mary 's",
    "the kids'" -> "Mary", "the kids") and without a relative clause or an
    aside ("Jason , who is our editor" -> "Jason").

    representative (Span): the representative (representative_of).
    tagged (Optional[bool]): is_tagged(doc) (None: look).
    RETURNS (str): the name ("" when nothing but a marker or whitespace).
    """
    return _name(representative, is_tagged(representative.doc) if tagged is None else tagged)


def _named_part(span: "Span", end: int, tagged: bool) -> Optional["Span"]:
    """The proper name inside a description of someone, which names them
    better than the description does: after a possessive determiner ("His
    sister Anna", "her father , Władysław ,") or after a comma that follows
    a description without a name ("the company 's chief executive , Paula
    Grant"): the last run of proper-noun words, when it ends the mention
    (an apposition's closing comma aside). None when there is none."""
    doc = span.doc
    words = [i for i in range(span.start, end) if WORD_CHARACTER.search(doc[i].text)]
    if len(words) < 2:
        return None
    last = end - 1
    while last > span.start and not WORD_CHARACTER.search(doc[last].text):
        last -= 1  # the apposition's closing comma
    first = last
    while (
        first - 1 > span.start
        and _is_proper(doc[first - 1 : first], tagged)
        and doc[first - 1].lower_ not in OWNER_WORDS
    ):
        first -= 1
    if not _is_proper(doc[first : last + 1], tagged) or first == span.start:
        return None
    before = doc[span.start : first]
    opener = doc[span.start].lower_
    owned = opener in OWNER_WORDS
    # "the chief executive , Paula Grant": a description, a comma, the name
    # (not a clause: "It was happy , said Alice")
    apposition = opener in ("the", "a", "an") and doc[first - 1].text == "," and not _is_proper(before, tagged)
    return doc[first : last + 1] if owned or apposition else None


def _name(span: "Span", tagged: bool) -> str:
    end = span.end
    if len(span) > 1 and _is_possessive_marker(span[-1], span, tagged):
        end -= 1
    named = _named_part(span, end, tagged)
    if named is not None:
        return " ".join(named.text.split())
    marker_cut = end < span.end
    end = _before_aside(span, end)
    text = " ".join(span.doc[span.start : end].text.split())
    # a marker glued to the last word (a Doc made from words: "Mary's")
    straight = _apostrophes(text)
    if marker_cut or end < span.end:
        return text
    if straight.endswith("'s") and WORD_CHARACTER.search(text[:-2]):
        return text[:-2]
    if straight.endswith(("s'", "S'")) and not re.search(r"(^|\s)'", straight[:-1]):
        return text[:-1]  # "kids'", but not a quoted "'Les Misérables'"
    return text


def _before_aside(span: "Span", end: int) -> int:
    """Where a name stops before an aside of its mention: a relative clause
    after a comma, a ", 42" or a final parenthesis, where the head part
    ends: "Jason , who is our editor", "Thomas Sam , 42", "the library ( KB
    )" are named "Jason", "Thomas Sam", "the library". Kept whole: a
    relative clause without a comma ("the people who eat", which says who
    is meant), a clause past the head part ("the speed at which ..."),
    commas alone ("researchers , students and staff"), and a mention whose
    name would be a pronoun or a function word alone ("Those , who wait")."""
    doc = span.doc
    cut = end
    # the first parenthesis, wherever it opens: "the American College of Pediatricians ( ACPeds )"
    opening = next((i for i in range(span.start + 1, end) if doc[i].text == "("), None)
    head_end = span.start + len(_head_part(doc[span.start : end]))
    if opening is not None and _aside_runs_to(doc, opening, end):
        cut = opening  # not "Ultraviolet ( UV ) Radiation"
    elif head_end < end:
        word = doc[head_end].text
        following = doc[head_end + 1] if head_end + 1 < end else None
        if word == "," and following is not None:
            number_after_word = following.like_num and not doc[head_end - 1].like_num  # not "October 12 , 1859"
            if following.lower_ in RELATIVE_PRONOUNS or number_after_word:
                cut = head_end
    if cut == end:
        return end
    cut = _without_trailing_words(doc, span.start, cut)
    if cut - span.start == 1 and (_word(doc[span.start]) in PRONOUNS or _word(doc[span.start]) in FUNCTION_WORDS):
        return end
    return cut


def _aside_runs_to(doc: "Doc", open_at: int, end: int) -> bool:
    """Whether the parenthesis opened at open_at closes at the mention's end
    (or not at all), so that no word of the name follows it."""
    for i in range(open_at + 1, end):
        if doc[i].text == ")":
            return not any(WORD_CHARACTER.search(token.text) for token in doc[i + 1 : end])
    return True


def _without_trailing_words(doc: "Doc", start: int, end: int) -> int:
    """end moved back past punctuation and function words ("Sam , | 42"),
    keeping at least one token, and a quotation mark that closes a quote
    the name holds ("called " The Podcast " | (")."""
    quotes = sum(token.text in TOGGLE_QUOTES for token in doc[start:end])  # counted once
    while end > start + 1:
        token = doc[end - 1]
        if token.text in TOGGLE_QUOTES:
            if quotes % 2 == 0:
                break  # it closes a quote the name holds
            quotes -= 1  # it closes a quote that opened before the mention
        elif WORD_CHARACTER.search(token.text) and token.lower_ not in FUNCTION_WORDS:
            break
        end -= 1
    return end


def _is_possessive_marker(token: "Token", span: "Span", tagged: bool) -> bool:
    """Whether the last token of a mention is a possessive marker of its own
    ("'s", "’s"; "'" after a word ending in s, when no quote opens the span)."""
    word = _apostrophes(token.text)
    if word not in POSSESSIVE_MARKERS:
        return False
    if tagged and token.tag_:
        return token.tag_ == "POS"
    if word == "'s":
        return True
    before = span.doc[token.i - 1].text
    return before.endswith(("s", "S")) and not any(_apostrophes(t.text) == "'" or t.text == "‘" for t in span[:-1])


def _head_part(span: "Span") -> "Span":
    for k in range(1, len(span)):
        if span[k].lower_ in HEAD_STOPS:
            return span[:k]
    return span
