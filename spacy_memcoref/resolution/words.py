"""The word lists the rules read, and a token as they hold it.

Pronoun forms by person, function words, the verb clitics and the words
around them that decide how a clitic is written out, the participles and
present-tense verbs the agreement rules tell apart by spelling, the words
that decide a name's number, quotation marks and sentence ends; `_word`
(lower-cased, apostrophes straight) and `_apostrophes` turn a token into
the form the lists hold. Plain data and string helpers: nothing here reads
a Doc's annotations or imports the other modules of the package, which all
import it.
"""

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from spacy.tokens import Token

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
PRONOUNS = (
    set(SUBJECT_OBJECT)
    | set(POSSESSIVE_DETERMINERS)
    | set(STANDALONE_POSSESSIVES)
    | REFLEXIVES
    | {"her"}
    | OTHER_PRONOUNS
)
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
SUBJECTS = {
    "i": False,
    "he": False,
    "she": False,
    "it": False,
    "we": True,
    "you": None,
    "they": None,
    "thou": False,
    "ye": True,
}
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
DETERMINER_AFTER_VERB = {
    "a",
    "an",
    "the",
    "these",
    "those",
    "its",
    "his",
    "their",
    "each",
    "every",
    "our",
    "my",
    "your",
}
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
PLURAL_WORDS = {
    "people",
    "children",
    "men",
    "women",
    "police",
    "staff",
    "data",
    "cattle",
    "feet",
    "teeth",
    "mice",
    "geese",
}
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

# the possessive determiners, "her" included (POSSESSIVE_DETERMINERS leaves
# it out: it is an object pronoun too)
OWNER_WORDS = set(POSSESSIVE_DETERMINERS) | {"her"}


def _word(token: "Token") -> str:
    """A token as the word lists hold it: lower-cased, apostrophes straight."""
    return _apostrophes(token.lower_)


def _apostrophes(text: str) -> str:
    return text.replace("’", "'")


# the lists, re-exported by the package as they were by the old module
__all__ = sorted(name for name in dir() if name.isupper() and name != "TYPE_CHECKING")
