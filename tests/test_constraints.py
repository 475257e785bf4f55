"""Decoding rules (spacy_memcoref/decoders/constraints.py): each rule has a
case that the decoders get wrong without it, and the shipped models keep
them on text in the form users paste (line breaks, emoji)."""

import numpy
import pytest
import spacy

from spacy_memcoref.decoders.constraints import (
    quote_speaker_genders,
    ALL_RULES,
    CLAUSE,
    CONJUNCT_NAMES,
    COUPLE,
    COUPLE_THEY,
    QUOTE_SPEAKER,
    COORDINATION,
    PHRASE_CLAUSE,
    POSSESSOR,
    GENDERED_NOUNS,
    KEEP_LINK,
    NAME_GENDER,
    NAMED_GENDER,
    OBJECT,
    CHAT_NAMES,
    TURN_LABEL,
    PRONOUNS,
    PUNCT_EDGE,
    QUOTE_EDGE,
    SENTENCE_PEOPLE,
    SPEAKER_I,
    SPEAKER_NAMES,
    SPEAKERS,
    SYMBOL_TWINS,
    THEY,
    TURN_VOICE,
    VOICE,
    WORD,
    DocRules,
    conflict,
    grapheme_boundaries,
    named_genders,
    pick_antecedent,
    violations,
)
from spacy_memcoref.decoders.petra import decode_clusters
from spacy_memcoref.decoders.predictions import S2EPrediction
from spacy_memcoref.decoders.s2e import S2EDecoder

NLP = spacy.blank("en")


def _prediction(doc, spans, choices):
    """An s2e prediction over `spans` (token ranges, text order) with each
    candidate's antecedent choices {query: [(antecedent, score), ...]}."""
    starts = [s for s, _ in spans]
    ends = [e for _, e in spans]
    rows = [sorted(choices.get(i, []), key=lambda p: -p[1]) for i in range(len(spans))]
    best = [row[0][0] if row else -1 for row in rows]
    scores = [row[0][1] if row else -1e30 for row in rows]
    return S2EPrediction(
        links=(starts, ends, best, scores),
        choices=([[c for c, _ in row] for row in rows], [[s for _, s in row] for row in rows]),
    )


def _span(doc, mention):
    words = mention.split()
    start = next(i for i in range(len(doc)) if [t.text for t in doc[i : i + len(words)]] == words)
    return start, start + len(words) - 1


def _texts(doc, clusters):
    return [[doc[s : e + 1].text for s, e in c] for c in clusters]


def test_pronouns_of_another_gender_never_share_a_cluster_and_the_next_best_stands():
    doc = NLP("Bob met Ann . He said she left .")
    spans = [(0, 0), (2, 2), (4, 4), (6, 6)]  # Bob, Ann, He, she
    # "she" prefers "He", then "Bob" (a name: only its cluster tells), then "Ann"
    prediction = _prediction(doc, spans, {2: [(0, 4.0)], 3: [(2, 5.0), (0, 4.5), (1, 3.0)]})
    decoder = S2EDecoder(0.0)
    assert _texts(doc, decoder.clusters(prediction)) == [["Bob", "He", "she"]]  # without the Doc: the head's best
    assert _texts(doc, decoder.clusters(prediction, doc=doc, rules=ALL_RULES - {PRONOUNS})) == [["Bob", "He", "she"]]
    assert _texts(doc, decoder.clusters(prediction, doc=doc)) == [["Bob", "He"], ["Ann", "she"]]
    # no choice left above the threshold: "she" stays out, unless (KEEP_LINK) a rule refused
    # one above it: the model said "she" refers back, the rule only that "He" is not it
    assert _texts(doc, decoder.clusters(prediction, 3.5, doc=doc, rules=ALL_RULES - {KEEP_LINK})) == [["Bob", "He"]]
    assert _texts(doc, decoder.clusters(prediction, 3.5, doc=doc)) == [["Bob", "He"], ["Ann", "she"]]
    # no antecedent above the threshold at all: nothing refused, nothing kept
    assert _texts(doc, decoder.clusters(prediction, 5.5, doc=doc)) == []


def test_only_he_and_she_keep_a_link_that_a_rule_refused():
    # "It" prefers "She" (animate: refused), then "the box" below the threshold
    doc = NLP("She opened the box . It was empty , she said .")
    spans = [(0, 0), (2, 3), (5, 5), (9, 9)]
    prediction = _prediction(doc, spans, {2: [(0, 2.0), (1, -1.0)], 3: [(2, 2.0), (0, -1.0)]})
    decoder = S2EDecoder(0.0)
    # "It" stays out; "she" (best "It", refused) keeps a link: "She"
    assert _texts(doc, decoder.clusters(prediction, doc=doc)) == [["She", "she"]]
    assert _texts(doc, decoder.clusters(prediction, doc=doc, rules=ALL_RULES - {KEEP_LINK})) == []
    # through a bounded memory too (three cells: none let go)
    memory = S2EDecoder(0.0, memory_cells=3)
    assert _texts(doc, memory.clusters(prediction, doc=doc)) == [["She", "she"]]


@pytest.mark.parametrize(
    "text, first, second",
    [
        ("I came . We left . My car", "I", "We"),  # person: I against we
        ("She came . It left . Her car", "She", "It"),  # animate against it
        ("Its lid . I came . My car", "Its", "I"),
    ],
)
def test_person_and_animacy_conflicts(text, first, second):
    doc = NLP(text)
    spans = [(0, 0), (3, 3), (6, 6)]
    prediction = _prediction(doc, spans, {1: [(0, 2.0)], 2: [(1, 2.0), (0, 1.0)]})
    clusters = _texts(doc, S2EDecoder(0.0).clusters(prediction, doc=doc))
    assert not any(first in c and second in c for c in clusters), clusters
    assert violations(doc, [[(s, e) for s, e in spans]])["pronoun_conflict"] == 1


def test_a_line_break_is_never_a_mention_and_the_next_best_antecedent_stands():
    doc = NLP("Dear Anna ,\n\nI miss you .\n\nLove , Tom")
    ws = next(t.i for t in doc if t.is_space)
    you = next(t.i for t in doc if t.text == "you")
    spans = sorted([(1, 1), (ws, ws), (you, you)])
    i_anna, i_ws, i_you = spans.index((1, 1)), spans.index((ws, ws)), spans.index((you, you))
    # the whitespace token links to Anna; "you" prefers the whitespace, then Anna
    prediction = _prediction(doc, spans, {i_ws: [(i_anna, 3.0)], i_you: [(i_ws, 4.0), (i_anna, 2.0)]})
    decoder = S2EDecoder(0.0)
    unruled = _texts(doc, decoder.clusters(prediction, doc=doc, rules=ALL_RULES - {WORD}))
    assert any(doc[ws].text in c for c in unruled)
    assert _texts(doc, decoder.clusters(prediction, doc=doc)) == [["Anna", "you"]]


def test_a_mention_never_cuts_a_grapheme():
    doc = NLP("Alice 😀 met Bob 👨‍👩‍👧. She thanked him 🎉.")
    bob = next(t.i for t in doc if t.text == "Bob")
    him = next(t.i for t in doc if t.text == "him")
    end_of_family = next(t.i for t in doc if t.text == "👧")
    rules = DocRules(doc)
    # 'Bob 👨' and 'Bob 👨‍👩‍' (ending on a zero-width joiner) cut the family emoji
    assert not rules.is_mention((bob, bob + 1)) and not rules.is_mention((bob, bob + 3))
    assert rules.is_mention((bob, end_of_family)) and rules.is_mention((bob, bob))
    assert DocRules(doc, ALL_RULES - {WORD}).is_mention((bob, bob + 1))  # the rule is what refuses it
    spans = [(bob, bob), (bob, bob + 1), (bob, end_of_family), (him, him)]
    # "him" prefers the cut span; the decoder takes the next
    prediction = _prediction(doc, spans, {3: [(1, 4.0), (0, 3.0)]})
    assert _texts(doc, S2EDecoder(0.0).clusters(prediction, doc=doc)) == [["Bob", "him"]]


@pytest.mark.parametrize(
    "text, mention, clause",
    [
        ("Then she met Pierre Curie in Paris .", "she met Pierre Curie", True),
        ("Pierre died in 1906 , Marie went on .", "Pierre died in 1906 , Marie", True),
        ("Alice Smith was there .", "Alice Smith was there", True),
        # what OntoGUM's gold holds: these stay mentions
        ("They all came , he himself too .", "They all", False),
        ("We the people agree .", "We the people", False),
        ("She and her mother left .", "She and her mother", False),
        ("A man called John came .", "A man called John", False),
        ("The King was ill .", "The King", False),
        ("Germany backed by its allies won .", "Germany backed by its allies", False),
    ],
)
def test_a_mention_does_not_start_with_a_subject_and_its_verb(text, mention, clause):
    doc = NLP(text)
    span = _span(doc, mention)
    assert DocRules(doc).is_clause(span) is clause
    assert DocRules(doc).is_mention(span) is not clause
    assert DocRules(doc, ALL_RULES - {CLAUSE}).is_mention(span)  # the rule is what refuses it


def test_a_clause_candidate_gives_way_to_the_next_best_antecedent():
    doc = NLP("Marie studied . Then she met Pierre Curie . She thanked him .")
    she, pierre, she2, him = 4, 6, 9, 11
    spans = [(0, 0), (she, she), (she, pierre + 1), (pierre, pierre + 1), (she2, she2), (him, him)]
    # "him" prefers the clause "she met Pierre Curie", then "Pierre Curie"
    prediction = _prediction(doc, spans, {1: [(0, 3.0)], 4: [(1, 3.0)], 5: [(2, 4.0), (3, 3.0)]})
    decoder = S2EDecoder(0.0)
    unruled = _texts(doc, decoder.clusters(prediction, doc=doc, rules=ALL_RULES - {CLAUSE}))
    assert ["she met Pierre Curie", "him"] in unruled
    assert _texts(doc, decoder.clusters(prediction, doc=doc)) == [["Marie", "she", "She"], ["Pierre Curie", "him"]]


@pytest.mark.parametrize(
    "text, mention, clause",
    [
        ("The melon was ripe , but the apples were not , so we gave them away .", "the apples were not , so we", True),
        ("Our old car had a dent .", "Our old car had a dent", True),
        ("The apples were", "The apples were", True),
        # noun phrases of OntoGUM's kind stay mentions
        ("The man who was there left .", "The man who was there", False),
        ("He was the most outstanding pupil he ever taught .", "the most outstanding pupil he ever taught", False),
        ("It is a free will choice .", "a free will choice", False),
        ("The man 's hat was red .", "The man 's hat", False),
        ("The house where I was born is gone .", "The house where I was born", False),
        ("This is hers .", "This is hers", False),  # no noun before the verb: left to the model
        # a verb in -ed and its object's determiner; not a naming participle, nor a short word in -ed
        ("The surgeon recognised the nanny and invited her in .", "The surgeon recognised the nanny", True),
        ("The chief hired a new assistant .", "The chief hired a new assistant", True),
        ("I met a guy called the Invisible Man .", "a guy called the Invisible Man", False),
        ("The bed the children shared was old .", "The bed the children shared", False),
        ("The man painted red the door .", "The man painted red the door", False),
    ],
)
def test_a_mention_is_not_a_noun_phrase_and_its_verb(text, mention, clause):
    doc = NLP(text)
    span = _span(doc, mention)
    assert DocRules(doc).is_phrase_clause(span) is clause
    assert DocRules(doc).is_mention(span) is not clause
    assert DocRules(doc, ALL_RULES - {PHRASE_CLAUSE}).is_mention(span)  # the rule is what refuses it


@pytest.mark.parametrize(
    "mention, edge",
    [("a new assistant , Tom ,", True), (", Tom", True), ("a new assistant , Tom", False), ("Tom", False)],
)
def test_a_mention_neither_starts_nor_ends_with_a_comma(mention, edge):
    doc = NLP("Maria hired a new assistant , Tom , in May ; he answers the phones .")
    span = _span(doc, mention)
    assert DocRules(doc).is_mention(span) is not edge
    assert DocRules(doc, ALL_RULES - {PUNCT_EDGE}).is_mention(span)  # the rule is what refuses it


def test_an_apposition_with_its_comma_gives_way_to_the_apposition():
    doc = NLP("Maria hired a new assistant , Tom , in May . He answers the phones .")
    with_comma, without = _span(doc, "a new assistant , Tom ,"), _span(doc, "a new assistant , Tom")
    he = _span(doc, "He")
    spans = [(0, 0), without, with_comma, he]
    # "He" prefers the span with the comma, then the apposition
    prediction = _prediction(doc, spans, {3: [(2, 4.0), (1, 3.0)]})
    decoder = S2EDecoder(0.0)
    assert _texts(doc, decoder.clusters(prediction, doc=doc, rules=ALL_RULES - {PUNCT_EDGE})) == [
        ["a new assistant , Tom ,", "He"]
    ]
    assert _texts(doc, decoder.clusters(prediction, doc=doc)) == [["a new assistant , Tom", "He"]]


def test_a_possessive_is_never_the_mention_it_opens():
    doc = NLP("Abena won the 200 metres . Her coach took up the 400 metres .")
    abena, her, her_coach = (0, 0), (6, 6), (6, 7)
    spans = [abena, her, her_coach]
    # "Her" prefers Abena; "Her coach" prefers "Her" (and so Abena's cluster)
    prediction = _prediction(doc, spans, {1: [(0, 4.0)], 2: [(1, 5.0), (0, 2.0)]})
    decoder = S2EDecoder(0.0)
    unruled = _texts(doc, decoder.clusters(prediction, doc=doc, rules=ALL_RULES - {POSSESSOR}))
    assert unruled == [["Abena", "Her", "Her coach"]]
    assert _texts(doc, decoder.clusters(prediction, doc=doc)) == [["Abena", "Her"]]
    # the features: only a one-word possessive and a mention it opens
    rules = DocRules(doc)
    assert conflict(set(rules.features(her)) | set(rules.features(her_coach)))
    assert not conflict(set(rules.features(abena)) | set(rules.features(her_coach)))


def test_a_noun_of_one_gender_is_never_a_pronoun_or_noun_of_the_other():
    doc = NLP("Marie was born in Warsaw . She adored her father , Wladyslaw , and he encouraged his daughter .")
    marie, she, her_father, he, his_daughter = (0, 0), (6, 6), (8, 11), (14, 14), (16, 17)
    spans = [marie, she, her_father, he, his_daughter]
    # "her father" prefers "She"; "he" prefers "her father"; "his daughter" Marie
    prediction = _prediction(doc, spans, {1: [(0, 5.0)], 2: [(1, 4.0)], 3: [(2, 5.0)], 4: [(0, 3.0), (3, 2.0)]})
    decoder = S2EDecoder(0.0)
    unruled = _texts(doc, decoder.clusters(prediction, doc=doc, rules=ALL_RULES - {GENDERED_NOUNS}))
    assert unruled == [["Marie", "She", "her father , Wladyslaw", "his daughter"]]
    assert _texts(doc, decoder.clusters(prediction, doc=doc)) == [
        ["Marie", "She", "his daughter"],
        ["her father , Wladyslaw", "he"],
    ]
    # the head, behind a name or a title; no feature for ungendered nouns and names not known
    # to be of one gender (NAME_GENDER's lists), unless the text gives one (NAMED_GENDER: "daughter , Kim")
    text = NLP("his sister Abena Mensah , Mr. Lee , the king 's daughter , Kim , the teacher")
    rules = DocRules(text, ALL_RULES - {NAMED_GENDER})
    assert rules.features((0, 3)) == {"feminine", "one-person", "owned@0"}  # (and the possessive's, POSSESSOR)
    assert rules.features((5, 6)) == {"masculine", "one-person"}
    assert rules.features((8, 11)) == {"feminine", "one-person"}
    assert rules.features((13, 13)) == frozenset() and rules.features((15, 16)) == frozenset()
    assert DocRules(text).features((13, 13)) == {"feminine", "one-person"}


def test_a_first_name_of_one_gender_is_that_gender():
    doc = NLP("Maria hired Tom Lee . He answers the phones and she handles the clients .")
    maria, tom, he, she = (0, 0), (2, 3), (5, 5), (10, 10)
    # "He" prefers "Maria"; "she" prefers "He", then "Maria"
    prediction = _prediction(doc, [maria, tom, he, she], {2: [(0, 4.0), (1, 3.0)], 3: [(2, 4.0), (0, 3.0)]})
    decoder = S2EDecoder(0.0)
    unruled = _texts(doc, decoder.clusters(prediction, doc=doc, rules=ALL_RULES - {NAME_GENDER}))
    assert unruled == [["Maria", "He"]]  # "she" refused by "He": unlinked
    assert _texts(doc, decoder.clusters(prediction, doc=doc)) == [["Maria", "she"], ["Tom Lee", "He"]]
    # the name's first word, opening the mention; names given to both genders, and a name after
    # another word ("the Maria Lopez Foundation"), have none
    rules = DocRules(NLP("Maria Lopez , Pierre , Sam , Jordan , the Maria Lopez Foundation , Maria 's"))
    assert rules.features((0, 1)) == {"feminine", "one-person"}
    assert rules.features((3, 3)) == {"masculine", "one-person"}
    assert rules.features((5, 5)) == frozenset() and rules.features((7, 7)) == frozenset()
    assert rules.features((9, 12)) == frozenset()
    assert rules.features((14, 14)) == {"feminine", "one-person"}
    # names of more languages give their gender in decoding, and the gender mirror leaves them as they are
    from spacy_memcoref.gendered_words import swap_name

    more = DocRules(NLP("Priya , Kofi , Ingrid"))
    assert "feminine" in more.features((0, 0)) and "masculine" in more.features((2, 2))
    assert "feminine" in more.features((4, 4)) and swap_name("Priya") == "Priya"


def test_a_verbs_object_pronoun_is_not_its_subject():
    doc = NLP("Ann hired Lena . The assistant thanked her . Lena loves her work , and Ann has met them .")
    ann, lena, assistant, her, lena2, her2 = (0, 0), (2, 2), (4, 5), (7, 7), (9, 9), (11, 11)
    spans = [ann, lena, assistant, her, lena2, her2]
    # "The assistant" prefers Lena; "her" prefers "The assistant"; the possessive "her" prefers "Lena"
    prediction = _prediction(doc, spans, {2: [(1, 4.0)], 3: [(2, 5.0), (0, 3.0)], 4: [(1, 4.0)], 5: [(4, 4.0)]})
    decoder = S2EDecoder(0.0)
    unruled = _texts(doc, decoder.clusters(prediction, doc=doc, rules=ALL_RULES - {OBJECT}))
    assert unruled == [["Lena", "The assistant", "her", "Lena", "her"]]
    assert _texts(doc, decoder.clusters(prediction, doc=doc)) == [
        ["Ann", "her"],
        ["Lena", "The assistant", "Lena", "her"],
    ]
    # an auxiliary before the verb; no pair where a noun follows "her" or no verb stands between
    rules = DocRules(doc)
    assert conflict(set(rules.features((15, 15))) | set(rules.features((18, 18))))
    assert not conflict(set(rules.features((9, 9))) | set(rules.features((11, 11))))
    other = DocRules(NLP("Tom looked behind him . Tom and him"))
    assert not conflict(set(other.features((0, 0))) | set(other.features((3, 3))))
    assert not conflict(set(other.features((5, 5))) | set(other.features((7, 7))))


def _bound(text, subject, pronoun):
    """Whether the OBJECT rule keeps the mentions `subject` and `pronoun` (token spans) apart."""
    rules = DocRules(NLP(text))
    return conflict(set(rules.features(subject)) | set(rules.features(pronoun)))


def test_a_coordinated_verbs_object_pronoun_is_not_the_clauses_subject():
    doc = NLP("The chief visited the nurse and told him the news .")
    chief, nurse, him = (0, 1), (3, 4), (7, 7)
    # "him" prefers "The chief" (the subject of "visited" and of "told"), then "the nurse"
    prediction = _prediction(doc, [chief, nurse, him], {2: [(0, 4.0), (1, 2.0)]})
    decoder = S2EDecoder(0.0)
    assert _texts(doc, decoder.clusters(prediction, doc=doc, rules=ALL_RULES - {OBJECT})) == [["The chief", "him"]]
    assert _texts(doc, decoder.clusters(prediction, doc=doc)) == [["the nurse", "him"]]
    # a first object "her" before a determiner; "and then"; after a subordinating word the clause opens there
    assert _bound("The chief visited the nurse and told her the news .", (0, 1), (7, 7))
    assert _bound("Kim met Tom and then thanked him .", (0, 0), (6, 6))
    assert _bound("Bo said that Kim met Tom and thanked him .", (3, 3), (8, 8))
    assert not _bound("Bo said that Kim met Tom and thanked him .", (0, 0), (8, 8))
    # the possessor that opens the clause is not its subject; the mention it opens is
    assert not _bound("His mother met Tom and thanked him .", (0, 0), (6, 6))
    assert _bound("His mother met Tom and thanked him .", (0, 1), (6, 6))
    assert not _bound("John 's mother met Tom and thanked him .", (0, 0), (7, 7))
    # not across a comma (an aside, an object), nor past another "and": whose subject is unsure
    assert not _bound("Yesterday , Kim met Tom and thanked him .", (2, 2), (7, 7))
    assert not _bound("Kim came and Bo met Tom and thanked him .", (0, 0), (8, 8))
    # a possessive "her" before a noun stays free: Mary may own it
    assert not _bound("Mary met Tom and told her sister .", (0, 0), (5, 5))


def test_an_argument_prepositions_pronoun_and_one_after_an_adverb_are_not_the_subject():
    assert _bound("The cook was late , so the nurse waited for him outside .", (6, 7), (10, 10))
    assert not _bound("The cook was late , so the nurse waited for him outside .", (0, 1), (10, 10))
    assert _bound("The nurse finally called him back .", (0, 1), (4, 4))
    assert _bound("The family called him .", (0, 1), (3, 3))  # a noun in -ly ends the subject
    assert _bound("Kim has never talked to them .", (0, 0), (5, 5))
    # locative and partitive prepositions are left out: "him" may be the subject
    assert not _bound("He carries the cloth with him .", (0, 0), (5, 5))
    assert not _bound("We had one , and none of us liked it .", (0, 0), (7, 7))
    # a pronoun is no verb: "herself" before "about him" is not its verb, so "Tom" is not that verb's subject
    assert not _bound("Ann asked Tom herself about him .", (2, 2), (5, 5))
    assert _bound("Ann asked Tom herself and then asked about him .", (0, 0), (8, 8))


def test_in_a_chat_of_two_ones_i_is_the_others_you_and_not_their_she():
    from spacy.tokens import Span

    doc = NLP("Anna : She called again . Ben : I know , I told you .")
    doc.spans["speakers"] = [Span(doc, 0, 6, label="Anna"), Span(doc, 6, 15, label="Ben")]
    spans = [(2, 2), (8, 8), (13, 13)]  # She (Anna's), I (Ben's), you (Ben's: Anna)
    # Ben's "I" prefers Anna's "She"
    prediction = _prediction(doc, spans, {1: [(0, 3.0)]})
    decoder = S2EDecoder(0.0)
    assert _texts(doc, decoder.clusters(prediction, doc=doc, rules=ALL_RULES - {TURN_VOICE})) == [["She", "I"]]
    assert _texts(doc, decoder.clusters(prediction, doc=doc)) == []
    rules = DocRules(doc)
    assert "you~sAnna.0" in rules.features((8, 8)) and "I~sAnna.0" in rules.features((13, 13))


def test_in_a_chat_a_name_no_speaker_has_is_neither_speaker():
    from spacy.tokens import Span

    doc = NLP("Grace : Hi Daniel , Ama says she left it . Daniel : Let me look . Grace : Thank you !")
    turns = [(0, 11, "Grace"), (11, 17, "Daniel"), (17, 22, "Grace")]
    doc.spans["speakers"] = [Span(doc, s, e, label=label) for s, e, label in turns]
    spans = [(5, 5), (14, 14), (20, 20)]  # Ama, me, you
    # Daniel's "me" prefers Ama; Grace's "you" prefers "me" (Daniel)
    prediction = _prediction(doc, spans, {1: [(0, 2.0)], 2: [(1, 3.0)]})
    decoder = S2EDecoder(0.0)
    unruled = _texts(doc, decoder.clusters(prediction, doc=doc, rules=ALL_RULES - {CHAT_NAMES}))
    assert unruled == [["Ama", "me", "you"]]
    assert _texts(doc, decoder.clusters(prediction, doc=doc)) == [["me", "you"]]
    # left alone: a speaker's name ("Daniel"), its short form, a name said to someone, one opening a sentence
    rules = DocRules(doc)
    assert not rules._chat_third_name_feature((3, 3))
    sentences = spacy.blank("en")
    sentences.add_pipe("sentencizer")
    other = sentences("Grace : Dan , come . Guys , hi . Daniel : Ok .")
    other.spans["speakers"] = [Span(other, 0, 10, label="Grace"), Span(other, 10, 14, label="Daniel")]
    other_rules = DocRules(other)
    assert not other_rules._chat_third_name_feature((2, 2)) and not other_rules._chat_third_name_feature((6, 6))


def test_a_mention_is_a_turns_label_alone_or_stays_out_of_it():
    from spacy_memcoref.doc_helpers.transcripts import find_transcript_speakers

    doc = NLP("Grace: Hi Daniel, Ama says she left it.\nDaniel: Let me look.\nGrace: Thank you!")
    assert find_transcript_speakers(doc)
    grace_hi_daniel, she, grace_label, daniel, across = (0, 3), (7, 7), (0, 0), (3, 3), (9, 13)
    spans = [grace_hi_daniel, daniel, she, across]
    # "she" prefers the span that takes in Grace's label
    prediction = _prediction(doc, spans, {2: [(0, 4.0)]})
    decoder = S2EDecoder(0.0)
    unruled = _texts(doc, decoder.clusters(prediction, doc=doc, rules=ALL_RULES - {TURN_LABEL}))
    assert unruled == [["Grace: Hi Daniel", "she"]]
    assert _texts(doc, decoder.clusters(prediction, doc=doc)) == []
    rules = DocRules(doc)
    assert rules.is_mention(grace_label) and rules.is_mention(daniel) and rules.is_mention((12, 12))
    assert not rules.is_mention(grace_hi_daniel) and not rules.is_mention(across) and not rules.is_mention((12, 13))
    # speakers without labels in the text (a corpus's column) change nothing
    from spacy.tokens import Span

    plain = NLP("Hi Daniel , Ama says she left it .")
    plain.spans["speakers"] = [Span(plain, 0, 9, label="Grace")]
    assert DocRules(plain).is_mention((0, 1))


def test_a_coordination_of_two_is_never_he_or_she():
    doc = NLP("My sister and her husband moved . They love it , and he learned Portuguese .")
    group, sister, husband, they, he = (0, 4), (0, 1), (3, 4), (7, 7), (12, 12)
    spans = [sister, group, husband, they, he]
    # "he" prefers the couple, then "her husband"
    prediction = _prediction(doc, spans, {3: [(1, 3.0)], 4: [(1, 4.0), (2, 3.0)]})
    decoder = S2EDecoder(0.0)
    # (the THEY rule alone would refuse "he" too, through "They")
    assert ["My sister and her husband", "They", "he"] in _texts(
        doc, decoder.clusters(prediction, doc=doc, rules=ALL_RULES - {COORDINATION, THEY})
    )
    assert _texts(doc, decoder.clusters(prediction, doc=doc)) == [
        ["My sister and her husband", "They"],
        ["her husband", "he"],
    ]
    rules = DocRules(doc)
    assert rules.is_coordination(group) and not rules.is_coordination(sister)
    for text, words in (
        ("a writer , director and producer", 6),
        ("a friend of Tom and Anna", 6),
        ("the third child and second son", 6),
    ):
        assert not DocRules(NLP(text)).is_coordination((0, words - 1)), text
    assert DocRules(NLP("Tom and Anna")).is_coordination((0, 2))
    # a mention of one gender by its noun or first name is one person too
    doc = NLP("Kim and Bo married . Later Bo said her husband drew the plans , and Maria agreed with Sam .")
    rules = DocRules(doc)
    couple = rules.features((0, 2))
    assert conflict(couple | rules.features((8, 9))) and conflict(couple | rules.features((15, 15)))
    assert not conflict(couple | rules.features((18, 18)))  # "Sam": a name given to both
    without = DocRules(doc, ALL_RULES - {COORDINATION})
    assert not conflict(without.features((0, 2)) | without.features((8, 9)))


def test_a_couple_is_not_one_of_its_members_named_again():
    # the everyday set's couple: the model put "Ian" (and so "his") with "Ian and Morag ... they"
    doc = NLP("Ian and Morag are a retired couple , and they love it . Ian drove a bus , and his bus was red .")
    ian, group, morag, they, ian2, his = (0, 0), (0, 2), (2, 2), (9, 9), (13, 13), (19, 19)
    spans = [ian, group, morag, they, ian2, his]
    # "Ian" again prefers the couple, then the first "Ian"; "his" prefers the second "Ian"
    prediction = _prediction(doc, spans, {3: [(1, 3.0)], 4: [(1, 4.0), (0, 3.0)], 5: [(4, 5.0)]})
    decoder = S2EDecoder(0.0)
    # without the rule "Ian" joins the couple, and "his" (one person) can then join nothing
    # (COUPLE_THEY, which keeps one of a couple from its "they", would keep Ian out too)
    assert _texts(doc, decoder.clusters(prediction, doc=doc, rules=ALL_RULES - {CONJUNCT_NAMES, COUPLE_THEY})) == [
        ["Ian and Morag", "they", "Ian"]
    ]
    assert _texts(doc, decoder.clusters(prediction, doc=doc)) == [["Ian", "Ian", "his"], ["Ian and Morag", "they"]]
    # a last name alone is one of them too; a name that is no conjunct's is not refused
    rules = DocRules(NLP("Tomás Ferreira and Ingrid Holm met . Holm met Bo ."), frozenset({CONJUNCT_NAMES}))
    group, holm, bo = rules.features((0, 4)), rules.features((7, 7)), rules.features((9, 9))
    assert {"group-name:holm", "group-name:ferreira", "group-name:tomás"} <= group
    assert conflict(group | holm) and not conflict(group | bo)
    assert not any(f.startswith("group-name:the") for f in DocRules(NLP("The cat and the dog")).features((0, 4)))


def test_the_two_of_a_couple_are_two_and_they_is_both():
    # the everyday set's architects: "Ferreira" and "Holm" were put in one cluster with "they"
    doc = NLP("Tomás Ferreira and Ingrid Holm met . Ferreira grew up in Porto and Holm in Malmö ; they married .")
    tomas, group, ferreira, holm, they = (0, 1), (0, 4), (7, 7), (13, 13), (17, 17)
    spans = [tomas, group, ferreira, holm, they]
    # "Ferreira" takes "Tomás Ferreira"; "Holm" prefers "Ferreira"; "they" prefers "Ferreira", then the couple
    prediction = _prediction(doc, spans, {2: [(0, 4.0)], 3: [(2, 2.0)], 4: [(2, 1.3), (1, 0.2)]})
    decoder = S2EDecoder(0.0)
    others = ALL_RULES - {NAMED_GENDER}  # which gives Holm Ingrid's gender, and Ferreira Tomás's
    assert _texts(doc, decoder.clusters(prediction, doc=doc, rules=others - {COUPLE, COUPLE_THEY})) == [
        ["Tomás Ferreira", "Ferreira", "Holm", "they"]
    ]
    # COUPLE alone keeps Holm out; COUPLE_THEY alone sends "they" to the couple
    assert _texts(doc, decoder.clusters(prediction, doc=doc, rules=others - {COUPLE_THEY})) == [
        ["Tomás Ferreira", "Ferreira", "they"]
    ]
    assert _texts(doc, decoder.clusters(prediction, doc=doc, rules=others - {COUPLE})) == [
        ["Tomás Ferreira", "Ferreira", "Holm"],
        ["Tomás Ferreira and Ingrid Holm", "they"],
    ]
    assert _texts(doc, decoder.clusters(prediction, doc=doc)) == [
        ["Tomás Ferreira", "Ferreira"],
        ["Tomás Ferreira and Ingrid Holm", "they"],
    ]
    # a possessive and a noun before the second name; a word both names hold names neither
    kin = DocRules(NLP("Kofi Mensah and his sister Abena ran . Abena won ."), frozenset({COUPLE}))
    assert conflict(kin.features((0, 1)) | kin.features((8, 8)))
    smiths = DocRules(NLP("Tom Smith and Anna Smith met . Smith left ."), frozenset({COUPLE}))
    assert smiths.features((7, 7)) == frozenset() and conflict(smiths.features((0, 1)) | smiths.features((3, 4)))
    # "Jordan and their sister Beth": the text calls Jordan "they", so "them" may be Jordan; Beth is no "they"
    jordan = NLP("Jordan and their sister Beth opened a shop . Beth agrees with them .")
    rules = DocRules(jordan, frozenset({COUPLE_THEY}))
    them = rules.features((12, 12))
    assert not conflict(rules.features((0, 0)) | them) and conflict(rules.features((9, 9)) | them)
    # no couple in the text: no feature, for names and pronouns alike
    alone = DocRules(NLP("Tom met Anna . They left ."), frozenset({COUPLE, COUPLE_THEY}))
    assert alone.features((0, 0)) == frozenset() and not conflict(alone.features((0, 0)) | alone.features((4, 4)))


def test_they_is_never_he_or_she():
    # "Kofi Mensah and his sister Abena ... They grew up ... He has said": they is the two, he is Kofi
    doc = NLP("Kofi met Abena . They grew up in Kumasi . He ran .")
    spans = [(0, 0), (2, 2), (4, 4), (10, 10)]  # Kofi, Abena, They, He
    # "They" prefers Kofi; "He" prefers "They", then Kofi
    prediction = _prediction(doc, spans, {2: [(0, 3.0)], 3: [(2, 4.0), (0, 3.5)]})
    decoder = S2EDecoder(0.0)
    assert _texts(doc, decoder.clusters(prediction, doc=doc, rules=ALL_RULES - {THEY})) == [["Kofi", "They", "He"]]
    # with the rule "He" takes Kofi's cluster only if "They" is not in it: the first link stands, "He" stays out
    assert _texts(doc, decoder.clusters(prediction, doc=doc)) == [["Kofi", "They"]]
    # singular they with a name (no he / she) is left alone
    doc = NLP("Alex Kim runs the garden . They took over in 2019 .")
    prediction = _prediction(doc, [(0, 1), (6, 6)], {1: [(0, 3.0)]})
    assert _texts(doc, decoder.clusters(prediction, doc=doc)) == [["Alex Kim", "They"]]


def test_one_cluster_never_holds_two_mentions_apart_by_a_symbol_only():
    doc = NLP("Bob 😀 came . He sat .")
    spans = [(0, 0), (0, 1), (4, 4)]  # Bob, 'Bob 😀' (whole graphemes, a word), He
    prediction = _prediction(doc, spans, {1: [(0, 3.0)], 2: [(1, 2.0)]})
    decoder = S2EDecoder(0.0)
    assert _texts(doc, decoder.clusters(prediction, doc=doc, rules=ALL_RULES - {SYMBOL_TWINS})) == [
        ["Bob", "Bob 😀", "He"]
    ]
    assert _texts(doc, decoder.clusters(prediction, doc=doc)) == [["Bob 😀", "He"]]


def test_grapheme_boundaries_follow_unicode():
    text = "e\u0301 👍🏽 a"  # e + combining acute; thumbs up + skin tone
    bounds = grapheme_boundaries(text)
    assert 1 not in bounds and 2 in bounds  # the accent stays with its letter
    assert 4 not in bounds and 5 in bounds  # U+1F44D U+1F3FD is one grapheme


def _log(rows, n_cells):
    """A memory log: rows of (entity prob, action index) -> one-hot scores."""
    entity = numpy.array([p for p, _ in rows], dtype=numpy.float32)
    over = numpy.zeros((len(rows), n_cells), dtype=numpy.float32)
    coref = numpy.zeros((len(rows), n_cells), dtype=numpy.float32)
    for t, (_, actions) in enumerate(rows):
        for rank, action in enumerate(actions):
            target = over if action < n_cells else coref
            target[t, action % n_cells] = 0.9 - 0.1 * rank
    return {"entity": entity, "overwrite": over, "coref": coref}


def test_petra_takes_its_next_best_action_for_a_pronoun_that_cannot_join():
    doc = NLP("Bob met Ann . He said she left \n")
    # Bob: overwrite cell 0; Ann: overwrite cell 1; He: coref 0; she: coref 0 first, then coref 1
    rows = [(0.9, [0]), (0.1, []), (0.9, [1]), (0.1, []), (0.9, [2]), (0.1, []), (0.9, [2, 3]), (0.1, []), (0.9, [2])]
    log = _log(rows, 2)
    plain = _texts(doc, decode_clusters(log))
    assert ["Bob", "He", "she", "\n"] in plain  # without rules: "she" with "He", and a line break as a mention
    ruled = _texts(doc, decode_clusters(log, rules=DocRules(doc)))
    assert ruled == [["Bob", "He"], ["Ann", "she"]]


def test_shipped_models_keep_the_rules_on_pasted_text():
    import spacy_memcoref

    texts = [
        "Alice 😀 met Bob 👨‍👩‍👧. She thanked him 🎉.",
        "Dear Anna,\n\nI hope you are well. I miss you.\n\n  Love,\nTom\n",
        "Tom and Anna talked.\nTom: I lost my keys.\nAnna: I can help you look. We will find them.",
    ]
    for name in ("s2e-ontogum", "petra-gap"):
        nlp = spacy_memcoref.load(name)
        for doc in nlp.pipe(texts):
            clusters = [
                [(m.start, m.end - 1) for m in group]
                for key, group in doc.spans.items()
                if key.startswith("coref_clusters")
            ]
            assert violations(doc, clusters) == {
                "non_word": 0,
                "clause": 0,
                "pronoun_conflict": 0,
                "symbol_twins": 0,
                "sentence_people": 0,
            }, (name, doc.text)
            # resolved text and entity records read the same clusters
            assert all(edit.text.strip() for edit in spacy_memcoref.resolve(doc).edits)
            for record in spacy_memcoref.entities(doc):
                assert all(any(ch.isalnum() for ch in m.text) for m in record.mentions), record


@pytest.mark.slow
def test_nlp_pipe_with_forked_processes_returns_the_same_docs():
    """spaCy's n_process forks; the parent has run torch first, as a user's
    session has. It used to hang for ever (GNU OpenMP across fork)."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        """
        import spacy_memcoref
        nlp = spacy_memcoref.load("s2e-ontogum")
        texts = ["Alice met Bob. She thanked him.", "The company said it would grow.", "Tom lost his keys."] * 3
        def clusters(docs):
            return [[[m.text for m in g] for k, g in sorted(d.spans.items())] for d in docs]
        one = clusters(nlp.pipe(texts))
        for k in (2, 4):
            assert clusters(nlp.pipe(texts, n_process=k, batch_size=2)) == one, k
        print("same", one[0])
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "same [['Alice', 'She'], ['Bob', 'him']]" in done.stdout


def test_two_speakers_i_never_share_a_cluster_nor_a_speakers_i_and_you():
    from spacy.tokens import Span

    doc = NLP("Anna : I am late . Ben : I know . You are always late .")
    doc.spans["speakers"] = [Span(doc, 0, 6, label="Anna"), Span(doc, 6, 16, label="Ben")]
    i_anna, i_ben, you_ben = 2, 8, 11
    spans = [(0, 0), (i_anna, i_anna), (6, 6), (i_ben, i_ben), (you_ben, you_ben)]  # Anna, I, Ben, I, You
    # Ben's "I" prefers Anna's "I"; Ben's "You" prefers Ben's "I", then Anna's "I"
    prediction = _prediction(doc, spans, {1: [(0, 3.0)], 3: [(1, 4.0), (2, 3.0)], 4: [(3, 4.0), (1, 3.5)]})
    decoder = S2EDecoder(0.0)
    unruled = _texts(doc, decoder.clusters(prediction, doc=doc, rules=ALL_RULES - {SPEAKERS, TURN_VOICE}))
    assert unruled == [["Anna", "I", "I", "You"]]
    assert _texts(doc, decoder.clusters(prediction, doc=doc)) == [["Anna", "I", "You"], ["Ben", "I"]]
    # without speaker turns nothing tells the two "I" apart; the text is then one voice (VOICE), whose "You"
    # is not its "I"
    del doc.spans["speakers"]
    assert _texts(doc, decoder.clusters(prediction, doc=doc, rules=ALL_RULES - {VOICE})) == unruled
    assert _texts(doc, decoder.clusters(prediction, doc=doc)) == [["Anna", "I", "I"]]


def test_a_speakers_name_is_that_speaker_two_speakers_names_are_two_people():
    from spacy.tokens import Span

    from spacy_memcoref.decoders.constraints import speaker_names

    # a chat as the everyday set writes it: each turn opens with its speaker's name
    doc = NLP("Anna : Are you coming , Ben ? Ben : Yes . I will bring Anna 's cake .")
    doc.spans["speakers"] = [Span(doc, 0, 8, label="Anna"), Span(doc, 8, 19, label="Ben")]
    spans = [(0, 0), (3, 3), (6, 6), (8, 8), (12, 12), (15, 15)]  # Anna, you, Ben, Ben, I, Anna
    # "Ben" (the second turn's name) prefers "Anna"; Anna's "you" prefers "Anna"; the last "Anna" prefers "I"
    prediction = _prediction(
        doc, spans, {1: [(0, 3.0)], 2: [(1, 2.0)], 3: [(0, 4.0), (2, 3.0)], 4: [(3, 3.0)], 5: [(4, 3.0), (0, 2.0)]}
    )
    decoder = S2EDecoder(0.0)
    unruled = _texts(doc, decoder.clusters(prediction, doc=doc, rules=ALL_RULES - {SPEAKER_NAMES}))
    assert unruled == [["Anna", "you", "Ben", "Ben", "I", "Anna"]]
    assert _texts(doc, decoder.clusters(prediction, doc=doc)) == [["Anna", "Anna"], ["you", "Ben", "Ben", "I"]]
    # a label's words as CoNLL and GUM join them; a surname two speakers share names neither
    turns = [Span(doc, 0, 1, label=label) for label in ("ChiefJusticeJohnRoberts", "JohnSmith", "MarySmith")]
    names = speaker_names(turns)
    assert names[("roberts",)] == names[("chief", "justice", "roberts")] == "ChiefJusticeJohnRoberts"
    assert names[("mary",)] == "MarySmith" and names[("john",)] == "JohnSmith" and ("smith",) not in names
    # labels and mentions read alike, in any script and in capitals: "Dr. Lee" names DrLee, "ŁUKASZ" Łukasz
    doc = NLP("Dr. Lee : Hello . ŁUKASZ : Hi , Dr. Lee . Dr. Lee : Hi , ŁUKASZ .")
    doc.spans["speakers"] = [
        Span(doc, 0, 5, label="DrLee"),
        Span(doc, 5, 12, label="Łukasz"),
        Span(doc, 12, 19, label="DrLee"),
    ]
    rules = DocRules(doc)
    assert [t.text for t in doc[9:11]] == ["Dr.", "Lee"] and doc[17].text == "ŁUKASZ"
    assert rules.features((9, 10)) >= {"I@DrLee"} and rules.features((17, 17)) >= {"I@Łukasz"}


def test_a_speakers_turns_are_a_voice_their_you_is_not_their_she():
    from spacy.tokens import Span

    # a chat of two: Sofia speaks to Marco in each of her turns, of the plumber in the third
    doc = NLP("Sofia : The plumber called . Can you be home ? Marco : I can . Sofia : Show her the leak .")
    turns = [(0, 11, "Sofia"), (11, 16, "Marco"), (16, 23, "Sofia")]
    doc.spans["speakers"] = [Span(doc, s, e, label=label) for s, e, label in turns]
    spans = [(2, 3), (7, 7), (11, 11), (13, 13), (19, 19)]  # The plumber, you, Marco, I, her
    # "Marco" prefers "you", "I" prefers "Marco"; "her" prefers "I", then "The plumber"
    prediction = _prediction(doc, spans, {2: [(1, 2.0)], 3: [(2, 3.0)], 4: [(3, 4.0), (0, 3.0)]})
    decoder = S2EDecoder(0.0)
    unruled = _texts(doc, decoder.clusters(prediction, doc=doc, rules=ALL_RULES - {TURN_VOICE}))
    assert unruled == [["you", "Marco", "I", "her"]]
    assert _texts(doc, decoder.clusters(prediction, doc=doc)) == [["The plumber", "her"], ["you", "Marco", "I"]]
    # an empty turn is no speaker's; a third speaker makes each turn a voice of its own, since a speaker may
    # speak of one turn's "you" in another
    doc.spans["speakers"] = [Span(doc, s, e, label=label) for s, e, label in turns] + [Span(doc, 23, 23, label="Kai")]
    assert _texts(doc, decoder.clusters(prediction, doc=doc)) == [["The plumber", "her"], ["you", "Marco", "I"]]
    doc = NLP("Sofia : The plumber called . Can you be home ? Marco : I can . Sofia : Show her the leak . Kai : Hi .")
    doc.spans["speakers"] = [Span(doc, s, e, label=label) for s, e, label in turns + [(23, 27, "Kai")]]
    assert _texts(doc, decoder.clusters(prediction, doc=doc)) == unruled
    # a monologue (one speaker: a speech, a vlog) is no voice: it speaks to an audience and of people in it
    doc = NLP("Anna : Thank you , Bob . He has worked hard .")
    doc.spans["speakers"] = [Span(doc, 0, 11, label="Anna")]
    assert not any("~" in f for i in range(len(doc)) for f in DocRules(doc).features((i, i)))
    # a speaker's name is their voice's "I" and, in a chat of two, the other's "you": neither's "she"
    doc = NLP("Sofia : She can come . Marco : I thought she was busy .")
    doc.spans["speakers"] = [Span(doc, 0, 6, label="Sofia"), Span(doc, 6, 13, label="Marco")]
    spans = [(0, 0), (2, 2), (6, 6), (10, 10)]  # Sofia, She, Marco, she
    prediction = _prediction(doc, spans, {1: [(0, 3.0)], 3: [(0, 3.0), (1, 2.0)]})
    assert _texts(doc, decoder.clusters(prediction, doc=doc, rules=ALL_RULES - {TURN_VOICE})) == [
        ["Sofia", "She", "she"]
    ]
    assert _texts(doc, decoder.clusters(prediction, doc=doc)) == [["She", "she"]]


def test_a_writers_i_is_not_their_you_outside_a_quotation():
    # an email: "my" is the writer (Sam), "you" the reader (Jo)
    doc = NLP("Hi Jo , my notes are ready . Can you check them ? Sam")
    spans = [(1, 1), (3, 3), (9, 9), (13, 13)]  # Jo, my, you, Sam
    # "you" prefers "my", then "Jo"; "Sam" prefers "my"
    prediction = _prediction(doc, spans, {2: [(1, 4.0), (0, 3.0)], 3: [(1, 2.0)]})
    decoder = S2EDecoder(0.0)
    assert _texts(doc, decoder.clusters(prediction, doc=doc, rules=ALL_RULES - {VOICE})) == [["my", "you", "Sam"]]
    assert _texts(doc, decoder.clusters(prediction, doc=doc)) == [["Jo", "you"], ["my", "Sam"]]
    # PeTra's decoding by the same rule: "you" takes its next-best action (a COREF to Jo's cell)
    log = {
        "entity": numpy.array([0, 1, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1], dtype=float),
        "overwrite": numpy.zeros((14, 2)),
        "coref": numpy.zeros((14, 2)),
    }
    log["overwrite"][1] = [1.0, 0.0]  # Jo: a new entity in cell 0
    log["overwrite"][3] = [0.0, 1.0]  # my: cell 1
    log["coref"][9] = [0.5, 0.9]  # you: cell 1 (my), then cell 0 (Jo)
    log["coref"][13] = [0.0, 1.0]  # Sam: cell 1
    assert _texts(doc, decode_clusters(log, rules=DocRules(doc, ALL_RULES - {VOICE}))) == [["my", "you", "Sam"]]
    assert _texts(doc, decode_clusters(log, rules=DocRules(doc))) == [["Jo", "you"], ["my", "Sam"]]


def test_a_name_a_letter_speaks_of_is_neither_its_reader_nor_its_writer():
    # a letter to Sarah from Tom: James is someone else; "Sarah" again is the reader, "Tom" the writer
    doc = NLP("Hi Sarah , could you send it to James ? He asked me . Sarah , this is Tom . Best , Tom")
    sarah, you, james, he, sarah2, tom = (1, 1), (4, 4), (8, 8), (10, 10), (14, 14), (18, 18)
    spans = [sarah, you, james, he, sarah2, tom]
    # "you" prefers "Sarah"; "James" prefers "you", then nothing; "He" prefers "James";
    # the second "Sarah" prefers "James", then "you"
    prediction = _prediction(doc, spans, {1: [(0, 3.0)], 2: [(1, 4.0)], 3: [(2, 3.0)], 4: [(2, 3.5), (1, 3.0)]})
    decoder = S2EDecoder(0.0)
    # (without NAME_GENDER too: Sarah's and James's names alone keep them apart)
    assert _texts(doc, decoder.clusters(prediction, doc=doc, rules=ALL_RULES - {VOICE, NAME_GENDER})) == [
        ["Sarah", "you", "James", "He", "Sarah"]
    ]
    assert _texts(doc, decoder.clusters(prediction, doc=doc)) == [["Sarah", "you", "Sarah"], ["James", "He"]]
    rules = DocRules(doc)
    assert [sorted(f for f in rules.features(s) if "~" in f) for s in spans] == [
        ["you~0"],
        ["you~0"],
        ["third~0"],
        ["third~0"],
        ["you~0"],
        ["I~0"],
    ]
    assert not any("~" in f for f in rules.features((16, 16)))  # "this is Tom": a predicate, left to the model
    # no greeting and no signature: no letter, and a name is nobody's third person
    plain = NLP("Could you send it to James ? He asked me .")
    assert "third~0" not in DocRules(plain).features((5, 5))


def test_a_quotation_is_a_voice_of_its_own():
    # 'me' (the narrator) and the quoted "you" (whom Anna addresses) may be one person; the narrator's own
    # "you" (the reader) may not
    doc = NLP('Anna told me : " you are late . " I know you agree .')
    me, quoted_you, narrator_i, narrator_you = 2, 5, 10, 12
    spans = [(0, 0), (me, me), (quoted_you, quoted_you), (narrator_i, narrator_i), (narrator_you, narrator_you)]
    prediction = _prediction(doc, spans, {2: [(1, 4.0)], 3: [(2, 4.0)], 4: [(3, 4.0)]})
    assert _texts(doc, S2EDecoder(0.0).clusters(prediction, doc=doc)) == [["me", "you", "I"]]
    features = [DocRules(doc).features((i, i)) for i in (me, quoted_you, narrator_i, narrator_you)]
    assert [sorted(f for f in fs if "~" in f) for fs in features] == [["I~0"], ["you~1"], ["I~0"], ["you~0"]]


def test_two_people_of_one_sentence_are_two_entities_unless_in_apposition_or_a_predicate():
    doc = NLP("The chief hired the assistant because she needed help .")
    doc[0].is_sent_start = True
    for token in doc[1:]:
        token.is_sent_start = False
    spans = [(0, 1), (3, 4), (6, 6)]  # The chief, the assistant, she
    # "the assistant" prefers "The chief"; "she" prefers "the assistant"
    prediction = _prediction(doc, spans, {1: [(0, 2.0)], 2: [(1, 3.0), (0, 2.5)]})
    decoder = S2EDecoder(0.0)
    assert _texts(doc, decoder.clusters(prediction, doc=doc, rules=ALL_RULES - {SENTENCE_PEOPLE})) == [
        ["The chief", "the assistant", "she"]
    ]
    assert _texts(doc, decoder.clusters(prediction, doc=doc)) == [["the assistant", "she"]]
    rules = DocRules(doc)
    for text, a, b in (
        ("The winner was the youngest player .", (0, 1), (3, 5)),  # a predicate
        ("The mayor , a teacher , spoke .", (0, 1), (3, 4)),  # an apposition
        ("The chief saw the chief .", (0, 1), (3, 4)),  # one head
        ("The median is called both the second quartile .", (0, 1), (5, 7)),  # adverbs after the verb
    ):
        other = NLP(text)
        for token in other[1:]:
            token.is_sent_start = False
        assert not DocRules(other).distinct_in_sentence(a, b), text
    assert rules.distinct_in_sentence((0, 1), (3, 4))
    # a predicate's verb of another clause makes no predicate of the second phrase
    eggs = NLP("The eggs are in the fridge , but the flour ran out , so buy it .")
    for token in eggs[1:]:
        token.is_sent_start = False
    assert DocRules(eggs).distinct_in_sentence((0, 1), (8, 9))
    assert not DocRules(eggs, ALL_RULES - {SENTENCE_PEOPLE}).distinct_in_sentence((0, 1), (8, 9))


def test_pick_antecedent_keeps_a_link_only_after_a_rule_refused_one_above_the_threshold():
    # candidates 0, 1, 2 scored best first: 5.0 (above 0), then -1.0 and -2.0 (below)
    antecedents, scores = [0, 1, 2], [5.0, -1.0, -2.0]
    every = [True, True, True]
    no_zero = lambda c: c != 0  # noqa: E731 -- a rule refuses candidate 0 only
    assert pick_antecedent(antecedents, scores, 0.0, every, lambda c: True, keeps=True) == 0
    assert pick_antecedent(antecedents, scores, 0.0, every, no_zero, keeps=True) == 1  # KEEP_LINK
    assert pick_antecedent(antecedents, scores, 0.0, every, no_zero, keeps=False) == -1
    # refused as no mention (allowed) counts as a rule's refusal too
    assert pick_antecedent(antecedents, scores, 0.0, [False, True, True], lambda c: True, keeps=True) == 1
    # a memory that let candidate 0 go: no rule refused it, so no link below the threshold
    assert pick_antecedent(antecedents, scores, 0.0, every, lambda c: True, keeps=True, held={1, 2}) == -1
    # ... unless a rule made it no mention
    assert pick_antecedent(antecedents, scores, 0.0, [False, True, True], lambda c: True, True, held={1, 2}) == 1
    # nothing above the threshold: nothing to keep
    assert pick_antecedent(antecedents, [-0.5, -1.0, -2.0], 0.0, every, lambda c: True, keeps=True) == -1


def test_a_quotations_i_has_its_speakers_gender():
    # the everyday set's bus stop: the old man's "me" was put with Clara's "she" (and so with Clara)
    doc = NLP('Clara waited . " Every morning , " he said , as if she had asked . " They wait for me . "')
    clara, he, she, me = (0, 0), (8, 8), (13, 13), (21, 21)
    spans = [clara, he, she, me]
    # "she" takes Clara; "me" prefers "she", then "he"
    prediction = _prediction(doc, spans, {2: [(0, 4.0)], 3: [(2, 3.0), (1, 2.0)]})
    decoder = S2EDecoder(0.0)
    assert _texts(doc, decoder.clusters(prediction, doc=doc, rules=ALL_RULES - {QUOTE_SPEAKER})) == [
        ["Clara", "she", "me"]
    ]
    assert _texts(doc, decoder.clusters(prediction, doc=doc)) == [["Clara", "she"], ["he", "me"]]


def _camping_chat():
    # the everyday set's camping chat: the default model left Tom's "me" and second "I" unlinked
    from spacy.tokens import Span

    doc = NLP("Tom : I have it . Lena : Good . Tom : Text me your address . I lost it .")
    doc.spans["speakers"] = [
        Span(doc, 0, 6, label="Tom"),
        Span(doc, 6, 10, label="Lena"),
        Span(doc, 10, 21, label="Tom"),
    ]
    return doc, [(2, 2), (4, 4), (13, 13), (17, 17), (19, 19)]  # I, it, me, I, it


@pytest.mark.parametrize("memory_cells", [0, 3])
def test_an_i_left_alone_joins_its_speakers_last_i(memory_cells):
    doc, spans = _camping_chat()
    prediction = _prediction(doc, spans, {4: [(1, 2.0)]})  # only the second "it" links, to the first
    decoder = S2EDecoder(0.0, memory_cells=memory_cells)
    assert _texts(doc, decoder.clusters(prediction, doc=doc, rules=ALL_RULES - {SPEAKER_I})) == [["it", "it"]]
    assert _texts(doc, decoder.clusters(prediction, doc=doc)) == [["I", "me", "I"], ["it", "it"]]
    # a chain of its own is the model's decision: "me" <- "I" stays apart from Tom's first "I"
    chained = _prediction(doc, spans, {3: [(2, 1.0)], 4: [(1, 2.0)]})
    assert _texts(doc, decoder.clusters(chained, doc=doc)) == [["it", "it"], ["me", "I"]]
    # a turn's written label names its speaker: the first "I" joins it
    labelled = _prediction(doc, [(0, 0)] + spans, {5: [(2, 2.0)]})
    assert _texts(doc, decoder.clusters(labelled, doc=doc)) == [["Tom", "I", "me", "I"], ["it", "it"]]
    # another speaker's "I" is another voice
    lena = NLP("Tom : I have it . Lena : I know . Tom : Good .")
    from spacy.tokens import Span

    lena.spans["speakers"] = [
        Span(lena, 0, 6, label="Tom"),
        Span(lena, 6, 11, label="Lena"),
        Span(lena, 11, 15, label="Tom"),
    ]
    assert decoder.clusters(_prediction(lena, [(2, 2), (8, 8)], {}), doc=lena) == []


def test_a_mention_does_not_run_across_a_quotation_mark():
    # the fresh everyday set's lighthouse: 'You 'll have it soon enough , " he' was a mention of the keeper
    doc = NLP('" Here is the key , " the keeper said , and he left .')
    prediction = _prediction(doc, [(3, 8), (12, 12)], {1: [(0, 2.0)]})
    decoder = S2EDecoder(0.0)
    assert _texts(doc, decoder.clusters(prediction, doc=doc, rules=ALL_RULES - {QUOTE_EDGE})) == [
        ['the key , " the keeper', "he"]
    ]
    assert decoder.clusters(prediction, doc=doc) == []
    told = NLP('He told her : " I will go . " She heard the song " Yesterday " . He was " King of the Road "')
    rules = DocRules(told)
    assert rules.crosses_quotation((0, 5))  # 'He told her : " I'
    assert not rules.crosses_quotation((5, 5)) and not rules.crosses_quotation((4, 9))  # 'I', the whole quotation
    assert not rules.crosses_quotation((12, 16))  # 'the song " Yesterday "'
    assert not rules.crosses_quotation((21, 25))  # 'King of the Road "': ends on the mark that closes it
    assert rules.crosses_quotation((9, 11))  # '" She heard': opens on a closing mark


def test_a_name_the_text_gives_a_gender_keeps_it():
    # the fresh everyday set's glassblower: the offline model put "Berg" (her uncle) with Karin's "She"
    doc = NLP(
        "Karin Lindqvist was a glassblower . She learned from her uncle , Nils Berg . When Berg retired , she left ."
    )
    spans = [(0, 1), (6, 6), (16, 16), (19, 19)]  # Karin Lindqvist, She, Berg, she
    prediction = _prediction(doc, spans, {1: [(0, 3.0)], 2: [(1, 2.0)], 3: [(0, 3.0)]})
    decoder = S2EDecoder(0.0)
    assert _texts(doc, decoder.clusters(prediction, doc=doc, rules=ALL_RULES - {NAMED_GENDER})) == [
        ["Karin Lindqvist", "She", "Berg", "she"]
    ]
    assert _texts(doc, decoder.clusters(prediction, doc=doc)) == [["Karin Lindqvist", "She", "she"]]
    assert named_genders(doc) == {"Nils": "masculine", "Berg": "masculine"}  # not "When", not Lindqvist
    # a title; a first name of one gender; a name both genders share, or one after a first word of no
    # known gender (a family's), gets none; a longer name keeps its first word only
    assert named_genders(NLP("Mrs. Okonkwo spoke . Maria Lopez agreed with Mr. Okonkwo .")) == {"Lopez": "feminine"}
    assert named_genders(NLP("Zaha Hadid thanked her father , Mohammed Hadid .")) == {"Mohammed": "masculine"}
    assert named_genders(NLP("His first daughter Rulan Chao Pian taught .")) == {"Rulan": "feminine"}


def test_a_roman_one_is_no_first_person_pronoun():
    doc = NLP("After World War I my grandfather came home . Then I was born . I")
    rules = DocRules(doc)
    assert rules.first_person_voice((3, 3)) is None  # "War I"
    assert rules.first_person_voice((4, 4)) == ("text",)  # "my"
    assert rules.first_person_voice((10, 10)) == ("text",)  # "Then I"
    assert rules.first_person_voice((14, 14)) == ("text",)  # after a full stop
    emperor = NLP('He proclaimed himself " Norton I , Emperor of the United States " .')
    assert DocRules(emperor).first_person_voice((5, 5)) is None  # opens a quotation, no verb after it
    quoted = NLP('I said , " I am here . "')
    assert DocRules(quoted).first_person_voice((4, 4)) == ("quote", "1")
    assert DocRules(quoted, ALL_RULES - {SPEAKER_I}).first_person_voice((0, 0)) is None


@pytest.mark.parametrize(
    "text, expected",
    [
        # after the closing mark, either order; a gendered noun or first name as the subject
        ('" Go , " said the old man .', {1: "masculine"}),
        ('" Go , " Maria Lopez said .', {1: "feminine"}),
        # before the opening mark
        ('She told him : " I am here . "', {1: "feminine"}),
        # its own attribution wins over the one before it
        ('" I am here , " she said . " He said I could come , " he replied .', {1: "feminine", 2: "masculine"}),
        # no attribution, or one with no gender ("Sam"), gives nothing
        ('" I am here . " Then the bus came .', {}),
        ('" I am here , " said Sam .', {}),
        # a continuation stops at a line break and at another speaker
        ('" Go , " he said .\n" I mean it . "', {1: "masculine"}),
        ('" Go , " he said . She said : " I mean it . "', {1: "masculine", 2: "feminine"}),
    ],
)
def test_quote_speakers_come_from_the_attribution_beside_the_quotation(text, expected):
    from spacy_memcoref.decoders.constraints import DocRules, quotations

    doc = NLP(text)
    rules = DocRules(doc, frozenset({QUOTE_SPEAKER, GENDERED_NOUNS, NAME_GENDER}))
    assert quote_speaker_genders(doc, quotations(doc), rules._noun_gender) == expected
