"""Agreement: the verb after a pronoun made to agree with the name that
replaces it (rule 5 of the package docstring).

A verb clitic after a subject pronoun is written out in full ("I'm" ->
"Alice is", "they've" -> "the kids have"; `_expanded_clitic`), or the
pronoun is left alone when "'s" or "'d" is ambiguous; a subject "I", "you"
or "they" replaced by a singular name has its verb made singular ("I say"
-> "Alice says"; `_agreeing_verb`), read from the tags when the Doc has
them and from the spelling when it has none; and the number of a name
(`_is_plural`, `_NameNumber`), which "you" and "they" take.

Why not lemminflect (the English inflection library made for spaCy): the
two things it could do here it does no better than the word lists, and
it costs a dependency, 0.5 s to load its tables and, on import, the
extensions `Token._.lemma` and `Token._.inflect` on every spaCy Token.
Measured on OntoGUM's train and dev documents with lemminflect 0.2.3
(`python benchmarks/resolution_agreement.py ... --lemminflect`): the
third person singular (`_third_singular`) of the 173 verbs the rules
change after "I", "you" and "they" is the same from
`getInflection(verb, "VBZ")` for all 173; as a past participle test
(`_may_be_participle`, after a subject's "'s" / "'d") the lists agree
with the gold VBN tag on 407 of the 415 words and lemminflect on 402 (it
has "gotten" for "get", "blent" for "blend"). In place of
`_third_singular` it changes none of the 5,579 edits resolve makes on the
gold clusters without tags (OntoGUM's CoNLL-2012 files), in place of
`_may_be_participle` one ("it 's blended" written out, by the "blent"
gap); the hand-written cases of tests/test_resolution.py come out the same.
"""

from typing import TYPE_CHECKING, Dict, Optional, Tuple

from .naming import _head_part
from .words import (
    AGREEMENT_SUBJECTS,
    AUXILIARIES,
    BARE_CLITICS,
    CAUSATIVES,
    CLAUSE_OPENERS,
    CLITIC_ADVERBS,
    CLITICS,
    COORDINATORS,
    FUNCTION_WORDS,
    HAD_NEXT,
    HAS_NEXT,
    INTERJECTIONS,
    IRREGULAR_THIRD_SINGULAR,
    NOT_INFLECTED,
    NOT_PRESENT_VERBS,
    OBJECT_PRONOUNS,
    PARTICIPLE_OR_BASE,
    PARTICIPLES,
    PLURAL_WORDS,
    PRONOUNS,
    QUANTIFIERS,
    RELATIVE_DETERMINERS,
    SINGULAR_DETERMINERS,
    SINGULAR_ENDINGS,
    SINGULAR_FORMS,
    SINGULAR_NAME_ENDINGS,
    SUBJECTS,
    SUBJUNCTIVE_AFTER_I,
    VERB_AFTER_SUBJECT,
    WOULD_NEXT,
    _apostrophes,
    _word,
)

if TYPE_CHECKING:  # pragma: no cover
    from spacy.tokens import Span, Token


def _clitic_after(token: "Token") -> Optional["Token"]:
    """The verb clitic right after a token ("'m" after "I"), if any."""
    doc = token.doc
    if token.i + 1 >= len(doc):
        return None
    following = doc[token.i + 1]
    word = _apostrophes(following.lower_)
    if word in CLITICS or (word in BARE_CLITICS and not token.whitespace_):
        return following
    return None


class _NameNumber:
    """Whether a cluster's name is plural (`_is_plural`), worked out once a
    cluster and only when a pronoun asks: resolve stays linear in the text."""

    def __init__(self, representative: "Span", tagged: bool, parsed: bool) -> None:
        self.representative, self.tagged, self.parsed = representative, tagged, parsed
        self.plural: Dict[bool, bool] = {}

    def __call__(self, they: bool = False) -> bool:
        """they: the pronoun replaced is "they" (`_is_plural`)."""
        if they not in self.plural:
            self.plural[they] = _is_plural(self.representative, self.tagged, self.parsed, they=they)
        return self.plural[they]


def _expanded_clitic(
    pronoun: "Token", clitic: "Token", name_is_plural: _NameNumber, tagged: bool, form: str
) -> Optional[str]:
    """The clitic written out to agree with the name (rule 5), or None to
    leave the pronoun alone."""
    word = pronoun.lower_
    if form != "personal" or word not in SUBJECTS:
        return None  # "her's", "him'll": not a subject; kept as written
    plural = SUBJECTS[word]
    if plural is None:
        plural = name_is_plural(they=word == "they")
    kind = _apostrophes(clitic.lower_).lstrip("'")
    if kind in ("m", "re"):
        return "are" if plural else "is"
    if kind == "ve":
        return "have" if plural else "has"
    if kind == "ll":
        return "will"
    following = _verb_after(clitic)
    if kind == "s":
        if following is not None and following.lower_ in HAS_NEXT:
            return "have" if plural else "has"
        if following is not None and _may_be_participle(following, tagged):
            return None  # "he's gone": is or has
        return "are" if plural else "is"
    # "'d": had or would
    if following is None:
        return None
    lower = following.lower_
    if lower in HAD_NEXT:
        return "had"
    if tagged and following.tag_ in ("VBN", "VB"):
        return "had" if following.tag_ == "VBN" else "would"
    if lower in PARTICIPLE_OR_BASE or lower.endswith("eed"):
        return None  # "I'd put", "I'd agreed" / "I'd need": either
    if _may_be_participle(following, tagged):
        return "had"
    if lower in WOULD_NEXT or (following.is_alpha and lower not in FUNCTION_WORDS and lower not in PRONOUNS):
        return "would"
    return None


def _agreeing_verb(
    pronoun: "Token", name_is_plural: _NameNumber, tagged: bool, parsed: bool, form: str
) -> Optional[Tuple["Token", str]]:
    """The verb after a subject "I", "you" or "they" and its form after the
    singular name that replaces the pronoun (rule 5): a form of be, have or
    do ("I am" -> "Alice is", "you don't" -> "Bob doesn't"), or any
    present-tense verb ("I say" -> "Alice says"): with a tagger one tagged
    VBP, without one a word after "I" or "they", or after "you" where a
    clause starts (`_opens_clause`: "if you want", "the countries you own",
    not "thank you so"), that reads as one (`_reads_as_present_verb`).
    None when nothing changes: a plural name, another verb, an object
    pronoun, an auxiliary before the pronoun ("do you have", "why don't you
    have"), "you" after a causative ("let you have"), a coordinated subject
    ("Bob and I are"), the subjunctive "I were", and with a tagger a form of
    be, have or do not tagged VBP/VBD. "am" follows "I" alone and always
    becomes "is"."""
    word = _word(pronoun)
    if form != "personal" or word not in AGREEMENT_SUBJECTS:
        return None
    doc = pronoun.doc
    if parsed and (pronoun.dep_ not in ("nsubj", "nsubjpass") or any(c.dep_ == "conj" for c in pronoun.children)):
        return None
    before = _word_before(pronoun)
    if before in AUXILIARIES or before in CLITICS:
        return None  # "do you have", "why do n't you have", "what'd you do"
    if word == "you" and before in CAUSATIVES:
        return None  # "let you have": "you" is the object
    verb = _word_after(pronoun)
    if verb is None:
        return None
    lower = _word(verb)
    if lower != "am":
        if pronoun.i + 1 < len(doc) and _word(doc[pronoun.i + 1]) in COORDINATORS:
            return None
        if not parsed and _coordinated_after(pronoun):
            return None
        if word != "i" and name_is_plural(they=word == "they"):
            return None  # "they are" -> "the kids are"
        if word == "i" and lower in SUBJUNCTIVE_AFTER_I:
            return None  # "if I were you"
    if lower in SINGULAR_FORMS:
        if tagged and verb.tag_ and verb.tag_ not in ("VBP", "VBD"):
            return None  # a base form: "let you have"
        singular = SINGULAR_FORMS[lower]
    elif verb.tag_:
        if verb.tag_ != "VBP" or not verb.is_alpha or lower in NOT_INFLECTED:
            return None
        singular = _third_singular(lower)
    elif (
        verb.pos_ in ("", "VERB", "AUX")
        and _reads_as_present_verb(verb)
        and (word != "you" or _opens_clause(pronoun, before))
    ):
        # no tag: the spelling decides (a pipeline with a POS but no TAG: a verb)
        singular = _third_singular(lower)
    else:
        return None
    if "’" in verb.text:
        singular = singular.replace("'", "’")
    if verb.text.isupper() and len(verb.text) > 1:
        singular = singular.upper()
    elif verb.text[:1].isupper():
        singular = singular[0].upper() + singular[1:]
    return verb, singular


def _reads_as_present_verb(token: "Token") -> bool:
    """Without a tag: whether the word after a subject "I", "you" or "they"
    reads as a verb in the present tense ("say", "guess"): a word in lower
    case, not a function word, a pronoun, a modal ("ca" of "ca n't",
    "wanna"), a past form or participle ("went", "said", "asked"), an -ing
    form, an adverb ("kinda", "once", "simply"; not "apply"), the first half
    of a hyphenated word ("double-check"), or a word that ends in a single
    "s" ("you guys", "I sometimes"; "I guess" is one)."""
    text = token.text
    lower = _word(token)
    if not token.is_alpha or not text.islower() or len(text) < 2:
        return False
    doc = token.doc
    following = doc[token.i + 1] if token.i + 1 < len(doc) else None
    if following is not None and _word(following) == "n't":
        return False  # "ca n't", "wo n't": a modal
    if following is not None and following.text == "-" and not token.whitespace_:
        return False  # "double-check", "co-wrote": the word is the hyphenated whole
    if lower in VERB_AFTER_SUBJECT:
        return True
    if lower in FUNCTION_WORDS or lower in PRONOUNS or lower in NOT_INFLECTED or lower in BARE_CLITICS:
        return False
    if lower in PARTICIPLES or lower in NOT_PRESENT_VERBS or lower in INTERJECTIONS:
        return False
    if lower.endswith(("ed", "ing", "ly")):
        return False
    return not _ends_in_one_s(lower)


def _ends_in_one_s(word: str) -> bool:
    """Whether a word ends in one s ("guys", "costs"; not "guess"): a plural
    or third-person form by its spelling."""
    return word.endswith("s") and not word.endswith("ss")


def _opens_clause(pronoun: "Token", before: str) -> bool:
    """Whether `before`, the word before "you" (`_word_before`), starts a
    clause that "you" is the subject of: the start of the text, punctuation,
    one of CLAUSE_OPENERS ("if you want", ", you know", "then you go"),
    "and", "or" after anything but an object pronoun ("I know and you
    know", not "met me and you"), or a noun right after a determiner, which
    a relative clause follows ("the countries you own", `_after_noun_phrase`)."""
    if not before or not before[0].isalnum() or before in CLAUSE_OPENERS:
        return True
    if _after_noun_phrase(pronoun):
        return True
    if before in COORDINATORS:
        doc = pronoun.doc
        for i in range(pronoun.i - 2, -1, -1):
            if not doc[i].is_space:
                return _word(doc[i]) not in OBJECT_PRONOUNS
        return True
    return False


def _after_noun_phrase(pronoun: "Token") -> bool:
    """Whether the two words before the pronoun (past whitespace) are one
    of RELATIVE_DETERMINERS and a lower-case word read as a noun: not a
    function word, pronoun, irregular past form or "thank" ("a thank you
    note"), and after a singular determiner not a word ending in a single
    s ("each costs you"). So "the countries you own", "every time you go",
    "the family you love"; not "this gives you time"."""
    doc = pronoun.doc
    words = [t for t in doc[max(0, pronoun.i - 4) : pronoun.i] if not t.is_space][-2:]
    if len(words) < 2:
        return False
    determiner, noun = _word(words[0]), words[1]
    word = _word(noun)
    if determiner not in RELATIVE_DETERMINERS or not noun.is_alpha or not noun.text.islower():
        return False
    if word in FUNCTION_WORDS or word in PRONOUNS or word in NOT_PRESENT_VERBS or word == "thank":
        return False
    return not (determiner in SINGULAR_DETERMINERS and _ends_in_one_s(word))


def _coordinated_after(pronoun: "Token") -> bool:
    """Without a parse: whether "and" before the pronoun joins it to a name
    or a subject pronoun ("Bob and I", "you and I") rather than joining two
    clauses ("... , and I said": 96% of "and I/you/they" in GUM): the word
    before "and" is capitalized and not a function word or an interjection
    ("Oh and I"), or a subject pronoun."""
    doc = pronoun.doc
    if pronoun.i < 2 or _word(doc[pronoun.i - 1]) not in COORDINATORS:
        return False
    before = doc[pronoun.i - 2]
    word = _word(before)
    if word in SUBJECTS:
        return True
    return before.is_title and word not in FUNCTION_WORDS and word not in INTERJECTIONS


def _word_before(pronoun: "Token") -> str:
    """The word before a pronoun past "not", "n't" and whitespace ("" at the
    start of the text), as the word lists hold it."""
    doc = pronoun.doc
    for i in range(pronoun.i - 1, -1, -1):
        token = doc[i]
        if token.is_space or _word(token) in ("not", "n't"):
            continue
        return _word(token)
    return ""


def _word_after(pronoun: "Token") -> Optional["Token"]:
    """The first word after a pronoun past adverbs like "really" and "not"
    and whitespace (None at the end of the text or before punctuation)."""
    doc = pronoun.doc
    for i in range(pronoun.i + 1, len(doc)):
        token = doc[i]
        if token.is_space or _word(token) in CLITIC_ADVERBS:
            continue
        return token if token.is_alpha or _word(token) in SINGULAR_FORMS else None
    return None


def _third_singular(verb: str) -> str:
    """ "say" -> "says", "go" -> "goes", "try" -> "tries", "have" -> "has",
    "radio" -> "radios"."""
    if verb in IRREGULAR_THIRD_SINGULAR:
        return IRREGULAR_THIRD_SINGULAR[verb]
    if verb.endswith(("s", "x", "z", "ch", "sh")):
        return verb + "es"
    if len(verb) > 1 and verb.endswith("y") and verb[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _verb_after(clitic: "Token") -> Optional["Token"]:
    """The first word after a clitic past adverbs like "not" (None at the end
    of the text or before punctuation)."""
    doc = clitic.doc
    for i in range(clitic.i + 1, len(doc)):
        token = doc[i]
        if _apostrophes(token.lower_) in CLITIC_ADVERBS:
            continue
        return token if token.is_alpha else None
    return None


def _may_be_participle(token: "Token", tagged: bool) -> bool:
    if tagged and token.tag_:
        return token.tag_ == "VBN"
    lower = token.lower_
    return lower in PARTICIPLES or (lower.endswith("ed") and len(lower) > 3)


def _is_plural(representative: "Span", tagged: bool, parsed: bool, they: bool = False) -> bool:
    """Whether the name is plural: its head part is coordinated ("Carrano
    and Biewener", not "the Department of Trade and Industry"), or its head
    is tagged NNS/NNPS (Number=Plur); without a tagger, a head that is not a
    proper noun and ends in s ("the kids"; not "James", "the bus"), or one
    of a few plurals like "people". The head part is the words before "of",
    "who", a comma, ... ("the members | of the club"), the head its last
    word, or the parse's root when there is a parse. they: the name
    replaces "they", so a capitalized head ending in s (not
    SINGULAR_NAME_ENDINGS) is a plural when the name is one word or starts
    with a function word, a quantifier or a word in lower case ("Senators",
    "the Saudis", "Many Americans": 32 of the 35 such "they" in OntoGUM's
    gold clusters, all plural by its tags); a name of capitalized words is
    taken for a person's ("Sam Evans ... they"), so "Republican Senators" is
    not."""
    part = _head_part(representative)
    words = [token for token in part if token.is_alpha]
    if parsed:
        head = representative.root
        if any(child.dep_ == "conj" for child in head.children):
            return True
    else:
        if any(token.lower_ in ("and", "&") for token in part):
            return True
        head = words[-1] if words else part[-1]
    if tagged and head.tag_:
        return head.tag_ in ("NNS", "NNPS")
    number = head.morph.get("Number")  # type: ignore[call-arg]  # the stub omits get's default=None
    if number:
        return number == ["Plur"]
    lower = head.lower_
    if lower in PLURAL_WORDS:
        return True
    if head.is_title and lower not in FUNCTION_WORDS:
        # a name ("James"), but "Senators", "the Saudis" ... they; not "the
        # Areopagus", nor a person's name of capitalized words ("Sam Evans ... they")
        if not they or not lower.endswith("s") or lower.endswith(SINGULAR_NAME_ENDINGS):
            return False
        first = words[0] if words else head
        return len(words) <= 1 or first.is_lower or first.lower_ in FUNCTION_WORDS or first.lower_ in QUANTIFIERS
    return lower.endswith("s") and not lower.endswith(SINGULAR_ENDINGS)
