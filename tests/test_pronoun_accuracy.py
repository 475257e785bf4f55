"""Pronoun accuracy (scoring/pronouns.py) against counts worked out by hand,
and the everyday-text set (tests/data/everyday): its CoNLL file is the one
its source builds, and the shipped offline model keeps its measured level
with no rule broken."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example

from spacy_memcoref.scoring.pronouns import pronoun_outcomes, score_pronouns

REPO = Path(__file__).resolve().parents[1]
# the default model measured 64.8% (259 of 400) when it shipped, 76.1% (337
# of 443) with the speaker rules of 2026-12-04, 75.2% (333) with the gender
# mirror of 2026-12-06, 78.6% (348) with the conjunct_names and they rules
# and the set's appositions as OntoGUM marks them (the same day), 81.3% (360)
# with the possessor, gendered_nouns, object and chat_names rules (session
# 36), 83.1% (368) with session 39's, 84.7% (375) with quote_speaker
# (session 40), 85.8% (380, bfloat16) with speaker_i (session 41), 86.0%
# (381) re-stored with GAP's rows half way back (session 43); issue
# 60's goal is 90%, which it does not reach
DEFAULT_EVERYDAY_FLOOR = 0.85
EVERYDAY = REPO / "tests" / "data" / "everyday"


def _doc(vocab, words, clusters):
    doc = Doc(vocab, words=words)
    for i, cluster in enumerate(clusters, start=1):
        doc.spans[f"coref_clusters_{i}"] = [doc[s:e] for s, e in cluster]
    return doc


def test_pronoun_accuracy_counts_by_hand():
    vocab = spacy.blank("en").vocab
    words = "Tom met Ann . He said she and they left . It rained .".split()
    gold = [[(0, 1), (4, 5)], [(2, 3), (6, 7)]]  # Tom-He, Ann-she; "they", "It": in no gold cluster
    ref = _doc(vocab, words, gold)
    cases = {
        "right": ([[(0, 1), (4, 5)], [(2, 3), (6, 7)]], (2, 0, 0)),
        # "she" with Tom and He: another entity; "He" too
        "merged": ([[(0, 1), (4, 5), (6, 7)]], (0, 0, 2)),
        # "she" alone with "they" (no gold mention): its antecedent is missed; He right
        "missed": ([[(0, 1), (4, 5)], [(6, 7), (8, 9)]], (1, 1, 0)),
        "nothing": ([], (0, 2, 0)),
    }
    for name, (predicted, (correct, missed, mixed)) in cases.items():
        score = score_pronouns([Example(_doc(vocab, words, predicted), ref)])
        assert (score.total, score.correct, score.missed, score.mixed) == (2, correct, missed, mixed), name
        assert score.accuracy == correct / 2
    assert score_pronouns([Example(_doc(vocab, words, gold), ref)]).by_word == {"he": [1, 1], "she": [1, 1]}
    # each pronoun's outcome, with what its two clusters hold (benchmarks/everyday.py --wrong lists them)
    merged = [
        (o.span, o.outcome, o.gold, o.predicted)
        for o in pronoun_outcomes([Example(_doc(vocab, words, cases["merged"][0]), ref)])
    ]
    assert merged == [((4, 5), "mixed", [(0, 1)], [(0, 1), (6, 7)]), ((6, 7), "mixed", [(2, 3)], [(0, 1), (4, 5)])]
    with pytest.raises(ValueError, match="reference's tokens"):
        score_pronouns([Example(_doc(vocab, words[:-1], []), ref)])


@pytest.mark.parametrize("name", ["everyday", "fresh"])
def test_the_everyday_conll_files_are_built_from_their_sources(name):
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "everyday" / "build.py"),
            "--source",
            str(EVERYDAY / f"{name}.txt"),
            "--output",
            str(EVERYDAY / f"{name}.v4_gold_conll"),
            "--check",
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _everyday_module():
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import everyday
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    return everyday


@pytest.mark.parametrize("name", ["everyday", "fresh"])
def test_the_texts_as_written_hold_the_conll_files_clusters(name):
    """benchmarks/everyday.py --as-written reads the source's plain text (line
    breaks kept) and aligns the gold by characters: text for text, the same
    clusters as the CoNLL file build.py writes, mention by mention."""
    from spacy_memcoref.corpora.conll import read_conll_docs
    from spacy_memcoref.doc_helpers.clusters import numbered_clusters

    vocab = spacy.blank("en").vocab
    written = _everyday_module().written_refs(EVERYDAY / f"{name}.txt", vocab)
    conll = list(read_conll_docs(EVERYDAY / f"{name}.v4_gold_conll", vocab))
    assert [d.user_data["doc_id"] for d in written] == [d.user_data["doc_id"] for d in conll]

    def clusters(doc):
        def words(span):
            return " ".join(t.text for t in span if not t.is_space)

        return sorted(sorted(words(s) for s in group) for _, group in numbered_clusters(doc))

    assert any("\n" in d.text for d in written)  # the line breaks are kept
    for a, b in zip(written, conll):
        assert [t.text for t in a if not t.is_space] == [t.text for t in b], a.user_data["doc_id"]
        assert clusters(a) == clusters(b), a.user_data["doc_id"]


def test_a_mention_off_token_boundaries_names_its_line(tmp_path):
    source = tmp_path / "texts.txt"
    source.write_text("# id: split\n# kind: fiction\n[Ann|a] met [Bo|b]b.\n[She|a] waved to [him|b].\n")
    with pytest.raises(SystemExit, match=r"texts.txt:3 \(text 'split'\): mention 'Bo' is not on token boundaries"):
        _everyday_module().written_refs(source, spacy.blank("en").vocab)
    source.write_text("# id: open\n# kind: fiction\n[Ann met Bo.\n")
    with pytest.raises(SystemExit, match=r"texts.txt:3 \(text 'open'\): column 1: '\[' is never closed"):
        _everyday_module().written_refs(source, spacy.blank("en").vocab)


def _on_the_everyday_set(nlp):
    """(pronoun score, rule breaks summed) of a pipeline on the 52 texts, as
    benchmarks/everyday.py scores them."""
    everyday = _everyday_module()
    from spacy_memcoref.corpora.conll import read_conll_docs
    from spacy_memcoref.decoders.constraints import violations
    from spacy_memcoref.doc_helpers.clusters import numbered_clusters

    refs = list(read_conll_docs(everyday.GOLD, nlp.vocab))
    assert len(refs) >= 40
    examples, _ = everyday.evaluate(nlp, refs)
    broken = {}
    for eg in examples:
        clusters = [[(s.start, s.end - 1) for s in group] for _, group in numbered_clusters(eg.predicted)]
        for key, n in violations(eg.predicted, clusters).items():
            broken[key] = broken.get(key, 0) + n
    return score_pronouns(examples), broken


def test_the_offline_model_on_the_everyday_set():
    """The shipped s2e-ontogum on the 52 texts: at least the pronoun accuracy
    measured (72.0% with the rules of session 36; 67.5% since the set's
    appositions follow OntoGUM, which this model often splits; 69.8% on the
    set before, with the gender mirror;
    57.2% when the set was made; benchmarks/RESULTS.md; a floor a little
    under it), no mention without a letter or that is a clause, no cluster
    with pronouns that cannot corefer."""
    import spacy_memcoref

    score, broken = _on_the_everyday_set(spacy_memcoref.load("s2e-ontogum"))
    assert score.total >= 300 and score.accuracy >= 0.70, (score.correct, score.total)
    assert broken == {"non_word": 0, "clause": 0, "pronoun_conflict": 0, "symbol_twins": 0, "sentence_people": 0}


def test_the_default_model_on_the_everyday_set(default_model):
    """The default shipped model (s2e-ontogum-base) on the 52 texts: issue 60
    asks for 90% of the pronouns; the floor here is what it measured
    (DEFAULT_EVERYDAY_FLOOR, benchmarks/RESULTS.md "Everyday texts"), and it
    makes none of the links the decoding rules forbid."""
    score, broken = _on_the_everyday_set(default_model)
    assert score.total >= 300 and score.accuracy >= DEFAULT_EVERYDAY_FLOOR, (score.correct, score.total)
    assert broken == {"non_word": 0, "clause": 0, "pronoun_conflict": 0, "symbol_twins": 0, "sentence_people": 0}


# sentences written for this test, of the kind benchmarks/two_person.py
# makes: text with {p} for the pronoun, and the two people's noun phrases;
# each is read with "he" and with "she"
TWO_PEOPLE = [
    ("The mechanic met the nurse in the car park and gave {p} a folder.", ("The mechanic", "the nurse")),
    ("The secretary thanked the builder and handed {p} the keys.", ("The secretary", "the builder")),
    ("The pilot called the receptionist because {p} needed the flight list.", ("The pilot", "the receptionist")),
    ("The housekeeper paid the electrician after {p} had fixed the lights.", ("The housekeeper", "the electrician")),
]


def test_the_default_model_decides_he_and_she_alike(default_model):
    """The default ships with the gender mirror: a sentence about two people
    and its twin with the other pronoun get the same antecedent, one of the
    two people, whichever of them a stereotype would give which gender
    (without the mirror it followed the stereotype: benchmarks/RESULTS.md
    "The gender mirror"; which one is right is the benchmark's to count)."""
    from spacy_memcoref.doc_helpers.clusters import numbered_clusters

    assert default_model.get_pipe("memcoref").gender_mirror is True

    def antecedent(text: str, pronoun: str) -> set:
        doc = default_model(text)
        at = re.search(rf"\b{pronoun}\b", text).start()
        for _, group in numbered_clusters(doc):
            if any(m.start_char == at for m in group):
                return {m.text for m in group if m.start_char != at}
        return set()

    for template, people in TWO_PEOPLE:
        objective = "gave {p}" in template or "handed {p}" in template
        he, she = ("him", "her") if objective else ("he", "she")
        with_he = antecedent(template.format(p=he), he)
        assert with_he == antecedent(template.format(p=she), she), template
        assert with_he in ({people[0]}, {people[1]}), (template, with_he)
