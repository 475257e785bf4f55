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
