"""What reading each text's gender mirror too does (the memcoref
component's `gender_mirror` setting: each Doc is read as it is and with
he <-> she, father <-> mother, John <-> Patricia swapped, and the head decides
by the mean of the two readings' scores), each model without and with it,
side by side in one run:

- OntoGUM dev (or any gold .spacy): CoNLL F1 and pronoun accuracy on the
  gold tokens and speakers, as `tune-link-threshold` scores, all rules;
- the everyday set (tests/data/everyday): CoNLL F1 and pronoun accuracy,
  as benchmarks/everyday.py scores it;
- the two-person sentences of benchmarks/two_person.py: right per cent,
  stereotypical and not, their gap, and the two people merged;
- the seconds each took;
- a PeTra model instead: GAP validation F1 tuned as `tune-gap-threshold`
  tunes it (Platt fit and threshold chosen on the same Docs), masculine,
  feminine and their bias (PeTra's mirror averages the GAP pair's link
  probabilities of the two readings).

    python benchmarks/gender_mirror.py s2e-ontogum-base [MODEL ...] --dev corpus/ontogum/dev.spacy [--per-template 16]
    python benchmarks/gender_mirror.py PETRA_PIPELINE [...] --gap corpus/gap/validation.spacy
"""

import argparse
import time

import everyday
import spacy
import two_person
from _common import machine_line, quiet, set_threads, table
from spacy.training import Example

from spacy_memcoref.corpora.conll import read_conll_docs
from spacy_memcoref.corpora.docbin import read_docbin
from spacy_memcoref.doc_helpers.clusters import clear_clusters
from spacy_memcoref.loading import load_pipeline
from spacy_memcoref.pipeline.coref_component import coref_components, coref_kind
from spacy_memcoref.scoring.pronouns import score_pronouns
from spacy_memcoref.scoring.spacy_scorer import score_coref_examples


def dev_scores(nlp, refs):
    """(CoNLL F1, pronoun accuracy, seconds) of the pipeline's coreference
    component on copies of the gold Docs (gold tokens, sentences, speakers)."""
    _, pipe = coref_components(nlp)[0]
    examples = []
    started = time.perf_counter()
    for ref in refs:
        doc = ref.copy()
        clear_clusters(doc, pipe.prefix)
        pipe(doc)
        examples.append(Example(doc, ref))
    seconds = time.perf_counter() - started
    scores = score_coref_examples(examples, span_cluster_prefix=pipe.prefix)
    return 100 * scores["coref_conll_f"], 100 * score_pronouns(examples, pipe.prefix).accuracy, seconds


def gap_scores(nlp, gap_path: str):
    """(tuned F1, threshold, masculine F1, feminine F1, bias, seconds) of the
    pipeline's PeTra component on GAP Docs (gap_ensemble's calibration and
    threshold choice, which are tune-gap-threshold's)."""
    from gap_ensemble import calibrated, tuned_scores

    from spacy_memcoref.tuning.gap import gap_gold_and_probabilities
    from spacy_memcoref.tuning.run import annotate_docs, petra_component

    name, pipe = petra_component(nlp, None)
    started = time.perf_counter()
    annotated = annotate_docs(nlp, read_docbin(gap_path, nlp.vocab), 16, pipe.prefix)
    gold, raw = gap_gold_and_probabilities(annotated, source=gap_path, component=name)
    seconds = time.perf_counter() - started
    threshold, s = tuned_scores(gold, calibrated(gold, raw))
    return 100 * s["gap_f"], threshold, 100 * s["gap_f_masc"], 100 * s["gap_f_fem"], s["gap_bias"], seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--dev", help="a gold .spacy file (OntoGUM dev); none: not scored")
    parser.add_argument("--everyday", default=str(everyday.GOLD))
    parser.add_argument("--per-template", type=int, default=16)
    parser.add_argument("--gap", help="GAP validation .spacy, for PeTra models")
    args = parser.parse_args()
    quiet()
    print(machine_line(set_threads(None)))
    vocab = spacy.blank("en").vocab
    dev_refs = read_docbin(args.dev, vocab) if args.dev else []
    everyday_refs = list(read_conll_docs(args.everyday, vocab))
    sentences = list(two_person.items(args.per_template))
    rows, gap_rows = [], []
    for name in args.models:
        nlp = load_pipeline(name)
        _, pipe = coref_components(nlp)[0]
        for mirror in (False, True):
            pipe.gender_mirror = mirror
            row = [name + (" + mirror" if mirror else "")]
            if coref_kind(pipe) == "petra":
                if not args.gap:
                    raise SystemExit(f"{name} is a PeTra model: give --gap GAP_VALIDATION.spacy")
                f1, threshold, masc, fem, bias, seconds = gap_scores(nlp, args.gap)
                gap_rows.append(
                    row
                    + [f"{f1:.1f}", f"{threshold:.2f}", f"{masc:.1f}", f"{fem:.1f}", f"{bias:.2f}", f"{seconds:.0f}"]
                )
                continue
            if dev_refs:
                f1, pronouns, seconds = dev_scores(nlp, dev_refs)
                row += [f"{f1:.2f}", f"{pronouns:.1f}", f"{seconds:.0f}"]
            examples, seconds = everyday.evaluate(nlp, everyday_refs)
            scores = score_coref_examples(examples)
            row += [
                f"{100 * scores['coref_conll_f']:.1f}",
                f"{100 * score_pronouns(examples).accuracy:.1f}",
                f"{seconds:.0f}",
            ]
            rows.append(row + two_person.half_cells(two_person.evaluate(nlp, sentences)))
    headers = ["model"]
    if dev_refs:
        headers += ["dev CoNLL F1", "dev pronouns", "dev s"]
    headers += ["everyday CoNLL F1", "everyday pronouns", "everyday s"]
    headers += [f"{h} {c}" for h in ("syntax", "meaning") for c in ("pro", "anti", "mean", "gap", "merged")]
    print(
        f"dev: {len(dev_refs)} docs; everyday: {len(everyday_refs)} texts; two people: {len(sentences)} sentences "
        f"({args.per_template} occupation pairs a template)"
    )
    if rows:
        print(table(headers, rows))
    if gap_rows:
        print(f"GAP: {args.gap}")
        print(table(["model", "tuned GAP F1", "threshold", "M F1", "F F1", "bias F/M", "seconds"], gap_rows))


if __name__ == "__main__":
    main()
