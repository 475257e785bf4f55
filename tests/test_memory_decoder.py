"""s2e read through a bounded entity memory (decoders/memory.py): unbounded,
it is s2e's own decoding exactly; bounded, an entity that left the memory is
never joined again and the candidate takes its next-best antecedent; the
mentions held never pass cells x mentions; bad sizes get a clear error."""

import random

import pytest
import spacy

from spacy_memcoref.decoders.constraints import DocRules
from spacy_memcoref.decoders.memory import COREF, IGNORE, OVERWRITE, memory_log, read_memory
from spacy_memcoref.decoders.predictions import S2EPrediction
from spacy_memcoref.decoders.s2e import S2EDecoder

from conftest import petra_config, s2e_config

NLP = spacy.blank("en")


def _prediction(spans, choices):
    """An s2e prediction over `spans` (token ranges, text order) with each
    candidate's antecedent choices {query: [(antecedent, score), ...]}."""
    rows = [sorted(choices.get(i, []), key=lambda p: -p[1]) for i in range(len(spans))]
    return S2EPrediction(
        links=(
            [s for s, _ in spans],
            [e for _, e in spans],
            [row[0][0] if row else -1 for row in rows],
            [row[0][1] if row else -1e30 for row in rows],
        ),
        choices=([[c for c, _ in row] for row in rows], [[s for _, s in row] for row in rows]),
    )


def _random_prediction(rng, n, k=8):
    spans = [(i, i + rng.randrange(2)) for i in range(0, 2 * n, 2)]
    choices = {q: [(c, rng.gauss(0, 2)) for c in rng.sample(range(q), min(k, q))] for q in range(1, n)}
    return spans, _prediction(spans, choices)


def _texts(doc, clusters):
    return [[doc[s : e + 1].text for s, e in c] for c in clusters]


@pytest.mark.parametrize("seed", range(5))
def test_unbounded_memory_is_s2es_own_decoding(seed):
    rng = random.Random(seed)
    n = 80
    spans, prediction = _random_prediction(rng, n)
    # a Doc whose words make the rules bite: pronouns of both genders, a line break
    words = [
        rng.choice(["he", "she", "it", "I", "we", "Bob", "Ann", "the", "\n", "car", "his", "her"])
        for _ in range(2 * n + 1)
    ]
    doc = spacy.tokens.Doc(NLP.vocab, words=words)
    plain, memory = S2EDecoder(0.0), S2EDecoder(0.0, memory_cells=n, memory_mentions=n)
    for threshold in (-1.0, 0.0, 1.5):
        assert memory.clusters(prediction, threshold) == plain.clusters(prediction, threshold)
        assert memory.clusters(prediction, threshold, doc=doc) == plain.clusters(prediction, threshold, doc=doc)
    bounded = read_memory(prediction.links, prediction.choices, 0.0, 4, 2, DocRules(doc))
    assert bounded.peak_held <= 4 * 2
    assert bounded.clusters != plain.clusters(prediction, 0.0, doc=doc)  # the bound changes something here


@pytest.mark.parametrize("cells", [0, 4])
def test_mention_links_are_the_links_the_clusters_are_made_of(cells):
    from spacy_memcoref.decoders.links import clusters_from_links

    rng = random.Random(7)
    spans, prediction = _random_prediction(rng, 60)
    words = [rng.choice(["he", "she", "it", "Bob", "Ann", "the", "\n", "car"]) for _ in range(121)]
    doc = spacy.tokens.Doc(NLP.vocab, words=words)
    decoder = S2EDecoder(0.0, memory_cells=cells, memory_mentions=2)
    links = decoder.mention_links(prediction, doc)
    assert [(s, e) for s, e, _ in links] == spans
    assert all(-1 <= a < q for q, (_, _, a) in enumerate(links))
    union = clusters_from_links([s for s, _, _ in links], [e for _, e, _ in links], [a for _, _, a in links])
    assert union == decoder.clusters(prediction, doc=doc) and union
    assert decoder.mention_links(S2EPrediction(), doc) == []


def test_an_entity_that_left_the_memory_is_not_joined_and_the_next_best_stands():
    doc = NLP("Bob met Ann . Carl came . Bob smiled .")
    spans = [(0, 0), (2, 2), (4, 4), (7, 7)]  # Bob, Ann, Carl, Bob
    # the second "Bob" prefers the first, then Carl
    prediction = _prediction(spans, {3: [(0, 5.0), (2, 1.0)]})
    assert _texts(doc, S2EDecoder(0.0).clusters(prediction, doc=doc)) == [["Bob", "Bob"]]
    # two cells: Bob's cell is the least recently used when Carl comes
    two = S2EDecoder(0.0, memory_cells=2)
    assert _texts(doc, two.clusters(prediction, doc=doc)) == [["Carl", "Bob"]]
    reading = read_memory(prediction.links, prediction.choices, 0.0, 2, 8, DocRules(doc))
    assert reading.actions == [OVERWRITE, OVERWRITE, OVERWRITE, COREF]
    assert reading.cells == [0, 1, 0, 0] and reading.antecedents == [-1, -1, -1, 2]
    # three cells hold all three
    assert _texts(doc, S2EDecoder(0.0, memory_cells=3).clusters(prediction, doc=doc)) == [["Bob", "Bob"]]


def test_a_cell_keeps_its_first_and_latest_mentions():
    doc = NLP("Ann a b c d e")
    spans = [(i, i) for i in range(6)]  # one entity, mentions 0..4; 5 prefers 1, then 0
    chain = {q: [(q - 1, 3.0)] for q in range(1, 5)}
    prediction = _prediction(spans, {**chain, 5: [(1, 4.0), (0, 2.0)]})
    reading = read_memory(prediction.links, prediction.choices, 0.0, 1, 2, None)
    # two a cell: the first (0) and the latest; 1 left when 2 came, so 5 joins by 0
    assert reading.antecedents == [-1, 0, 1, 2, 3, 0] and reading.peak_held == 2
    assert reading.clusters == [[(i, i) for i in range(6)]]
    # one a cell: only its first is held; 2's antecedent (1) is not, so 2 starts an entity in the
    # only cell, and 0's entity leaves
    one = read_memory(prediction.links, prediction.choices, 0.0, 1, 1, None)
    assert one.antecedents == [-1, 0, -1, 2, -1, -1] and one.peak_held == 1
    assert one.clusters == [[(0, 0), (1, 1)], [(2, 2), (3, 3)]]


def test_a_candidate_that_is_no_word_is_ignored():
    doc = NLP("Ann \n\n she")
    spans = [(0, 0), (1, 1), (2, 2)]
    prediction = _prediction(spans, {1: [(0, 3.0)], 2: [(1, 4.0), (0, 2.0)]})
    reading = read_memory(prediction.links, prediction.choices, 0.0, 2, 8, DocRules(doc))
    assert reading.actions == [OVERWRITE, IGNORE, COREF] and reading.cells[1] == -1
    assert _texts(doc, reading.clusters) == [["Ann", "she"]]


@pytest.mark.parametrize("cells, mentions", [(-1, 8), (1.5, 8), (True, 8), (4, 0), (4, "8")])
def test_bad_sizes_are_refused(cells, mentions):
    with pytest.raises(ValueError, match="memory_(cells|mentions) must be an integer"):
        S2EDecoder(0.0, memory_cells=cells, memory_mentions=mentions)


def test_the_component_takes_the_memory_from_its_config_and_petra_refuses_it(tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("memcoref", config={**s2e_config(hidden_size=8), "memory_cells": 3, "memory_mentions": 2})
    nlp.initialize()
    decoder = nlp.get_pipe("memcoref").decoder
    assert (decoder.memory_cells, decoder.memory_mentions) == (3, 2)
    nlp.to_disk(tmp_path / "p")
    # a user's choice: the config given at load wins over the saved one
    loaded = spacy.load(tmp_path / "p", config={"components": {"memcoref": {"memory_cells": 40}}})
    assert loaded.get_pipe("memcoref").decoder.memory_cells == 40
    assert spacy.load(tmp_path / "p").get_pipe("memcoref").decoder.memory_cells == 3
    # set on a loaded pipeline, it stays through the settings the component configures at each call
    component = loaded.get_pipe("memcoref")
    component.decoder.set_memory(5, 3)
    assert len(list(loaded.pipe(["Ann met Bob. She smiled."]))) == 1
    assert (component.decoder.memory_cells, component.decoder.memory_mentions) == (5, 3)
    with pytest.raises(ValueError, match="memory_cells must be an integer"):
        spacy.blank("en").add_pipe("memcoref", config={**s2e_config(hidden_size=8), "memory_cells": -2})
    # PeTra's memory is its own (num_cells): the s2e memory on a PeTra model is refused, by name
    with pytest.raises(ValueError, match="no s2e model"):
        spacy.blank("en").add_pipe("memcoref", config={**petra_config(), "memory_cells": 3})


def test_the_memory_log_says_what_the_memory_did():
    doc = NLP("Bob met Ann . Carl came . Bob smiled .")
    spans = [(0, 0), (2, 2), (4, 4), (7, 7)]
    prediction = _prediction(spans, {3: [(0, 5.0), (2, 1.0)]})
    reading = read_memory(prediction.links, prediction.choices, 0.0, 2, 4, DocRules(doc))
    log = memory_log(reading, prediction.links, len(doc), 2, 4)
    assert {k: v.shape for k, v in log.items()} == {
        "entity": (len(doc),),
        "overwrite": (len(doc), 2),
        "coref": (len(doc), 2),
        "usage": (len(doc), 2),
    }
    assert log["entity"].tolist() == [1 if i in (0, 2, 4, 7) else 0 for i in range(len(doc))]
    # Bob, Ann, Carl overwrite cells 0, 1, 0; the second Bob joins Carl's cell 0
    assert log["overwrite"][[0, 2, 4]].tolist() == [[1, 0], [0, 1], [1, 0]]
    assert log["coref"][7].tolist() == [1, 0] and log["coref"].sum() == 1
    # usage: kept mentions over 4, from each mention's token on
    assert log["usage"][:, 0].tolist() == [0.25] * 7 + [0.5] * (len(doc) - 7)
    assert log["usage"][1].tolist() == [0.25, 0.0] and log["usage"][2].tolist() == [0.25, 0.25]


def test_the_component_writes_the_log_only_through_the_memory():
    nlp = spacy.blank("en")
    nlp.add_pipe("memcoref", config={**s2e_config(hidden_size=8), "memory_cells": 3})
    nlp.initialize()
    doc = nlp("Ann met Bob in Paris. She thanked him.")
    assert doc._.memory_log["usage"].shape == (len(doc), 3)
    plain = spacy.blank("en")
    plain.add_pipe("memcoref", config=s2e_config(hidden_size=8))
    plain.initialize()
    assert plain("Ann met Bob in Paris. She thanked him.")._.memory_log is None


def test_the_component_reads_each_doc_through_the_memory_once(monkeypatch):
    import spacy_memcoref.decoders.s2e as s2e_decoder

    nlp = spacy.blank("en")
    nlp.add_pipe("memcoref", config={**s2e_config(hidden_size=8), "memory_cells": 3})
    nlp.initialize()
    readings = []

    def counted(*args, **kwargs):
        readings.append(read_memory(*args, **kwargs))
        return readings[-1]

    monkeypatch.setattr(s2e_decoder, "read_memory", counted)
    docs = list(nlp.pipe(["Ann met Bob in Paris. She thanked him.", "Carl came. He sat."]))
    assert len(readings) == 2
    for doc, reading in zip(docs, readings):
        # the log is that one reading's: a token is an entity's where a mention it did not IGNORE lies
        assert doc._.memory_log["entity"].sum() > 0 or all(a == IGNORE for a in reading.actions)
    # a second clusters() call for another threshold does not leave its reading for write()
    decoder = nlp.get_pipe("memcoref").decoder
    spans = [(0, 0), (2, 2), (4, 4)]
    prediction = _prediction(spans, {2: [(0, 5.0)]})
    doc = NLP("Bob met Ann . Bob")
    decoder.clusters(prediction, 10.0, doc=doc)
    decoder.write(doc, prediction)
    assert doc._.memory_log["coref"].sum() == 1 and len(readings) == 4
