"""spacy_memcoref.Stream: text in pieces, entity ids stable across them, a
bounded state that saves and restores.

Two kinds of pipeline:
- the shipped offline model (s2e-ontogum), for what a user sees;
- a tiny random s2e whose decoder is `OracleDecoder`, which links the
  mentions a test dictates (by word), so that each rule of the stream's
  entity table is checked on its own, whatever a model would predict.
"""

import re

import pytest
import spacy

import spacy_memcoref
from spacy_memcoref.decoders.links import clusters_from_links
from spacy_memcoref.decoders.s2e import S2EDecoder
from spacy_memcoref.stream import FIRST_PERSON, Stream, StreamStateError, join_pieces

from conftest import s2e_config

# the oracle pipeline's s2e is untrained on purpose: the oracle decides the links
pytestmark = pytest.mark.filterwarnings("ignore::spacy_memcoref.pipeline.coref_component.UntrainedWarning")

# ----- the oracle pipeline ------------------------------------------------------------

# the words that the oracle links, each to the one before it of its letter in the window
ORACLE_GROUPS = {
    "alice": "A",
    "she": "A",
    "her": "A",
    "ms.": "A",
    "bob": "B",
    "he": "B",
    "him": "B",
    "carol": "C",
}
NUMBERED = re.compile(r"[A-Z][a-z]+[0-9]+")


def _oracle_letter(token):
    return ORACLE_GROUPS.get(token.lower_) or (token.lower_ if NUMBERED.fullmatch(token.text) else None)


class OracleDecoder(S2EDecoder):
    """The model's links replaced: each ORACLE_GROUPS word (or numbered name,
    "Zed7") a mention, linked to the one before it of its letter; the
    clusters (tokens of one letter, two or more) are those links' union."""

    def mention_links(self, prediction, doc):
        links, latest = [], {}
        for token in doc:
            letter = _oracle_letter(token)
            if letter:
                links.append((token.i, token.i, latest.get(letter, -1)))
                latest[letter] = len(links) - 1
        return links

    def clusters(self, prediction, threshold=None, *, doc=None, rules=None):
        links = self.mention_links(prediction, doc)
        return clusters_from_links([s for s, _, _ in links], [e for _, e, _ in links], [a for _, _, a in links])

    def entity_vectors(self, prediction, clusters, *, doc=None, rules=None):
        return None  # the oracle's mentions are not the model's candidates


def oracle_pipeline(decoder):
    """A tiny random s2e whose links `decoder` (an OracleDecoder) decides."""
    nlp = spacy.blank("en")
    nlp.add_pipe("memcoref", config=s2e_config())
    nlp.initialize()
    nlp.get_pipe("memcoref").model.attrs["decoder"] = decoder
    return nlp


@pytest.fixture(scope="module")
def oracle_nlp():
    return oracle_pipeline(OracleDecoder(0.0))


@pytest.fixture(scope="module")
def shipped():
    return spacy_memcoref.load("s2e-ontogum")


def ids_of(doc):
    """{entity id: [mention texts]} of a piece's Doc."""
    return {
        int(k.rsplit("_", 1)[1]): [s.text for s in g] for k, g in doc.spans.items() if k.startswith("coref_clusters_")
    }


def id_of(doc, text):
    found = [i for i, texts in ids_of(doc).items() if text in texts]
    assert len(found) == 1, (text, ids_of(doc))
    return found[0]


# ----- what a user sees, on the shipped model -------------------------------------------


def test_the_shipped_model_keeps_one_id_for_one_person_across_pieces(shipped):
    stream = Stream(shipped)
    first = stream.add("Alice called Bob yesterday.")
    second = stream.add("She asked him to come to the party.")
    third = stream.add("Alice was sad, but she understood.")
    assert first.text == "Alice called Bob yesterday." and second.text == "She asked him to come to the party."
    she, him = id_of(second, "She"), id_of(second, "him")
    assert she != him
    assert stream.entity(she).name == "Alice" and stream.entity(him).name == "Bob"
    # the third piece's Alice and she are the second piece's She
    assert id_of(third, "Alice") == id_of(third, "she") == she
    assert [d.user_data["stream_piece"] for d in (first, second, third)] == [0, 1, 2]
    # as one document, the first piece's Alice (in no cluster of its own piece) is her first mention
    assert ids_of(join_pieces([first, second, third]))[she] == ["Alice", "She", "Alice", "she"]


def test_each_speakers_I_is_their_own_entity(shipped):
    stream = Stream(shipped)
    turns = [
        ("I lost my keys.", "Alice"),
        ("Where did you last see them?", "Bob"),
        ("I think I left them in my car.", "Alice"),
        ("I can drive you there.", "Bob"),
    ]
    docs = [stream.add(text, speaker=who) for text, who in turns]
    alice = [e for e in stream.entities if e.speaker == "Alice"]
    bob = [e for e in stream.entities if e.speaker == "Bob"]
    assert len(alice) == 1 and len(bob) == 1 and alice[0].name == "Alice"
    for doc, (_, who) in zip(docs, turns):
        own = (alice if who == "Alice" else bob)[0].id
        for entity_id, texts in ids_of(doc).items():
            first_person = [t for t in texts if t.lower() in FIRST_PERSON]
            assert not first_person or entity_id == own, (doc.text, ids_of(doc))
        assert [(s.text, s.label_) for s in doc.spans["speakers"]] == [(doc.text, who)]
        # every I, me, my of a turn is in a cluster (its speaker's), clustered by the model or not
        in_clusters = sum(t.lower() in FIRST_PERSON for texts in ids_of(doc).values() for t in texts)
        assert in_clusters == sum(t.lower_ in FIRST_PERSON for t in doc)


# ----- the rules, one at a time (oracle links) -----------------------------------------


def test_a_cluster_takes_the_id_of_its_latest_earlier_mention(oracle_nlp):
    stream = Stream(oracle_nlp)
    stream.add("Alice waved.")  # one mention: no cluster, no entity yet
    assert stream.entities == []
    second = stream.add("She smiled.")
    alice = id_of(second, "She")
    assert stream.entity(alice).name == "Alice"
    third = stream.add("Bob saw her.")
    assert id_of(third, "her") == alice
    assert "Bob" not in sum(ids_of(third).values(), [])  # Bob alone: no entity
    fourth = stream.add("He left.")
    assert id_of(fourth, "He") != alice and stream.entity(id_of(fourth, "He")).name == "Bob"


class RereadingOracle(OracleDecoder):
    """The oracle, and "Ann" a mention that a window holding the word
    "again" links to the Alice before it: a re-reading's link between two
    earlier mentions."""

    def mention_links(self, prediction, doc):
        links = [(s, e, -1, a) for s, e, a in super().mention_links(prediction, doc)]
        again = any(t.lower_ == "again" for t in doc)
        for token in doc:
            if token.lower_ == "ann":
                alice = [i for i, (s, _, _, _) in enumerate(links) if s < token.i and doc[s].lower_ == "alice"]
                links.append((token.i, token.i, -1, alice[-1] if again and alice else -1))
        order = sorted(range(len(links)), key=lambda i: links[i][0])
        moved = {old: new for new, old in enumerate(order)}
        return [(links[i][0], links[i][1], moved[links[i][3]] if links[i][3] >= 0 else -1) for i in order]


def test_a_rereadings_link_between_earlier_mentions_joins_nothing():
    stream = Stream(oracle_pipeline(RereadingOracle(0.0)))
    docs = [stream.add("Alice met Ann."), stream.add("She smiled."), stream.add("She waved again.")]
    alice = id_of(docs[1], "She")
    assert docs[1].user_data["stream_joined"] == [(0, 0, 5, alice)]
    # the third window links Ann to Alice; no mention of the third piece has Ann on its chain: she stays out
    assert id_of(docs[2], "She") == alice and docs[2].user_data["stream_joined"] == []
    assert ids_of(join_pieces(docs)) == {alice: ["Alice", "She", "She"]}


class ReboundingOracle(OracleDecoder):
    """The mentions "the old man" and every "he", each "he" linked to the one
    before it; a window holding the word "again" reads the man as "the old man
    who called" (a re-reading with other boundaries) and links each "he" to
    him directly."""

    def mention_links(self, prediction, doc):
        again = any(t.lower_ == "again" for t in doc)
        links = []
        for token in doc:
            if token.lower_ == "the" and doc[token.i + 1 : token.i + 3].text.lower() == "old man":
                links.append((token.i, token.i + (4 if again else 2), -1))
            elif token.lower_ == "he":
                links.append((token.i, token.i, 0 if again else len(links) - 1))
        return links


def test_a_chain_through_a_reread_earlier_mention_takes_its_id():
    stream = Stream(oracle_pipeline(ReboundingOracle(0.0)))
    docs = [stream.add("The old man who called sat down."), stream.add("He smiled."), stream.add("He waved again.")]
    man = id_of(docs[1], "He")
    assert docs[1].user_data["stream_joined"] == [(0, 0, len("The old man"), man)]
    # the third window's "He" links to "The old man who called": the known "The old man", not a new entity,
    # and the re-reading is not recorded beside it
    assert id_of(docs[2], "He") == man and docs[2].user_data["stream_joined"] == []
    assert [e.id for e in stream.entities] == [man]


def test_a_speakers_I_is_the_entity_already_named_as_the_speaker(oracle_nlp):
    stream = Stream(oracle_nlp)
    bob = id_of(stream.add("Hi Bob, are you Bob?", speaker="Alice"), "Bob")
    reply = stream.add("I am.", speaker="Bob")
    assert id_of(reply, "I") == bob and stream.entity(bob).speaker == "Bob"
    assert id_of(stream.add("I left.", speaker="Alice"), "I") != bob


def test_an_entity_that_left_the_window_is_found_again_by_its_name(oracle_nlp):
    stream = Stream(oracle_nlp, window_tokens=8)
    first = stream.add("Alice met Carol. Alice")
    alice = id_of(first, "Alice")
    stream.add("It rained all day long there.")  # 7 tokens: pushes the first piece out
    later = stream.add("Alice and Ms. Alice")
    assert id_of(later, "Alice") == alice
    # a pronoun alone in a new window, with no name, is a new entity
    alone = Stream(oracle_nlp, window_tokens=8)
    alone_alice = id_of(alone.add("Alice met Carol. Alice"), "Alice")
    alone.add("It rained all day long there.")
    she = id_of(alone.add("She and her"), "She")
    assert she != alone_alice and alone.entity(she).name is None


def test_the_window_and_the_table_stay_within_their_bounds(oracle_nlp):
    stream = Stream(oracle_nlp, window_tokens=20, max_entities=3)
    sizes = []
    for k in range(40):
        # two new people each piece: entities keep coming
        stream.add(f"Zed{k} met Zed{k}. Yan{k} saw Yan{k}.")
        sizes.append(len(stream.to_bytes()))
        assert len(stream.entities) <= 3
        assert sum(p.n_tokens for p in stream._pieces) <= 20
    assert max(sizes[10:]) <= max(sizes[:10]) + 64  # does not grow with the history
    last = stream.add("Zed99 met Zed99. Yan99 saw Yan99.")
    ids = {e.id for e in stream.entities}
    assert set(ids_of(last)) <= ids and min(ids) > 3  # the oldest left; ids never reused
    assert len(set(ids_of(last))) == 2 and max(ids_of(last)) == 82


def test_a_restored_stream_continues_as_the_original(oracle_nlp):
    pieces = ["Alice met Bob.", "She thanked him.", "Carol came.", "He left with her and Carol."]
    original = Stream(oracle_nlp)
    for text in pieces[:2]:
        original.add(text, speaker="Dana")
    saved = original.to_bytes()
    restored = Stream(oracle_nlp, window_tokens=3).from_bytes(saved)
    assert restored.window_tokens == original.window_tokens
    assert restored.to_bytes() == saved
    for text in pieces[2:]:
        a, b = original.add(text), restored.add(text)
        assert ids_of(a) == ids_of(b) and a.text == b.text
    assert restored.to_bytes() == original.to_bytes()


@pytest.mark.parametrize("text", ["", "  ", "Alice met Bob.  ", "  She thanked him.", "line one\nline two\n"])
def test_a_piece_doc_gives_back_the_piece_exactly(oracle_nlp, text):
    stream = Stream(oracle_nlp)
    stream.add("Alice met Bob.")
    doc = stream.add(text)
    assert doc.text == text
    assert stream.add("She left.").text == "She left."


def test_join_pieces_is_the_stream_read_as_one_document(oracle_nlp):
    stream = Stream(oracle_nlp)
    pieces = [
        ("Alice met Bob.", "Dana"),
        ("", None),
        ("It rained.  ", None),
        ("She thanked him.", "Eve"),
        ("Carol came.\n", None),
        ("Carol left.", None),
    ]
    docs = [stream.add(text, speaker=who) for text, who in pieces]
    alice, bob, carol = id_of(docs[3], "She"), id_of(docs[3], "him"), id_of(docs[5], "Carol")
    # the first piece's Alice and Bob joined their entities with the fourth piece; its Doc is not rewritten
    assert ids_of(docs[0]) == {}
    assert sorted(docs[3].user_data["stream_joined"]) == [(0, 0, 5, alice), (0, 10, 13, bob)]
    assert docs[5].user_data["stream_joined"] == [(4, 0, 5, carol)] and docs[4].user_data["stream_joined"] == []
    whole = join_pieces(docs)
    # joined as the stream joins its window: a space after a piece that does not end in whitespace
    assert whole.text == "Alice met Bob. It rained.  She thanked him. Carol came.\nCarol left."
    assert [t.text for t in whole if not t.is_space] == [t.text for d in docs for t in d if not t.is_space]
    assert ids_of(whole) == {alice: ["Alice", "She"], bob: ["Bob", "him"], carol: ["Carol", "Carol"]}
    assert [(s.text, s.label_) for s in whole.spans["speakers"]] == [
        ("Alice met Bob.", "Dana"),
        ("She thanked him.", "Eve"),
    ]
    # a joined mention of a piece not given is left out
    assert ids_of(join_pieces(docs[3:]))[alice] == ["She"]
    with pytest.raises(ValueError, match="not in the order"):
        join_pieces([docs[3], docs[0]])
    with pytest.raises(ValueError, match="no Docs"):
        join_pieces([])


def test_bad_input_gets_a_clear_error(oracle_nlp):
    with pytest.raises(ValueError, match="memcoref component"):
        Stream(spacy.blank("en"))
    with pytest.raises(ValueError, match="window_tokens must be a positive integer"):
        Stream(oracle_nlp, window_tokens=0)
    stream = Stream(oracle_nlp)
    with pytest.raises(TypeError, match="text must be a str"):
        stream.add(b"bytes")
    with pytest.raises(ValueError, match="speaker must be a non-empty str"):
        stream.add("Hi.", speaker="  ")
    with pytest.raises(StreamStateError, match="not a saved stream state"):
        stream.from_bytes(b"\xc1 not msgpack")
    import srsly

    with pytest.raises(StreamStateError, match="version 1"):
        stream.from_bytes(srsly.msgpack_dumps({"version": 99}))
    with pytest.raises(StreamStateError, match="incomplete"):
        stream.from_bytes(srsly.msgpack_dumps({"version": 1, "settings": {}}))


# ----- PeTra: the memory carried from piece to piece ----------------------------------------


@pytest.fixture(scope="module")
def context_free_petra():
    """A PeTra (random, initialized) over an encoder that sees each token
    alone (hash embeddings, no CNN): its features of a piece do not depend
    on the window, so reading pieces must give the whole text's log."""
    from conftest import PETRA_CNN_TOK2VEC, petra_config

    nlp = spacy.blank("en")
    nlp.add_pipe("memcoref_petra", config=petra_config(tok2vec=PETRA_CNN_TOK2VEC["embed"]))
    nlp.initialize()
    return nlp


PIECES = [
    "Alice met Bob in Paris.",
    "She told him the museum was closed.",
    "He thanked her and left.",
    "  Later, Bob called Alice.",
]


def test_petra_reading_pieces_gives_the_log_of_reading_the_whole_text(context_free_petra):
    import numpy

    stream = Stream(context_free_petra, window_tokens=4)  # the window never holds the first pieces
    assert stream.carries_memory
    docs = [stream.add(text) for text in PIECES]
    whole = context_free_petra(" ".join(PIECES))
    assert [len(d) for d in docs] == [len(context_free_petra.make_doc(t)) for t in PIECES]
    assert sum(len(d) for d in docs) == len(whole)
    for key in ("entity", "overwrite", "coref", "usage"):
        pieces_log = numpy.concatenate([d._.memory_log[key] for d in docs])
        numpy.testing.assert_allclose(pieces_log, whole._.memory_log[key], rtol=1e-5, atol=1e-6, err_msg=key)
    # the memory is the state: its tensors keep their shapes however many pieces are read, and the
    # entity table its bound (asserted on the tensors: the bytes also hold the table, which a
    # random model may fill with new entities up to max_entities)
    shapes = {k: getattr(stream._memory, k).shape for k in ("gru", "memory", "usage")}
    stream.max_entities = 3
    for text in PIECES * 5:
        stream.add(text)
        assert {k: getattr(stream._memory, k).shape for k in shapes} == shapes
        assert len(stream.entities) <= 3


def test_petra_stream_restored_from_bytes_reads_on_as_the_original(context_free_petra):
    import numpy

    original = Stream(context_free_petra)
    for text in PIECES[:2]:
        original.add(text)
    restored = Stream(context_free_petra).from_bytes(original.to_bytes())
    for text in PIECES[2:]:
        a, b = original.add(text), restored.add(text)
        assert ids_of(a) == ids_of(b)
        numpy.testing.assert_array_equal(a._.memory_log["overwrite"], b._.memory_log["overwrite"])
    assert restored.to_bytes() == original.to_bytes()
    # a PeTra state does not load into an s2e stream
    s2e_stream = Stream(spacy_memcoref.load("s2e-ontogum"))
    with pytest.raises(StreamStateError, match="PeTra memory"):
        s2e_stream.from_bytes(original.to_bytes())


def test_the_shipped_petra_streams_its_memory(tmp_path):
    stream = Stream(spacy_memcoref.load("petra-gap"))
    first = stream.add("Zoe Telford played the police officer girlfriend of Simon.")
    second = stream.add("She left him in 2010.")
    assert first._.memory_log["overwrite"].shape == (len(first), 10)
    assert second._.memory_log["overwrite"].shape == (len(second), 10)
    # "She" is the entity that the first piece's Zoe Telford opened in a cell
    she = id_of(second, "She")
    assert stream.entity(she).name == "Zoe Telford"


def test_a_mention_reread_with_other_boundaries_is_the_known_one():
    """A later window reads an earlier piece's "the old man" as "the old man who called": the same
    mention (its entity id), not a new one; a one-word mention ("his") sharing a start with another
    entity's ("his mother") is not taken for it."""
    from spacy_memcoref.stream import _KnownMentions

    doc = spacy.blank("en")("the old man who called said his mother left . Bob saw him .")
    text = doc.text
    known = {(0, len("the old man")): 7, (text.index("his"), text.index("his") + 3): 8}
    match = _KnownMentions(known, text)
    assert match.find(doc[0:5]) == 7  # the old man who called
    assert match.find(doc[0:3]) == 7  # exact
    assert match.find(doc[1:3]) == 7  # "old man": the same end
    his = text.index("his")
    assert match.find(doc.char_span(his, his + len("his mother"))) is None
    assert match.find(doc[11:12]) is None  # Bob: nothing known there
