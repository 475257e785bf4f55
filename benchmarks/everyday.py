"""The shipped models (or any pipeline) on the everyday-text set
(tests/data/everyday: 52 short texts written for the project, gold
clusters): CoNLL F1 by the project's scorer, pronoun accuracy
(spacy_memcoref/scoring/pronouns.py) overall and by kind of text, and the
decoding-rule breaks left (none by construction), side by side.

Each text runs on its gold tokens (spaCy's English tokenizer made them; the
CoNLL form keeps no line breaks and puts a space between tokens), with its
speakers, without the gold sentence boundaries (the component finds its
own, as on a user's text).

    python benchmarks/everyday.py s2e-ontogum petra-gap [PIPELINE_DIR ...] [--wrong]

--wrong lists each model's wrong pronouns after the tables: the text, the
pronoun in its sentence, the mentions of its predicted cluster and of its
gold cluster, for reading by eye.
"""

import argparse
import time
from collections import defaultdict
from pathlib import Path

import spacy
from spacy.training import Example

from _common import machine_line, quiet, set_threads, table
from spacy_memcoref.corpora.conll import read_conll_docs
from spacy_memcoref.decoders.constraints import violations
from spacy_memcoref.doc_helpers.clusters import numbered_clusters
from spacy_memcoref.doc_helpers.gold import copy_speakers
from spacy_memcoref.scoring.pronouns import PronounScore, pronoun_outcomes, score_pronouns
from spacy_memcoref.scoring.spacy_scorer import score_coref_examples

GOLD = Path(__file__).resolve().parents[1] / "tests" / "data" / "everyday" / "everyday.v4_gold_conll"


def kind_of(doc_id: str) -> str:
    """The kind of a text, from its id's prefix (bio_, news_, dlg_, ...)."""
    return doc_id.split("/")[-1].split("_")[0]


def load(name: str):
    """A pipeline folder, a shipped model's name or its stored folder (loading's one rule)."""
    from spacy_memcoref.loading import load_pipeline

    return load_pipeline(name)


def evaluate(nlp, refs):
    """(examples, seconds): each gold Doc's text run through the pipeline on
    the gold words (spaces as in the text)."""
    from spacy.tokens import Doc

    started = time.perf_counter()
    examples = []
    for ref in refs:
        eg = Example(Doc(nlp.vocab, words=[t.text for t in ref], spaces=[bool(t.whitespace_) for t in ref]), ref)
        copy_speakers(eg)
        examples.append(Example(nlp(eg.predicted), ref))
    return examples, time.perf_counter() - started


def describe_wrong(found) -> str:
    """A wrong pronoun in a few lines: where, its sentence with the pronoun
    marked, what its predicted cluster holds and what its gold cluster holds."""
    doc = found.example.reference
    start, end = found.span
    sentence = doc[start].sent if doc.has_annotation("SENT_START") else doc[max(0, start - 12) : end + 12]
    words = [f"[{t.text}]" if t.i == start else t.text for t in sentence]

    def texts(spans):
        return " | ".join(doc[a:b].text for a, b in spans) or "-"

    return (
        f"{doc.user_data.get('doc_id', '')} ({found.outcome}): {' '.join(words)}\n"
        f"    predicted with: {texts(found.predicted)}\n    gold with: {texts(found.gold)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--gold", default=str(GOLD))
    parser.add_argument("--wrong", action="store_true", help="list each model's wrong pronouns")
    args = parser.parse_args()
    quiet()
    threads = set_threads(None)
    print(machine_line(threads))
    vocab = spacy.blank("en").vocab
    refs = list(read_conll_docs(args.gold, vocab))
    rows, kind_rows, wrong = [], [], {}
    kinds = sorted({kind_of(r.user_data.get("doc_id", "")) for r in refs})
    for name in args.models:
        nlp = load(name)
        examples, seconds = evaluate(nlp, refs)
        wrong[name] = [found for found in pronoun_outcomes(examples) if found.outcome != "correct"]
        scores = score_coref_examples(examples)
        pronouns = score_pronouns(examples)
        broken = defaultdict(int)
        for eg in examples:
            clusters = [[(s.start, s.end - 1) for s in group] for _, group in numbered_clusters(eg.predicted)]
            for key, n in violations(eg.predicted, clusters).items():
                broken[key] += n
        rows.append(
            [
                name,
                f"{100 * scores['coref_conll_f']:.1f}",
                f"{100 * pronouns.accuracy:.1f}",
                f"{pronouns.correct} / {pronouns.total}",
                pronouns.mixed,
                pronouns.missed,
                broken["non_word"],
                broken["pronoun_conflict"],
                f"{seconds:.1f}",
            ]
        )
        by_kind = {kind: PronounScore() for kind in kinds}
        for eg in examples:
            by_kind[kind_of(eg.reference.user_data.get("doc_id", ""))].add(score_pronouns([eg]))
        kind_rows.append([name] + [f"{100 * by_kind[k].accuracy:.0f} ({by_kind[k].total})" for k in kinds])
    print(f"{len(refs)} texts, {sum(len(r) for r in refs)} tokens ({args.gold})")
    print(
        table(
            [
                "model",
                "CoNLL F1",
                "pronoun accuracy",
                "right / pronouns",
                "with another entity",
                "antecedent missed",
                "non-word mentions",
                "clusters w/ pronoun conflict",
                "seconds",
            ],
            rows,
        )
    )
    print()
    print("Pronoun accuracy by kind of text (pronouns):")
    print(table(["model"] + kinds, kind_rows))
    if args.wrong:
        for name, found in wrong.items():
            print(f"\nWrong pronouns of {name} ({len(found)}):")
            for item in found:
                print(describe_wrong(item))


if __name__ == "__main__":
    main()
