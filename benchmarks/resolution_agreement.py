"""How well resolved text's agreement rules do without a tagger, against
the same rules reading OntoGUM's gold part-of-speech tags: the figures of
docs/resolution.md ("Verbs agree").

1. Verbs: for every "I", "you" and "they" (lower-cased) of the documents,
   as if a singular name replaced it, the verb the untagged rules change
   and its new form (`_agreeing_verb` reading the spelling), against the
   same call on a copy of the Doc carrying the gold tags (a VBP verb
   agrees). "agree": both change the same verb to the same form.
2. The number of a name for "they": for every gold cluster with a "they"
   (each "they" counted), whether its name is plural without a tagger
   against with the gold tags (NNS/NNPS heads are plural).
3. With --lemminflect (the package lemminflect installed): whether
   lemminflect's English morphology would give the same third person
   singular for the verbs of 1 and the same past participles after a
   subject's "'s" / "'d", and what resolve would change on the gold
   clusters with it (spacy_memcoref/resolution/agreement.py says why the
   package keeps its own word lists).

The documents: OntoGUM in its native form as `spacy project assets`
fetches it (a folder with conll/ and conllu/; tags from the conllu's XPOS
column, documents from GUM's splits.md), or CoNLL-2012 files (a file or a
folder of `*_conll` / `*.conll` files; tags from the fifth column). The
figures in the docs are OntoGUM's train and dev documents (148).

    python benchmarks/resolution_agreement.py       # assets/ontogum, train + dev of assets/gum_splits.md
    python benchmarks/resolution_agreement.py ONTOGUM_DIR --splits SPLITS.md --split train --split dev
    python benchmarks/resolution_agreement.py CONLL_DIR [CONLL_DIR ...] [--lemminflect]

Runs in about 10 s on 2 cores, 20 s with --lemminflect (spaCy only: no model, no torch).
"""

import argparse
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import spacy
from spacy.tokens import Doc

REPO = Path(__file__).resolve().parent.parent
DEFAULT_ONTOGUM = REPO / "assets" / "ontogum"
DEFAULT_SPLITS = REPO / "assets" / "gum_splits.md"
_NAME_RE = re.compile(r"^#\s*begin document \((.*)\); part (.*)$")
_TOKEN_ID_RE = re.compile(r"^\d+$")


def conll_tags(path: Path) -> Dict[Tuple[str, str], List[str]]:
    """{(document, part): the fifth column of its token lines} of one
    CoNLL-2012 file."""
    tags: Dict[Tuple[str, str], List[str]] = {}
    current: Optional[List[str]] = None
    for line in path.read_text(encoding="utf8").splitlines():
        match = _NAME_RE.match(line)
        if match:
            current = tags.setdefault((match.group(1), match.group(2)), [])
        elif line.startswith("#"):
            continue
        elif line.strip() and current is not None:
            current.append(line.split()[4])
    return tags


def conllu_tags(path: Path) -> List[str]:
    """The XPOS column of a .conllu file's ordinary token lines (the tokens
    the OntoGUM reader makes its Doc of: no multiword ranges, no empty nodes)."""
    tags = []
    for line in path.read_text(encoding="utf8").splitlines():
        fields = line.split("\t")
        if len(fields) == 10 and _TOKEN_ID_RE.match(fields[0]):
            tags.append(fields[4])
    return tags


def read_tagged(
    paths: Sequence[Path], splits_path: Optional[Path], splits: Sequence[str], vocab
) -> Iterator[Tuple[Doc, List[str]]]:
    """(gold Doc, its gold tags) for every document of `paths`."""
    from spacy_memcoref.corpora.conll import find_conll_files, read_conll_docs
    from spacy_memcoref.corpora.ontogum import ontogum_documents, read_ontogum_doc

    for path in paths:
        if (path / "conll").is_dir() and (path / "conllu").is_dir():
            if splits_path is None:
                names = ontogum_documents(path)
            else:
                names = [
                    name for split in splits for name in ontogum_documents(path, split=split, splits_path=splits_path)
                ]
            for name in names:
                doc = read_ontogum_doc(path / "conll" / f"{name}.conll", path / "conllu" / f"{name}.conllu", vocab)
                if doc is not None:  # None: a masked (Reddit) document
                    yield doc, conllu_tags(path / "conllu" / f"{name}.conllu")
            continue
        for file in find_conll_files(path):
            tags = conll_tags(file)
            for doc in read_conll_docs(file, vocab):
                yield doc, tags[(doc.user_data["doc_id"], doc.user_data["part"])]


def with_tags(doc: Doc, tags: List[str]) -> Doc:
    if len(tags) != len(doc):
        raise ValueError(f"{doc.user_data.get('doc_id')}: {len(tags)} tags for {len(doc)} tokens")
    tagged = doc.copy()
    for token, tag in zip(tagged, tags):
        token.tag_ = tag
    return tagged


def verb_agreement(pairs: Sequence[Tuple[Doc, Doc]]) -> Counter:
    """Section 1: the counts both / untagged_only / tagged_only."""
    from spacy_memcoref.resolution.agreement import _agreeing_verb

    singular = lambda they=False: False  # noqa: E731 (a singular name, whatever the pronoun)
    counts: Counter = Counter()
    for plain_doc, tagged_doc in pairs:
        for plain, tagged in zip(plain_doc, tagged_doc):
            if plain.lower_ not in ("i", "you", "they"):
                continue
            found = [
                _agreeing_verb(token, singular, is_tagged, False, "personal")
                for token, is_tagged in ((plain, False), (tagged, True))
            ]
            untagged, gold = [(r[0].i, r[1]) if r else None for r in found]
            counts["both"] += untagged is not None and untagged == gold
            counts["untagged_only"] += untagged is not None and untagged != gold
            counts["tagged_only"] += gold is not None and untagged != gold
    return counts


def name_number(pairs: Sequence[Tuple[Doc, Doc]]) -> Counter:
    """Section 2: "they" whose name's number agrees / does not, overall and
    for names whose head is capitalized and ends in s."""
    from spacy_memcoref.resolution import representative_of
    from spacy_memcoref.resolution.agreement import _is_plural
    from spacy_memcoref.resolution.naming import _head_part

    counts: Counter = Counter()
    for plain_doc, tagged_doc in pairs:
        for key in [k for k in plain_doc.spans if k.startswith("coref_clusters_")]:
            mentions = sorted(plain_doc.spans[key], key=lambda s: (s.start, -s.end))
            n_they = sum(len(m) == 1 and m[0].lower_ == "they" for m in mentions)
            representative = representative_of(mentions, False)
            if not n_they or representative is None:
                continue
            untagged = _is_plural(representative, False, False, they=True)
            gold = _is_plural(tagged_doc[representative.start : representative.end], True, False, they=True)
            counts["agree" if untagged == gold else "disagree"] += n_they
            head = [t for t in _head_part(representative) if t.is_alpha][-1:]
            if head and head[0].is_title and head[0].lower_.endswith("s"):
                counts["capitalized"] += n_they
                counts["capitalized_agree"] += n_they * (untagged == gold)
    return counts


def lemminflect_section(pairs: Sequence[Tuple[Doc, Doc]]) -> None:
    """Section 3 (see the module docstring)."""
    try:
        import lemminflect
    except ImportError:
        sys.exit("--lemminflect needs the package lemminflect (pip install lemminflect)")
    from spacy_memcoref import resolve
    from spacy_memcoref.resolution import agreement

    def lm_third(verb: str) -> str:
        return lemminflect.getInflection(verb, "VBZ")[0]

    def lm_participle_word(word: str) -> bool:
        lemmas = lemminflect.getAllLemmas(word, upos="VERB").get("VERB", ())
        return any(word in lemminflect.getInflection(lemma, "VBN") for lemma in lemmas)

    def lm_participle(token, tagged: bool) -> bool:
        if tagged and token.tag_:
            return token.tag_ == "VBN"
        return lm_participle_word(token.lower_)

    own_third, own_participle = agreement._third_singular, agreement._may_be_participle
    verbs: Counter = Counter()

    def spy(verb: str) -> str:
        verbs[verb] += 1
        return own_third(verb)

    agreement._third_singular = spy
    try:
        verb_agreement(pairs)
    finally:
        agreement._third_singular = own_third
    same = [verb for verb in verbs if lm_third(verb) == own_third(verb)]
    print(
        f"lemminflect, third person singular: {len(verbs)} verbs changed in 1 ({sum(verbs.values()):,} changes, with and without tags);"
        f" getInflection(verb, 'VBZ') gives the same form for {len(same)}"
    )
    for verb in sorted(set(verbs) - set(same)):
        print(f"  {verb!r}: {own_third(verb)!r} here, {lm_third(verb)!r} by lemminflect")

    # the word after a subject pronoun's "'s" / "'d", as _expanded_clitic reads it
    rows: Counter = Counter()
    differ: Counter = Counter()
    for plain_doc, tagged_doc in pairs:
        for token in plain_doc:
            if token.lower_ not in agreement.SUBJECTS:
                continue
            clitic = agreement._clitic_after(token)
            if clitic is None or agreement._apostrophes(clitic.lower_).lstrip("'") not in ("s", "d"):
                continue
            following = agreement._verb_after(clitic)
            if following is None:
                continue
            gold = tagged_doc[following.i].tag_ == "VBN"
            own = own_participle(following, False)
            theirs = lm_participle_word(following.lower_)
            rows["words"] += 1
            rows["own_right"] += own == gold
            rows["lemminflect_right"] += theirs == gold
            if own != theirs:
                differ[(following.lower_, tagged_doc[following.i].tag_, own)] += 1
    print(
        f"lemminflect, past participles: of the {rows['words']} words after a subject's 's / 'd, the word lists agree with the"
        f" gold VBN tag on {rows['own_right']}, lemminflect (getAllLemmas, then getInflection(lemma, 'VBN')) on {rows['lemminflect_right']}"
    )
    for (word, tag, own), n in sorted(differ.items()):
        print(
            f"  {word!r} ({tag}, {n}x): a participle {'here, not' if own else 'by lemminflect, not'} {'by lemminflect' if own else 'here'}"
        )

    def edits() -> set:
        return {(doc.user_data["doc_id"], e.source, e.text) for doc, _ in pairs for e in resolve(doc).edits}

    base = edits()
    for label, name, replacement in (
        ("third person singular", "_third_singular", lm_third),
        ("past participles", "_may_be_participle", lm_participle),
    ):
        own = getattr(agreement, name)
        setattr(agreement, name, replacement)
        try:
            other = edits()
        finally:
            setattr(agreement, name, own)
        print(
            f"lemminflect's {label} in resolve, gold clusters without tags: {len(base - other)} of {len(base):,} edits lost,"
            f" {len(other - base)} gained"
        )
        for doc_id, source, text in sorted(other - base):
            print(f"  gained {doc_id} {source}: {text!r}")
        for doc_id, source, text in sorted(base - other):
            print(f"  lost {doc_id} {source}: {text!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "paths",
        nargs="*",
        type=Path,
        help=f"OntoGUM folders (conll/ + conllu/) or CoNLL-2012 files or folders (default {DEFAULT_ONTOGUM.relative_to(REPO)})",
    )
    parser.add_argument(
        "--splits",
        type=Path,
        default=None,
        help=f"GUM's splits.md for OntoGUM folders (default with the default folder: {DEFAULT_SPLITS.relative_to(REPO)}; else every document)",
    )
    parser.add_argument(
        "--split", action="append", default=None, help="a split of --splits to read, repeated (default: train and dev)"
    )
    parser.add_argument(
        "--lemminflect", action="store_true", help="also compare with lemminflect's morphology (section 3)"
    )
    args = parser.parse_args()
    paths = args.paths or [DEFAULT_ONTOGUM]
    splits_path = args.splits if args.splits is not None or args.paths else DEFAULT_SPLITS
    for path in paths + ([splits_path] if splits_path is not None else []):
        if not path.exists():
            sys.exit(
                f"{path}: no such file or folder (`spacy project assets` fetches OntoGUM into {DEFAULT_ONTOGUM.relative_to(REPO)}; or pass the folders)"
            )
    started = time.perf_counter()
    vocab = spacy.blank("en").vocab
    pairs = [
        (doc, with_tags(doc, tags))
        for doc, tags in read_tagged(paths, splits_path, args.split or ["train", "dev"], vocab)
    ]
    print(
        f"{len(pairs)} documents, {sum(len(doc) for doc, _ in pairs):,} tokens"
        f"{'' if splits_path is None else ' (splits ' + ', '.join(args.split or ['train', 'dev']) + ')'}"
    )

    verbs = verb_agreement(pairs)
    both, untagged_only, tagged_only = verbs["both"], verbs["untagged_only"], verbs["tagged_only"]
    print(
        f'verbs after "I", "you", "they" made to agree with a singular name: without tags {both + untagged_only:,} changes,'
        f" with the gold tags {both + tagged_only:,}; {both:,} the same (verb and form), so {both:,} of {both + untagged_only:,}"
        f" agree with the gold tags and {both:,} of their {both + tagged_only:,} are found ({untagged_only} untagged only,"
        f" {tagged_only} tagged only)"
    )

    number = name_number(pairs)
    agree, disagree = number["agree"], number["disagree"]
    print(
        f'the number of a name for "they": {agree} of {agree + disagree} "they" agree with the gold tags; of the'
        f" {number['capitalized']} whose head is capitalized and ends in s, {number['capitalized_agree']}"
    )
    if args.lemminflect:
        lemminflect_section(pairs)
    print(f"({time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()
