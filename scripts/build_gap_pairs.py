"""Build GAP-form training rows (a TSV `convert gap` reads) from documents
with full coreference clusters: OntoGUM's training DocBin or LitBank's
CoNLL files. More pronoun-name pairs for PeTra's GAP preset, written from
other corpora than GAP's Wikipedia (issue: what else moves the features).

    python scripts/build_gap_pairs.py corpus/ontogum/train.spacy corpus/gap_pairs/ontogum.tsv \
        --id-prefix ontogum --exclude ../gap/gap-validation.tsv
    python -m spacy_memcoref convert gap corpus/gap_pairs/ontogum.tsv corpus/gap_pairs/ontogum.spacy

A GAP row is a text, a pronoun (he, him, his, she, her, hers) and two names
A and B of the pronoun's gender before it, each labelled coreferent with
the pronoun or not. The rule (each step a function below):

1. People of a gender (`cluster_genders`): a cluster is a person of one
   gender when it holds GAP pronouns of that gender and none of the other.
2. Names (`is_name`): a mention of 1-5 tokens whose words all start with a
   capital letter (name particles such as "de", "van", "of" aside), whose
   first word is not a determiner or a pronoun ("The Doctor", "Her Majesty"
   are not names), a trailing possessive "'s" cut off. With `--candidates
   mentions` (`is_candidate`), any mention of 1-6 tokens with a letter that
   is not one pronoun: "the stranger", "her sister" too, as in the
   two-occupation sentences ("the nurse ... the mechanic ... she"), which
   GAP's names never offer.
3. The text (`window`): the pronoun's sentence and as many whole sentences
   before it as fit in --max-tokens (default 120: GAP's texts are 60-120
   words).
4. The pair (`pair_for`): among the names in the text before the pronoun
   whose cluster is a person of the pronoun's gender, the latest name of
   each entity; the pronoun's own entity (TRUE) and the nearest other
   (FALSE) when its entity is named there, else the two nearest others
   (both FALSE, GAP's "Neither"); A is the earlier of the two in the text.
   A pronoun with fewer than two such entities before it gives no row, nor
   one whose two candidates overlap ("the wife of John", "John").
5. One row a sentence (the first pronoun in it that gives one;
   --rows-per-sentence), so that a passage does not return a dozen times; rows whose text shares an
   8-word run with a text of an --exclude GAP file are left out (GUM's
   biographies and GAP both come from Wikipedia).
6. As many feminine rows as masculine ones (`balanced`; GAP is balanced
   so, and novels and GUM mention men about twice as often): the larger
   side is sampled down, with --seed, in text order (--no-balance keeps
   every row).

The rows hold the source's text: they are built at run time, never
committed.
"""

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

# GAP's pronouns and their genders (scoring.gap_metrics: the official scorer's list)
GAP_PRONOUNS = {
    "he": "masculine",
    "him": "masculine",
    "his": "masculine",
    "she": "feminine",
    "her": "feminine",
    "hers": "feminine",
}
# lower-case words inside a name: "Ludwig van Beethoven", "Duke of York"
NAME_PARTICLES = frozenset(
    {"de", "del", "della", "di", "da", "du", "des", "van", "von", "der", "den", "la", "le", "of"}
)
# a capitalized first word that makes a description, not a name
NOT_NAME_FIRST = frozenset(
    {
        "the", "a", "an", "this", "that", "these", "those", "his", "her", "their", "our", "my", "your", "its",
        "he", "she", "it", "they", "we", "i", "you", "him", "them", "us", "me", "who", "which", "what", "one",
    }
)  # fmt: skip
TITLES = frozenset({"mr", "mr.", "mrs", "mrs.", "ms", "ms.", "dr", "dr.", "miss", "sir", "lady", "lord"})
POSSESSIVE = frozenset({"'s", "’s", "'"})
# a one-word mention that is no candidate of --candidates mentions
PRONOUN_WORDS = NOT_NAME_FIRST | frozenset(GAP_PRONOUNS)
NGRAM = 8

Mention = Tuple[int, int]  # token start, end (inclusive)


def cluster_genders(words: Sequence[str], clusters: Sequence[Sequence[Mention]]) -> List[Optional[str]]:
    """Each cluster's gender: "masculine" / "feminine" when its one-word
    mentions include GAP pronouns of that gender only, else None."""
    out: List[Optional[str]] = []
    for cluster in clusters:
        found = {GAP_PRONOUNS[words[s].lower()] for s, e in cluster if s == e and words[s].lower() in GAP_PRONOUNS}
        out.append(found.pop() if len(found) == 1 else None)
    return out


def is_name(words: Sequence[str], mention: Mention) -> Optional[Mention]:
    """The mention as a name (its possessive cut off), or None."""
    s, e = mention
    while e > s and words[e] in POSSESSIVE:
        e -= 1
    if e - s + 1 > 5 or words[s].lower() in NOT_NAME_FIRST or words[s].lower() in GAP_PRONOUNS:
        return None
    if words[s].lower() in TITLES and e == s:
        return None  # a title alone ("Sir")
    alpha = [w for w in words[s : e + 1] if any(c.isalpha() for c in w)]
    if not alpha or not alpha[0][0].isupper():
        return None
    if not all(w[0].isupper() or w in NAME_PARTICLES for w in alpha):
        return None
    return s, e


def is_candidate(words: Sequence[str], mention: Mention) -> Optional[Mention]:
    """The mention as a candidate of --candidates mentions (its possessive
    cut off), or None: 1-6 tokens with a letter, not one pronoun."""
    s, e = mention
    while e > s and words[e] in POSSESSIVE:
        e -= 1
    if e - s + 1 > 6 or (s == e and words[s].lower() in PRONOUN_WORDS):
        return None
    if not any(c.isalpha() for w in words[s : e + 1] for c in w):
        return None
    return s, e


def sentences(sent_starts: Sequence[bool]) -> List[Tuple[int, int]]:
    """(start, end exclusive) of each sentence."""
    starts = [i for i, starts_one in enumerate(sent_starts) if starts_one or i == 0]
    return [(a, b) for a, b in zip(starts, starts[1:] + [len(sent_starts)])]


def window(sents: Sequence[Tuple[int, int]], k: int, max_tokens: int) -> Tuple[int, int]:
    """(start, end exclusive) of the text of sentence k and the whole
    sentences before it that fit in max_tokens (sentence k alone when it is
    longer)."""
    start, end = sents[k]
    j = k
    while j > 0 and end - sents[j - 1][0] <= max_tokens:
        j -= 1
        start = sents[j][0]
    return start, end


def pair_for(
    pronoun: int, text_start: int, entity_of_pronoun: int, names: Sequence[Tuple[Mention, int]]
) -> Optional[Tuple[Tuple[Mention, bool], Tuple[Mention, bool]]]:
    """The (A, A-coref), (B, B-coref) of a pronoun at token `pronoun`, from
    the names (mention, entity) of people of its gender (step 4), or None."""
    latest: Dict[int, Mention] = {}
    for mention, entity in names:
        if text_start <= mention[0] and mention[1] < pronoun:
            if entity not in latest or mention[0] > latest[entity][0]:
                latest[entity] = mention
    others = sorted((m for ent, m in latest.items() if ent != entity_of_pronoun), key=lambda m: -m[0])
    if entity_of_pronoun in latest and others:
        chosen = [(latest[entity_of_pronoun], True), (others[0], False)]
    elif len(others) >= 2:
        chosen = [(others[0], False), (others[1], False)]
    else:
        return None
    (first, _), (second, _) = chosen
    if first[0] <= second[1] and second[0] <= first[1]:
        return None
    chosen.sort(key=lambda pair: pair[0][0])
    return chosen[0], chosen[1]


def ngrams(text: str) -> Set[Tuple[str, ...]]:
    words = text.lower().split()
    return {tuple(words[i : i + NGRAM]) for i in range(len(words) - NGRAM + 1)}


def document_rows(
    doc_id: str,
    words: Sequence[str],
    spaces: Sequence[bool],
    sent_starts: Sequence[bool],
    clusters: Sequence[Sequence[Mention]],
    *,
    max_tokens: int,
    per_sentence: int = 1,
    candidates: str = "names",
) -> Iterator[Dict[str, object]]:
    """The GAP rows of one document, as dicts of the TSV's columns;
    candidates: "names" (`is_name`) or "mentions" (`is_candidate`)."""
    as_candidate = {"names": is_name, "mentions": is_candidate}[candidates]
    genders = cluster_genders(words, clusters)
    entity_of: Dict[Mention, int] = {}
    for c, cluster in enumerate(clusters):
        for mention in cluster:
            entity_of.setdefault(mention, c)
    names_by_gender: Dict[str, List[Tuple[Mention, int]]] = {"masculine": [], "feminine": []}
    for c, cluster in enumerate(clusters):
        if genders[c] is None:
            continue
        for mention in cluster:
            name = as_candidate(words, mention)
            if name is not None:
                names_by_gender[genders[c]].append((name, c))
    sents = sentences(sent_starts)
    for k, (s_start, s_end) in enumerate(sents):
        text_start, text_end = window(sents, k, max_tokens)
        given = 0
        for i in range(s_start, s_end):
            gender = GAP_PRONOUNS.get(words[i].lower())
            if gender is None or (i, i) not in entity_of or genders[entity_of[(i, i)]] != gender:
                continue
            pair = pair_for(i, text_start, entity_of[(i, i)], names_by_gender[gender])
            if pair is None or any("\t" in w or "\n" in w for w in words[text_start:text_end]):
                continue  # no pair, or a text a TSV cell cannot hold
            yield _row(doc_id, words, spaces, text_start, text_end, i, pair)
            given += 1
            if given == per_sentence:
                break


def _row(doc_id, words, spaces, text_start, text_end, pronoun, pair) -> Dict[str, object]:
    offsets, pieces, at = {}, [], 0
    for t in range(text_start, text_end):
        offsets[t] = at
        piece = words[t] + (" " if spaces[t] and t < text_end - 1 else "")
        pieces.append(piece)
        at += len(piece)
    text = "".join(pieces)

    def span_text(m: Mention) -> str:
        return text[offsets[m[0]] : offsets[m[1]] + len(words[m[1]])]

    (a, a_coref), (b, b_coref) = pair
    return {
        "Text": text,
        "Pronoun": words[pronoun],
        "Pronoun-offset": offsets[pronoun],
        "A": span_text(a),
        "A-offset": offsets[a[0]],
        "A-coref": a_coref,
        "B": span_text(b),
        "B-offset": offsets[b[0]],
        "B-coref": b_coref,
        "URL": doc_id,
    }


def balanced(rows: List[Dict[str, object]], seed: int) -> List[Dict[str, object]]:
    """Step 6: the rows of the larger gender sampled down to the smaller's
    number, the order of the rows kept."""
    import random

    by_gender: Dict[str, List[int]] = {"masculine": [], "feminine": []}
    for i, row in enumerate(rows):
        by_gender[GAP_PRONOUNS[str(row["Pronoun"]).lower()]].append(i)
    n = min(len(v) for v in by_gender.values())
    rng = random.Random(seed)
    keep = {i for indices in by_gender.values() for i in rng.sample(indices, n)}
    return [row for i, row in enumerate(rows) if i in keep]


def read_documents(path: Path) -> Iterator[Tuple[str, List[str], List[bool], List[bool], List[List[Mention]]]]:
    """(doc_id, words, trailing spaces, sentence starts, clusters) of each
    document of a DocBin (.spacy) or of CoNLL-2012 files (a file or folder)."""
    from spacy.vocab import Vocab

    if path.suffix == ".spacy":
        from spacy_memcoref.corpora.docbin import read_docbin

        docs: Iterable = read_docbin(path, Vocab())
    else:
        from spacy_memcoref.corpora.conll import read_conll_docs

        docs = read_conll_docs(path, Vocab())
    from spacy_memcoref.doc_helpers.clusters import CLUSTER_PREFIX, numbered_clusters

    for n, doc in enumerate(docs):
        clusters = [
            [(span.start, span.end - 1) for span in group] for _, group in numbered_clusters(doc, CLUSTER_PREFIX)
        ]
        doc_id = str(doc.user_data.get("doc_id", f"doc{n}"))
        part = str(doc.user_data.get("part", ""))
        if part not in ("", "0", "000"):
            doc_id = f"{doc_id}-{part}"
        yield (
            doc_id,
            [t.text for t in doc],
            [bool(t.whitespace_) for t in doc],
            [bool(t.is_sent_start) for t in doc],
            clusters,
        )


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("input", type=Path, help="a DocBin with clusters (.spacy) or CoNLL-2012 files (file or folder)")
    p.add_argument("output", type=Path, help="the GAP TSV to write")
    p.add_argument("--id-prefix", default=None, help="rows are PREFIX-1, PREFIX-2, ... (default: the input's name)")
    p.add_argument("--max-tokens", type=int, default=120, help="longest text, tokens (whole sentences)")
    p.add_argument("--exclude", type=Path, action="append", default=[], help="a GAP TSV whose texts no row may overlap")
    p.add_argument("--rows-per-sentence", type=int, default=1, help="rows from one sentence's pronouns, at most")
    p.add_argument("--no-balance", action="store_true", help="keep every row (no step 6)")
    p.add_argument(
        "--candidates",
        choices=("names", "mentions"),
        default="names",
        help="A and B: names only (GAP's kind), or any mention that is not a pronoun (step 2)",
    )
    p.add_argument("--seed", type=int, default=0, help="the sampling of step 6")
    args = p.parse_args(argv)
    from spacy_memcoref.corpora.gap import GAP_COLUMNS, format_gap_label, read_gap_rows
    from spacy_memcoref.errors import DataFormatError
    from spacy_memcoref.util import atomic_output, refuse_overwriting_input

    if not args.input.exists():
        print(f"error: {args.input}: no such file or folder", file=sys.stderr)
        return 1
    if args.max_tokens < 10:
        print(f"error: --max-tokens must be at least 10, got {args.max_tokens}", file=sys.stderr)
        return 2
    prefix = args.id_prefix or args.input.stem
    try:
        refuse_overwriting_input([args.input, *args.exclude], args.output)
        excluded: Set[Tuple[str, ...]] = set()
        for path in args.exclude:
            for row in read_gap_rows(path):
                excluded |= ngrams(row.text)
        rows, left_out, n_docs = [], 0, 0
        for doc_id, words, spaces, sent_starts, clusters in read_documents(args.input):
            n_docs += 1
            for row in document_rows(
                doc_id,
                words,
                spaces,
                sent_starts,
                clusters,
                max_tokens=args.max_tokens,
                per_sentence=args.rows_per_sentence,
                candidates=args.candidates,
            ):
                if excluded and ngrams(str(row["Text"])) & excluded:
                    left_out += 1
                    continue
                rows.append(row)
        found = len(rows)
        if not rows:
            raise DataFormatError(
                args.input, None, "no GAP row: no pronoun has two people of its gender named before it"
            )
        if not args.no_balance:
            rows = balanced(rows, args.seed)
        with atomic_output(args.output) as tmp:
            with open(tmp, "w", encoding="utf8") as f:
                f.write("\t".join(GAP_COLUMNS) + "\n")
                for n, row in enumerate(rows, 1):
                    cells = {"ID": f"{prefix}-{n}", **row}
                    cells = {k: format_gap_label(v) if isinstance(v, bool) else str(v) for k, v in cells.items()}
                    f.write("\t".join(cells[c] for c in GAP_COLUMNS) + "\n")
    except (DataFormatError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    kinds = Counter(("A" if r["A-coref"] else "B" if r["B-coref"] else "Neither") for r in rows)
    genders = Counter(GAP_PRONOUNS[str(r["Pronoun"]).lower()] for r in rows)
    print(
        f"wrote {args.output}: {len(rows)} rows from {n_docs} documents "
        f"(A {kinds['A']}, B {kinds['B']}, Neither {kinds['Neither']}; "
        f"masculine {genders['masculine']}, feminine {genders['feminine']}); "
        f"{left_out} left out for overlapping an --exclude text, {found - len(rows)} to balance the genders"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
