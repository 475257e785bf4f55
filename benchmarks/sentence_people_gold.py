"""Where the SENTENCE_PEOPLE decoding rule (spacy_memcoref/decoders/constraints.py)
applies among gold mentions, and how often the gold breaks it: every pair of
description mentions ("the ...", "a ...") of one sentence, counted as the rule
refuses it or lets it pass, and listed where the rule refuses a pair the gold
puts in one cluster.

    python benchmarks/sentence_people_gold.py ONTOGUM/train/*.gold_conll --name train
"""

import argparse
import collections

import spacy

from spacy_memcoref.corpora.conll import read_conll_docs
from spacy_memcoref.decoders.constraints import DocRules
from spacy_memcoref.doc_helpers.clusters import numbered_clusters


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", help="CoNLL-2012 files with gold clusters")
    parser.add_argument("--name", default="gold", help="a name for the files in the output")
    parser.add_argument("--show", type=int, default=20, help="list at most this many refused coreferent pairs")
    args = parser.parse_args()
    vocab = spacy.blank("en").vocab
    counts: collections.Counter = collections.Counter()
    shown = 0
    for path in args.files:
        for doc in read_conll_docs(path, vocab):
            rules = DocRules(doc)
            cluster_of = {(m.start, m.end - 1): cid for cid, group in numbered_clusters(doc) for m in group}
            described = sorted(m for m in cluster_of if rules.description(m) is not None)
            for i, a in enumerate(described):
                for b in described[i + 1 :]:
                    if rules.description(a)[0] != rules.description(b)[0]:  # type: ignore[index]
                        continue
                    same = cluster_of[a] == cluster_of[b]
                    refused = rules.distinct_in_sentence(a, b)
                    counts["refused" if refused else "passed", "coreferent" if same else "apart"] += 1
                    if refused and same and shown < args.show:
                        shown += 1
                        print(f"  {path}: {doc[a[0] : b[1] + 1].text!r}")
    for verdict in ("refused", "passed"):
        print(
            f"{args.name}: {verdict}: {counts[verdict, 'coreferent']} coreferent pairs,"
            f" {counts[verdict, 'apart']} pairs of two entities"
        )


if __name__ == "__main__":
    main()
