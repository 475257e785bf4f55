"""The coreference model's own entity vectors (doc._.entity_vectors):
pooled by the rule of decoders.entity_vectors, checked against the head's
own modules; deterministic; one vector for every mention of a cluster;
through DocBin and to_bytes; off by a setting; on the entity records."""

import numpy
import pytest
import spacy
from spacy.tokens import Doc, DocBin

import spacy_memcoref
from spacy_memcoref.doc_helpers.entity_vectors import ENDPOINTS_SOURCE, token_entity_rows

TEXT = "Alice met Bob in Paris. She told him that the museum was closed. He thanked her, and Alice smiled."


@pytest.fixture(scope="module")
def nlp():
    return spacy_memcoref.load("s2e-ontogum")


def clusters_of(doc):
    return [
        [(s.start, s.end - 1) for s in doc.spans[k]]
        for k in sorted(k for k in doc.spans if k.startswith("coref_clusters_"))
    ]


def test_the_vectors_are_the_mean_of_the_heads_antecedent_endpoints(nlp):
    import torch

    doc = nlp(TEXT)
    stored = doc._.entity_vectors
    clusters = [[(s.start, s.end - 1) for s in doc.spans[f"coref_clusters_{n}"]] for n in stored["clusters"]]
    assert len(clusters) >= 2 and stored["source"] == ENDPOINTS_SOURCE
    component = nlp.get_pipe("memcoref")
    head = component.model.layers[1].shims[0]._model
    tokens = torch.as_tensor(component.token_vectors([nlp.make_doc(TEXT)])[0])
    with torch.no_grad():
        head.eval()
        a_start, a_end = head.antecedent_start(tokens).numpy(), head.antecedent_end(tokens).numpy()
    for row, cluster in enumerate(clusters):
        expected = numpy.concatenate([a_start[[s for s, _ in cluster]].mean(0), a_end[[e for _, e in cluster]].mean(0)])
        numpy.testing.assert_allclose(stored["vectors"][row], expected, rtol=1e-4, atol=1e-5)
    assert stored["vectors"].dtype == numpy.float32 and stored["vectors"].shape[1] == 2 * a_start.shape[1]


def test_the_vectors_are_deterministic_and_one_a_cluster(nlp):
    first, second = nlp(TEXT), nlp(TEXT)
    numpy.testing.assert_array_equal(first._.entity_vectors["vectors"], second._.entity_vectors["vectors"])
    rows = token_entity_rows(first)
    vectors = first._.entity_vectors["vectors"]
    for key in [k for k in first.spans if k.startswith("coref_clusters_")]:
        mentions = list(first.spans[key])
        assert len(mentions) >= 2
        found = {int(rows[m.start]) for m in mentions}
        assert len(found) == 1  # every mention of the cluster: one vector
        numpy.testing.assert_array_equal(vectors[found.pop()], vectors[int(rows[mentions[-1].start])])
    outside = [
        t.i
        for t in first
        if all(not (s.start <= t.i < s.end) for k in first.spans if k.startswith("coref_") for s in first.spans[k])
    ]
    assert outside and (rows[outside] == -1).all()


def test_the_vectors_survive_docbin_and_to_bytes(nlp):
    doc = nlp(TEXT)
    binned = DocBin(store_user_data=True)
    binned.add(doc)
    back = next(DocBin().from_bytes(binned.to_bytes()).get_docs(nlp.vocab))
    again = Doc(nlp.vocab).from_bytes(doc.to_bytes())
    for other in (back, again):
        numpy.testing.assert_array_equal(other._.entity_vectors["vectors"], doc._.entity_vectors["vectors"])
        numpy.testing.assert_array_equal(other._.entity_vectors["clusters"], doc._.entity_vectors["clusters"])
        assert [r.vector.tolist() for r in spacy_memcoref.entities(other)] == [
            r.vector.tolist() for r in spacy_memcoref.entities(doc)
        ]


def test_a_setting_turns_them_off(nlp, tmp_path):
    nlp.to_disk(tmp_path / "model")
    off = spacy.load(tmp_path / "model", config={"components": {"memcoref": {"entity_vectors": False}}})
    doc = off(TEXT)
    assert clusters_of(doc) == clusters_of(nlp(TEXT))
    assert doc._.entity_vectors is None
    assert all(r.vector is None for r in spacy_memcoref.entities(doc))
    from thinc.api import ConfigValidationError

    with pytest.raises(ConfigValidationError, match="entity_vectors"):
        spacy.load(tmp_path / "model", config={"components": {"memcoref": {"entity_vectors": "maybe"}}})


def test_entity_records_carry_the_models_vector_or_the_encoders_when_asked(nlp):
    doc = nlp(TEXT)
    records = spacy_memcoref.entities(doc)
    for record in records:
        row = list(doc._.entity_vectors["clusters"]).index(record.cluster)
        numpy.testing.assert_array_equal(record.vector, doc._.entity_vectors["vectors"][row])
    encoder = spacy_memcoref.entities(doc, vectors_from=nlp)
    assert encoder[0].vector.shape != records[0].vector.shape  # the encoder's width (384), not the model's (1,024)
    # clusters written by hand (another tool, gold) have no model vector
    doc.spans["other_1"] = [doc[0:1], doc[6:7]]
    assert spacy_memcoref.entities(doc, prefix="other")[0].vector is None


# ----- PeTra: the memory cell's state at the entity's last token ------------------------

PETRA_TEXT = (
    "Alice met Bob in Paris . She told him that the museum was closed . He thanked her , and Alice smiled at him ."
)


def _petra_pipeline(seed: int, **settings):
    """A tiny random PeTra (conftest.TINY_PETRA) that puts most tokens in
    entities (threshold 0.3), so that it writes clusters."""
    from thinc.api import fix_random_seed

    from conftest import TINY_PETRA

    fix_random_seed(seed)
    nlp = spacy.blank("en")
    nlp.add_pipe("memcoref_petra", config={"model": {**TINY_PETRA, "entity_threshold": 0.3}, **settings})
    nlp.initialize()
    return nlp


def _argmax_cells(doc):
    log = doc._.memory_log
    over, coref = numpy.asarray(log["overwrite"]), numpy.asarray(log["coref"])
    return numpy.argmax(numpy.concatenate([over, coref], axis=1), axis=1) % over.shape[1]


def _moved_last_tokens(doc):
    """The clusters' last tokens that the decoding rules moved off their argmax cell."""
    from spacy_memcoref.decoders.constraints import DocRules
    from spacy_memcoref.decoders.petra import decode_entities

    mentions, _ = decode_entities(doc._.memory_log, threshold=0.3, rules=DocRules(doc))
    argmax = _argmax_cells(doc)
    return [spans[-1][1] for (cell, _), spans in mentions.items() if len(spans) >= 2 and argmax[spans[-1][1]] != cell]


@pytest.fixture(scope="module")
def petra_nlp():
    """A tiny random PeTra whose clusters on PETRA_TEXT include one whose
    last token a decoding rule moved to another cell than its argmax
    action's (the first seed that gives one): both ways of reading a
    vector are checked."""
    import warnings

    for seed in range(20):
        nlp = _petra_pipeline(seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # untrained: it is random on purpose
            doc = nlp(PETRA_TEXT)
        if len(clusters_of(doc)) >= 2 and _moved_last_tokens(doc):
            return nlp
    raise AssertionError("no seed in 0..19 gives a tiny PeTra with a moved last token")


def _cell_states_by_hand(nlp, doc):
    """The PeTra module run one token at a time on the component's own
    features: the memory [T, N, d] after each token's update."""
    import torch

    component = nlp.get_pipe("memcoref_petra")
    head = component.model.layers[1].shims[0]._model
    head.eval()
    petra = head.petra
    x = torch.as_tensor(component.token_vectors([nlp.make_doc(doc.text)])[0])
    one = torch.tensor([1])
    memories, state = [], None
    with torch.no_grad():
        h, _ = petra.gru(x.unsqueeze(0))
        for t in range(h.shape[1]):
            _, state = petra.run_controller(h[:, t : t + 1], one, state=state)
            memories.append(state[0][0].numpy().copy())
    return numpy.stack(memories)


def test_petra_vectors_are_the_cell_state_at_the_entitys_last_token(petra_nlp):
    from spacy_memcoref.decoders.constraints import DocRules
    from spacy_memcoref.decoders.petra import decode_entities
    from spacy_memcoref.doc_helpers.entity_vectors import MEMORY_CELL_SOURCE

    doc = petra_nlp(PETRA_TEXT)
    stored = doc._.entity_vectors
    assert stored["source"] == MEMORY_CELL_SOURCE
    assert stored["vectors"].dtype == numpy.float32 and stored["vectors"].shape == (len(stored["clusters"]), 16)
    memory = _cell_states_by_hand(petra_nlp, doc)
    # each cluster's cell, as the rules decoded it, independently of the component
    mentions, _ = decode_entities(doc._.memory_log, threshold=0.3, rules=DocRules(doc))
    cell_of = {tuple(spans): cell for (cell, _), spans in mentions.items()}
    clusters = [[(s.start, s.end - 1) for s in doc.spans[f"coref_clusters_{n}"]] for n in stored["clusters"]]
    assert len(clusters) >= 2
    for row, cluster in enumerate(clusters):
        last = cluster[-1][1]
        expected = memory[last, cell_of[tuple(cluster)]]
        numpy.testing.assert_allclose(stored["vectors"][row], expected, rtol=1e-5, atol=1e-6)
    # a moved last token is read from the whole memory kept there: still its own cell's state
    moved = _moved_last_tokens(doc)
    argmax = _argmax_cells(doc)
    for t in moved:
        row = next(i for i, c in enumerate(clusters) if c[-1][1] == t)
        wrong = memory[t, argmax[t]]
        assert not numpy.allclose(stored["vectors"][row], wrong)


def test_petra_vectors_are_deterministic_and_one_a_cluster(petra_nlp):
    first, second = petra_nlp(PETRA_TEXT), petra_nlp(PETRA_TEXT)
    numpy.testing.assert_array_equal(first._.entity_vectors["vectors"], second._.entity_vectors["vectors"])
    numpy.testing.assert_array_equal(first._.entity_vectors["clusters"], second._.entity_vectors["clusters"])
    rows = token_entity_rows(first)
    keys = [k for k in first.spans if k.startswith("coref_clusters_")]
    assert keys
    for key in keys:
        mentions = list(first.spans[key])
        assert len(mentions) >= 2
        assert len({int(rows[m.start]) for m in mentions}) == 1  # every mention of the cluster: one vector
    records = spacy_memcoref.entities(first)
    for record in records:
        row = list(first._.entity_vectors["clusters"]).index(record.cluster)
        numpy.testing.assert_array_equal(record.vector, first._.entity_vectors["vectors"][row])


def test_petra_vectors_survive_docbin_and_to_bytes(petra_nlp):
    doc = petra_nlp(PETRA_TEXT)
    binned = DocBin(store_user_data=True)
    binned.add(doc)
    back = next(DocBin().from_bytes(binned.to_bytes()).get_docs(petra_nlp.vocab))
    again = Doc(petra_nlp.vocab).from_bytes(doc.to_bytes())
    for other in (back, again):
        for key in ("vectors", "clusters"):
            numpy.testing.assert_array_equal(other._.entity_vectors[key], doc._.entity_vectors[key])
        assert other._.entity_vectors["source"] == doc._.entity_vectors["source"]
        assert [r.vector.tolist() for r in spacy_memcoref.entities(other)] == [
            r.vector.tolist() for r in spacy_memcoref.entities(doc)
        ]


def test_petra_setting_off_writes_none_and_leaves_the_log_alone(petra_nlp, tmp_path):
    petra_nlp.to_disk(tmp_path / "petra")
    off = spacy.load(tmp_path / "petra", config={"components": {"memcoref_petra": {"entity_vectors": False}}})
    doc, on = off(PETRA_TEXT), petra_nlp(PETRA_TEXT)
    assert clusters_of(doc) == clusters_of(on)
    assert doc._.entity_vectors is None and on._.entity_vectors is not None
    assert all(r.vector is None for r in spacy_memcoref.entities(doc))
    for key in ("entity", "overwrite", "coref", "usage"):
        numpy.testing.assert_array_equal(doc._.memory_log[key], on._.memory_log[key])
    # off, the model keeps no cell states either; on again, it does
    component = off.get_pipe("memcoref_petra")
    assert component.predict([off.make_doc(PETRA_TEXT)])[0].cell_states is None
    component.entity_vectors = True
    assert component.predict([off.make_doc(PETRA_TEXT)])[0].cell_states is not None


def test_petra_keeps_cell_states_without_changing_the_log():
    """run_controller's record: the log bit for bit as without it; at each
    token the argmax action's cell after the update, the whole memory at
    the asked tokens, each document's own in a padded batch."""
    import torch

    from spacy_memcoref.models.petra.pytorch_petra import CELL_KEY, SNAPSHOT_KEY, PeTra

    from conftest import petra_args

    torch.manual_seed(0)
    model = PeTra(6, **petra_args(hidden_size=8, num_cells=3, mlp_size=8, dropout=0.0)).eval()
    features = [torch.randn(7, 6), torch.randn(4, 6), torch.randn(0, 6)]
    record = [[5, 1, 5], [3], []]
    with torch.no_grad():
        _, plain = model(features)
        _, kept = model(features, record=record)
        _, alone = model(features[:1], record=record[:1])
    for doc_plain, doc_kept in zip(plain, kept):
        for key in ("entity", "overwrite", "coref", "usage"):
            assert torch.equal(doc_plain[key], doc_kept[key])
    assert [tuple(log[SNAPSHOT_KEY].shape) for log in kept] == [(2, 3, 8), (1, 3, 8), (0, 3, 8)]
    assert [tuple(log[CELL_KEY].shape) for log in kept] == [(7, 8), (4, 8), (0, 8)]
    for b, x in enumerate(features[:2]):
        with torch.no_grad():
            h, _ = model.gru(x.unsqueeze(0))
            state, memory = None, []
            for t in range(x.shape[0]):
                _, state = model.run_controller(h[:, t : t + 1], torch.tensor([1]), state=state)
                memory.append(state[0][0])
        log = kept[b]
        action = torch.cat([log["overwrite"], log["coref"]], dim=-1).argmax(dim=-1) % 3
        for t in range(x.shape[0]):
            torch.testing.assert_close(log[CELL_KEY][t], memory[t][action[t]], rtol=1e-5, atol=1e-6)
        for row, t in enumerate(sorted(set(record[b]))):
            torch.testing.assert_close(log[SNAPSHOT_KEY][row], memory[t], rtol=1e-5, atol=1e-6)
    # one document read alone (the single-document path) keeps the same states
    torch.testing.assert_close(alone[0][CELL_KEY], kept[0][CELL_KEY], rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="outside"):
        model(features, record=[[7], [], []])


def test_every_token_a_rule_may_move_keeps_the_whole_memory():
    """decode_entities moves a token off its argmax cell only where
    DocRules.features gives it features that can conflict: movable_tokens
    names each such token, whatever the rules and speakers. A verb's subject
    (OBJECT's "binder@") is the one feature outside it: its object pronoun
    comes later, so the conflict moves the pronoun, never the subject."""
    from spacy_memcoref.decoders.constraints import ALL_RULES, BINDER_AT, DocRules, _FEATURES
    from spacy_memcoref.decoders.petra import _decode, movable_tokens

    nlp = spacy.blank("en")
    # sorted: the list's order (a set's) must not hang on the hash seed
    pronouns = [w.upper() if i % 2 else w for i, w in enumerate(sorted(_FEATURES))]
    words = ["Ann", "and", "Bob", "said", "They", "met", ".", "The", "nurse", "called", "him", "."] + pronouns
    doc = Doc(nlp.vocab, words=words)
    doc.spans["speakers"] = [doc[0 : len(doc) // 2], doc[len(doc) // 2 :]]
    doc.spans["speakers"][0].label_, doc.spans["speakers"][1].label_ = "A", "B"
    movable = set(movable_tokens(doc))
    # "Ann" and "Bob" (names a coordination holds), "They", "him", and every pronoun of the list
    assert movable == {0, 2, 4, 10} | set(range(12, len(doc)))
    rng = numpy.random.default_rng(0)
    n_cells, subjects = 3, set()
    for rules in (
        ALL_RULES,
        frozenset({"speakers"}),
        frozenset({"coordination"}),
        frozenset({"pronouns"}),
        frozenset({"conjunct_names"}),
        frozenset({"they"}),
        frozenset({"possessor"}),
        frozenset({"object"}),
    ):
        doc_rules = DocRules(doc, rules)
        for t in range(len(doc)):
            features = doc_rules.features((t, t))
            if any(not f.startswith(BINDER_AT) for f in features):
                assert t in movable, (sorted(rules), t, features)
            elif features:
                subjects.add(t)
        # and on logs where every token is in an entity, only movable tokens leave their argmax cell
        for _ in range(20):
            log = {
                "entity": numpy.ones(len(doc)),
                "overwrite": rng.random((len(doc), n_cells)),
                "coref": rng.random((len(doc), n_cells)),
            }
            cells = _decode(log, threshold=0.5, rules=doc_rules)[2]
            argmax = numpy.concatenate([log["overwrite"], log["coref"]], axis=1).argmax(axis=1) % n_cells
            assert {t for t in range(len(doc)) if cells[t] != argmax[t]} <= movable
    # the OBJECT rule's subject of "called him", "nurse", is featured yet stays put
    assert 8 in subjects and 8 not in movable


def test_the_shipped_petra_writes_vectors_of_its_cell_size():
    nlp = spacy_memcoref.load("petra-gap")
    doc = nlp("Anna met Maria in Zurich before she left. Anna said she would call her.")
    stored = doc._.entity_vectors
    assert stored is not None and stored["vectors"].dtype == numpy.float32
    assert stored["vectors"].shape == (len(clusters_of(doc)), 200)
