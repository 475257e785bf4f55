"""Pipelines saved by earlier versions (tests/data/saved_pipelines/) load
and predict exactly what they predicted when they were saved."""

import json
from pathlib import Path

import numpy
import pytest
import spacy

from spacy_memcoref.corpora.gap import read_gap

from conftest import DATA, GAP_SAMPLE

SAVED = DATA / "saved_pipelines"
VERSIONS = sorted(p.name for p in SAVED.iterdir() if (p / "expected.json").exists())
TEXTS = [
    "Alice met Bob . She said he was late .",
    "John saw Mary and waved to her . He smiled at her .",
    "The company said its profits rose . It was happy .",
]


def _check(nlp, inputs, expected):
    """The model predicts what it did: its own decoding of each prediction
    (without the Doc) gives the saved clusters. The decoding rules added
    since (decoders/constraints.py, 2026-12-01) apply on top of it: where
    they leave the clusters as saved, the resolved text is the saved one
    too, and either way the Doc breaks no rule."""
    from spacy_memcoref import resolve
    from spacy_memcoref.decoders.constraints import violations
    from spacy_memcoref.pipeline.coref_component import coref_components

    _, pipe = coref_components(nlp)[0]
    docs = list(nlp.pipe(inputs))
    assert len(docs) == len(expected)
    for doc, want in zip(docs, expected):
        own = pipe.decoder.clusters(pipe.predict([doc.copy()])[0])
        assert sorted(sorted([s, e + 1] for s, e in cluster) for cluster in own) == want["clusters"]
        clusters = sorted(
            sorted([s.start, s.end] for s in group)
            for key, group in doc.spans.items()
            if key.startswith("coref_clusters")
        )
        if clusters == want["clusters"]:
            assert resolve(doc).text == want["resolved"]
        spans = [[(s, e - 1) for s, e in cluster] for cluster in clusters]
        assert not any(violations(doc, spans).values())
        if "memory_log" in want:
            for key, values in want["memory_log"].items():
                numpy.testing.assert_allclose(numpy.asarray(doc._.memory_log[key]), numpy.asarray(values), atol=1e-6)
        if "gap_probs" in want:
            got = doc.user_data["gap_probs"]
            assert set(got) == set(want["gap_probs"])
            for key, value in want["gap_probs"].items():
                assert got[key] == pytest.approx(value, abs=1e-6), key


@pytest.mark.parametrize("version", VERSIONS)
def test_a_saved_s2e_pipeline_predicts_as_it_did(version):
    expected = json.loads((SAVED / version / "expected.json").read_text(encoding="utf8"))
    nlp = spacy.load(SAVED / version / "s2e")
    _check(nlp, TEXTS, expected["s2e"])


@pytest.mark.parametrize("version", VERSIONS)
def test_a_saved_petra_pipeline_predicts_as_it_did(version):
    expected = json.loads((SAVED / version / "expected.json").read_text(encoding="utf8"))
    nlp = spacy.load(SAVED / version / "petra")
    _check(nlp, TEXTS, expected["petra"])
    _check(nlp, list(read_gap(GAP_SAMPLE, nlp))[:4], expected["petra_gap"])


def test_there_is_a_saved_version():
    assert "v0.1" in VERSIONS, f"no saved pipelines in {SAVED}"
    assert Path(SAVED / "v0.1" / "s2e" / "config.cfg").exists()


def test_a_saved_s2e_pipeline_keeps_its_tuned_threshold_in_the_model_block_and_tuning_moves_it(tmp_path):
    """v0.1 kept the tuned link threshold in the model block; today's
    component reads it there while its own is null, and tuning again stores
    the new one as the component's setting, which wins."""
    from spacy_memcoref.tuning.save import save_with_settings

    nlp = spacy.load(SAVED / "v0.1" / "s2e")
    assert nlp.config["components"]["memcoref"]["model"]["link_threshold"] == -0.5
    assert nlp.config["components"]["memcoref"]["link_threshold"] is None
    assert nlp.get_pipe("memcoref").decoder.link_threshold == -0.5
    save_with_settings(nlp, "memcoref", {"link_threshold": 1000.0}, tmp_path / "retuned")
    again = spacy.load(tmp_path / "retuned")
    assert again.get_pipe("memcoref").decoder.link_threshold == 1000.0
    assert all(not key.startswith("coref_clusters") for doc in again.pipe(TEXTS) for key in doc.spans)
