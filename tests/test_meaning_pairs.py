"""scripts/build_meaning_pairs.py: training sentences where meaning says
who the pronoun is. Each has the one gold cluster its twin's clause gives,
and none shares a role, a verb or a clause with benchmarks/two_person.py,
which evaluates."""

import importlib.util
import re
import sys
from pathlib import Path

import spacy
from spacy.tokens import DocBin

REPO = Path(__file__).resolve().parents[1]


def _module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


PAIRS = _module(REPO / "scripts" / "build_meaning_pairs.py", "build_meaning_pairs")
sys.path.insert(0, str(REPO / "benchmarks"))  # two_person.py imports the benchmarks' _common
try:
    TWO_PERSON = _module(REPO / "benchmarks" / "two_person.py", "two_person_for_pairs")
finally:
    sys.path.remove(str(REPO / "benchmarks"))


def test_each_sentence_has_the_cluster_its_clause_gives(tmp_path):
    out = tmp_path / "pairs.spacy"
    assert PAIRS.main([str(out), "--per-template", "2", "--seed", "3"]) == 0
    docs = list(DocBin().from_disk(out).get_docs(spacy.blank("en").vocab))
    assert len(docs) == len(PAIRS.TWINS) * 2 * 2
    firsts = 0
    for doc in docs:
        (cluster,) = [list(group) for key, group in doc.spans.items() if key.startswith("coref_clusters")]
        person, pronoun = cluster
        assert pronoun.text in ("he", "she") and len(pronoun) == 1
        assert person.text.lower().startswith("the ") and person[1].text in PAIRS.ROLES
        firsts += person.start == 0
        # the clause after the pronoun is the twin's that names this person
        clause = doc[pronoun.end : len(doc) - 1].text
        twin = next(t for t in PAIRS.TWINS if clause in (t[1], t[2]))
        assert clause == (twin[1] if person.start == 0 else twin[2]), doc.text
    assert firsts == len(docs) // 2  # the answer's position tells nothing
    # no command writes over its input
    assert PAIRS.main([str(out)]) == 1


def test_meaning_pairs_stay_apart_from_the_evaluation():
    evaluation = TWO_PERSON.MEANING + TWO_PERSON.SYNTAX
    occupations = set(TWO_PERSON.MALE_STEREOTYPED + TWO_PERSON.FEMALE_STEREOTYPED)
    assert not occupations & set(PAIRS.ROLES)
    filler = {"the", "a", "and", "to", "for", "because", "so", "was", "had", "some"}

    def content(text):
        return set(re.findall(r"[a-z]+", re.sub(r"\{\w\}", " ", text))) - filler

    evaluated = set().union(*(content(template) for template, _, _ in evaluation))
    for verb, first, second in PAIRS.TWINS:
        assert not content(verb) & evaluated, verb
    # no evaluated clause is a training clause
    evaluated_clauses = {template.split("{p} ")[-1].rstrip(".") for template, _, _ in TWO_PERSON.MEANING}
    trained = {clause for _, first, second in PAIRS.TWINS for clause in (first, second)}
    assert not evaluated_clauses & trained
