"""Why `spacy train`'s dev score and `tune-link-threshold`'s differ for the
same s2e checkpoint: one pipeline's CoNLL F1 (the project's scorer, the
component's own link threshold) on dev Docs under three inputs, side by side:

- spaCy's tokens of the raw text, no speakers: what `spacy train` evaluates
  (spacy.Corpus.v1 makes each predicted Doc with `nlp.make_doc(text)`);
- the gold tokens without speakers;
- the gold tokens with their speakers: what `tune-link-threshold` and the
  project's `predict` score.

    python benchmarks/eval_conditions.py MODEL DEV.spacy
"""

import argparse

import spacy
from spacy.training import Example

from _common import quiet
from spacy_memcoref.corpora.docbin import read_docbin
from spacy_memcoref.doc_helpers.clusters import clear_clusters
from spacy_memcoref.pipeline.coref_component import coref_components
from spacy_memcoref.scoring.spacy_scorer import score_coref_examples


def without(doc, prefix: str, speakers: bool):
    """A copy of a gold Doc without its clusters (and its speakers unless asked)."""
    doc = doc.copy()
    clear_clusters(doc, prefix)
    if not speakers and "speakers" in doc.spans:
        del doc.spans["speakers"]
    return doc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("dev")
    args = parser.parse_args()
    quiet()
    nlp = spacy.load(args.model)
    _, pipe = coref_components(nlp)[0]
    refs = read_docbin(args.dev, nlp.vocab)
    conditions = {
        "spaCy tokens, no speakers (spacy train)": [Example(nlp.make_doc(r.text), r) for r in refs],
        "gold tokens, no speakers": [Example(without(r, pipe.prefix, False), r) for r in refs],
        "gold tokens, speakers (tune, predict)": [Example(without(r, pipe.prefix, True), r) for r in refs],
    }
    for label, examples in conditions.items():
        for eg in examples:
            pipe(eg.predicted)
        s = score_coref_examples(examples, span_cluster_prefix=pipe.prefix)
        print(
            f"{label:42s} CoNLL {100 * s['coref_conll_f']:.2f}  MUC {100 * s['coref_muc_f']:.2f}"
            f"  B3 {100 * s['coref_b3_f']:.2f}  CEAFe {100 * s['coref_ceafe_f']:.2f}"
            f"  mentions R/P {100 * s['coref_mentions_r']:.1f}/{100 * s['coref_mentions_p']:.1f}",
            flush=True,
        )
    retokenized = conditions["spaCy tokens, no speakers (spacy train)"]
    differ = sum([t.text for t in eg.predicted] != [t.text for t in eg.reference] for eg in retokenized)
    n_speakers = sum(bool(r.spans.get("speakers")) for r in refs)
    print(f"Docs whose spaCy tokens differ from the gold tokens: {differ} of {len(refs)}; with speakers: {n_speakers}")


if __name__ == "__main__":
    main()
