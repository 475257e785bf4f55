"""Links no reader would make, ruled out while decoding (torch-free).

The same rules for every model (s2e picks its next-best antecedent, PeTra
its next-best memory action) and so for every output path (the Doc's span
groups, resolved text, entity records, `annotate`):

- **a mention is a word**: it holds a letter or digit, neither starts nor
  ends on a whitespace token (a line break is no mention), and neither of
  its ends falls inside a grapheme cluster (an emoji sequence joined by
  zero-width joiners, a letter and its combining marks; Unicode's extended
  grapheme clusters, as the `regex` package's `\\X` finds them);
- **pronouns that cannot corefer never share a cluster**: he / him / his /
  himself against she / her / hers / herself; I / me / my / mine / myself
  against we / us / our / ours / ourselves; any of those (and you) against
  it / its / itself;
- **speakers** (where the Doc has `doc.spans["speakers"]`, a transcript's
  turns): "I" of one speaker and "I" of another never share a cluster, nor
  a speaker's "I" and the same speaker's "you";
- **a speaker's name is that speaker** (speaker turns): a name whose words
  are the speaker label's, or any of them in order that keep its last
  word, or its first word alone, where no other speaker's label gives the same
  ("Anna"; "Chief Justice Roberts" and "Roberts" for
  ChiefJusticeJohnRoberts), is that speaker's "I" wherever it stands: two
  speakers' names are two people, and a speaker's "you" is not the
  speaker's own name; with TURN_VOICE on, the name is the "I" of its
  speaker's voice too and, in a chat of two, the other's "you", so no
  "she" of the chat is either speaker;
- **a voice's "I", "you" and "she" are three people**: outside speaker
  turns (text with none, a letter, a story), within one voice (the text
  outside quotation marks, or one quotation) "I" / me / my / mine / myself,
  "you" / your / yours / yourself and he / she and their forms are three
  people, never in one cluster: a letter's "My" is its writer, its "you"
  the reader, its "she" someone else. A letter's greeting names the reader
  ("Hi Jo,", "Dear Mrs. Patel,", a first line "Lena,") and its signature
  the writer (a name after a closing, "Best, Sam", or alone on the last
  line): the greeting's name is a "you" of the text, the signature's an
  "I", and any other name the letter speaks of (sharing no word with
  those two, not said to someone, not after "is") a third person: "Could
  you send it to James?" in a letter to Sarah. A quotation (between straight double quotes, or “ and ”; a line
  break ends one left open) is a voice of its own, since "I" there is
  whoever is quoted ('Anna told me: "you are late"': "me" and "you" are
  Anna's addressee and may be one person). A stream's window is one text:
  pieces are told apart as voices only by their speakers;
- **a speaker's turns are a voice** (TURN_VOICE): in a chat of two, all of
  one speaker's turns (each speaks to the other), with more speakers one
  turn, is a voice whose "I", "you" and he / she are three people, a
  quotation in it a voice of its own: Sofia's "Can you be home?" and her
  "Show her the leak" are Marco and the plumber. In a chat of two, a
  speaker's "I" is also the other's "you" and their "you" the other's "I"
  (outside quotations), so Ben's "I" is none of Anna's "she". A monologue (one speaker:
  a speech, a vlog) is left alone: its "you" is an audience, and it speaks
  of the people in it as "he" and "she" too;
- **a name no speaker has is no speaker** (CHAT_NAMES): in a chat of two
  or more speakers whose labels are names, a name outside quotation marks
  that shares no word with any label (nor is a short or long form of one,
  "Steve" for Steven) is a third person in every turn's voice: no
  speaker's "I" or "you" ("Grace: Hi Daniel, Ama says she left her book":
  Ama is neither). Left alone: a name said to someone or as a predicate, a
  kinship word or title alone ("Mom"), one capitalised word that opens a
  sentence ("Guys"). OntoGUM's gold breaks it in 4 of 3,895 train clusters
  (a customer named on the phone, a surname, two nicknames) and 0 of 529
  dev;
- **a turn's label is its speaker's name** (TURN_LABEL): where a turn's
  text opens with its speaker's name and a colon (a pasted chat, doc_helpers
  .transcripts), a mention is that name alone or stays out of it: "Grace:
  Hi Daniel" is no mention. Corpora whose speakers are a column (OntoGUM's)
  have no such label in the text;
- **no mention twice by a symbol**: one cluster never holds two nested
  mentions whose difference holds no letter or digit ("Bob" and "Bob 👨");
- **a mention is no clause**: a mention of two or more words does not
  start with a subject and its verb: a subject pronoun (I, he, she, we,
  they) followed by anything but a coordination, a quantifier, a reflexive
  or an apposition ("she met Pierre Curie"; "they all", "he himself", "we
  the people" stay), or a name followed by a finite verb of a closed list
  ("Pierre died in 1906, Marie"; participles that follow nouns, "called",
  "born", "based", are not in it). In OntoGUM's gold, 1 of 16,849 train
  mentions in clusters (none of 2,365 dev) is of this kind;
- **a noun phrase and its verb are no mention** (PHRASE_CLAUSE): a mention
  opened by a determiner whose head is followed by a finite be / have / do
  or a modal ("the apples were not, so we"; no preposition, relative word,
  comma or pronoun before the verb, so "the man who was there" and "the
  pupil he ever taught" stay). None of OntoGUM's 16,849 train and 2,365 dev
  gold mentions in clusters is of this kind;
- **no comma at a mention's edge** (PUNCT_EDGE): a mention neither starts
  nor ends with a comma, semicolon or colon ("a new assistant, Tom," is
  "a new assistant, Tom"). OntoGUM's gold holds 9 of train's and 2 of
  dev's (fronted phrases, "Born in England ,");
- **two are not one**: a coordination of two noun phrases ("my sister and
  her husband", "Tom and Anna": a phrase, *and*, then a word that opens a
  noun phrase or a name; not after *of*, *between*, a comma or a relative
  word) never shares a cluster with he / she / I and their forms, nor with
  a mention of one gender by its noun or first name ("her husband",
  "Maria": GENDERED_NOUNS and NAME_GENDER's, one person). In OntoGUM's gold
  no cluster of train or dev has a coordination and such a pronoun (4 have
  one with "it": a ride's title, a wine blend; "it" is left alone); 1 of
  3,895 train clusters has one and such a noun ("Gerald and Sherri
  Padalecki" with "His father"), none of dev's 529;
- **a quotation's "I" is its speaker** (QUOTE_SPEAKER): outside speaker
  turns, I / me / my / mine / myself in a quotation attributed to a
  speaker of one gender ('"Wait for me," he said', 'Anna said, "..."'; a
  quotation without an attribution continues the one before it on the
  same line: `quote_speaker_genders`) has that gender, so it never shares
  a cluster with he / she or a gendered noun or first name of the other.
  It adds no break to OntoGUM's gold (12 of 3,895 train and 2 of 529 dev
  clusters break the gender rules with it or without it; its news
  quotations give 1 train and 3 dev pronouns a gender);
- **a couple is not one of them** (CONJUNCT_NAMES): a coordination never
  shares a cluster with a name whose words include one of the
  coordination's capitalised words ("Ian and Morag ... they ... Ian spent
  his working life": Ian alone is not the couple). In OntoGUM's gold 2 of
  3,895 train clusters (none of dev's 529) have both;
- **the two of a couple are two** (COUPLE): in a coordination of two names
  ("Tomás Ferreira and Ingrid Holm", "Kofi Mensah and his sister Abena":
  `name_couples`), a name whose words meet one and not the other is that
  one, and never shares a cluster with a name of the other ("Ferreira" and
  "Holm"). No gold cluster of OntoGUM train or dev, nor of the everyday
  set, has both;
- **"they" is both, not one** (COUPLE_THEY): where a text has such a
  couple, they / them / their and their forms never share a cluster with a
  name of one of the two, unless the coordination itself calls the first
  "they" ("Jordan and their sister Beth"). OntoGUM's gold has 2 of 3,895
  train and 1 of 529 dev clusters with both (an organisation as "they":
  "Google ... their");
- **"they" is not "he" or "she"** (THEY): they / them / their / theirs /
  themselves / themself never share a cluster with he / she and their
  forms; singular "they" for a person stays free against names and noun
  phrases. In OntoGUM's gold 4 of 3,895 train clusters (none of dev's 529)
  have both, all in speech;
- **a possessive is not what it owns** (POSSESSOR): a possessive
  determiner (my, your, his, her, its, our, their) as a mention never
  shares a cluster with a mention it opens ("her" and "her brother"). No
  cluster of OntoGUM's gold (3,895 train, 529 dev) has both;
- **a noun of one gender is that gender** (GENDERED_NOUNS): a mention
  whose head is a noun or title of one gender (father, sister, wife, king,
  Mr., Mrs.; behind a name, the word that opens it: "his sister Abena")
  never shares a cluster with he / she and their forms of the other gender,
  nor with such a noun of the other gender ("her father" and "his
  daughter"). A name's own gender is not guessed. With the pronoun rule,
  OntoGUM's gold breaks the two in 12 of 3,895 train and 2 of 529 dev
  clusters, as it breaks the pronoun rule alone: the nouns add none;
- **a verb's object pronoun is not its subject** (OBJECT): him, them, me,
  us (and "her" before punctuation, a preposition, a conjunction, a
  determiner or a question word, where it is no possessive) right after a
  verb or after a verb and an argument's preposition (for, to, at, about,
  from: "waited for him"), never shares a cluster with the verb's subject:
  the mention that ends just before the verb, or before an auxiliary or an
  adverb and the verb ("The assistant thanked her", "the nurse finally
  called him": not the assistant, not the nurse; "himself" would be); after
  "and", "but" or "or" ("The chief visited the nurse and told him"), the
  mention that opens the clause (at a sentence's start, after a bracket, a
  dash, a quote or a subordinating word; a possessor there is no subject).
  The verb is any lower-case word but determiners, prepositions,
  conjunctions, pronouns and a few adverbs (NOT_VERBS). OntoGUM's gold
  breaks it in 1 of 3,895 train clusters (a repair, "let me let me") and 0
  of 529 dev, of 131 and 18 pairs of gold mentions it applies to;
- **two people in one sentence**: two noun phrases (no pronoun) of one
  sentence, neither inside the other nor in apposition (apart by a comma,
  a bracket, a dash or a quote only), whose heads differ, never share a
  cluster ("The chief hired the assistant because she ...": the chief and
  the assistant are two people). The head: the last word before a
  preposition, a relative word or a comma, else the last word, less a
  possessive 's. In OntoGUM's gold, 67 of 18,484 coreferent pairs of dev (484 of
  120,582 of train) are of this kind; benchmarks/RESULTS.md has what it does.

Whether a candidate may join a cluster depends on the whole cluster (a
"she" may not join "Bob ... he" through "Bob"), so the decoders check each
link against the cluster it would join, in text order.
"""

import bisect
from typing import Any, Callable, Container, Dict, FrozenSet, List, NamedTuple, Optional, Sequence, Set, Tuple, cast

from spacy.tokens import Doc

from ..gendered_words import FEMININE_NAMES, MASCULINE_NAMES
from ..util import Clusters, TokenSpan

MASCULINE = frozenset({"he", "him", "his", "himself"})
FEMININE = frozenset({"she", "her", "hers", "herself"})
FIRST_SINGULAR = frozenset({"i", "me", "my", "mine", "myself"})
FIRST_PLURAL = frozenset({"we", "us", "our", "ours", "ourselves"})
SECOND = frozenset({"you", "your", "yours", "yourself", "yourselves"})
INANIMATE = frozenset({"it", "its", "itself"})
THIRD_PLURAL = frozenset({"they", "them", "their", "theirs", "themselves", "themself"})
# "they" against he / she (the THEY rule): the two features that conflict
THEY_FEATURE = "they"
HE_SHE_FEATURE = "he-or-she"
# a possessive determiner at token i, and a mention it opens (the POSSESSOR rule)
POSSESSIVE_DETERMINERS = frozenset({"my", "your", "his", "her", "its", "our", "their"})
OWNER_AT = "owner@"
OWNED_AT = "owned@"

# a pronoun's features; two features of one pair in one cluster conflict
_FEATURES: Dict[str, FrozenSet[str]] = {}
for words, features in (
    (MASCULINE, {"masculine", "animate"}),
    (FEMININE, {"feminine", "animate"}),
    (FIRST_SINGULAR, {"first-singular", "animate"}),
    (FIRST_PLURAL, {"first-plural", "animate"}),
    (SECOND, {"animate"}),
    (INANIMATE, {"inanimate"}),
):
    for word in sorted(words):  # an order that does not hang on the hash seed
        _FEATURES[word] = frozenset(features)
CONFLICTS: Tuple[Tuple[str, str], ...] = (
    ("masculine", "feminine"),
    ("first-singular", "first-plural"),
    ("animate", "inanimate"),
    ("one-person", "two-people"),
    (THEY_FEATURE, HE_SHE_FEATURE),
)
# he / she / I and their forms stand for one person: a coordination of two
# mentions ("my sister and her husband") is two (the COORDINATION rule)
ONE_PERSON = MASCULINE | FEMININE | FIRST_SINGULAR
NO_FEATURES: FrozenSet[str] = frozenset()
_ALL_PRONOUNS = (
    frozenset(_FEATURES)
    | THIRD_PLURAL
    | {
        "this",
        "that",
        "these",
        "those",
        "who",
        "which",
    }
)


def pronoun_features(text: str) -> FrozenSet[str]:
    """The features of a one-word mention that is a personal pronoun (any
    case, a curly or straight apostrophe's clitic aside); none otherwise."""
    return _FEATURES.get(text.strip().lower(), NO_FEATURES)


# a name mention's words and a coordination's name words (CONJUNCT_NAMES):
# "name:anna" of "Anna", "group-name:anna" of "Tom and Anna"
NAME_OF = "name:"
GROUP_NAME = "group-name:"
# a name of one of two coordinated names (COUPLE): "conjunct@3.0" for "Ferreira"
# of "Tomás Ferreira and Ingrid Holm" (its "and" at token 3, the first name),
# "conjunct@3.1" for "Holm"; a plural pronoun and a name of either (COUPLE_THEY)
CONJUNCT_AT = "conjunct@"
ONE_OF_COUPLE = "one-of-couple"
COUPLE_PRONOUN = "they-of-couple"
# a speaker's first- and second-person mentions: "I@NAME", "you@NAME"
SPEAKER_SEP = "@"
# a voice's persons (the VOICE rule): "I~VOICE", "you~VOICE", "third~VOICE"
VOICE_SEP = "~"
# the marks that open / close a quotation (a straight double quote does both)
QUOTE_OPENERS = frozenset({'"', "“", "``"})
QUOTE_CLOSERS = frozenset({'"', "”", "''"})


def conflict(features: Set[str]) -> bool:
    """Whether a set of features (a cluster's) holds a conflicting pair: one
    of CONFLICTS, the "I" of two speakers, or a speaker's "I" and "you"."""
    if any(a in features and b in features for a, b in CONFLICTS):
        return True
    # a possessive and the mention it opens ("her" and "her brother"; POSSESSOR)
    owners = {f[len(OWNER_AT) :] for f in features if f.startswith(OWNER_AT)}
    if owners and any(f[len(OWNED_AT) :] in owners for f in features if f.startswith(OWNED_AT)):
        return True
    # a verb's subject and its object pronoun (OBJECT)
    bound = {f[len(BOUND_AT) :] for f in features if f.startswith(BOUND_AT)}
    if bound and any(f[len(BINDER_AT) :] in bound for f in features if f.startswith(BINDER_AT)):
        return True
    # a coordination's conjunct named again alone is one of the two (CONJUNCT_NAMES)
    named = {f[len(NAME_OF) :] for f in features if f.startswith(NAME_OF)}
    if named and any(f[len(GROUP_NAME) :] in named for f in features if f.startswith(GROUP_NAME)):
        return True
    # the two names of a couple are two people (COUPLE); "they" is both, not one (COUPLE_THEY)
    conjuncts = [f[len(CONJUNCT_AT) :] for f in features if f.startswith(CONJUNCT_AT)]
    if len(conjuncts) > 1 and len({c.rpartition(".")[0] for c in conjuncts}) < len(conjuncts):
        return True
    if ONE_OF_COUPLE in features and COUPLE_PRONOUN in features:
        return True
    speakers_i = {f.split(SPEAKER_SEP, 1)[1] for f in features if f.startswith("I" + SPEAKER_SEP)}
    if len(speakers_i) > 1:
        return True
    if any(f"you{SPEAKER_SEP}{speaker}" in features for speaker in speakers_i):
        return True
    voices: Dict[str, Set[str]] = {}
    for f in features:
        person, sep, voice = f.partition(VOICE_SEP)
        if sep:
            voices.setdefault(voice, set()).add(person)
    # one voice's I, you and he / she are three people
    return any(len(persons) > 1 for persons in voices.values())


# SPEAKER_I: the words after "Norton I" that no first-person "I" has after it ("Then I ," is rare) ...
ROMAN_ONE_AFTER = frozenset({",", ".", ")", ";", ":", "of", "'s", "’s", "and"})
# ... and the tokens after which a capitalised word may open a sentence ("Then I ...")
SENTENCE_OPENS = (
    frozenset({".", "!", "?", ":", ";", "...", "…", "-", "--", "–", "—", "(", ")"}) | QUOTE_OPENERS | QUOTE_CLOSERS
)


def quotations(doc: Doc) -> List[int]:
    """Each token's quotation: 0 outside quotation marks, k inside the
    doc's k-th quotation (the marks themselves are outside). A straight
    double quote opens a quotation when none is open and closes it
    otherwise; a token holding a line break closes one left open."""
    index: List[int] = []
    opened, current = 0, 0
    for token in doc:
        text = token.text
        if current and (text in QUOTE_CLOSERS or "\n" in text):
            current = 0
            index.append(0)
        elif not current and text in QUOTE_OPENERS:
            opened += 1
            current = opened
            index.append(0)
        else:
            index.append(current)
    return index


# QUOTE_SPEAKER: the verbs that attribute a quotation to its speaker ('"...," he said')
SPEECH_VERBS = frozenset(
    """said says say asked asks told tells replied replies answered answers added adds shouted shouts
    whispered whispers called calls cried cries explained explains muttered mutters continued continues
    insisted insists yelled yells admitted admits agreed agrees warned warns stated states exclaimed
    exclaims remarked remarks announced announces declared declares wrote writes noted notes recalled
    recalls""".split()
)


def quote_speaker_genders(doc: Doc, quotation: List[int], gender_of: Callable[[TokenSpan], Set[str]]) -> Dict[int, str]:
    """QUOTE_SPEAKER: the gender ("masculine" / "feminine") of each
    quotation's speaker, where an attribution names one: a speech verb and
    its subject right after the closing mark ('"Wait," he said', '"Wait,"
    said the old man') or right before the opening one ('Anna said, "Wait"'),
    the subject a he / she or a phrase whose gender `gender_of` gives (a
    gendered noun or first name). A quotation with no attribution of its own
    continues the one before it ('"Every morning," he said, as if she had
    asked. "They wait for me."') where it opens within 20 tokens of that
    attribution, on the same line, with no other subject and speech verb
    between.

    doc (Doc): the text.
    quotation (List[int]): each token's quotation (`quotations`).
    gender_of (Callable): a mention's gender features ({"masculine"}, {"feminine"} or {}).
    RETURNS (Dict[int, str]): quotation index -> the speaker's gender.
    """
    n = len(doc)
    spans: Dict[int, List[int]] = {}
    for i, k in enumerate(quotation):
        if k:
            spans.setdefault(k, []).append(i)

    def wordlike(i: int) -> bool:
        return 0 <= i < n and (doc[i].text.isalpha() or (doc[i].text.endswith(".") and doc[i].text[:-1].isalpha()))

    def subject_gender(first: int, last: int, forward: bool) -> Optional[str]:
        # the shortest subject phrase of 1-3 words beside the verb with a gender
        for length in range(1, 4):
            start, end = (first, first + length - 1) if forward else (last - length + 1, last)
            if not all(wordlike(i) and not quotation[i] for i in range(start, end + 1)):
                return None
            if length == 1 and doc[start].text.lower() in ("he", "she"):
                return "masculine" if doc[start].text.lower() == "he" else "feminine"
            found = gender_of((start, end))
            if len(found & {"masculine", "feminine"}) == 1:
                return next(iter(found & {"masculine", "feminine"}))
        return None

    def verb(i: int) -> bool:
        return 0 <= i < n and doc[i].text.lower() in SPEECH_VERBS and not quotation[i]

    def attribution_after(close: int) -> Optional[Tuple[str, int]]:
        j = close + 1
        if j < n and doc[j].text == ",":
            j += 1
        if verb(j):  # '"...," said Tom'
            gender = subject_gender(j + 1, j + 1, True)
            return (gender, j) if gender else None
        for v in range(j + 1, min(j + 4, n)):  # '"...," he said', '"...," the old man said'
            if verb(v):
                gender = subject_gender(v - 1, v - 1, False) if all(wordlike(i) for i in range(j, v)) else None
                return (gender, v) if gender else None
        return None

    def attribution_before(open_mark: int) -> Optional[str]:
        v = open_mark - 1
        if v >= 0 and doc[v].text in (",", ":"):
            v -= 1
        if v > 0 and doc[v].text.lower() in ("him", "her", "me", "us", "them") and verb(v - 1):
            v -= 1  # 'She told him: "..."'
        return subject_gender(v - 1, v - 1, False) if verb(v) else None

    def speaks(i: int) -> bool:  # a subject and a speech verb side by side
        return verb(i) and (
            doc[i - 1].text.lower() in ("he", "she") or (i + 1 < n and doc[i + 1].text.lower() in ("he", "she"))
        )

    genders: Dict[int, str] = {}
    last_attribution: Optional[Tuple[str, int]] = None
    for k in sorted(spans):
        open_mark, close = spans[k][0] - 1, spans[k][-1] + 1
        before = attribution_before(open_mark)
        after = attribution_after(close) if close < n else None
        if before:
            genders[k] = before
        elif after:
            genders[k] = after[0]
        elif last_attribution is not None:
            gender, at = last_attribution
            between = range(at + 1, open_mark)
            if (
                0 < open_mark - at <= 20
                and not any("\n" in doc[i].text_with_ws for i in between)
                and not any(speaks(i) for i in between)
            ):
                genders[k] = gender
        last_attribution = after
    return genders


# a letter's greeting and closing words (lower case; a closing ends in a comma)
GREETINGS = frozenset({"hi", "hello", "hey", "dear", "dearest", "to"})
CLOSINGS = frozenset(
    """best thanks cheers regards love yours sincerely faithfully truly wishes warmly
    kind warm many all with thank you""".split()
)


def _is_name_word(text: str) -> bool:
    return text[:1].isupper() and (text.replace(".", "").replace("-", "").isalpha())


# a word of a name written without spaces: a run of capitals not followed by
# a small letter ("ANNA", the "J" of "MarioJLucero"), a capital and its small
# letters, small letters, digits; any script ("Łukasz", "José")
_NAME_PART = r"\p{Lu}+(?!\p{Ll})|\p{Lu}\p{Ll}*|\p{Ll}+|\p{Nd}+"


def speaker_words(label: str) -> Tuple[str, ...]:
    """A speaker label's (or a name mention's) lower-case words: CoNLL and
    GUM join a name's words ("ChiefJusticeJohnRoberts", "Mario_J_Lucero"),
    chats write it out ("Dr. Lee"); both read alike ("McDonald" is "mc",
    "donald" in either)."""
    import regex

    return tuple(w.lower() for w in regex.findall(_NAME_PART, label))


def speaker_names(turns: Sequence[Any]) -> Dict[Tuple[str, ...], str]:
    """The names (lower-case word tuples, `speaker_words`) that name one
    speaker, each to its label: the label's words in full, any of them in
    their order that keep its last word ("Roberts", "Chief Justice Roberts"
    for ChiefJusticeJohnRoberts; for a label of more than 8 words only the
    full name), and its first word alone ("Anna" for AnnaSmith); a name two
    speakers could have (two speakers named Smith) names neither. Empty
    turns are no speaker's."""
    owners: Dict[Tuple[str, ...], Set[str]] = {}
    for label in sorted({turn.label_ for turn in turns if len(turn)}):
        words = speaker_words(label)
        if not words:
            continue
        names = {words, words[:1]}
        # in-order selections of the words before the last, the last word after them
        if len(words) <= 8:
            rest = words[:-1]
            for mask in range(2 ** len(rest)):
                names.add(tuple(w for i, w in enumerate(rest) if mask >> i & 1) + words[-1:])
        for name in names:
            owners.setdefault(name, set()).add(label)
    return {name: next(iter(labels)) for name, labels in owners.items() if len(labels) == 1}


def letter_parts(doc: Doc) -> Tuple[Optional[TokenSpan], Optional[TokenSpan]]:
    """(greeting name, signature name) of a letter or message: token ranges,
    None where there is none.

    The greeting: the text opens with a greeting word (GREETINGS) and up to
    five words ending at a comma, colon or line break ("Hi Jo,", "Dear Mrs.
    Patel,", "To the customer service team,"), or its first line is a name
    and a comma ("Lena,"). The signature: the text ends with one to three
    capitalised words after a closing ending in a comma ("Thanks, Sam",
    "Yours faithfully, Daniel Kerr"), or its last line, after a line break,
    is one to three capitalised words.
    """
    words = [i for i, t in enumerate(doc) if not t.is_space]
    if len(words) < 4:
        return None, None
    text = [t.text for t in doc]
    greeting: Optional[TokenSpan] = None
    first = words[0]
    breaks = [i for i, t in enumerate(doc) if "\n" in t.text_with_ws]
    if text[first].lower() in GREETINGS:
        end = next((i for i in words[1:7] if text[i] in (",", ":", "!") or "\n" in doc[i].text_with_ws), None)
        if end is not None:
            last = end - 1 if text[end] in (",", ":", "!") else end
            if last > first:
                greeting = (first + 1, last)
    elif breaks and breaks[0] <= first + 4:
        line = [i for i in words if i <= breaks[0]]
        if len(line) >= 2 and text[line[-1]] in (",", ":") and all(_is_name_word(text[i]) for i in line[:-1]):
            greeting = (line[0], line[-2])
    signature: Optional[TokenSpan] = None
    tail: List[int] = []
    for i in reversed(words):
        if not _is_name_word(text[i]) or len(tail) == 3:
            break
        tail.insert(0, i)
    if tail and tail[0] > first:
        before = max(i for i in words if i < tail[0])
        closing = text[before] == "," and text[max(i for i in words if i < before)].lower() in CLOSINGS
        on_own_line = (
            "\n" in doc[before].text_with_ws
            or doc[before].is_space
            or any(doc[j].is_space and "\n" in doc[j].text for j in range(before + 1, tail[0]))
        )
        if closing or on_own_line:
            signature = (tail[0], tail[-1])
    if greeting is not None and signature is not None and signature[0] <= greeting[1]:
        signature = None
    return greeting, signature


# participles in -ed that follow a noun with a noun phrase after them: "a guy
# called the Invisible Man" (OntoGUM's gold), "the student awarded the prize"
NAMING_PARTICIPLES = frozenset(
    "called named titled entitled dubbed nicknamed labelled labeled termed awarded elected appointed crowned".split()
)


def _is_past_verb(text: str) -> bool:
    """A lower-case word in -ed of four letters or more ("hired",
    "recognised"; not "red", "bed"), as a past tense reads, but for the
    participles of NAMING_PARTICIPLES."""
    return (
        len(text) >= 4 and text.isalpha() and text.islower() and text.endswith("ed") and text not in NAMING_PARTICIPLES
    )


def has_word_character(text: str) -> bool:
    return any(ch.isalnum() for ch in text)


def grapheme_boundaries(text: str) -> Set[int]:
    """The character offsets where an extended grapheme cluster starts or
    ends (0 and len(text) included)."""
    import regex

    bounds = {0, len(text)}
    for match in regex.finditer(r"\X", text):
        bounds.add(match.start())
        bounds.add(match.end())
    return bounds


# the rules by name, each of which can be turned off alone (to measure it)
WORD = "word"  # a mention is a word: letter or digit, no whitespace ends, whole graphemes
PRONOUNS = "pronouns"  # pronouns of another gender, person or animacy never share a cluster
SPEAKERS = "speakers"  # two speakers' "I", a speaker's "I" and "you", never in one cluster
VOICE = "voice"  # one voice's "I", "you" and "he"/"she" (outside turns and quotes, one quotation): three people
SPEAKER_NAMES = "speaker_names"  # a name that names a speaker is that speaker's "I"
TURN_VOICE = "turn_voice"  # a speaker's turns (two speak) or one turn (more do) as a voice: I, you, she three people
SYMBOL_TWINS = "symbol_twins"  # no two nested mentions apart by symbols only in one cluster
SENTENCE_PEOPLE = "sentence_people"  # two different noun phrases of one sentence, not in apposition
CLAUSE = "clause"  # a mention does not start with a subject and its verb
PHRASE_CLAUSE = "phrase_clause"  # a mention is not a noun phrase and its verb ("the apples were not, so we")
PUNCT_EDGE = "punct_edge"  # a mention neither starts nor ends with a comma, semicolon or colon
QUOTE_EDGE = "quote_edge"  # a mention starts and ends on one side of a quotation mark: '"I'll go," he' is none
COORDINATION = "coordination"  # "X and Y" never with he / she / I
CONJUNCT_NAMES = "conjunct_names"  # "Tom and Anna" never with a name of one of them ("Anna")
THEY = "they"  # they / them / their never with he / she and their forms
POSSESSOR = "possessor"  # "her" of "her brother" is never "her brother"
GENDERED_NOUNS = "gendered_nouns"  # "her father", "Mr. Lee" are masculine: never with she / her, "his daughter"
OBJECT = "object"  # a verb's object pronoun is not its subject ("The assistant thanked her")
CHAT_NAMES = "chat_names"  # in a chat whose speakers are named, a name no speaker has is no speaker's I or you
TURN_LABEL = "turn_label"  # a mention is a turn's "Name:" label alone or stays out of it ("Grace: Hi Daniel")
NAME_GENDER = "name_gender"  # "Maria", "Maria Lopez": feminine, as "her sister" is (first names of one gender)
NAMED_GENDER = (
    "named_gender"  # "her uncle, Nils Berg", "Mrs. Okonkwo": a later "Berg" or "Okonkwo" alone has that gender
)
COUPLE = "couple"  # "Tomás Ferreira and Ingrid Holm": a name of one ("Ferreira") never with a name of the other
COUPLE_THEY = "couple_they"  # ... and they / them / their never with a name of one of them: the two are "they"
QUOTE_SPEAKER = "quote_speaker"  # a quotation's "I" has its speaker's gender: '"Wait for me," he said' is no "she"
# the one rule that links: a first-person singular pronoun the model left alone joins its voice's last one
SPEAKER_I = "speaker_i"  # an "I" / "me" / "my" left alone joins its speaker's (or the text's, or quotation's) last "I"
KEEP_LINK = (
    "keep_link"  # a he / she whose best antecedent a rule refuses takes the best one allowed, even below the threshold
)
ALL_RULES: FrozenSet[str] = frozenset(
    {
        WORD,
        PRONOUNS,
        SPEAKERS,
        VOICE,
        SPEAKER_NAMES,
        TURN_VOICE,
        SYMBOL_TWINS,
        SENTENCE_PEOPLE,
        CLAUSE,
        PHRASE_CLAUSE,
        PUNCT_EDGE,
        QUOTE_EDGE,
        COORDINATION,
        CONJUNCT_NAMES,
        COUPLE,
        COUPLE_THEY,
        THEY,
        POSSESSOR,
        GENDERED_NOUNS,
        OBJECT,
        CHAT_NAMES,
        TURN_LABEL,
        NAME_GENDER,
        NAMED_GENDER,
        QUOTE_SPEAKER,
        SPEAKER_I,
        KEEP_LINK,
    }
)

# the OBJECT rule: object pronouns ("her" only where no noun follows it: a
# possessive "her" may be the subject's, "Mary loves her brother"; before a
# determiner or a question word it is a first object, "told her the news",
# "asked her how"), the auxiliaries that may stand before the verb, and the
# words that are no verb
OBJECT_PRONOUNS = frozenset({"him", "them", "me", "us"})
AFTER_OBJECT_HER = frozenset(
    """. , ! ? ; : and or but to for with in at on about that because when if as from by again back up out
    off down the a an this these those some his my your our their its how what why where who whether""".split()
)
AUXILIARIES = frozenset(
    "has had have was were is are am will would did does do could can should may might must shall".split()
)
NOT_VERBS = (
    frozenset(
        """the a an this that these those my your his her its our their of in on at with from for by to about as
    and or but nor so yet if because when while where who whom which whose what than then also not never just only
    very too all both each every some any no there here""".split()
    )
    | _ALL_PRONOUNS
)  # no pronoun is a verb: "himself", "hers" and "mine" neither
# prepositions that open a verb's argument ("waited for him", "talked to
# her"): its pronoun is not the verb's subject either. Left out: locative
# ones, "with" and "on" among them ("he carries with him", "items with
# quotes printed on them": OntoGUM's gold; "Tom looked behind him"), and
# "of", whose word before is as often a quantifier ("none of us liked it")
ARGUMENT_PREPOSITIONS = frozenset("for to at about from".split())
# adverbs that may stand between a subject and its verb ("the nurse finally
# called him"); any lower-case word ending in -ly too
SUBJECT_ADVERBS = frozenset("then also never just often always still even soon later once already".split())
# "and" / "but" / "or" before a verb: its subject is the clause's, which
# opens after one of these (or at the start of the text). Not after a comma,
# which as often opens an object or an aside ("who would help, she assumed,
# this poet ... and connect her", OntoGUM's gold)
COORDINATORS = frozenset({"and", "but", "or"})
CLAUSE_BREAKS = (
    frozenset(
        """. ! ? ; : ( ) -- – — that who whom which whose because when whenever while if although though after
        before since until unless where whether so as""".split()
    )
    | QUOTE_OPENERS
    | QUOTE_CLOSERS
)
BOUND_AT = "bound@"  # an object pronoun whose verb's subject ends at the token ("s" and the token: opens there)
BINDER_AT = "binder@"  # a mention that ends at the token, a verb's subject ("s" and the token: opens a clause)

# nouns and titles of one gender (GENDERED_NOUNS), singular (a plural is no
# "he" or "she"); left out: nouns a woman or a man is called too ("actor",
# "host", "hero", "chairman"), and "god" (of no one gender in some texts)
MASCULINE_NOUNS = frozenset(
    """man boy father dad daddy papa grandpa grandfather son grandson stepfather stepson brother
    husband boyfriend fiance groom widower uncle nephew king prince emperor duke lord gentleman
    monk sir mr mr. mister""".split()
)
FEMININE_NOUNS = frozenset(
    """woman girl mother mom mum mommy mummy mama grandma granny grandmother daughter
    granddaughter stepmother stepdaughter sister wife girlfriend fiancee bride widow aunt niece
    queen princess empress duchess lady gentlewoman nun actress waitress mrs mrs. ms ms. miss
    madam ma'am""".split()
)

# a word after "and" that opens a second noun phrase, and words before it
# after which "and" joins something inside one ("a friend of Tom and Anna")
COORDINATED_OPENERS = frozenset({"his", "her", "their", "my", "your", "our", "its", "the", "a", "an"})
NOT_BEFORE_COORDINATION = frozenset(
    {"of", "between", "among", "both", ",", "(", "that", "which", "who", "whom", "whose"}
)

# subject pronouns, and what may follow one inside a mention ("they all",
# "he himself", "we the people", "she and her mother", "I, Joshua Norton")
SUBJECTS = frozenset({"i", "he", "she", "we", "they"})
AFTER_SUBJECT = frozenset(
    {
        "and",
        "or",
        "nor",
        ",",
        "all",
        "both",
        "alone",
        "too",
        "the",
        "as",
        "two",
        "three",
        "four",
        "each",
        "who",
        "(",
        "myself",
        "himself",
        "herself",
        "ourselves",
        "themselves",
        "yourself",
        "yourselves",
        "-",
        "--",
        "–",
        "—",
    }
)
# finite verbs that end a subject name ("Pierre died", "Alice was"): common
# auxiliaries and past forms that do not follow a noun as its participle
# ("a man called John", "the cake made by ..." are noun phrases)
FINITE_VERBS = frozenset(
    """
    is was were are am has had have did does do will would can could shall should may might must
    said says told asked met married died thanked loved wanted went came took gave saw knew thought
    felt left moved lived worked studied won became began wrote decided agreed argued helped taught
    encouraged visited returned joined received replied answered explained promised smiled laughed
    """.split()
)
# finite forms of be, have and do, and the modals that are no nouns: after a
# noun phrase's head they make it a clause's subject ("the apples were not"),
# where a participle ("the cake made by ...") or a relative clause ("the
# pupil he taught") keeps a noun phrase; "will", "can", "may", "must" are
# nouns too ("a free will") and are left out
PHRASE_VERBS = frozenset("is was were are am has had have did does do would could should shall".split())
# what ends a noun phrase's head before a verb may come (a clause inside it)
PHRASE_STOPS = frozenset({"and", "or", "where", "when", "while", "whose", "if", "because", "-", "--", "–", "—"})
PUNCT_EDGES = frozenset({",", ";", ":"})
DETERMINERS = frozenset({"the", "a", "an", "this", "that", "these", "those"}) | POSSESSIVE_DETERMINERS

# words after which a noun phrase's head has ended ("the fault in his gearbox")
HEAD_ENDS = frozenset(
    {
        "of",
        "in",
        "on",
        "at",
        "with",
        "from",
        "for",
        "by",
        "to",
        "about",
        "as",
        "who",
        "whom",
        "which",
        "that",
        "whose",
        ",",
        "(",
    }
)
# what may stand between two mentions in apposition ("Her father, Wladyslaw")
APPOSITION_GAP = frozenset({",", "(", ")", "-", "--", "–", "—", '"', "'", ":", "“", "”"})
POSSESSIVE = frozenset({"'s", "’s", "'", "’"})
# the rule reads descriptions only: a noun phrase opened by one of these
DESCRIPTION_STARTS = frozenset({"the", "a", "an"})
# words that make the second of two noun phrases a predicate of the first
PREDICATE_WORDS = frozenset(
    {
        "is",
        "was",
        "are",
        "were",
        "be",
        "been",
        "being",
        "as",
        "become",
        "became",
        "becomes",
        "'s",
        "’s",
        "named",
        "called",
    }
)


# words that may stand between a predicate's verb and its noun phrase ("was not
# only the", "became also the", "is called both the")
PREDICATE_TAIL = frozenset(
    {
        "not",
        "n't",
        "also",
        "still",
        "never",
        "now",
        "then",
        "once",
        "later",
        "always",
        "soon",
        "only",
        "just",
        "already",
        "often",
        "usually",
        "probably",
        "perhaps",
        "really",
        "actually",
        "clearly",
        "simply",
        "truly",
        "originally",
        "formerly",
        "both",
        "either",
        "as",
    }
)


def name_couples(doc: Doc) -> List[Tuple[int, FrozenSet[str], FrozenSet[str], bool]]:
    """The Doc's coordinations of two names (COUPLE): each "and" / "&"
    between a run of name words and another ("Tomás Ferreira and Ingrid
    Holm"; the second may follow a possessive and one or two lower-case
    words: "Kofi Mensah and his sister Abena"), as (the "and"'s token, the
    first's lower-case words, the second's, whether the text calls the first
    "they": "Jordan and their sister Beth"), the words both hold left out of
    both ("Tom Smith and Anna Smith": "smith" names neither)."""
    couples = []
    for token in doc:
        if token.text.lower() not in ("and", "&"):
            continue
        i = token.i
        left: List[str] = []
        j = i - 1
        while j >= 0 and _is_conjunct_name_word(doc[j].text):
            left.append(doc[j].text.lower())
            j -= 1
        k = i + 1
        first_is_they = k < len(doc) and doc[k].text.lower() == "their"
        if k < len(doc) and doc[k].text.lower() in POSSESSIVE_DETERMINERS:
            # "his sister Abena": a possessive, one or two lower-case words, then the name
            k += 1
            words = 0
            while k < len(doc) and words < 2 and doc[k].text.isalpha() and doc[k].text.islower():
                k, words = k + 1, words + 1
            if not words:
                continue
        right: List[str] = []
        while k < len(doc) and _is_conjunct_name_word(doc[k].text):
            right.append(doc[k].text.lower())
            k += 1
        shared = set(left) & set(right)
        first, second = frozenset(left) - shared, frozenset(right) - shared
        if first and second:
            couples.append((i, first, second, first_is_they))
    return couples


def _is_conjunct_name_word(text: str) -> bool:
    """A capitalised word that may name a conjunct: no determiner or pronoun
    ("The", "His" open noun phrases)."""
    return _is_name_word(text) and text.lower() not in DETERMINERS and text.lower() not in _ALL_PRONOUNS


def conjunct_name_words(doc: Doc) -> FrozenSet[str]:
    """The lower-case name words (capitalised, no determiner or pronoun) at
    most NEST_REACH tokens from an "and" / "&": the words a coordination
    mention may hold (CONJUNCT_NAMES), found once a Doc. A name's word
    outside them can meet no coordination's, so it gets no feature."""
    joins = [t.i for t in doc if t.text.lower() in ("and", "&")]
    found: Set[str] = set()
    covered = -1
    for i in joins:
        for j in range(max(i - NEST_REACH, covered + 1), min(i + NEST_REACH + 1, len(doc))):
            if _is_conjunct_name_word(doc[j].text):
                found.add(doc[j].text.lower())
        covered = max(covered, i + NEST_REACH)
    return frozenset(found)


# NAMED_GENDER: the words that may stand between a gendered noun and the name it introduces
NAMED_GENDER_JOINERS = frozenset({",", "named", "called"})
# ... and the function words a sentence may open with before a name ("When Berg retired")
NAME_RUN_OPENERS = NOT_VERBS | CLAUSE_BREAKS
BOTH = "both"


def named_genders(doc: Doc) -> Dict[str, str]:
    """NAMED_GENDER: the name words the text itself gives a gender, by the
    noun or title right before the name ("her uncle, Nils Berg", "his son
    Timur", "Mrs. Okonkwo", "Mr. Osei") or by a first name of one gender
    that opens it ("Maria Lopez": Lopez). A word the text gives both
    genders ("Mrs. Okonkwo" and "Mr. Okonkwo"; "Anna Smith" and "John
    Smith"), or that follows a first word of no known gender ("Zaha Hadid"
    beside "her father, Mohammed Hadid": a family name), gets none:
    {word: "masculine" | "feminine"}."""
    found: Dict[str, str] = {}
    n = len(doc)

    def gender_of_noun(k: int) -> Optional[str]:
        word = doc[k].text.lower()
        return "masculine" if word in MASCULINE_NOUNS else "feminine" if word in FEMININE_NOUNS else None

    i = 0
    while i < n:
        if not _is_name_word(doc[i].text):
            i += 1
            continue
        end = i
        while end < n and _is_name_word(doc[end].text):
            end += 1
        # a run of name words doc[i:end], less a capitalised word that opens a sentence ("When Berg
        # retired"): titles inside it first ("Mr. John Lee"), then the noun before it
        while i < end - 1 and doc[i].text.lower() in NAME_RUN_OPENERS:
            i += 1
        first = i
        gender = None
        while first < end - 1 and gender_of_noun(first):
            gender, first = gender_of_noun(first), first + 1
        before = i - 2 if i >= 2 and doc[i - 1].text.lower() in NAMED_GENDER_JOINERS else i - 1
        if gender is None and before >= 0:
            gender = gender_of_noun(before)
        if gender is None and (doc[first].text in MASCULINE_NAMES or doc[first].text in FEMININE_NAMES):
            # the first name's own gender is NAME_GENDER's; here the words after it ("Lopez")
            gender = "masculine" if doc[first].text in MASCULINE_NAMES else "feminine"
            first += 1
        if gender is not None:
            # a longer name keeps its first word only: its middle and last may be a family's
            # ("His first daughter Rulan Chao Pian", of Chao's)
            words = [doc[k].text for k in range(first, end if end - first <= 2 else first + 1)]
        else:
            gender, words = BOTH, [doc[k].text for k in range(first + 1, end)]
        for word in words:
            found[word] = gender if found.get(word, gender) == gender else BOTH
        i = end
    return {word: gender for word, gender in found.items() if gender != BOTH}


class ObjectBinders(NamedTuple):
    """The OBJECT rule's pairs (object_binders): object pronoun token -> the
    tokens where its verb's subject may end; and -> the token where the
    clause opens whose subject is the verb's (a coordinated verb's)."""

    ends: Dict[int, List[int]]
    starts: Dict[int, int]


def object_binders(doc: Doc) -> ObjectBinders:
    """The OBJECT rule's pairs: each object pronoun (him, them, me, us; "her"
    before punctuation, a preposition or a conjunction) right after a verb
    (a lower-case word that is no determiner, preposition, conjunction,
    pronoun or adverb of NOT_VERBS), or after a verb and a preposition of
    ARGUMENT_PREPOSITIONS ("waited for him"), is not that verb's subject.
    The subject ends just before the verb, before an adverb and the verb
    ("finally called him"), or before an auxiliary ("has met him"). A verb
    after "and", "but" or "or" ("The chief visited the nurse and told her")
    shares the subject of the clause before it, the mention that opens that
    clause (at the text's start, or after a sentence's end, a bracket, a
    dash, a quote or a subordinating word of CLAUSE_BREAKS, with no other "and", "but" or "or"
    between: "Ann met Tom and Bo and told him" has none)."""
    words = [t.text for t in doc]
    lower = [w.lower() for w in words]

    def is_verb(i: int) -> bool:
        return i >= 0 and words[i].isalpha() and words[i].islower() and lower[i] not in NOT_VERBS

    def is_adverb(i: int) -> bool:
        return i >= 0 and words[i].isalpha() and (lower[i] in SUBJECT_ADVERBS or lower[i].endswith("ly"))

    binders = ObjectBinders({}, {})
    for p, word in enumerate(lower):
        is_object = word in OBJECT_PRONOUNS or (
            word == "her" and (p + 1 == len(doc) or lower[p + 1] in AFTER_OBJECT_HER)
        )
        if not is_object:
            continue
        verb = p - 2 if p >= 1 and lower[p - 1] in ARGUMENT_PREPOSITIONS else p - 1
        if verb < 1 or not is_verb(verb):
            continue
        ends = [verb - 1] + ([verb - 2] if is_adverb(verb - 1) else [])
        ends += [end - 1 for end in ends if end >= 1 and lower[end] in AUXILIARIES]
        binders.ends[p] = [end for end in ends if end >= 0]
        conjunction = next((end for end in ends if lower[end] in COORDINATORS), None)
        if conjunction is None:
            continue
        opening = conjunction - 1
        while opening >= 0 and lower[opening] not in CLAUSE_BREAKS and not words[opening].isspace():
            if lower[opening] in COORDINATORS:
                break
            opening -= 1
        else:
            if opening + 1 < conjunction:
                binders.starts[p] = opening + 1
    return binders


class DocRules:
    """The rules above for the mentions of one Doc.

    doc (Doc): the Doc.
    enabled (FrozenSet[str]): the rules to keep (ALL_RULES; fewer only to
        measure what each does).
    """

    def __init__(self, doc: Doc, enabled: FrozenSet[str] = ALL_RULES) -> None:
        unknown = set(enabled) - ALL_RULES
        if unknown:
            raise ValueError(f"unknown decoding rules {sorted(unknown)}; the rules are {sorted(ALL_RULES)}")
        self.doc = doc
        self.enabled = frozenset(enabled)
        text = doc.text
        # only texts with characters beyond Latin-1 can hold a multi-character grapheme
        self._bounds: Optional[Set[int]] = (
            grapheme_boundaries(text) if WORD in self.enabled and any(ord(ch) > 0x2FF for ch in text) else None
        )
        self._sentence: Optional[List[int]] = None
        if SENTENCE_PEOPLE in self.enabled and len(doc) and doc.has_annotation("SENT_START"):
            self._sentence = []
            index = -1
            for token in doc:
                index += token.i == 0 or bool(token.is_sent_start)
                self._sentence.append(index)
        # NAMED_GENDER: before the genders that read it (QUOTE_SPEAKER's)
        self._named_gender: Dict[str, str] = named_genders(doc) if NAMED_GENDER in self.enabled else {}
        self._speakers: Dict[int, str] = {}
        self._turns: Dict[int, str] = {}  # token -> its voice among the turns
        self._voices_of: Dict[str, Set[str]] = {}  # speaker -> the voices of their turns
        self._other: Dict[str, str] = {}  # in a chat of two, speaker -> the other
        if self.enabled & {SPEAKERS, VOICE, SPEAKER_NAMES, TURN_VOICE, SPEAKER_I} and "speakers" in doc.spans:
            turns = [turn for turn in doc.spans["speakers"] if len(turn)]
            # a chat of two: each speaker speaks to the other in every turn, so
            # all of a speaker's turns are one voice; with more, one turn is; a
            # monologue (a speech, a vlog: one speaker) none, since its "you"
            # is an audience whose members it speaks of too
            labels = sorted({turn.label_ for turn in turns})
            for k, turn in enumerate(turns):
                for i in range(turn.start, turn.end):
                    self._speakers[i] = turn.label_
                if len(labels) >= 2:
                    voice = f"s{turn.label_}" if len(labels) == 2 else f"t{k}"
                    self._turns.update(dict.fromkeys(range(turn.start, turn.end), voice))
                    self._voices_of.setdefault(turn.label_, set()).add(voice)
            if len(labels) == 2:
                self._other = {labels[0]: labels[1], labels[1]: labels[0]}
        # CHAT_NAMES: the words of the speakers' labels, where two or more speak and every label has a name's
        self._chat_label_words: Set[str] = set()
        if CHAT_NAMES in self.enabled and TURN_VOICE in self.enabled and len(self._voices_of) >= 2:
            labels = [speaker_words(label) for label in self._voices_of]
            if all(labels) and all(any(w.isalpha() for w in label) for label in labels):
                self._chat_label_words = {w for label in labels for w in label}
        self._speaker_names: Dict[Tuple[str, ...], str] = (
            speaker_names(doc.spans["speakers"]) if SPEAKER_NAMES in self.enabled and self._speakers else {}
        )
        self._quotation: Optional[List[int]] = (
            quotations(doc) if self.enabled & {VOICE, TURN_VOICE, SPEAKER_I, QUOTE_EDGE} else None
        )
        # QUOTE_SPEAKER: each attributed quotation's token -> its speaker's gender
        self._quote_gender: Dict[int, str] = {}
        if QUOTE_SPEAKER in self.enabled:
            quoted = self._quotation if self._quotation is not None else quotations(doc)
            by_quotation = quote_speaker_genders(doc, quoted, self._noun_gender)
            self._quote_gender = {i: by_quotation[k] for i, k in enumerate(quoted) if k in by_quotation}
        self._conjunct_words: FrozenSet[str] = (
            conjunct_name_words(doc) if CONJUNCT_NAMES in self.enabled else frozenset()
        )
        self._couples = name_couples(doc) if self.enabled & {COUPLE, COUPLE_THEY} else []
        # TURN_LABEL: each turn whose text opens with its speaker's name and a colon, as a pasted chat's
        # do: the name's first token and the colon's, in text order
        self._label_starts: List[int] = []
        self._label_colons: List[int] = []
        if TURN_LABEL in self.enabled and "speakers" in doc.spans:
            for turn in sorted(doc.spans["speakers"], key=lambda t: t.start):
                # a label is one to three words (doc_helpers.transcripts.TURN_OPENING), so its colon is near
                colon = next(
                    (i for i in range(turn.start + 1, min(turn.end, turn.start + 5)) if doc[i].text == ":"), -1
                )
                if colon > 0 and doc[turn.start : colon].text == turn.label_:
                    self._label_starts.append(turn.start)
                    self._label_colons.append(colon)
        self._label_name_ends = {start: colon - 1 for start, colon in zip(self._label_starts, self._label_colons)}
        self._mention_memo: Dict[TokenSpan, bool] = {}
        self._features_memo: Dict[TokenSpan, FrozenSet[str]] = {}
        # OBJECT: each object pronoun's verb's possible subject ends, and those ends
        # OBJECT: each object pronoun's binders (where its verb's subject may end, "s" and where its
        # clause opens), and the tokens where a binder ends or opens
        self._bound: Dict[int, List[str]] = {}
        self._binder_ends: Set[int] = set()
        self._binder_starts: Set[int] = set()
        if OBJECT in self.enabled:
            binders = object_binders(doc)
            for p, ends in binders.ends.items():
                self._bound[p] = [str(end) for end in ends]
                self._binder_ends.update(ends)
            for p, opening in binders.starts.items():
                self._bound.setdefault(p, []).append(f"s{opening}")
                self._binder_starts.add(opening)
        self._letter: Tuple[Optional[TokenSpan], Optional[TokenSpan]] = (
            letter_parts(doc) if VOICE in self.enabled and not self._speakers else (None, None)
        )

    def is_mention(self, span: TokenSpan) -> bool:
        """Whether the tokens start..end (inclusive) may be a mention
        (worked out once a span: a decoder that reads twice, for SPEAKER_I,
        asks again)."""
        key = (span[0], span[1])
        if key not in self._mention_memo:
            self._mention_memo[key] = self._is_mention(key)
        return self._mention_memo[key]

    def _is_mention(self, span: TokenSpan) -> bool:
        if self._label_colons and self.crosses_turn_label(span):
            return False
        if CLAUSE in self.enabled and self.is_clause(span):
            return False
        if PHRASE_CLAUSE in self.enabled and self.is_phrase_clause(span):
            return False
        if PUNCT_EDGE in self.enabled and self.is_punct_edged(span):
            return False
        if QUOTE_EDGE in self.enabled and self.crosses_quotation(span):
            return False
        return WORD not in self.enabled or self.is_word(span)

    def keeps_link(self, span: TokenSpan) -> bool:
        """KEEP_LINK: whether a mention is a he / she (and their forms),
        which links to the best antecedent the rules allow when its best one
        passed the threshold and a rule refused it: the model decided that
        it refers back, the rule only which mention it is ("The chief
        visited the nurse and told him": not the chief, so the nurse)."""
        start, end = span
        return KEEP_LINK in self.enabled and start == end and self.doc[start].text.lower() in MASCULINE | FEMININE

    def first_person_voice(self, span: TokenSpan) -> Optional[Tuple[str, ...]]:
        """SPEAKER_I: whose "I" a one-word I / me / my / mine / myself is:
        ("turn", speaker) in a speaker's turn outside quotation marks (a
        turn's written "Name :" label names the same voice: TURN_LABEL),
        ("quote", k) inside the text's k-th quotation (one voice; another
        quotation may be another speaker's), ("text",) elsewhere (the
        writer's or narrator's). None: no such pronoun or label, or the rule
        is off."""
        start, end = span
        if SPEAKER_I not in self.enabled:
            return None
        if self._label_colons and self._label_name_ends.get(start) == end and self._speakers.get(start):
            return ("turn", self._speakers[start])
        if start != end or self.doc[start].text.lower() not in FIRST_SINGULAR:
            return None
        if self._is_roman_one(start):
            return None
        assert self._quotation is not None
        quotation = self._quotation[start]
        speaker = self._speakers.get(start)
        if speaker and not quotation:
            return ("turn", speaker)
        if quotation:
            return ("quote", str(quotation))
        return ("text",)

    def crosses_quotation(self, span: TokenSpan) -> bool:
        """QUOTE_EDGE: whether a mention runs across a quotation's opening or
        closing mark ('You'll have it soon enough," he'; 'he told her: "I'):
        it holds a mark whose partner it lacks. One that holds a whole
        quotation ('the song "Yesterday"') does not, nor one that ends on the
        mark that closes the quotation it starts in ('Emperor of the United
        States "', as OntoGUM's gold has it)."""
        assert self._quotation is not None
        start, end = span
        quotation = self._quotation
        depth = 0
        for i in range(start, end + 1):
            if not quotation[i] and i + 1 < len(quotation) and quotation[i + 1]:
                depth += 1  # an opening mark: outside itself, the token after it inside
                continue
            if i > 0 and quotation[i - 1] and not quotation[i]:
                # a closing mark (or the line break that closed one)
                if depth:
                    depth -= 1
                elif i != end or i == start:
                    return True
        return depth > 0

    def _is_roman_one(self, i: int) -> bool:
        """Whether an "I" is a numeral after a capitalised word: inside a
        sentence ("World War I", "Queen Elizabeth I"), or one that opens a
        sentence or quotation where no verb follows ('" Norton I , Emperor'),
        not "Then I"."""
        doc = self.doc
        if doc[i].text != "I" or i < 1:
            return False
        before = doc[i - 1].text
        if not (before[:1].isupper() and before.isalpha()):
            return False
        opens = i < 2 or doc[i - 2].text in SENTENCE_OPENS or doc[i - 2].text.isspace()
        after = doc[i + 1].text if i + 1 < len(doc) else ""
        return not opens or after in ROMAN_ONE_AFTER or not after

    def crosses_turn_label(self, span: TokenSpan) -> bool:
        """Whether a mention takes in part of a turn's written label ("Grace :"
        of a pasted chat) without being its name alone (TURN_LABEL)."""
        start, end = span
        k = bisect.bisect_left(self._label_colons, start)  # the first label colon at or after start
        if k == len(self._label_colons):
            return False
        colon = self._label_colons[k]
        name_start = self._label_starts[k]
        if end < name_start:
            return False
        return not (start >= name_start and end < colon)

    def is_word(self, span: TokenSpan) -> bool:
        """Whether a mention is a word (the WORD rule): a letter or digit, no
        whitespace at either end, whole graphemes."""
        start, end = span
        doc = self.doc
        if doc[start].is_space or doc[end].is_space:
            return False
        if not any(has_word_character(doc[i].text) for i in range(start, end + 1)):
            return False
        if self._bounds is not None:
            first, last = doc[start], doc[end]
            if first.idx not in self._bounds or last.idx + len(last.text) not in self._bounds:
                return False
        return True

    def is_clause(self, span: TokenSpan) -> bool:
        """Whether a mention of two or more words starts with a subject and
        its verb (the CLAUSE rule)."""
        start, end = span
        if start == end:
            return False
        words = [self.doc[i].text for i in range(start, end + 1)]
        if words[0].lower() in SUBJECTS:
            return words[1].lower() not in AFTER_SUBJECT
        i = 0
        while i < len(words) and words[i][:1].isupper() and words[i].isalpha() and words[i].lower() not in DETERMINERS:
            i += 1
        return 0 < i < len(words) and words[i] in FINITE_VERBS

    def is_punct_edged(self, span: TokenSpan) -> bool:
        """Whether a mention starts or ends with a comma, semicolon or colon
        (the PUNCT_EDGE rule): "a new assistant, Tom," is "a new assistant,
        Tom" with the comma that closes the apposition."""
        return self.doc[span[0]].text in PUNCT_EDGES or self.doc[span[1]].text in PUNCT_EDGES

    def is_phrase_clause(self, span: TokenSpan) -> bool:
        """Whether a mention opened by a determiner holds its noun phrase and
        a finite be / have / do or modal verb right after the phrase's
        head (the PHRASE_CLAUSE rule): "the apples were not, so we"; or a
        verb in -ed and its object's determiner ("The surgeon recognised
        the nanny"; not "a guy called the Invisible Man"). A preposition,
        relative word, comma or pronoun before the verb keeps it a noun
        phrase ("the man who was there", "the pupil he ever taught")."""
        start, end = span
        doc = self.doc
        # every candidate span comes here: the first token decides most
        if end - start < 2 or doc[start].text.lower() not in DETERMINERS:
            return False
        for i in range(start + 1, end + 1):
            word = doc[i].text.lower()
            if word in HEAD_ENDS or word in PHRASE_STOPS or word in _ALL_PRONOUNS:
                return False
            if word in PHRASE_VERBS:
                head = doc[i - 1].text
                return head.isalpha() and head.islower() and head not in DETERMINERS
            # a verb in -ed with its object's determiner after it: "the surgeon recognised the nanny"
            if i < end and _is_past_verb(doc[i].text) and doc[i + 1].text.lower() in DETERMINERS:
                head = doc[i - 1].text
                return head.isalpha() and head.islower() and head.lower() not in DETERMINERS
        return False

    def is_coordination(self, span: TokenSpan) -> bool:
        """Whether a mention joins two noun phrases by "and" (the
        COORDINATION rule): "my sister and her husband", "Tom and Anna"."""
        start, end = span
        words = [self.doc[i].text for i in range(start, end + 1)]
        for i in range(1, len(words) - 1):
            if words[i].lower() in ("and", "&"):
                if any(w.lower() in NOT_BEFORE_COORDINATION for w in words[:i]):
                    return False
                following = words[i + 1]
                return following.lower() in COORDINATED_OPENERS or (following[:1].isupper() and following.isalpha())
        return False

    def features(self, span: TokenSpan) -> FrozenSet[str]:
        """A mention's features (`_features`), worked out once a span."""
        key = (span[0], span[1])
        if key not in self._features_memo:
            self._features_memo[key] = self._features(key)
        return self._features_memo[key]

    def _features(self, span: TokenSpan) -> FrozenSet[str]:
        """A one-word pronoun mention's features (PRONOUNS), its speaker's
        where a first- or second-person pronoun has one (SPEAKERS), its
        voice's for I, you, he and she (VOICE outside speaker turns: its
        quotation, and a letter's greeting and signature names; TURN_VOICE
        in a turn: its speaker's or its turn's voice), a speaker's for a name
        that names one (SPEAKER_NAMES, with its voices under TURN_VOICE), one
        person's for he / she / I, two people's for a coordination
        (COORDINATION)."""
        start, end = span
        coordination = (
            start != end and bool(self.enabled & {COORDINATION, CONJUNCT_NAMES}) and self.is_coordination(span)
        )
        letter = (
            self._letter_feature(span)
            | self._speaker_name_feature(span)
            | self._chat_third_name_feature(span)
            | self._conjunct_name_features(span, coordination)
            | self._couple_features(span)
        )
        if POSSESSOR in self.enabled and self.doc[start].text.lower() in POSSESSIVE_DETERMINERS:
            letter.add(f"{OWNER_AT if start == end else OWNED_AT}{start}")
        if end in self._binder_ends:
            letter.add(f"{BINDER_AT}{end}")
        if start in self._binder_starts and not self._is_possessor(span):
            letter.add(f"{BINDER_AT}s{start}")
        if start == end and start in self._bound:
            letter.update(f"{BOUND_AT}{k}" for k in self._bound[start])
        if start != end:
            if COORDINATION in self.enabled and coordination:
                return frozenset({"two-people"} | letter)
            return frozenset(letter | self._one_gendered_person(span))
        word = self.doc[start].text.strip().lower()
        found = set(pronoun_features(word)) if PRONOUNS in self.enabled else set()
        if COORDINATION in self.enabled and word in ONE_PERSON:
            found.add("one-person")
        if COUPLE_THEY in self.enabled and self._couples and word in THIRD_PLURAL:
            found.add(COUPLE_PRONOUN)
        if THEY in self.enabled and word in THIRD_PLURAL:
            found.add(THEY_FEATURE)
        elif THEY in self.enabled and (word in MASCULINE or word in FEMININE):
            found.add(HE_SHE_FEATURE)
        if not found:
            found |= self._one_gendered_person(span)
        speaker = self._speakers.get(start)
        if word in FIRST_SINGULAR and start in self._quote_gender and not speaker:
            found.add(self._quote_gender[start])
        person = (
            "I"
            if word in FIRST_SINGULAR
            else "you"
            if word in SECOND
            else "third"
            if word in MASCULINE or word in FEMININE
            else None
        )
        if speaker and person in ("I", "you") and SPEAKERS in self.enabled:
            found.add(f"{person}{SPEAKER_SEP}{speaker}")
        if person and self._quotation is not None:
            # outside speaker turns the text's voices (VOICE); in a turn, its
            # speaker's (TURN_VOICE); a quotation is a voice of its own in both
            if not speaker and VOICE in self.enabled:
                found.add(f"{person}{VOICE_SEP}{self._quotation[start]}")
            elif speaker and start in self._turns and TURN_VOICE in self.enabled:
                found.add(f"{person}{VOICE_SEP}{self._turns[start]}.{self._quotation[start]}")
                if speaker in self._other and person in ("I", "you") and not self._quotation[start]:
                    # in a chat of two, a speaker's "I" is the other's "you" and their "you" the other's "I"
                    swapped = "you" if person == "I" else "I"
                    found.add(f"{swapped}{VOICE_SEP}s{self._other[speaker]}.0")
        return frozenset(found | letter)

    def _is_possessor(self, span: TokenSpan) -> bool:
        """Whether a mention is a possessor, the subject's owner and not the
        subject ("his" of "his mother", "John" of "John's mother")."""
        start, end = span
        if start == end and self.doc[start].text.lower() in POSSESSIVE_DETERMINERS:
            return True
        return end + 1 < len(self.doc) and self.doc[end + 1].text.lower() in POSSESSIVE

    def _one_gendered_person(self, span: TokenSpan) -> Set[str]:
        """A mention's gender (`_noun_gender`) and, where it has one, that it
        is one person (COORDINATION: "her husband" is not "Tomás Ferreira
        and Ingrid Holm"; the nouns are singular)."""
        gender = self._noun_gender(span)
        return gender | {"one-person"} if gender and COORDINATION in self.enabled else gender

    def _noun_gender(self, span: TokenSpan) -> Set[str]:
        """GENDERED_NOUNS: "masculine" or "feminine" for a mention whose head
        is a noun or title of one gender ("her father, Wladyslaw", "his
        sister Abena", "Mr. John Lee", "Mother"), the features of he and
        she, so that it never shares a cluster with a pronoun or such a noun
        of the other gender. The head is the last word before a preposition,
        a relative word or a comma (less a possessive 's); behind a name
        ("Abena", "John Lee"), the word that opens the name. NAME_GENDER:
        a mention opened by a first name of one gender (gendered_words) has
        that name's ("Maria", "Maria Lopez"; not "Sam", given to both)."""
        if GENDERED_NOUNS not in self.enabled and NAME_GENDER not in self.enabled:
            return set()
        start = span[0]
        doc = self.doc
        head = self.head(span)
        word = doc[head].text.lower()
        while (
            head > start
            and word not in MASCULINE_NOUNS
            and word not in FEMININE_NOUNS
            and _is_name_word(doc[head].text)
        ):
            head -= 1
            word = doc[head].text.lower()
        if GENDERED_NOUNS in self.enabled and word in MASCULINE_NOUNS:
            return {"masculine"}
        if GENDERED_NOUNS in self.enabled and word in FEMININE_NOUNS:
            return {"feminine"}
        if NAME_GENDER in self.enabled:
            # NAME_GENDER: the first name that opens a name ("Maria Lopez"), where no
            # determiner or other word comes before it ("the Maria Lopez Foundation")
            opening = head if _is_name_word(doc[head].text) else head + 1
            if opening == start:
                name = doc[opening].text
                if name in MASCULINE_NAMES:
                    return {"masculine"}
                if name in FEMININE_NAMES:
                    return {"feminine"}
        if self._named_gender:
            # NAMED_GENDER: a bare name ("Berg", "Nils Berg", "Berg 's") whose words the text gave one gender
            end = span[1] - 1 if span[1] > start and doc[span[1]].text in POSSESSIVE else span[1]
            words = [doc[i].text for i in range(start, end + 1)]
            if all(_is_name_word(w) for w in words):
                genders = {self._named_gender[w] for w in words if w in self._named_gender}
                if len(genders) == 1:
                    return genders
        return set()

    def _conjunct_name_features(self, span: TokenSpan, coordination: bool) -> Set[str]:
        """CONJUNCT_NAMES: a coordination's capitalised name words
        ("group-name:ian", "group-name:morag" of "Ian and Morag"), a name's
        words ("name:ian" of "Ian"): a cluster with both of one word holds the
        couple and one of them ("Ian and Morag ... they ... Ian spent his
        working life"); `coordination`: whether the span is one
        (`is_coordination`). A name's words count only where a coordination may hold
        them (`conjunct_name_words`), so few tokens get a feature."""
        if CONJUNCT_NAMES not in self.enabled:
            return set()
        start, end = span
        if coordination:
            words = [self.doc[i].text for i in range(start, end + 1)]
            return {GROUP_NAME + w.lower() for w in words if _is_conjunct_name_word(w)}
        name = self._name_of(span)
        return {NAME_OF + w for w in name if w in self._conjunct_words} if name is not None else set()

    def _couple_features(self, span: TokenSpan) -> Set[str]:
        """COUPLE: a name whose words meet one name of a coordination of two
        (`name_couples`) and not the other is that one ("conjunct@3.0" for
        "Ferreira" of "Tomás Ferreira and Ingrid Holm"); COUPLE_THEY: it is
        one of a couple (ONE_OF_COUPLE), which a plural pronoun is not,
        unless the text calls it "they" in the coordination itself."""
        if not self._couples:
            return set()
        name = self._name_of(span)
        if name is None:
            return set()
        words = set(name)
        found = set()
        for at, first, second, first_is_they in self._couples:
            side = 0 if words & first and not words & second else 1 if words & second and not words & first else -1
            if side >= 0:
                if COUPLE in self.enabled:
                    found.add(f"{CONJUNCT_AT}{at}.{side}")
                # "Jordan and their sister Beth": Jordan is a "they" of one
                if COUPLE_THEY in self.enabled and not (side == 0 and first_is_they):
                    found.add(ONE_OF_COUPLE)
        return found

    def _speaker_name_feature(self, span: TokenSpan) -> Set[str]:
        """A name that names a speaker (`speaker_names`) is that speaker's
        "I" (SPEAKERS), in any turn: "Ben" and "Anna" of a chat are two
        people, and Anna's "you" is not "Anna"."""
        if not self._speaker_names:
            return set()
        name = self._name_of(span)
        speaker = self._speaker_names.get(speaker_words(" ".join(name))) if name is not None else None
        if speaker is None:
            return set()
        found = {f"I{SPEAKER_SEP}{speaker}"}
        if TURN_VOICE in self.enabled:
            # the speaker is the "I" of their turns' voices (outside their
            # quotations) and, in a chat of two, the other's "you": no "she"
            # of either is the speaker
            found |= {f"I{VOICE_SEP}{voice}.0" for voice in self._voices_of.get(speaker, ())}
            if speaker in self._other:
                found.add(f"you{VOICE_SEP}s{self._other[speaker]}.0")
        return found

    def _chat_third_name_feature(self, span: TokenSpan) -> Set[str]:
        """CHAT_NAMES: in a chat of two or more speakers whose labels are
        names, a name outside quotation marks that shares no word with any
        label is someone spoken of, a third person in every turn's voice
        (TURN_VOICE's): no speaker's "I" or "you" ("Ama left her book at
        school" in Grace's turn: Ama is neither Grace nor Daniel). Left
        alone: a name said to someone or as a predicate ("I'm Laura"), as
        for a letter (`_spoken_of`); a kinship word or title alone ("Mom",
        "Sir"), which may name the one spoken to; a short or long form of a
        speaker's name ("Steve", "Ash"); one capitalised word that opens a
        sentence, which may be no name ("Guys", "Ya")."""
        if CHAT_NAMES not in self.enabled or not self._chat_label_words:
            return set()
        start = span[0]
        if self._quotation is not None and self._quotation[start]:
            return set()
        name = self._name_of(span)
        if name is None or not self._spoken_of(span, name, self._chat_label_words):
            return set()
        if all(w in MASCULINE_NOUNS or w in FEMININE_NOUNS for w in name):
            return set()  # "Mom", "Dad", "Sir": what a speaker calls the other, no name of someone else
        if any(w[:3] == k[:3] and (w.startswith(k) or k.startswith(w)) for w in name for k in self._chat_label_words):
            return set()  # a short or long form of a speaker's name ("Steve" for Steven, "Ash" for AshleyClaire)
        if len(name) == 1 and (start == 0 or self.doc[start].is_sent_start or self.doc[start - 1].text in (":", "\n")):
            return set()  # a capitalised word opening a sentence may be no name ("Guys", "Thousands")
        return {f"third{VOICE_SEP}{voice}.0" for voices in self._voices_of.values() for voice in voices}

    def _name_of(self, span: TokenSpan) -> Optional[Tuple[str, ...]]:
        """A mention's lower-case words when it is a name: every word
        capitalised, its first no determiner or pronoun, a possessive 's
        aside; else None."""
        start, end = span
        while end > start and self.doc[end].text.lower() in POSSESSIVE:
            end -= 1
        words = [self.doc[i].text for i in range(start, end + 1)]
        first = words[0].lower()
        if first in DETERMINERS or first in _ALL_PRONOUNS or not all(_is_name_word(w) for w in words):
            return None
        return self._name_words(start, end)

    def _letter_feature(self, span: TokenSpan) -> Set[str]:
        """A letter's greeting name is the text's "you", its signature its
        "I" (VOICE): a mention inside either (or the greeting with its word,
        "Hi Jo") gets that feature. Any other name of the letter's own voice
        that shares no word with those two is a third person ("Could you
        send it to James?" in a letter to Sarah: James is not "you")."""
        start, end = span
        greeting, signature = self._letter
        if greeting is not None and greeting[0] <= end <= greeting[1]:
            return {f"you{VOICE_SEP}0"}
        if signature is not None and start >= signature[0] and end <= signature[1]:
            return {f"I{VOICE_SEP}0"}
        if greeting is None and signature is None:
            return set()
        name = self._letter_name(span)
        if name is None:
            return set()
        for part, person in ((greeting, "you"), (signature, "I")):
            if part is not None and name == self._name_words(part[0], part[1], names_only=True):
                return {f"{person}{VOICE_SEP}0"}  # the reader or the writer named again
        return {f"third{VOICE_SEP}0"} if self._is_third_person_name(span, name) else set()

    def _name_words(self, start: int, end: int, *, names_only: bool = False) -> Tuple[str, ...]:
        """The lower-case words of tokens start..end (with names_only, the
        capitalised ones: a greeting's "Hi Sarah" is "sarah")."""
        words = [self.doc[i].text for i in range(start, end + 1)]
        return tuple(w.lower() for w in words if not names_only or _is_name_word(w))

    def _letter_name(self, span: TokenSpan) -> Optional[Tuple[str, ...]]:
        """A mention's lower-case words when it is a name (every word
        capitalised, its first no determiner or pronoun, a possessive 's
        aside) outside quotation marks; else None."""
        start = span[0]
        if self._quotation is not None and self._quotation[start]:
            return None
        return self._name_of(span)

    def _is_third_person_name(self, span: TokenSpan, name: Tuple[str, ...]) -> bool:
        """Whether a name of a letter (`_letter_name`) is one spoken of, not
        to or by its writer (`_spoken_of`, the greeting's and the
        signature's words the names of the two)."""
        letter_words = {w for part in self._letter if part is not None for w in self._name_words(*part)}
        return self._spoken_of(span, name, letter_words)

    def _spoken_of(self, span: TokenSpan, name: Tuple[str, ...], known: Set[str]) -> bool:
        """Whether a name is one spoken of, not to or by the text's people:
        no word in common with their names' words (`known`), not said to
        someone ("James, ..." opening a sentence, ", James!" closing one),
        not a predicate ("this is Tom"), not the text's last words (a
        signature on no line of its own)."""
        start, end = span
        doc = self.doc
        if known & set(name):
            return False
        before = doc[start - 1].text if start > 0 else ""
        after = doc[end + 1].text if end + 1 < len(doc) else ""
        if before.lower() in PREDICATE_WORDS or before.lower() in ("am", "'m", "’m"):
            return False  # "this is Tom", "I'm Tom": a predicate may be the writer
        if all(not has_word_character(t.text) for t in doc[end + 1 :]):
            return False  # the text's last words: a signature on no line of its own ("... ? Sam")
        opens = start == 0 or bool(doc[start].is_sent_start) or "\n" in doc[start - 1].text_with_ws
        return not ((opens and after == ",") or (before == "," and after in (",", "!", "?", ".")))

    def head(self, span: TokenSpan) -> int:
        """A noun phrase's head token: the last word before a preposition, a
        relative word or a comma (HEAD_ENDS), else its last word, less a
        possessive 's."""
        start, end = span
        doc = self.doc
        head = end
        for i in range(start + 1, end + 1):
            if doc[i].text.lower() in HEAD_ENDS:
                head = i - 1
                break
        if head > start and doc[head].text.lower() in POSSESSIVE:
            head -= 1
        return head

    def description(self, span: TokenSpan) -> Optional[Tuple[int, str]]:
        """(sentence index, head word) of a noun-phrase mention; None for a
        pronoun, without sentence boundaries, or with the rule off."""
        if self._sentence is None:
            return None
        start, end = span
        doc = self.doc
        if start == end and doc[start].text.lower() in _ALL_PRONOUNS:
            return None
        if doc[start].text.lower() not in DESCRIPTION_STARTS or start == end:
            return None
        return self._sentence[start], doc[self.head(span)].text.lower()

    def distinct_in_sentence(self, a: TokenSpan, b: TokenSpan) -> bool:
        """Whether two noun-phrase mentions are two of one sentence that
        cannot corefer (the SENTENCE_PEOPLE rule)."""
        da, db = self.description(a), self.description(b)
        if da is None or db is None or da[0] != db[0] or da[1] == db[1]:
            return False
        (s1, e1), (s2, e2) = sorted((a, b))
        if s2 <= e1:  # nested or overlapping
            return False
        gap = [self.doc[i].text for i in range(e1 + 1, s2)]
        if all(word in APPOSITION_GAP for word in gap):
            return False
        # "the winner was the youngest player", "known as the Emperor": a predicate, not two people;
        # only where the predicate's verb stands just before the second phrase ("The eggs are in
        # the fridge, but the flour": the "are" is another clause's)
        verbs = [k for k, word in enumerate(gap) if word.lower() in PREDICATE_WORDS]
        return not verbs or not all(word.lower() in PREDICATE_TAIL for word in gap[verbs[-1] + 1 :])

    def symbol_only_difference(self, a: TokenSpan, b: TokenSpan) -> bool:
        """Whether one of two nested spans adds to the other only tokens
        without a letter or digit."""
        (s1, e1), (s2, e2) = a, b
        if SYMBOL_TWINS not in self.enabled:
            return False
        if not ((s1 <= s2 and e2 <= e1) or (s2 <= s1 and e1 <= e2)) or a == b:
            return False
        outer, inner = (a, b) if s1 <= s2 and e2 <= e1 else (b, a)
        extra = [i for i in range(outer[0], outer[1] + 1) if not inner[0] <= i <= inner[1]]
        return not any(has_word_character(self.doc[i].text) for i in extra)


# how far before a mention a span that holds it may start (a model's widest
# mention is 30 tokens in the presets)
NEST_REACH = 64


class ClusterBuilder:
    """Clusters grown one link at a time, in text order: each new mention
    (a candidate no earlier link has touched) is checked against the cluster
    it would join (DocRules) before it joins."""

    def __init__(self, rules: DocRules, spans: Sequence[TokenSpan]) -> None:
        self.rules = rules
        self.spans = list(spans)
        self.parent = list(range(len(self.spans)))
        self.members: Dict[int, List[int]] = {i: [i] for i in range(len(self.spans))}
        self.features: Dict[int, Set[str]] = {i: set(rules.features(s)) for i, s in enumerate(self.spans)}
        # a cluster's noun-phrase mentions by sentence (SENTENCE_PEOPLE)
        self.by_sentence: Dict[int, Dict[int, List[int]]] = {i: {} for i in range(len(self.spans))}
        for i, span in enumerate(self.spans):
            described = rules.description(span)
            if described is not None:
                self.by_sentence[i][described[0]] = [i]
        self._by_start: Dict[int, List[int]] = {}
        for i, (start, _) in enumerate(self.spans):
            self._by_start.setdefault(start, []).append(i)

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def _symbol_twins(self, q: int) -> List[int]:
        """The candidates nested with q that differ from it by symbols only
        (their start is at most NEST_REACH tokens before q's)."""
        start, end = self.spans[q]
        near = [j for s in range(max(0, start - NEST_REACH), end + 1) for j in self._by_start.get(s, ())]
        return [j for j in near if j != q and self.rules.symbol_only_difference(self.spans[q], self.spans[j])]

    def may_link(self, q: int, c: int) -> bool:
        """Whether the new mention q may join the cluster of c."""
        rq, rc = self.find(q), self.find(c)
        if rq == rc:
            return True
        if conflict(self.features[rq] | self.features[rc]):
            return False
        if any(self.find(j) == rc for j in self._symbol_twins(q)):
            return False
        described = self.rules.description(self.spans[q])
        if described is not None:
            # only the cluster's noun phrases of q's sentence can conflict with it
            same = self.by_sentence[rc].get(described[0], ())
            if any(self.rules.distinct_in_sentence(self.spans[q], self.spans[m]) for m in same):
                return False
        return True

    def join(self, i: int, j: int) -> None:
        ri, rj = self.find(i), self.find(j)
        if ri == rj:
            return
        if len(self.members[ri]) < len(self.members[rj]):
            ri, rj = rj, ri
        self.parent[rj] = ri
        self.members[ri].extend(self.members.pop(rj))
        self.features[ri] |= self.features.pop(rj)
        for sentence, members in self.by_sentence.pop(rj).items():
            self.by_sentence[ri].setdefault(sentence, []).extend(members)

    def clusters(self) -> Clusters:
        """Clusters of two or more mentions, each sorted, by first mention."""
        groups = [sorted(set(self.spans[i] for i in members)) for members in self.members.values()]
        return sorted((g for g in groups if len(g) > 1), key=lambda c: c[0])


class VoiceChains:
    """SPEAKER_I's links: each voice's latest first-person singular
    candidate (DocRules.first_person_voice), read in text order. An "I" the
    model left alone (`alone`: it took no antecedent and none took it) joins
    it, as Stanford's speaker sieve would: the one rule that adds a link
    rather than refusing one. Only one left alone: an "I" that opens a chain
    of its own is the model's decision that it is someone else (a quoted
    speaker, a mislabelled turn), and joining it would join the chain.

    rules (Optional[DocRules]): the Doc's rules; None, or SPEAKER_I off: no link.
    spans (Sequence[TokenSpan]): the candidates, in text order.
    alone (Container[int]): the candidates a reading without this rule left alone.
    """

    def __init__(self, rules: Optional[DocRules], spans: Sequence[TokenSpan], alone: Container[int] = ()) -> None:
        self.voices = [rules.first_person_voice(span) for span in spans] if rules is not None else [None] * len(spans)
        self.alone = alone
        self.latest: Dict[Tuple[str, ...], int] = {}

    def previous(self, q: int) -> int:
        """The latest candidate before q of q's voice, if q is an "I" left
        alone (-1: none)."""
        voice = self.voices[q]
        return self.latest.get(voice, -1) if voice is not None and q in self.alone else -1

    def left_alone(self, allowed: Sequence[bool], antecedents: Sequence[int]) -> FrozenSet[int]:
        """The "I"s of a reading (each candidate's antecedent, -1: none) that
        have a voice's earlier "I" to join and took no antecedent, and that
        no candidate took as its antecedent."""
        taken = set(antecedents)
        seen: Set[Tuple[str, ...]] = set()
        found = set()
        for q, voice in enumerate(self.voices):
            if voice is None or not allowed[q]:
                continue
            if voice in seen and antecedents[q] < 0 and q not in taken:
                found.add(q)
            seen.add(voice)
        return frozenset(found)

    def read(self, q: int) -> None:
        """q, a mention now, is its voice's latest."""
        voice = self.voices[q]
        if voice is not None:
            self.latest[voice] = q


def pick_antecedent(
    antecedents: Sequence[int],
    scores: Sequence[float],
    threshold: float,
    allowed: Sequence[bool],
    may_link: Callable[[int], bool],
    keeps: bool,
    held: Optional[Container[int]] = None,
    voice_previous: int = -1,
) -> int:
    """A mention's antecedent: the first of its antecedents (best first)
    that scores above the threshold and that the rules let it join; -1:
    none. The one home of the KEEP_LINK rule: once a rule refused an
    antecedent above the threshold, a mention that `keeps` its link (a he /
    she: DocRules.keeps_link) takes the next allowed one whatever its score.

    allowed (Sequence[bool]): by candidate, whether it is a mention at all
        (DocRules.is_mention).
    may_link (Callable[[int], bool]): whether the mention may join this
        antecedent's cluster (ClusterBuilder.may_link).
    held (Optional[Container[int]]): the antecedents that may be read (a
        bounded memory's); one not held is skipped, and counts as refused
        only where a rule made it no mention. None: every one.
    voice_previous (int): SPEAKER_I: the latest "I" of the mention's voice
        (VoiceChains.previous; -1: none), taken when no antecedent is, if
        held and the rules let the mention join it.
    """
    refused = False
    for c, score in zip(antecedents, scores):
        if not (score > threshold or (refused and keeps)):
            break  # best first: none after it passes either
        if held is not None and c not in held:  # let go by the memory (no rule's doing), or never held: a rule's
            refused = refused or not allowed[c]
            continue
        if allowed[c] and may_link(c):
            return c
        refused = True
    c = voice_previous
    if c >= 0 and allowed[c] and (held is None or c in held) and may_link(c):
        return c
    return -1


def violations(doc: Doc, clusters: Sequence[Sequence[TokenSpan]]) -> Dict[str, int]:
    """What a Doc's clusters break of the rules, counted (all rules on):
    "non_word" mentions (PUNCT_EDGE's with WORD's) and "clause" ones (CLAUSE's
    with PHRASE_CLAUSE's), clusters with "pronoun_conflict"s, with
    "symbol_twins" and with "sentence_people". For benchmarks and tests: the
    decoders make none."""
    rules = DocRules(doc)
    counts = {"non_word": 0, "clause": 0, "pronoun_conflict": 0, "symbol_twins": 0, "sentence_people": 0}
    for cluster in clusters:
        spans = [cast(TokenSpan, tuple(span)) for span in cluster]
        counts["non_word"] += sum(not rules.is_word(span) or rules.is_punct_edged(span) for span in spans)
        counts["clause"] += sum(rules.is_clause(span) or rules.is_phrase_clause(span) for span in spans)
        features: Set[str] = set()
        for span in spans:
            features |= rules.features(span)
        counts["pronoun_conflict"] += conflict(features)
        counts["symbol_twins"] += any(
            rules.symbol_only_difference(a, b) for i, a in enumerate(spans) for b in spans[i + 1 :]
        )
        counts["sentence_people"] += any(
            rules.distinct_in_sentence(a, b) for i, a in enumerate(spans) for b in spans[i + 1 :]
        )
    return counts
