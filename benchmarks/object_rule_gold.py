"""Where the OBJECT decoding rule (spacy_memcoref/decoders/constraints.py)
applies among gold mentions, and how often the gold breaks it: each pair of
an object pronoun and a mention the rule says is its verb's subject (ending
just before the verb: "end"; opening a coordinated verb's clause: "start"),
counted, and listed where the two share a gold cluster.

    python benchmarks/object_rule_gold.py ONTOGUM/train/*.gold_conll --name train
"""

import argparse
import collections

import spacy

from spacy_memcoref.corpora.conll import read_conll_docs
from spacy_memcoref.decoders.constraints import BINDER_AT, BOUND_AT, DocRules
from spacy_memcoref.doc_helpers.clusters import numbered_clusters


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", help="CoNLL-2012 files with gold clusters")
    parser.add_argument("--name", default="gold", help="a name for the files in the output")
    args = parser.parse_args()
    vocab = spacy.blank("en").vocab
    pairs: collections.Counter = collections.Counter()
    coreferent: collections.Counter = collections.Counter()
    for path in args.files:
        for doc in read_conll_docs(path, vocab):
            rules = DocRules(doc)
            cluster_of = {(m.start, m.end - 1): cid for cid, group in numbered_clusters(doc) for m in group}
            features = {mention: rules.features(mention) for mention in cluster_of}
            for pronoun, own in features.items():
                bound = {f[len(BOUND_AT) :] for f in own if f.startswith(BOUND_AT)}
                for other, theirs in features.items() if bound else ():
                    for f in theirs:
                        if other != pronoun and f.startswith(BINDER_AT) and f[len(BINDER_AT) :] in bound:
                            kind = "start" if f[len(BINDER_AT)] == "s" else "end"
                            pairs[kind] += 1
                            if cluster_of[other] == cluster_of[pronoun]:
                                coreferent[kind] += 1
                                context = doc[max(0, other[0] - 2) : pronoun[1] + 3].text
                                print(
                                    f"  {path}: {kind}: {context!r}: {doc[other[0] : other[1] + 1].text!r} -> {doc[pronoun[0]].text!r}"
                                )
    for kind in ("end", "start"):
        print(f"{args.name}: {kind}: {pairs[kind]} pairs, {coreferent[kind]} coreferent in the gold")


if __name__ == "__main__":
    main()
