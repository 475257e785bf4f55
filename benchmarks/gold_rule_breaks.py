"""How often gold clusters break a set of decoding rules
(spacy_memcoref/decoders/constraints.py): a rule that breaks many gold
clusters would refuse links the annotators made. Each gold cluster whose
mentions' features conflict under the rules is counted, the first few
listed.

    python benchmarks/gold_rule_breaks.py pronouns,gendered_nouns,name_gender ONTOGUM/dev/*.gold_conll --name dev
"""

import argparse

import spacy

from spacy_memcoref.corpora.conll import read_conll_docs
from spacy_memcoref.decoders.constraints import ALL_RULES, DocRules, conflict
from spacy_memcoref.doc_helpers.clusters import numbered_clusters


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rules", help=f"comma-separated, of: {', '.join(sorted(ALL_RULES))}")
    parser.add_argument("files", nargs="+", help="CoNLL-2012 files with gold clusters")
    parser.add_argument("--name", default="gold", help="a name for the files in the output")
    parser.add_argument("--show", type=int, default=12, help="list at most this many broken clusters")
    args = parser.parse_args()
    rules_on = frozenset(r for r in args.rules.split(",") if r)
    unknown = rules_on - ALL_RULES
    if unknown:
        parser.error(f"unknown rules {sorted(unknown)}; the rules are {sorted(ALL_RULES)}")
    vocab = spacy.blank("en").vocab
    clusters = broken = 0
    for path in args.files:
        for doc in read_conll_docs(path, vocab):
            rules = DocRules(doc, rules_on)
            for _, group in numbered_clusters(doc):
                clusters += 1
                features = set().union(*(rules.features((m.start, m.end - 1)) for m in group))
                if conflict(features):
                    broken += 1
                    if broken <= args.show:
                        print(f"  {path}: {[m.text for m in group][:12]}")
    print(f"{args.name}: {broken} of {clusters} gold clusters break {sorted(rules_on)}")


if __name__ == "__main__":
    main()
