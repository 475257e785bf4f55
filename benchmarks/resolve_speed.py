"""How long `spacy_memcoref.resolve` takes on long documents: a document of
N tokens (LitBank text repeated, or the filler text without ../shared) with
clusters of names and pronouns, M mentions in all; doc._.coref_resolved and
entities() too. Time grows linearly with the text.

    python benchmarks/resolve_speed.py [--tokens 100000] [--mentions 5000]
"""

import argparse
import random
import time

import spacy
from spacy.tokens import Doc

from _common import FALLBACK_TEXT, LITBANK, quiet

PRONOUNS = {"he", "she", "him", "her", "his", "they", "them", "their", "it", "its", "hers", "theirs"}


def long_doc(nlp, n_tokens: int) -> Doc:
    files = sorted(LITBANK.glob("*.conll")) if LITBANK.exists() else []
    words = []
    if files:
        for line in files[0].read_text(encoding="utf8").splitlines():
            cols = line.split("\t")
            if len(cols) > 3:  # CoNLL-2012: the word is column 4
                words.append(cols[3])
    else:
        words = FALLBACK_TEXT.split()
    words = (words * (n_tokens // len(words) + 1))[:n_tokens]
    return Doc(nlp.vocab, words=words)


def add_clusters(doc: Doc, n_mentions: int, seed: int = 0) -> int:
    rng = random.Random(seed)
    pronouns = [t.i for t in doc if t.lower_ in PRONOUNS]
    names = [t.i for t in doc if t.is_title and t.lower_ not in PRONOUNS and t.i > 0]
    rng.shuffle(pronouns)
    n_clusters = max(1, n_mentions // 50)
    used = 0
    for k in range(n_clusters):
        mentions = [doc[i : i + 1] for i in pronouns[k::n_clusters][:49]]
        mentions.append(doc[names[k % len(names)] : names[k % len(names)] + 1])
        doc.spans[f"coref_clusters_{k + 1}"] = mentions
        used += len(mentions)
    return used


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=100_000)
    parser.add_argument("--mentions", type=int, default=5_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    quiet()
    from spacy_memcoref import entities, resolve

    nlp = spacy.blank("en")
    print(f"{'tokens':>8} {'mentions':>8} {'edits':>6} {'resolve s':>10} {'entities s':>10} {'s / 100k tokens':>15}")
    for n_tokens in (args.tokens // 10, args.tokens // 2, args.tokens):
        doc = long_doc(nlp, n_tokens)
        n_mentions = add_clusters(doc, max(1, args.mentions * n_tokens // args.tokens))
        best = best_entities = float("inf")
        for _ in range(args.repeats):
            start = time.perf_counter()
            result = resolve(doc)
            best = min(best, time.perf_counter() - start)
            start = time.perf_counter()
            entities(doc)
            best_entities = min(best_entities, time.perf_counter() - start)
        assert doc._.coref_resolved == result.text
        print(
            f"{n_tokens:>8} {n_mentions:>8} {len(result.edits):>6} {best:>10.3f} {best_entities:>10.3f} {best * 100_000 / n_tokens:>15.3f}"
        )


if __name__ == "__main__":
    main()
