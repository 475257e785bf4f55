"""Resolved text: a Doc's text with pronouns replaced by the entity they
refer to, and a map from every character of it back to `doc.text`.

It reads the clusters from the Doc's `coref_clusters_*` span groups, so it
works on the output of either model, on Docs from a DocBin and on clusters
set by hand. spaCy only (no torch). The rules, in order:

1. A cluster's representative is its first proper-noun mention, else its
   first non-pronoun mention; only a mention whose name (rule 2) holds a
   word character can be one (not whitespace or punctuation only), and a
   one-word mention only when that word can name something alone
   (`_names_alone`: a noun, not an event's verb such as "swore"); a
   cluster without such a mention is left alone.
2. A cluster's name is its representative's text, whitespace runs made one
   space, WITHOUT a final possessive marker: "Mary's", "Mary 's" (OntoGUM's
   tokens), "Mary’s" and "the kids'" are named "Mary" and "the kids"; and
   without an aside: a relative clause after a comma or a ", 42" where its
   head part ends, or a final parenthesis ("Jason , who is our editor" ->
   "Jason"; `_before_aside`). A description around a proper name, after a
   possessive or before an apposition, is named by the name ("his sister
   Anna" -> "Anna", "her father , Władysław ," -> "Władysław";
   `_named_part`); a name that still holds a possessive determiner ("her
   mother") replaces pronouns of its own sentence only.
3. Personal pronouns (subject and object) become the name; the
   representative and the other nominal mentions stay as they are.
4. Possessives become the name's possessive, with exactly one marker: "'s",
   or a bare apostrophe after a final "s" ("Alice's", "James'", "the kids'");
   standalone "hers", "theirs", ... likewise. "her" is possessive when the
   tagger says so (tag PRP$ or Poss=Yes); without a tagger when the next
   token is a word that can start a noun phrase (not punctuation, not a
   function word, not the end of the text).
5. A subject pronoun before a verb clitic ('m 're 's 've 'd 'll, with a
   straight or curly apostrophe, or "m" "re" ... glued to it as in "Im")
   is replaced together with the clitic, which is written out in full and
   agrees with the name: "I'm" -> "Alice is", "they're" -> "the kids are",
   "you've" -> "Bob has". The number is the pronoun's (I he she it:
   singular, we: plural); for "you" and "they" it is the name's (see
   `_is_plural`). "'s" is "has" before "been"/"got", "is" before anything
   that cannot be a past participle, and ambiguous before one ("he's
   gone"); "'d" is "had" before "been"/"had"/"got"/"better" or a past
   participle and "would" before a base verb. When the clitic is ambiguous,
   or follows an object or possessive form ("her's"), the pronoun is left
   alone: the text never reads "Alice'm". ("n't" never follows a pronoun.)
   A subject "I", "you" or "they" replaced by a singular name also has its
   verb made to agree (`_agreeing_verb`): be, have and do ("I am" -> "Alice
   is", "you don't" -> "Bob doesn't"), and any present-tense verb ("I say"
   -> "Alice says"): with a tagger one tagged VBP; without one, a word
   after "I" or "they", or after "you" where a clause starts ("if you",
   "the countries you"), that reads as one by its spelling
   (`_reads_as_present_verb`); not after an auxiliary ("why don't you
   have") or a causative ("let you have"), in a coordinated subject ("Bob
   and I are"), or for the subjunctive "I were". A name that "they" stands
   for is plural when its head ends in s, capitalized too unless the name
   looks like a person's ("Senators", "the Saudis"; not "Sam Evans").
6. Reflexives ("herself") are kept, and so is a mention inside its own
   cluster's representative ({"Her mother", "Her", "she"}: "Her" stays).
7. Case follows position: a replacement that starts a sentence, or that
   replaces a capitalized pronoun (other than "I"), is capitalized; a
   representative that began with a capitalized common word ("The
   president") is lower-cased mid-sentence, but not the first word of a
   name ("Dutch cough drops", when the Doc has tags and entities; not a
   number or a date: "two men").
8. Nothing is replaced twice: an edit overlapping one already made (a token
   in two clusters, a mention inside another replaced one) is skipped.
9. First- and second-person pronouns inside quotation marks are kept (they
   refer to the speaker and the listener).

Proper nouns: with a tagger, a mention holding a PROPN token; without one, a
mention holding a title-case word that is not a pronoun or a function word.
"US", "IT" and "WHO" in capitals are names unless a tagger tags them PRON
or the words beside them are in capitals too.
Sentence starts: the Doc's sentence boundaries when it has them, else the
first token and the tokens after ". ! ?" (and an opening quote or a
whitespace token such as "\\n\\n" after them).
"""
import bisect
import numbers
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple

from ..doc_helpers.clusters import CLUSTER_PREFIX, cluster_span_groups

if TYPE_CHECKING:  # pragma: no cover
    from spacy.tokens import Doc, Span, Token

# pronoun forms, lower-cased; person 1/2 matter inside quotations
SUBJECT_OBJECT = {
    "he": 3, "him": 3, "she": 3, "it": 3, "they": 3, "them": 3, "em": 3, "'em": 3,
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
    "one", "ones", "someone", "somebody", "anyone", "anybody", "everyone", "everybody", "nobody", "something",
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
# pronouns that can be the subject of a verb clitic, and their number
# (None: "you" and "they" take the name's number)
SUBJECTS = {"i": False, "he": False, "she": False, "it": False, "we": True, "you": None, "they": None, "thou": False, "ye": True}
# verb clitics, apostrophe straight (curly ones are straightened first)
CLITICS = {"'m", "'re", "'s", "'ve", "'d", "'ll"}
# the same without an apostrophe, counted only when glued to the pronoun ("Im")
BARE_CLITICS = {"m", "re", "s", "ve", "d", "ll"}
# possessive markers: a token of its own, or the end of the last word
POSSESSIVE_MARKERS = {"'s", "'"}
# after "'s": "has"; after "'d": "had" (also before a past participle)
HAS_NEXT = {"been", "got", "gotten", "had"}
HAD_NEXT = HAS_NEXT | {"better"}
# after "'d": "would" (function words otherwise leave "'d" ambiguous)
WOULD_NEXT = {"be", "have", "do", "like", "rather"}
# adverbs looked past to find the verb after a clitic ("he's not been")
CLITIC_ADVERBS = {
    "not", "n't", "never", "just", "already", "always", "also", "really", "still", "ever", "even",
    "only", "probably", "certainly", "actually", "definitely", "obviously", "clearly", "apparently",
}  # fmt: skip
# past participles that do not end in "ed"; the first group also reads as a
# base verb ("I'd put": would put or had put)
PARTICIPLE_OR_BASE = {
    "put", "come", "become", "overcome", "run", "cut", "hit", "let", "set", "read", "quit", "shut",
    "hurt", "cost", "spread", "bet", "burst", "cast", "fit", "split",
}  # fmt: skip
PARTICIPLES = PARTICIPLE_OR_BASE | {
    "done", "gone", "made", "had", "got", "gotten", "been", "seen", "taken", "given", "written", "eaten",
    "fallen", "forgotten", "chosen", "driven", "broken", "spoken", "stolen", "hidden", "risen", "arisen",
    "beaten", "proven", "shaken", "frozen", "woken", "awoken", "bitten", "forbidden", "forgiven",
    "ridden", "mistaken", "overtaken", "undertaken", "rewritten", "swollen", "left", "lost", "found", "won",
    "begun", "sung", "swum", "rung", "drunk", "sunk", "shrunk", "known", "shown", "grown", "thrown",
    "flown", "drawn", "withdrawn", "blown", "sewn", "sown", "worn", "torn", "sworn", "born", "borne",
    "told", "sold", "said", "paid", "laid", "held", "kept", "slept", "swept", "wept", "felt", "dealt",
    "meant", "sent", "spent", "lent", "bent", "built", "bought", "brought", "caught", "taught", "thought",
    "fought", "sought", "heard", "led", "fed", "bled", "fled", "met", "sat", "stood", "understood",
    "struck", "stuck", "hung", "shot", "lit", "slid", "dug", "spun", "wound", "bound", "learnt", "burnt",
    "dreamt", "spelt", "leapt", "knelt", "crept", "clung", "flung", "swung", "stung", "shone", "forgot",
}  # fmt: skip
# the subject pronouns whose verb takes a plural form ("I do", "you are",
# "they have") that a singular name replacing them does not ("Kendra does");
# "we" stays plural and he/she/it singular (rule 5), so theirs never change
AGREEMENT_SUBJECTS = {"i", "you", "they"}
# forms of be, have and do after such a pronoun, and after a singular name;
# also as one token with "n't" (a Doc made from words). "I were" is a
# subjunctive ("if I were you") and stays
SINGULAR_FORMS = {
    "am": "is", "are": "is", "were": "was", "have": "has", "do": "does",
    "aren't": "isn't", "weren't": "wasn't", "haven't": "hasn't", "don't": "doesn't",
}  # fmt: skip
SUBJUNCTIVE_AFTER_I = {"were", "weren't"}
# verbs after which "you" is the object that a bare verb follows ("let you
# have", "made you do"), not a subject
CAUSATIVES = {
    "let", "lets", "make", "makes", "made", "help", "helps", "helped", "see", "sees", "saw",
    "watch", "watched", "hear", "hears", "heard", "have", "has", "had", "bid", "bade",
}  # fmt: skip
# auxiliaries before a subject pronoun, which make the verb after it
# something else than its own finite verb ("what do you have")
AUXILIARIES = {
    "do", "does", "did", "am", "are", "is", "was", "were", "have", "has", "had",
    "can", "could", "will", "would", "shall", "should", "may", "might", "must",
}  # fmt: skip
# "Bob and I are": a coordinated subject takes the plural verb
COORDINATORS = {"and", "or", "nor", "&"}
# words that start an utterance before "and" without being a subject ("Oh and I")
INTERJECTIONS = {"oh", "yeah", "yes", "no", "okay", "ok", "well", "um", "uh", "ah", "right", "sure", "hey"}
# modals and words that stand for a modal and a verb, which never take an "s":
# "wan", "gon" are spaCy's first halves of "wanna", "gonna"; other forms stay
# one token ("I gotta", "I ought to")
NOT_INFLECTED = {
    "wan", "gon", "dunno", "wanna", "gonna", "gotta", "hafta", "oughta", "shoulda", "coulda", "woulda",
    "betcha", "cannot", "ought", "better",
}  # fmt: skip
# without a tagger, the words after a subject "I", "you" or "they" that are
# not a present-tense verb although nothing in their spelling says so: past
# forms not ending in "ed" (those in PARTICIPLES aside), verbs whose past is
# spelled the same ("I beat him": past or present, so left), adverbs not
# ending in "ly", time words and number words; so "I went" stays and only
# "I say" becomes "Alice says"
NOT_PRESENT_VERBS = {
    "went", "came", "ran", "saw", "knew", "took", "gave", "wrote", "ate", "began", "became", "drank",
    "drove", "chose", "rose", "fell", "flew", "grew", "threw", "drew", "wore", "tore", "swore", "spoke",
    "broke", "woke", "stole", "froze", "rode", "hid", "bit", "shook", "sang", "swam", "rang", "sank",
    "lay", "forgave", "forbade", "arose", "awoke", "overcame", "undertook", "mistook", "withdrew",
    "sprang", "strove", "spat", "dove", "wove", "bore", "shrank", "stank", "slew", "quoth", "overheard",
    "misunderstood", "upheld", "withheld", "undid", "foresaw", "overtook", "dwelt", "spilt", "strode", "bade",
    "beat", "upset", "reset", "broadcast", "forecast", "bid", "rid", "thrust", "knit",
    "once", "often", "almost", "kinda", "sorta", "rather", "soon", "seldom", "ever", "hardly", "later",
    "together", "alone", "first", "last", "else", "anyway", "hereby", "pretty", "kind", "sort", "sorry",
    "maybe", "quite", "somehow", "twice", "therefore", "instead", "alright", "nonetheless",
    "today", "tomorrow", "tonight", "yesterday", "two", "three", "four", "five",
}  # fmt: skip
# present-tense verbs after a subject that the rules below would miss: some
# end in "ed" ("I need") or "ly" ("you multiply"), "like" is a function word
# elsewhere, and "come", "become", "overcome", "run" are participles only
# after "have" (their past forms differ); "put", "read" and the like stay,
# past or present
VERB_AFTER_SUBJECT = {
    "need", "feed", "bleed", "breed", "speed", "proceed", "succeed", "exceed", "heed", "embed",
    "apply", "reply", "supply", "multiply", "comply", "imply", "rely", "fly", "ally", "rally", "tally", "bully",
    "like", "come", "become", "overcome", "run",
}  # fmt: skip
# words before "you" that start a clause, so "you" is its subject ("if you
# want") and not an object ("thank you so"); punctuation and the start of the
# text do too, and "and", "or" after anything but an object pronoun ("I know
# and you know"; not "met me and you")
CLAUSE_OPENERS = INTERJECTIONS | {
    "but", "so", "if", "when", "whenever", "because", "cause", "that", "as", "while", "before", "after",
    "since", "unless", "until", "till", "though", "although", "where", "wherever", "whether", "once",
    "then", "now", "there", "how", "why", "what", "who", "which", "than", "also", "instead", "here",
    "first", "maybe", "perhaps", "otherwise", "anyway",
}  # fmt: skip
OBJECT_PRONOUNS = {"me", "him", "her", "us", "them", "it", "you"}
# determiners before a noun that a relative clause with "you" as its subject
# follows ("the countries you own", "every time you go"); not those that
# stand alone as pronouns before a verb ("this gives you time", "some call
# you"), and after a singular one the noun does not end in a single s
# ("each costs you": a verb)
RELATIVE_DETERMINERS = {"the", "a", "an", "every", "each", "whatever", "whichever"}
SINGULAR_DETERMINERS = {"a", "an", "every", "each"}
# the endings of a capitalized head ending in s that is singular after all,
# when the name stands for "they" ("the Areopagus", "New York Press"); "-is"
# is not one of them there ("the Saudis", "Israelis")
SINGULAR_NAME_ENDINGS = ("ss", "us")
# words beside a lower-case word ending in s that make it a verb, not a
# plural noun ("it takes", "who knows", "everyone craves", "reduces these")
SUBJECT_BEFORE_VERB = {
    "he", "she", "it", "who", "there",
    "someone", "somebody", "everyone", "everybody", "anyone", "anybody", "nobody",
}  # fmt: skip
DETERMINER_AFTER_VERB = {"a", "an", "the", "these", "those", "its", "his", "their", "each", "every", "our", "my", "your"}
# words that start a group's name like a determiner ("Many Americans")
QUANTIFIERS = {"many", "most", "few", "several", "other", "more"}
# the third person singular of verbs that do not just add "s"/"es"
IRREGULAR_THIRD_SINGULAR = {
    "have": "has", "do": "does", "undo": "undoes", "go": "goes", "forgo": "forgoes", "echo": "echoes",
    "veto": "vetoes", "be": "is", "am": "is", "are": "is",
}  # fmt: skip
# pronouns whose letters in capitals are also names ("US", "IT", "WHO")
CAPITALS_ALSO_NAMES = {"us", "it", "who"}
# entity labels of names, whose first word keeps its capital ("Dutch cough
# drops"); not numbers or dates ("Two men", "Last year")
NAME_LABELS = {"PERSON", "NORP", "ORG", "GPE", "LOC", "FAC", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW", "LANGUAGE"}
# words that start a relative clause, which a name leaves out after a comma
RELATIVE_PRONOUNS = {"who", "whom", "whose", "which"}
# the parts of speech (and, from a Doc with tags only, the tags) of a word
# that can name a cluster on its own: a one-word mention of another kind is
# an event or a property ("Senators swore ... It is the oath"), never a name
NOMINAL_POS = {"NOUN", "PROPN", "NUM", "X", "SYM"}
NOMINAL_TAGS = ("NN", "CD", "FW", "SYM")
# plural nouns that do not end in "s", and endings of singular words that do
PLURAL_WORDS = {"people", "children", "men", "women", "police", "staff", "data", "cattle", "feet", "teeth", "mice", "geese"}
SINGULAR_ENDINGS = ("ss", "us", "is", "ics", "ous")
# words that end a noun phrase's head part ("the members | of the club")
HEAD_STOPS = {
    "of", "in", "on", "at", "for", "with", "from", "by", "to", "about", "who", "whom", "whose", "which",
    "that", "where", "when", ",", "(", "-", "–", "—", ":", ";",
}  # fmt: skip
WORD_CHARACTER = re.compile(r"\w")
NOT_NAMES = CLITICS | POSSESSIVE_MARKERS
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


def resolve(doc: "Doc", *, prefix: str = CLUSTER_PREFIX) -> Resolved:
    """Replace the pronouns of each cluster by its representative (the rules
    at the top of this module).

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
                verb, form_text = agreeing
                candidates.append((verb.idx, verb.idx + len(verb.text), len(candidates), form_text, order))
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


def _word(token: "Token") -> str:
    """A token as the word lists hold it: lower-cased, apostrophes straight."""
    return _apostrophes(token.lower_)


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


def _apostrophes(text: str) -> str:
    return text.replace("’", "'")


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


# the possessive determiners, "her" included (POSSESSIVE_DETERMINERS leaves
# it out: it is an object pronoun too)
OWNER_WORDS = set(POSSESSIVE_DETERMINERS) | {"her"}


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
    while first - 1 > span.start and _is_proper(doc[first - 1 : first], tagged) and doc[first - 1].lower_ not in OWNER_WORDS:
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


def _possessive(name: str) -> str:
    """One possessive marker: "'" after a final s ("James'", "the kids'"),
    else "'s"."""
    return name + ("'" if name.endswith(("s", "S")) else "'s")


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


def _expanded_clitic(pronoun: "Token", clitic: "Token", name_is_plural: _NameNumber, tagged: bool, form: str) -> Optional[str]:
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
    """"say" -> "says", "go" -> "goes", "try" -> "tries", "have" -> "has",
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
    number = head.morph.get("Number")
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


def _head_part(span: "Span") -> "Span":
    for k in range(1, len(span)):
        if span[k].lower_ in HEAD_STOPS:
            return span[:k]
    return span


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
