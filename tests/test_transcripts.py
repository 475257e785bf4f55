"""Speaker turns of a pasted chat transcript (doc_helpers/transcripts.py),
in the form users paste them (line breaks, CRLF, a message over two lines),
and the texts with colons that are no conversation."""

import spacy
from spacy.tokens import Span

from spacy_memcoref.doc_helpers.transcripts import find_transcript_speakers, transcript_turns

NLP = spacy.blank("en")

CHAT = (
    "Anna: Are you still coming to my birthday on Saturday?\n"
    "Ben: Of course! Should I bring anything?\n"
    "Anna: Maybe some drinks. My sister is making the cake.\n"
    "Ben: Is she the one who moved to Bristol?\n"
)


def _turns(text):
    turns = transcript_turns(NLP(text))
    return None if turns is None else [(t.label_, t.text) for t in turns]


def test_a_chat_gives_one_turn_a_line_from_the_name_to_the_line_end():
    assert _turns(CHAT) == [
        ("Anna", "Anna: Are you still coming to my birthday on Saturday?"),
        ("Ben", "Ben: Of course! Should I bring anything?"),
        ("Anna", "Anna: Maybe some drinks. My sister is making the cake."),
        ("Ben", "Ben: Is she the one who moved to Bristol?"),
    ]


def test_crlf_blank_lines_indents_and_a_message_over_two_lines():
    text = "  Dr. Lee: Good morning.\r\n\r\nMary Ann: Hi, I have a question\r\nabout my bill.\r\nDr. Lee: Go on.\r\n"
    assert _turns(text) == [
        ("Dr. Lee", "Dr. Lee: Good morning."),
        ("Mary Ann", "Mary Ann: Hi, I have a question\r\nabout my bill."),
        ("Dr. Lee", "Dr. Lee: Go on."),
    ]


def test_names_in_any_script_and_a_last_name_line_without_text():
    text = "Łukasz: Cześć!\nAnna: Hi Łukasz.\nŁukasz: How are you?\nAnna:"
    assert _turns(text) == [
        ("Łukasz", "Łukasz: Cześć!"),
        ("Anna", "Anna: Hi Łukasz."),
        ("Łukasz", "Łukasz: How are you?\nAnna:"),
    ]


def test_texts_with_colons_that_are_no_conversation_get_no_turns():
    no_chats = [
        # a recipe: two headings, each once
        "Ingredients: flour, eggs, milk.\nMethod: Mix them and bake it for an hour.\nServe: warm.",
        # an email's headers: three names, none twice; a reply chain repeats them
        "From: Sam\nTo: Jo\nSubject: The notes\nHi Jo, my notes are ready. Can you check them?",
        "From: Jo\nTo: Sam\nSubject: Re: The notes\nThanks!\nFrom: Sam\nTo: Jo\nSubject: The notes\nAre they ok?",
        # prose with one note; a one-line chat; a chat whose first line is no turn
        "Marie studied in Paris. She met Pierre there.\nNote: they married in 1895.",
        "Anna: hi Ben: hi Anna: bye",
        "Minutes of the meeting\nAnna: I agree.\nBen: So do I.\nAnna: Good.",
        # a monologue: one speaker
        "Anna: I went out.\nAnna: Then I came back.\nAnna: The end.",
        # more prose lines than turns
        "Anna: Hi.\nBen: Hi.\nAnna: Bye.\nThey left.\nIt rained.\nThe bus was late.\nNobody spoke.",
        "",
    ]
    for text in no_chats:
        assert _turns(text) is None, text


def test_a_docs_own_turns_are_kept_and_an_empty_group_means_none():
    doc = NLP(CHAT)
    doc.spans["speakers"] = [Span(doc, 0, 5, label="speaker1")]
    assert not find_transcript_speakers(doc)
    assert [t.label_ for t in doc.spans["speakers"]] == ["speaker1"]
    doc = NLP(CHAT)
    doc.spans["speakers"] = []
    assert not find_transcript_speakers(doc) and len(doc.spans["speakers"]) == 0
    doc = NLP(CHAT)
    assert find_transcript_speakers(doc)
    assert [t.label_ for t in doc.spans["speakers"]] == ["Anna", "Ben", "Anna", "Ben"]


def test_the_component_finds_a_pasted_chats_speakers_unless_told_not_to(trained_s2e):
    nlp = spacy.load(trained_s2e.path)
    assert nlp.get_pipe("memcoref").find_speakers is True
    doc = nlp(CHAT)
    assert [t.label_ for t in doc.spans["speakers"]] == ["Anna", "Ben", "Anna", "Ben"]
    off = spacy.load(trained_s2e.path, config={"components": {"memcoref": {"find_speakers": False}}})
    assert "speakers" not in off(CHAT).spans
