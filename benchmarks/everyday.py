"""The shipped models (or any pipeline) on the everyday-text set
(tests/data/everyday: 52 short texts written for the project, gold
clusters): CoNLL F1 by the project's scorer, pronoun accuracy
(spacy_memcoref/scoring/pronouns.py) overall and by kind of text, and the
decoding-rule breaks left (none by construction), side by side.

Each text runs on its gold tokens (spaCy's English tokenizer made them; the
CoNLL form keeps no line breaks and puts a space between tokens), with its
speakers, without the gold sentence boundaries (the component finds its
own, as on a user's text).

--as-written runs each text as its source file writes it instead
(tests/data/everyday/everyday.txt, or the .txt beside --gold): line breaks
kept, no speakers given (the component finds a chat's turns from its
"Name:" lines, a letter's greeting and signature from its first and last
lines), the gold mentions aligned by their characters. That is the text a
user pastes; the CoNLL form is the figure the tests and RESULTS.md's tables
give unless they say otherwise.

    python benchmarks/everyday.py s2e-ontogum petra-gap [PIPELINE_DIR ...] [--wrong] [--as-written]

--wrong lists each model's wrong pronouns after the tables: the text, the
pronoun in its sentence, the mentions of its predicted cluster and of its
gold cluster, for reading by eye.
"""

import argparse
import importlib.util
import time
from collections import defaultdict
from pathlib import Path

import spacy
from spacy.tokens import SpanGroup
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


def written_refs(source: Path, vocab):
    """The texts of a bracket-markup source (benchmarks/everyday/build.py
    reads it) as gold Docs of their plain text, line breaks kept: tokens by
    spaCy's English tokenizer, each entity of two mentions or more a
    coref_clusters_N group, doc_id as in the CoNLL file."""
    spec = importlib.util.spec_from_file_location("everyday_build", Path(__file__).parent / "everyday" / "build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    tokenizer = spacy.blank("en", vocab=vocab).tokenizer
    refs = []
    try:
        texts = build.read_source(source)
    except build.BuildError as e:  # names the file, line and text
        raise SystemExit(str(e)) from None
    for text in texts:
        doc = tokenizer(text.plain)
        entities = {}
        for m in text.mentions:
            span = doc.char_span(m.start, m.end)
            if span is None:
                raise SystemExit(f"{source}:{m.line} (text {text.id!r}): mention {m.text!r} is not on token boundaries")
            entities.setdefault(m.label, []).append(span)
        clusters = sorted((sorted(spans) for spans in entities.values() if len(spans) > 1), key=lambda g: g[0].start)
        for n, spans in enumerate(clusters, 1):
            doc.spans[f"coref_clusters_{n}"] = SpanGroup(doc, name=f"coref_clusters_{n}", spans=spans)
        doc.user_data["doc_id"] = build.DOC_PREFIX + text.id
        refs.append(doc)
    return refs


def evaluate_written(nlp, refs):
    """(examples, seconds): each text run through the pipeline as a user's
    text is, its speakers and sentences its own."""
    started = time.perf_counter()
    examples = [Example(nlp(ref.text), ref) for ref in refs]
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
    parser.add_argument(
        "--as-written",
        action="store_true",
        help="run the texts of the source .txt beside --gold, line breaks kept and no speakers given",
    )
    args = parser.parse_args()
    quiet()
    threads = set_threads(None)
    print(machine_line(threads))
    vocab = spacy.blank("en").vocab
    if args.as_written:
        source = Path(args.gold).with_name(Path(args.gold).name.split(".")[0] + ".txt")
        refs = written_refs(source, vocab)
        run = evaluate_written
    else:
        refs = list(read_conll_docs(args.gold, vocab))
        run = evaluate
    rows, kind_rows, wrong = [], [], {}
    kinds = sorted({kind_of(r.user_data.get("doc_id", "")) for r in refs})
    for name in args.models:
        nlp = load(name)
        examples, seconds = run(nlp, refs)
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
    where = f"{source}, as written" if args.as_written else args.gold
    print(f"{len(refs)} texts, {sum(1 for r in refs for t in r if not t.is_space)} tokens ({where})")
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
