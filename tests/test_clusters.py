"""The cluster span-group convention (doc_helpers.clusters) and the readers
that follow it: the same keys, order and empty-group rule everywhere; one
prefix a pipeline; the pictures of a Doc without clusters."""

import pytest
import spacy
from spacy.training import Example

from spacy_memcoref.annotate import doc_record
from spacy_memcoref.corpora.conll import _clusters_from_doc
from spacy_memcoref.doc_helpers.clusters import (
    CLUSTER_PREFIX,
    char_clusters,
    clear_clusters,
    cluster_key,
    cluster_keys,
    cluster_number,
    numbered_clusters,
    token_clusters,
    write_clusters,
)
from spacy_memcoref.doc_helpers.gold import aligned_gold_clusters
from spacy_memcoref.doc_helpers.petra_gold import cluster_sparse_target
from spacy_memcoref.scoring.gap_decisions import gap_decisions, gap_decisions_from_doc
from spacy_memcoref.scoring.gap_export import gap_system_rows

from conftest import TINY_PETRA, TINY_S2E


def _doc():
    nlp = spacy.blank("en")
    #                  0    1   2    3   4    5     6
    doc = nlp.make_doc("Anna met Maria and she smiled .")
    doc.spans["coref_clusters_2"] = [doc[2:3], doc[4:5]]
    doc.spans["coref_clusters_1"] = [doc[0:1]]
    doc.spans["coref_clusters_3"] = []  # empty
    doc.spans["coref_clusters_01"] = [doc[5:6]]  # N = 1, sorts before "_1"
    for odd in (
        "coref_clusters_x",
        "coref_clusters_1a",
        "coref_clusters_ 4",
        "coref_clusters_-4",
        "coref_clusters_4\n",
        "coref_clusters_\u0664",
        "coref_clusters_\u00b2",
        "coref_clusters",
        "other_1",
    ):
        doc.spans[odd] = [doc[6:7]]
    return doc


def test_key_format_and_parse():
    assert CLUSTER_PREFIX == "coref_clusters"
    assert cluster_key(3) == "coref_clusters_3" and cluster_key(1, "pred") == "pred_1"
    assert cluster_number("coref_clusters_12") == 12 and cluster_number("coref_clusters_01") == 1
    for key in (
        "coref_clusters_",
        "coref_clusters_x",
        "coref_clusters_1\n",
        "coref_clusters_\u0664",
        "coref_clusters_\u00b2",
        "coref_clusters_+1",
        "pred_1",
    ):
        assert cluster_number(key) is None, key
    assert cluster_number("pred_1", "pred") == 1
    assert cluster_number("a.b_1", "a.b") == 1 and cluster_number("axb_1", "a.b") is None


def test_readers_agree_on_keys_order_and_empty_groups():
    doc = _doc()
    assert cluster_keys(doc) == ["coref_clusters_01", "coref_clusters_1", "coref_clusters_2", "coref_clusters_3"]
    assert [n for n, _ in numbered_clusters(doc)] == [1, 1, 2]
    tokens = [[(5, 5)], [(0, 0)], [(2, 2), (4, 4)]]
    assert token_clusters(doc) == tokens
    assert char_clusters(doc) == [[(doc[s].idx, doc[e].idx + len(doc[e])) for s, e in c] for c in tokens]
    assert [m for _, m in _clusters_from_doc(doc, CLUSTER_PREFIX)] == tokens
    assert [[(m["start"], m["end"]) for m in c["mentions"]] for c in doc_record("x", doc)["clusters"]] == char_clusters(
        doc
    )
    example = Example(doc, doc)
    assert aligned_gold_clusters(example, CLUSTER_PREFIX) == (tokens, 0)
    (spans, pairs), missed = cluster_sparse_target(example, CLUSTER_PREFIX)
    assert spans == [(5, 5), (0, 0), (2, 2), (4, 4)] and missed == 0
    assert [p for p in pairs if p[2] == 1.0] == [(2, 3, 1.0)]


def test_clear_and_write():
    doc = _doc()
    others = {key for key in doc.spans if cluster_number(key) is None}
    write_clusters(doc, [[doc[0:1], doc[4:5]]])
    assert cluster_keys(doc) == ["coref_clusters_1"] and token_clusters(doc) == [[(0, 0), (4, 4)]]
    assert doc.spans["coref_clusters_1"].name == "coref_clusters_1"
    assert set(doc.spans) - {"coref_clusters_1"} == others
    clear_clusters(doc)
    assert set(doc.spans) == others


def _gap_doc():
    nlp = spacy.blank("en")
    doc = nlp.make_doc("Anna met Maria and she smiled .")
    doc.spans["gap"] = [
        doc.char_span(0, 4, label="A"),
        doc.char_span(9, 14, label="B"),
        doc.char_span(19, 22, label="PRONOUN"),
    ]
    doc.user_data["gap"] = {"id": "g1", "A-coref": False, "B-coref": True, "url": ""}
    return doc


def test_one_gap_rule_for_export_and_scorer():
    doc = _gap_doc()
    doc.spans["coref_clusters_1"] = [doc[2:3], doc[4:5]]
    doc.spans["coref_clusters_2"] = []
    assert gap_decisions_from_doc(doc) == (False, True) == gap_system_rows([doc])[0][1:]
    # the scorer's case: a predicted Doc tokenized differently from the reference
    nlp = spacy.blank("en")
    predicted = spacy.tokens.Doc(
        nlp.vocab,
        words=["Anna", "met", "Mar", "ia", "and", "she", "smiled", "."],
        spaces=[True, True, False, True, True, True, True, False],
    )
    assert predicted.text == doc.text
    predicted.spans["coref_clusters_1"] = [predicted[3:4], predicted[5:6]]  # "ia" overlaps B
    assert gap_decisions(predicted, doc) == (False, True)
    predicted.user_data["gap_probs"] = {"A": 0.7, "B": 0.2, "threshold": 0.6}
    assert gap_decisions(predicted, doc) == (True, False)
    assert gap_decisions(predicted, doc, threshold=0.1) == (True, True)


# ----- one prefix a pipeline ---------------------------------------------------------------


def test_two_coref_components_with_one_prefix_are_refused(models):
    nlp = spacy.blank("en")
    nlp.add_pipe("memcoref", config={"model": TINY_S2E})
    for factory, model in (("memcoref", TINY_S2E), ("memcoref_petra", TINY_PETRA)):
        with pytest.raises(ValueError, match="span_cluster_prefix"):
            nlp.add_pipe(factory, name="second", config={"model": model})
    nlp.add_pipe("memcoref_petra", name="petra", config={"model": TINY_PETRA, "span_cluster_prefix": "petra_clusters"})
    assert nlp.pipe_names == ["memcoref", "petra"]
    # sourced components skip the factory: initialize refuses then
    sourced = spacy.blank("en")
    sourced.add_pipe("memcoref", source=spacy.load(models / "s2e"))
    sourced.add_pipe("memcoref", name="again", source=spacy.load(models / "s2e"))
    with pytest.raises(ValueError, match="span_cluster_prefix"):
        sourced.initialize()
    # replacing a component with one of the same prefix is fine
    nlp.replace_pipe("memcoref", "memcoref", config={"model": TINY_S2E})


def test_coref_components_finds_them_by_kind_in_pipeline_order():
    from spacy_memcoref import pretrained
    from spacy_memcoref.annotate.worker import coref_prefixes
    from spacy_memcoref.pipeline.coref_component import coref_components, coref_kind

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("memcoref_petra", name="petra", config={"model": TINY_PETRA, "span_cluster_prefix": "petra_clusters"})
    nlp.add_pipe("memcoref", config={"model": TINY_S2E})
    # the `memcoref` factory with a PeTra model is a PeTra component: the model decides
    nlp.add_pipe("memcoref", name="petra_too", config={"model": TINY_PETRA, "span_cluster_prefix": "more"})
    names = lambda found: [name for name, _ in found]  # noqa: E731
    assert names(coref_components(nlp)) == ["petra", "memcoref", "petra_too"]
    assert names(coref_components(nlp, "petra")) == ["petra", "petra_too"]
    assert names(coref_components(nlp, "s2e")) == ["memcoref"]
    assert all(pipe is nlp.get_pipe(name) for name, pipe in coref_components(nlp))
    assert coref_kind(nlp.get_pipe("sentencizer")) is None and coref_kind(nlp.get_pipe("memcoref")) == "s2e"
    with pytest.raises(ValueError, match="kind 'S2E'"):
        coref_components(nlp, "S2E")
    # disabled ones: left out unless asked for (the shipped models' lookup asks)
    nlp.disable_pipe("memcoref")
    assert names(coref_components(nlp)) == ["petra", "petra_too"]
    assert names(coref_components(nlp, include_disabled=True)) == ["petra", "memcoref", "petra_too"]
    assert names(pretrained.coref_components(nlp)) == ["petra", "memcoref", "petra_too"]
    assert coref_prefixes(nlp) == ["petra_clusters", "more"]
    assert coref_components(spacy.blank("en")) == []


# ----- pictures ----------------------------------------------------------------------------


@pytest.mark.parametrize("page", [False, True])
def test_clusters_html_without_clusters_says_so_without_an_internal_key(page):
    import warnings

    import spacy
    from spacy.tokens import Doc

    from spacy_memcoref.visualize import clusters_html

    doc = Doc(spacy.blank("en").vocab, words="Alice saw Bob .".split())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        markup = clusters_html(doc, page=page)
    assert not [w for w in caught if "memcoref_clusters" in str(w.message)]
    assert "No coreference clusters in this document" in markup and "Alice" in markup
    doc.spans["coref_clusters_1"] = [doc[0:1], doc[1:2]]
    assert "No coreference clusters" not in clusters_html(doc, page=page)
