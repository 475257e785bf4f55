"""Build a people-counting TSV (ID, text, count, with a header row: the format
of assets/people_count.tsv and of `python -m spacy_memcoref count-people`)
from LitBank's coreference CoNLL files.

    python scripts/build_people_count.py ../shared/data/litbank corpus/people/litbank.tsv
    python scripts/build_people_count.py LITBANK OUT.tsv --explain OUT.jsonl   # why each count

The source: LitBank (Bamman, Lewke & Mansoor 2020, CC-BY-4.0), ~2,000-token
excerpts of English novels in which every mention of a person, facility,
place, vehicle, organization or geo-political entity is annotated for
coreference, singletons included. The CoNLL files carry the clusters but not
the entity types, so which clusters are people is derived from their
mentions. The derived file holds LitBank's text: it is built at run time
(the project's `people-count-data` step) and never committed.

Derivation rule (each step is a function below):

1. Windows (`sentence_windows`): each document is cut into consecutive,
   non-overlapping windows of whole sentences (the CoNLL file's blank
   lines), --min-tokens..--max-tokens tokens each (default 50..130, the
   length of a GAP text): sentences are added while the window stays within
   --max-tokens; a window shorter than --min-tokens is dropped (its first
   sentence is skipped and the next window starts after it).
2. People (`classify_cluster`), decided once a document, from all the
   mentions of a cluster in the whole document, so that a person named in a
   window is known as one from a pronoun elsewhere. A cluster is a PERSON
   when one of its mentions is
   a. a singular personal pronoun: he him his himself she her hers herself
      I me my mine myself;
   b. a name after a capitalized title (`TITLES`: Mr. Mrs. Miss Sir Lady
      Dr. Captain Aunt ...), e.g. "Mr. Elliot", "Lady Russell";
   c. a noun phrase whose head is a singular person noun (`PERSON_NOUNS`:
      man, woman, mother, servant, doctor, ...; the head is the last word
      before the first of `HEAD_ENDS` (of, who, that, a comma, ...), and
      after a possessive 's), e.g. "a man who ...", "his father", "the old
      gentleman", but not "the gardener's lodge";
   where (b) and (c) never count for a mention with a coordination (and,
   or, nor, &: "Mr. and Mrs. Smith" is a group). A cluster with one of them
   AND a plural or neuter pronoun (they them their theirs themselves we us
   our ours ourselves it its itself) is CONFLICTING; any other cluster is
   OTHER (places, things, groups, and people the rule cannot see).
   A predicate nominal (a mention right after a form of "be", "become",
   "seem" or "remain": "was a man who ...") is not evidence: LitBank does not
   link it to its subject, and it names no one new.
3. Count (`derive_rows`): the number of PERSON clusters with a mention that
   overlaps the window, predicate nominals left aside, where appositives
   count once: LitBank does not link "Her sister, Miss Watson, a tolerable
   slim old maid", so two PERSON mentions separated by just a comma or a
   dash are one person when one of them is a noun phrase of rule 2c ("Elizabeth,
   daughter of James Stevenson"; a list of names, "Sara, Mike and Jenny",
   stays three). A window that mentions a CONFLICTING cluster is left out
   (its count is not known).
4. Text (`detokenize`): the window's words joined by spaces, without the
   space before closing punctuation and clitics ('s, n't, ...) and after
   opening brackets and quotes (straight quotes alternate open / close).

What the rule gets wrong: it misses people mentioned only by a name, a
plural, "you", or a noun outside PERSON_NOUNS, and never by a singular
pronoun or a title anywhere in the document (minor characters named once);
it counts animals and ships referred to as he / she, and generic or
hypothetical people ("fit for a civilized man"). `--explain` writes, for
every row, the counted clusters with their mentions in the window and the
evidence, to check the counts by hand (the README gives the agreement on a
hand-checked sample).
"""

import argparse
import tarfile
import json
import re
import sys
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

PERSON = "person"
OTHER = "other"
CONFLICTING = "conflicting"

PERSON_PRONOUNS = frozenset("he him his himself she her hers herself i me my mine myself".split())
GROUP_OR_THING_PRONOUNS = frozenset("they them their theirs themselves we us our ours ourselves it its itself".split())
COORDINATIONS = frozenset(["and", "or", "nor", "&"])
# A mention right after one of these is a predicate nominal.
COPULAS = frozenset(
    "is was were are am be been being become became becomes becoming seem seems seemed remain remains remained".split()
)
# A title before a name (compared lowercased, without a final "."; the word
# must be capitalized in the text). No "St." (St. Paul's is a church).
TITLES = frozenset(
    """mr mrs miss ms mme mlle madame madam monsieur signor signora herr frau sir lady lord dame
    dr doctor prof professor capt captain col colonel major general lieut lieutenant sergeant admiral
    rev reverend father brother sister aunt auntie uncle cousin king queen prince princess duke
    duchess count countess baron baroness earl judge squire master mistress granny grandpa grandma
    papa mamma mama""".split()
)
# Singular nouns that name a person (the head of a mention, lowercased).
PERSON_NOUNS = frozenset(
    """man woman boy girl child baby infant lady gentleman gentlewoman mother father wife husband
    son daughter sister brother uncle aunt cousin nephew niece grandfather grandmother grandson
    granddaughter grandchild ancestor heir widow widower bride bridegroom bachelor spinster orphan
    papa mamma mama friend fellow chap lad lass youth maiden maid girlie stranger person individual
    visitor guest host hostess companion comrade lover sweetheart hero heroine master mistress
    servant valet butler footman coachman cook housekeeper governess nurse ayah gardener porter
    waiter waitress clerk secretary doctor physician surgeon practitioner lawyer judge magistrate
    officer captain colonel commander general lieutenant sergeant soldier sailor seaman mate
    priest parson clergyman vicar rector minister bishop monk nun poet artist painter writer
    author teacher professor student pupil scholar merchant shopkeeper proprietor landlord
    landlady tenant farmer peasant shepherd carpenter blacksmith tailor barber baker butcher
    driver waggoner coachman guide prospector hunter fisherman beggar thief robber murderer
    prisoner jailer warden slave king queen prince princess duke duchess lord nobleman knight
    emperor empress sultan chief boss partner neighbour neighbor passenger correspondent
    newcomer observer undertaker patient victim gentleman-farmer englishman englishwoman
    frenchman frenchwoman irishman scotchman dutchman""".split()
)
# The head of a mention is the last word before the first of these.
HEAD_ENDS = frozenset(
    """who whom whose that which of with in from at on to for by upon like as , ; : ( -- — " “ ”""".split()
)
# A possessive: the head comes after it ("the gardener 's lodge" is a lodge).
POSSESSIVES = frozenset(["'s", "’s", "'", "’"])
# What may stand between an appositive and its noun: "A, B" or "A -- B".
APPOSITION = frozenset([",", "--", "—"])
CLOSE_NO_SPACE = frozenset(",.;:!?)]}”’…") | {
    "...",
    "'s",
    "’s",
    "n't",
    "n’t",
    "'ll",
    "’ll",
    "'ve",
    "’ve",
    "'m",
    "’m",
    "'d",
    "’d",
    "'re",
    "’re",
    "'em",
}
OPEN_NO_SPACE = frozenset("([{“‘")
Mention = Tuple[int, int]  # inclusive token range


# ----- the rule ------------------------------------------------------------------------


def _norm(word: str) -> str:
    return word.lower().rstrip(".")


def mention_evidence(words: Sequence[str]) -> Optional[str]:
    """Why a mention shows its cluster is a person, or None.

    words (Sequence[str]): the mention's words.
    RETURNS (Optional[str]): "pronoun", "title" or "noun" (rule 2 a, b, c).
    """
    lowered = [_norm(w) for w in words]
    if len(words) == 1 and lowered[0] in PERSON_PRONOUNS:
        return "pronoun"
    if any(w in COORDINATIONS for w in lowered):
        return None
    if len(words) >= 2 and lowered[0] in TITLES and words[0][:1].isupper():
        return "title"
    head = None
    for word, low in zip(words, lowered):
        if low in HEAD_ENDS or word in HEAD_ENDS:
            break
        head = None if word in POSSESSIVES else low
    if head is not None and head in PERSON_NOUNS:
        return "noun"
    return None


def is_predicate(words: Sequence[str], start: int) -> bool:
    """Whether the mention starting at token `start` is a predicate nominal."""
    return start > 0 and words[start - 1].lower() in COPULAS


def classify_cluster(mentions: Iterable[Sequence[str]]) -> Tuple[str, List[str]]:
    """Rule 2: PERSON, OTHER or CONFLICTING, from all of a cluster's mentions.

    mentions (Iterable[Sequence[str]]): each mention's words (predicate
        nominals left out by the caller).
    RETURNS (Tuple[str, List[str]]): the class and the evidence found
        ("pronoun: he", "title: Mr. Elliot", "noun: his father",
        "group/thing: they").
    """
    evidence: List[str] = []
    against: List[str] = []
    for words in mentions:
        kind = mention_evidence(words)
        text = " ".join(words)
        if kind is not None:
            evidence.append(f"{kind}: {text}")
        elif len(words) == 1 and _norm(words[0]) in GROUP_OR_THING_PRONOUNS:
            against.append(f"group/thing: {text}")
    if evidence and against:
        return CONFLICTING, evidence + against
    if evidence:
        return PERSON, evidence
    return OTHER, against


def sentence_windows(sent_starts: Sequence[bool], *, min_tokens: int, max_tokens: int) -> List[Tuple[int, int]]:
    """Rule 1: non-overlapping windows of whole sentences.

    sent_starts (Sequence[bool]): one a token, True where a sentence starts.
    RETURNS (List[Tuple[int, int]]): (start, end) token ranges, end exclusive.
    """
    n = len(sent_starts)
    bounds = [i for i, start in enumerate(sent_starts) if start or i == 0] + [n]
    sentences = list(zip(bounds[:-1], bounds[1:]))
    windows = []
    i = 0
    while i < len(sentences):
        start, end = sentences[i]
        j = i + 1
        while j < len(sentences) and sentences[j][1] - start <= max_tokens:
            end = sentences[j][1]
            j += 1
        if min_tokens <= end - start <= max_tokens:
            windows.append((start, end))
            i = j
        else:  # too short even with the next sentence, or one over-long sentence
            i += 1
    return windows


def detokenize(words: Sequence[str]) -> str:
    """Rule 4: words joined as running text."""
    out: List[str] = []
    open_quote = {'"': False, "'": False}
    glue_next = False
    for word in words:
        space = bool(out) and not glue_next
        glue_next = False
        if word in open_quote:
            if open_quote[word]:  # closing
                space = False
            else:
                glue_next = True
            open_quote[word] = not open_quote[word]
        elif word in CLOSE_NO_SPACE:
            space = False
        elif word in OPEN_NO_SPACE:
            glue_next = True
        if space:
            out.append(" ")
        out.append(word)
    return "".join(out).replace("\t", " ").replace("\n", " ")


def derive_rows(
    doc_id: str,
    words: Sequence[str],
    sent_starts: Sequence[bool],
    clusters: Sequence[Sequence[Mention]],
    *,
    min_tokens: int = 50,
    max_tokens: int = 130,
) -> Tuple[List[Dict], Dict[str, int]]:
    """Rules 1-4 on one document.

    doc_id (str): the document's name (row IDs are f"{doc_id}-{k}").
    words (Sequence[str]): the document's words.
    sent_starts (Sequence[bool]): sentence starts, one a word.
    clusters (Sequence[Sequence[Tuple[int, int]]]): inclusive mention ranges.
    RETURNS (Tuple[List[Dict], Dict[str, int]]): rows ({"id", "text",
        "count", "people": [{"clusters", "mentions", "evidence"}]}) and
        counts (windows, dropped_conflicting, clusters by class).
    """
    clusters = [[(s, e) for s, e in cluster if not is_predicate(words, s)] for cluster in clusters]
    classes = []
    stats = {"windows": 0, "dropped_conflicting": 0, PERSON: 0, OTHER: 0, CONFLICTING: 0}
    for cluster in clusters:
        cls, evidence = classify_cluster([words[s : e + 1] for s, e in cluster])
        classes.append((cls, evidence))
        stats[cls] += 1
    # where each PERSON mention ends, and which mentions are rule-2c noun phrases
    person_mentions = {(s, e): c for c, cluster in enumerate(clusters) if classes[c][0] == PERSON for s, e in cluster}
    rows = []
    for k, (start, end) in enumerate(sentence_windows(sent_starts, min_tokens=min_tokens, max_tokens=max_tokens)):
        stats["windows"] += 1
        inside: Dict[int, List[Mention]] = {}
        conflicting = False
        for c, cluster in enumerate(clusters):
            found = [(s, e) for s, e in cluster if s < end and e >= start]
            if found:
                inside[c] = found
                conflicting |= classes[c][0] == CONFLICTING
        if conflicting:
            stats["dropped_conflicting"] += 1
            continue
        people_ids = [c for c in inside if classes[c][0] == PERSON]
        parent = {c: c for c in people_ids}

        def find(c: int) -> int:
            while parent[c] != c:
                c = parent[c]
            return c

        for c in people_ids:  # appositives: "A , B" with A or B a rule-2c noun phrase
            for s, e in inside[c]:
                for (s2, e2), c2 in person_mentions.items():
                    if c2 in parent and s2 == e + 2 and e2 < end and words[e + 1] in APPOSITION and c2 != c:
                        if "noun" in (mention_evidence(words[s : e + 1]), mention_evidence(words[s2 : e2 + 1])):
                            parent[find(c2)] = find(c)
        groups: Dict[int, List[int]] = {}
        for c in people_ids:
            groups.setdefault(find(c), []).append(c)
        people = [
            {
                "clusters": members,
                "mentions": [" ".join(words[max(s, start) : min(e + 1, end)]) for c in members for s, e in inside[c]],
                "evidence": [ev for c in members for ev in classes[c][1]],
            }
            for members in groups.values()
        ]
        rows.append(
            {"id": f"{doc_id}-{k}", "text": detokenize(words[start:end]), "count": len(people), "people": people}
        )
    return rows, stats


# ----- files -------------------------------------------------------------------------------


def read_litbank(path: Path) -> Iterable[Tuple[str, List[str], List[bool], List[List[Mention]]]]:
    """(doc_id, words, sentence starts, clusters) for each document of a
    CoNLL file, of every *.conll / *_conll file under a folder (sorted), or of
    the coref/conll/ folder inside LitBank's GitHub archive (.tar.gz, what
    the project's asset fetches)."""
    if path.is_file() and path.name.endswith((".tar.gz", ".tgz")):
        yield from _read_litbank_archive(path)
        return
    from spacy.vocab import Vocab

    from spacy_memcoref.corpora.conll import read_conll_docs

    for doc in read_conll_docs(path, Vocab()):
        clusters = []
        i = 1
        while f"coref_clusters_{i}" in doc.spans:
            clusters.append([(span.start, span.end - 1) for span in doc.spans[f"coref_clusters_{i}"]])
            i += 1
        doc_id = doc.user_data.get("doc_id", "doc")
        part = doc.user_data.get("part", "")
        if part not in ("", "0", "000"):
            doc_id = f"{doc_id}-{part}"
        yield doc_id, [t.text for t in doc], [bool(t.is_sent_start) for t in doc], clusters


def _read_litbank_archive(path: Path):
    """The documents of ARCHIVE/*/coref/conll/*.conll, extracted to a
    temporary folder (plain files only: no links, no paths outside it)."""
    import tempfile

    from spacy_memcoref.errors import DataFormatError

    with tempfile.TemporaryDirectory() as tmp, tarfile.open(path, "r:gz") as archive:
        members = [
            m
            for m in archive.getmembers()
            if m.isfile() and "/coref/conll/" in m.name and m.name.endswith(".conll") and ".." not in m.name.split("/")
        ]
        if not members:
            raise DataFormatError(
                path, None, "no */coref/conll/*.conll file in the archive (is it LitBank's GitHub archive?)"
            )
        for member in members:
            target = Path(tmp) / Path(member.name).name
            with archive.extractfile(member) as src:
                target.write_bytes(src.read())
        yield from read_litbank(Path(tmp))


def write_tsv(rows: Sequence[Dict], path: Path) -> None:
    """The people-counting TSV, written to a temporary file and renamed (never
    half-written)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf8", newline="\n") as f:
        f.write("ID\tText\tCount\n")
        for row in rows:
            f.write(f"{row['id']}\t{row['text']}\t{row['count']}\n")
    tmp.replace(path)


def parse_args(argv):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument(
        "litbank",
        type=Path,
        help="LitBank's coreference CoNLL files: a folder (e.g. ../shared/data/litbank), one file, or LitBank's GitHub archive (.tar.gz)",
    )
    p.add_argument("output", type=Path, help="the TSV to write (ID, Text, Count)")
    p.add_argument("--min-tokens", type=int, default=50, help="shortest window, tokens")
    p.add_argument("--max-tokens", type=int, default=130, help="longest window, tokens")
    p.add_argument(
        "--explain",
        type=Path,
        default=None,
        help="also write a JSONL: each row's counted people, mentions and evidence",
    )
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if not 1 <= args.min_tokens <= args.max_tokens:
        print(
            f"error: need 1 <= --min-tokens <= --max-tokens, got {args.min_tokens}, {args.max_tokens}", file=sys.stderr
        )
        return 2
    if not args.litbank.exists():
        print(
            f"error: LitBank not found at {args.litbank}: point at its coreference CoNLL files "
            "(LitBank's coref/conll folder or its GitHub archive; in the project: --vars.litbank)",
            file=sys.stderr,
        )
        return 1
    from spacy_memcoref.errors import DataFormatError

    rows: List[Dict] = []
    totals: Dict[str, int] = {}
    n_docs = 0
    try:
        for doc_id, words, sent_starts, clusters in read_litbank(args.litbank):
            doc_rows, stats = derive_rows(
                doc_id, words, sent_starts, clusters, min_tokens=args.min_tokens, max_tokens=args.max_tokens
            )
            rows.extend(doc_rows)
            for key, value in stats.items():
                totals[key] = totals.get(key, 0) + value
            n_docs += 1
    except (DataFormatError, OSError, EOFError, tarfile.TarError) as err:
        print(f"error: {err if isinstance(err, DataFormatError) else f'{args.litbank}: {err}'}", file=sys.stderr)
        return 1
    if not rows:
        print(f"error: no window of {args.min_tokens}..{args.max_tokens} tokens in {args.litbank}", file=sys.stderr)
        return 1
    write_tsv(rows, args.output)
    if args.explain is not None:
        args.explain.parent.mkdir(parents=True, exist_ok=True)
        with args.explain.open("w", encoding="utf8") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
    counts = [row["count"] for row in rows]
    histogram = {c: counts.count(c) for c in sorted(set(counts))}
    print(
        f"wrote {args.output}: {len(rows)} rows from {n_docs} documents "
        f"({totals.get('windows', 0)} windows, {totals.get('dropped_conflicting', 0)} left out for a conflicting cluster); "
        f"clusters: {totals.get(PERSON, 0)} people, {totals.get(OTHER, 0)} other, {totals.get(CONFLICTING, 0)} conflicting; "
        f"mean count {sum(counts) / len(counts):.2f}; counts {histogram}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
