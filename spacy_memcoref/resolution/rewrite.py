"""The rewrite: `resolve` puts each cluster's name in place of its
pronouns (personal, possessive, with a clitic or a verb that agrees) and
returns the `Resolved` text with its edits; `resolved_text` and
`register_extension` give it as doc._.coref_resolved. It decides which
mentions are replaced and in which form (`_pronoun_form`: personal or
possessive, "her" either; first and second persons kept inside
quotations), writes the possessive and the case a position asks for, and
applies the edits so that nothing is replaced twice (rules 3, 4 and 6 to 9
of the package docstring); the name comes from `naming`, the verb forms
from `agreement`.
"""

import bisect
from typing import TYPE_CHECKING, List, Optional, Sequence, Tuple

from ..doc_helpers.clusters import CLUSTER_PREFIX, cluster_span_groups
from .agreement import _agreeing_verb, _clitic_after, _expanded_clitic, _NameNumber
from .naming import _name, _named_part, _representative, _written_as_pronoun, is_tagged
from .offsets import Edit, Resolved
from .words import (
    CLOSE_QUOTES,
    FUNCTION_WORDS,
    NAME_LABELS,
    OPEN_QUOTES,
    OWNER_WORDS,
    POSSESSIVE_DETERMINERS,
    PRONOUNS,
    SENTENCE_END,
    STANDALONE_POSSESSIVES,
    SUBJECT_OBJECT,
    TOGGLE_QUOTES,
    _word,
)

if TYPE_CHECKING:  # pragma: no cover
    from spacy.tokens import Doc, Span, Token


def resolve(doc: "Doc", *, prefix: str = CLUSTER_PREFIX) -> Resolved:
    """Replace the pronouns of each cluster by its representative (the rules
    in the package docstring).

    doc (Doc): a Doc with clusters in doc.spans[f"{prefix}_{N}"] (none: the
        resolved text is doc.text).
    prefix (str): the cluster prefix.
    RETURNS (Resolved): .text, .edits, .to_source(start, end).
    """
    tagged = is_tagged(doc)
    parsed = doc.has_annotation("DEP")
    sentence_starts = _sentence_starts(doc)
    sorted_starts = sorted(sentence_starts)
    quoted = _quoted(doc)
    # (start_char, end_char, order, text, the order of the edit it needs or None)
    candidates: List[Tuple[int, int, int, str, Optional[int]]] = []
    for cluster in cluster_span_groups(doc, prefix):
        mentions = sorted((span for span in cluster if len(span)), key=lambda s: (s.start, -s.end))
        representative = _representative(mentions, tagged)
        if representative is None:
            continue
        name = _name(representative, tagged)
        # the words the name is made of: the name inside a description ("Władysław"), or all
        named = _named_part(representative, representative.end, tagged) or representative
        name_is_plural = _NameNumber(representative, tagged, parsed)
        # "her father" names him only in its own sentence: elsewhere "her" may be someone else
        owned = any(word.lower() in OWNER_WORDS for word in name.split())
        home = _sentence_of(representative.start, sorted_starts) if owned else 0
        for mention in mentions:
            if representative.start <= mention.start and mention.end <= representative.end:
                continue  # the representative, or a mention inside it: kept
            if owned and _sentence_of(mention.start, sorted_starts) != home:
                continue
            form = _pronoun_form(mention, tagged, quoted)
            if form is None:
                continue
            token = mention[0]
            end = token.idx + len(token.text)
            text = _possessive(name) if form == "possessive" else name
            clitic = _clitic_after(token)
            agreeing = None
            if clitic is None:
                agreeing = _agreeing_verb(token, name_is_plural, tagged, parsed, form)
            else:
                verb = _expanded_clitic(token, clitic, name_is_plural, tagged, form)
                if verb is None:
                    continue  # an ambiguous clitic: the pronoun is left alone
                text = f"{text} {verb}"
                end = clitic.idx + len(clitic.text)
            text = _case(text, named, tagged, capitalized=token.i in sentence_starts or _capitalized_pronoun(token))
            order = len(candidates)
            candidates.append((token.idx, end, order, text, None))
            if agreeing is not None:
                verb_token, form_text = agreeing
                candidates.append(
                    (verb_token.idx, verb_token.idx + len(verb_token.text), len(candidates), form_text, order)
                )
    edits: List[Edit] = []
    shift = 0
    last_end = -1
    made = set()
    for start, end, order, text, needs in sorted(candidates):
        if start < last_end or (needs is not None and needs not in made):
            # overlaps an edit already made (nothing is replaced twice), or
            # a verb whose pronoun was not replaced
            continue
        made.add(order)
        target_start = start + shift
        edits.append(Edit(start, end, text, target_start, target_start + len(text)))
        shift += len(text) - (end - start)
        last_end = end
    return Resolved(doc.text, edits)


def resolved_text(doc: "Doc") -> str:
    """doc._.coref_resolved: resolve(doc).text, computed when read."""
    return resolve(doc).text


def register_extension() -> None:
    """Register doc._.coref_resolved (a getter: nothing stored on the Doc)."""
    from spacy.tokens import Doc

    if not Doc.has_extension("coref_resolved"):
        Doc.set_extension("coref_resolved", getter=resolved_text)


def _pronoun_form(mention: "Span", tagged: bool, quoted: Sequence[bool]) -> Optional[str]:
    """'personal', 'possessive' or None (kept) for a mention."""
    if len(mention) != 1:
        return None
    token = mention[0]
    word = _word(token)
    if not _written_as_pronoun(token, tagged):
        return None  # "US", "IT"
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
    if tagged and token.morph.get("Poss"):  # type: ignore[call-arg]  # the stub omits get's default=None
        return token.morph.get("Poss") == ["Yes"]  # type: ignore[call-arg]  # the stub omits get's default=None
    if tagged and token.pos_:
        return token.pos_ == "DET"
    doc = token.doc
    if token.i + 1 >= len(doc):
        return False
    following = doc[token.i + 1]
    if (
        not (following.is_alpha or following.like_num)
        or following.lower_ in FUNCTION_WORDS
        or following.lower_ in PRONOUNS
    ):
        return False
    return True


def _possessive(name: str) -> str:
    """One possessive marker: "'" after a final s ("James'", "the kids'"),
    else "'s"."""
    return name + ("'" if name.endswith(("s", "S")) else "'s")


def _capitalized_pronoun(token: "Token") -> bool:
    """A pronoun written with a capital where no sentence boundary was found
    (after an opening quote, a dash, in a title): its replacement keeps the
    capital. "I" is always written so and says nothing."""
    return token.is_title and token.lower_ != "i"


def _case(text: str, representative: "Span", tagged: bool, *, capitalized: bool) -> str:
    if not text:
        return text
    if capitalized:
        return text[0].upper() + text[1:]
    first = representative[0]
    if tagged and first.pos_:
        # a name's adjective keeps its capital ("Dutch cough drops"), not "Two men" or "The"
        named = first.ent_type_ in NAME_LABELS and first.pos_ not in ("DET", "NUM")
        common = first.pos_ != "PROPN" and not named
    else:
        common = first.lower_ in FUNCTION_WORDS or first.lower_ in PRONOUNS
    if first.is_title and common:
        return text[0].lower() + text[1:]
    return text


def _sentence_of(i: int, starts: List[int]) -> int:
    """The start of the sentence that holds token i (`starts`: the sorted
    sentence starts)."""
    at = bisect.bisect_right(starts, i) - 1
    return starts[at] if at >= 0 else 0


def _sentence_starts(doc: "Doc") -> set:
    if doc.has_annotation("SENT_START"):
        return {token.i for token in doc if token.is_sent_start}
    starts = {0}
    after_end = False
    quotes = OPEN_QUOTES | CLOSE_QUOTES | TOGGLE_QUOTES
    for token in doc:
        if token.text in SENTENCE_END:
            after_end = True
        elif after_end and token.text not in quotes and not token.is_space:
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
