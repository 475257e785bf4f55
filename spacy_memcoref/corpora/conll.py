"""CoNLL-2012 coreference files: read, convert to DocBin, write back.

The reader follows the CoNLL-2012 reference scorer (`scorer.pl`,
`CorScorer.pm::GetCoreference`) so that what we read is what it scores:

- a document runs from `#begin document NAME` to `#end document`; the scorer
  keys documents by NAME (for the usual `(ID); part P` form we keep ID and P,
  P exactly as written, so "000" stays "000"); the doc id in column 1 is not
  checked against NAME;
- a token line is split on tabs (or, in whitespace-aligned files with no tab,
  on runs of whitespace); trailing empty fields are dropped, as Perl's `split`
  does, and the LAST remaining field is the coreference column;
- a coreference cell is `-` / `_` (none) or items such as `(12`, `12)`,
  `(12)`, joined by `|`; `(12+3)` ("double antecedent") is discarded like the
  scorer does; within one cell, one-token mentions are taken first, then
  openings, then closings, and a closing pops the latest opening of the same
  cluster (a stack per cluster id), exactly as the scorer does;
- blank (or whitespace-only) lines separate sentences.

Where the scorer would silently misread or die, we raise
`DataFormatError(path, line, reason)` instead: a closing bracket with no
opening, a mention never closed, a cluster id that is not an integer, a
column count that changes within a document, too few columns, a document that
never ends, `#end document` without `#begin document`, a token line outside a
document, an empty file. Nothing is skipped silently: a document whose
words are masked (GUM's Reddit documents, every character an underscore) is
skipped by the converter and counted in its report, never written as a
document of underscores.
"""

import contextlib
import re
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union, cast

from ..doc_helpers.clusters import CLUSTER_PREFIX, numbered_clusters, write_clusters
from ..errors import DataFormatError, clip, quote
from ..util import Clusters, TokenSpan, atomic_output, refuse_overwriting_input
from .docbin import load_docbin

if TYPE_CHECKING:  # pragma: no cover
    from spacy.tokens import Doc

# At least: doc id, part number, word number, word, coreference column.
MIN_COLUMNS = 5
WORD_COLUMN = 3
SPEAKER_COLUMN = 9
NO_VALUE = ("-", "_", "")
CONLL_SUFFIXES = ("_conll", ".conll")

_BEGIN_RE = re.compile(r"^#\s*begin document (.*?)$")
_END_RE = re.compile(r"^#\s*end document")
_NAME_RE = re.compile(r"^\((.*)\); part (.*)$")
# One item of a coreference cell; several may be glued together without `|`
# (the scorer accepts that too).
_ITEM_RE = re.compile(r"\((\d+)\)|\((\d+\+\d)\)|\((\d+)|(\d+)\)")
_ITEMS_RE = re.compile(r"(?:\(\d+\)|\(\d+\+\d\)|\(\d+|\d+\))+")
_WS_RE = re.compile(r"\s")
# GUM masks Reddit text character by character ("why" -> "___")
MASK_CHAR = "_"

# A parsed cell: (one-token ids, opening ids, closing ids, all ids in the order
# written). The scorer takes one-token mentions, then openings, then closings.
_Cell = Tuple[Tuple[str, ...], Tuple[str, ...], Tuple[str, ...], Tuple[str, ...]]
_EMPTY_CELL: _Cell = ((), (), (), ())


# --------------------------------------------------------------------------- #
# Parsing
# --------------------------------------------------------------------------- #


def _parse_cell(cell: str) -> Optional[_Cell]:
    """Parse one coreference cell; None when it is malformed."""
    singles: List[str] = []
    opens: List[str] = []
    closes: List[str] = []
    order: List[str] = []
    for part in cell.split("|"):
        if not part:
            continue  # `(1||2)`: the scorer ignores empty items too
        if not _ITEMS_RE.fullmatch(part):
            return None
        for single, double, opening, closing in _ITEM_RE.findall(part):
            if single:
                singles.append(single)
                order.append(single)
            elif double:
                pass  # double antecedent: discarded, as the scorer does
            elif opening:
                opens.append(opening)
                order.append(opening)
            else:
                closes.append(closing)
    return tuple(singles), tuple(opens), tuple(closes), tuple(order)


def split_doc_name(name: str) -> Tuple[str, str]:
    """`(ID); part P` -> (ID, P); any other name -> (name, "")."""
    match = _NAME_RE.match(name)
    if match:
        return match.group(1), match.group(2)
    return name, ""


def doc_name(doc_id: str, part: str) -> str:
    """The inverse of split_doc_name: the NAME of `#begin document NAME`."""
    return f"({doc_id}); part {part}" if part != "" else doc_id


@dataclass
class _RawDoc:
    doc_id: str
    part: str
    begin_line: int
    n_tokens: int
    clusters: Clusters
    words: Optional[List[str]] = None
    sent_starts: Optional[List[bool]] = None
    speakers: Optional[List[Optional[str]]] = None


class ClusterCollector:
    """The coreference column of one document, read cell by cell as the
    reference scorer reads it (the module docstring): a stack of open
    mentions per cluster id. Shared by the CoNLL-2012 reader and the
    OntoGUM reader (the same brackets in a three-column file)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.cache: Dict[str, Optional[_Cell]] = {"-": _EMPTY_CELL, "_": _EMPTY_CELL, "": _EMPTY_CELL}
        self.reset()

    def reset(self) -> None:
        """Start a new document."""
        self.stacks: Dict[str, List[Tuple[int, int]]] = {}
        self.found: Dict[str, List[TokenSpan]] = {}

    def add(self, cell: str, tok: int, lineno: int) -> None:
        """Read the cell of token `tok` (on line `lineno`)."""
        parsed = self.cache.get(cell)
        if parsed is None:
            if cell in self.cache:
                parsed = None
            else:
                stripped = cell.strip()
                parsed = _EMPTY_CELL if stripped in NO_VALUE else _parse_cell(stripped)
                self.cache[cell] = parsed
            if parsed is None:
                raise DataFormatError(
                    self.path,
                    lineno,
                    f"bad coreference cell {quote(cell)}: expected '-' or items like '(12', '12)', "
                    "'(12)' joined by '|', with integer cluster ids",
                )
        if parsed is _EMPTY_CELL:
            return
        singles, opens, closes, order = parsed
        found, stacks = self.found, self.stacks
        for cid in order:  # clusters are listed in the order their ids first appear
            if cid not in found:
                found[cid] = []
        for cid in singles:
            found[cid].append((tok, tok))
        for cid in opens:
            stack = stacks.get(cid)
            if stack is None:
                stack = stacks[cid] = []
            stack.append((tok, lineno))
        for cid in closes:
            stack = stacks.get(cid)
            if not stack:
                raise DataFormatError(
                    self.path, lineno, f"closing bracket '{clip(cid)})' with no open mention of cluster {clip(cid)}"
                )
            found[cid].append((stack.pop()[0], tok))

    def finish(self, name: str, end_line: int) -> Clusters:
        """The document's clusters, once every mention is closed."""
        for cid, stack in self.stacks.items():
            if stack:
                raise DataFormatError(
                    self.path,
                    stack[-1][1],
                    f"a mention of cluster {clip(cid)} opened here is never closed "
                    f"(document {quote(name)} ends at line {end_line})",
                )
        return _ordered_clusters(self.found.values())


def _ordered_clusters(found: Iterable[List[TokenSpan]]) -> Clusters:
    """Mentions sorted; clusters in order of first appearance.

    A cluster appears where its first mention starts; when several clusters
    first appear at the same token, the one whose mention there is longer
    comes first (outer before inner, as openings are written), then the
    order their ids were written in. The writer follows the same order, so a
    round trip keeps the cluster order.
    """
    clusters = [sorted(mentions) for mentions in found if mentions]
    clusters.sort(key=lambda c: (c[0][0], -max(e for s, e in c if s == c[0][0])))
    return clusters


def _read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as err:
        raise DataFormatError(path, None, f"cannot read the file: {err.strerror or err}") from err
    try:
        text = data.decode("utf8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise DataFormatError(path, line, f"not valid UTF-8 ({err.reason} at byte {err.start})") from err
    # a byte-order mark (some editors write one) is not part of the first line
    return text[1:] if text.startswith("\ufeff") else text


def _is_mask(word: str) -> bool:
    return bool(word) and not word.strip(MASK_CHAR)


def is_masked(words: Sequence[str]) -> bool:
    """Whether a document's words are masked as GUM masks the Reddit text it
    may not distribute: every character of every word replaced with "_", so
    "why" becomes "___" (lengths kept). A real text may hold a few "_" tokens
    (a blank to fill in, an underscore line), never only them; an empty word
    (one in V11.1.0's GUM_news_iodine) says nothing either way.

    words (Sequence[str]): the document's words.
    RETURNS (bool): True when there is a word and every non-empty one is underscores only.
    """
    seen = False
    for word in words:
        if word and not _is_mask(word):
            return False
        seen = seen or bool(word)
    return seen


def check_not_partly_masked(words: Sequence[str], path: Path, line: Optional[int]) -> None:
    """Refuse a document of which most, but not all, words are masked: a
    Reddit document whose text was restored only in part would train on
    underscores. A real document's few "_" tokens never come near half.

    RAISES DataFormatError: naming the file and the document's line.
    """
    n_masked = sum(1 for word in words if _is_mask(word))
    if n_masked and 2 * n_masked > len(words):
        raise DataFormatError(
            path,
            line,
            f"{n_masked} of {len(words)} words are only underscores (GUM's masking of Reddit text) but "
            "not all: a document restored in part? restore its text fully, or leave it masked to have it skipped",
        )


def _iter_raw_docs(path: Path, *, full: bool) -> Iterator[_RawDoc]:
    """Yield the documents of one CoNLL-2012 file, in file order.

    full (bool): also collect words, sentence starts and speakers.
    """
    text = _read_text(path)
    if not text.strip():
        raise DataFormatError(path, None, "the file is empty")
    collector = ClusterCollector(path)
    seen: Dict[Tuple[str, str], int] = {}
    in_doc = False
    n_docs = 0
    # per-document state
    name = ""
    begin_line = 0
    n_cols = 0
    n_cols_line = 0
    tok = 0
    words: List[str] = []
    sent_starts: List[bool] = []
    speakers: List[Optional[str]] = []
    new_sent = True
    lineno = 0
    for lineno, line in enumerate(text.split("\n"), 1):
        if line.endswith("\r"):
            line = line[:-1]
        if not in_doc:
            if not line or line.isspace():
                continue
            if line[0] == "#":
                match = _BEGIN_RE.match(line)
                if match:
                    name = match.group(1)
                    in_doc = True
                    begin_line = lineno
                    n_cols = 0
                    tok = 0
                    collector.reset()
                    words, sent_starts, speakers = [], [], []
                    new_sent = True
                elif _END_RE.match(line):
                    raise DataFormatError(path, lineno, "'#end document' without a '#begin document' before it")
                continue  # other comments outside documents are ignored
            raise DataFormatError(path, lineno, "a token line outside a document (no '#begin document' line before it)")
        # inside a document
        if not line or line.isspace():
            new_sent = True
            continue
        if line[0] == "#":
            if _END_RE.match(line):
                clusters = collector.finish(name, lineno)
                doc_id, part = split_doc_name(name)
                key = (doc_id, part)
                if key in seen:
                    raise DataFormatError(
                        path, begin_line, f"document {quote(name)} appears twice (first at line {seen[key]})"
                    )
                seen[key] = begin_line
                raw = _RawDoc(doc_id, part, begin_line, tok, clusters)
                if full:
                    raw.words, raw.sent_starts, raw.speakers = words, sent_starts, speakers
                n_docs += 1
                in_doc = False
                yield raw
                continue
            if _BEGIN_RE.match(line):
                raise DataFormatError(
                    path,
                    lineno,
                    f"'#begin document' inside document {quote(name)} (opened at line {begin_line}, "
                    "never ended with '#end document')",
                )
            raise DataFormatError(
                path,
                lineno,
                f"a '#' comment line inside document {quote(name)} (the reference scorer would count it as a token)",
            )
        if "\t" in line:
            fields = line.split("\t")
            raw_cols = len(fields)
            while fields and fields[-1] == "":
                fields.pop()
        else:
            fields = line.split()
            raw_cols = len(fields)
        if raw_cols != n_cols:
            if n_cols == 0:
                n_cols = raw_cols
                n_cols_line = lineno
            else:
                raise DataFormatError(
                    path, lineno, f"{raw_cols} columns, but line {n_cols_line} of the same document has {n_cols}"
                )
        if len(fields) < MIN_COLUMNS:
            hint = (
                " (OntoGUM's native conll/DOC.conll has 3: convert its folder with `convert ontogum`)"
                if len(fields) == 3
                else ""
            )
            raise DataFormatError(
                path,
                lineno,
                f"{len(fields)} columns; a CoNLL-2012 token line needs at least {MIN_COLUMNS} "
                f"(doc id, part, word number, word, ..., coreference last){hint}",
            )
        collector.add(fields[-1], tok, lineno)
        if full:
            word = fields[WORD_COLUMN]
            if not word:
                raise DataFormatError(path, lineno, "empty word (column 4)")
            words.append(word)
            sent_starts.append(new_sent)
            if len(fields) > SPEAKER_COLUMN + 1:
                speaker = fields[SPEAKER_COLUMN]
                speakers.append(None if speaker in NO_VALUE else speaker)
            else:
                speakers.append(None)
        new_sent = False
        tok += 1
    if in_doc:
        raise DataFormatError(
            path,
            begin_line,
            f"document {quote(name)} begins here but never ends ('#end document' missing "
            f"before the end of the file at line {lineno})",
        )
    if n_docs == 0:
        raise DataFormatError(path, None, "no '#begin document' ... '#end document' block in the file")


def read_conll_clusters(path: Path) -> "Dict[Tuple[str, str], Tuple[int, Clusters]]":
    """Read the coreference column of a CoNLL-2012 file as the reference scorer does.

    path (Path): the CoNLL-2012 file.
    RETURNS (dict): (doc_id, part) -> (n_tokens, clusters), documents in file
        order; clusters in order of first appearance (ties at one token: the
        longer mention first), each a list of (start, end) INCLUSIVE
        document-level token indices, sorted.
    RAISES DataFormatError: on malformed input (file, line, reason).
    """
    return {(raw.doc_id, raw.part): (raw.n_tokens, raw.clusters) for raw in _iter_raw_docs(Path(path), full=False)}


# --------------------------------------------------------------------------- #
# CoNLL -> Doc / DocBin
# --------------------------------------------------------------------------- #


@contextlib.contextmanager
def _cached_msgpack_extensions() -> Iterator[None]:
    """Look srsly's msgpack encoders/decoders up once, not once per span group.

    DocBin (de)serializes every span group with its own msgpack call, and each
    call makes srsly scan catalogue's whole registry and the installed entry
    points; with one span group per cluster, those scans dominated the
    conversion time. Within this block the lookups return the result of the
    first one; the registries are restored afterwards.
    """
    try:
        from srsly import msgpack as srsly_msgpack
    except ImportError:  # pragma: no cover
        yield
        return
    registries = [getattr(srsly_msgpack, name, None) for name in ("msgpack_encoders", "msgpack_decoders")]
    patched = []
    for registry in registries:
        if registry is None or "get_all" in vars(registry):
            continue
        cached = registry.get_all()
        registry.get_all = lambda cached=cached: cached  # instance attribute shadows the method
        patched.append(registry)
    try:
        yield
    finally:
        for registry in patched:
            del registry.get_all


def find_conll_files(input_path: Path) -> List[Path]:
    """A file -> [it]; a directory -> its `*_conll` / `*.conll` files, recursively, sorted."""
    input_path = Path(input_path)
    if input_path.is_dir():
        files = sorted(p for p in input_path.rglob("*") if p.is_file() and p.name.endswith(CONLL_SUFFIXES))
        if not files:
            raise DataFormatError(input_path, None, "no CoNLL files (*_conll, *.conll) in this directory or below")
        return files
    if not input_path.exists():
        raise DataFormatError(input_path, None, "no such file or directory")
    if not input_path.is_file():
        raise DataFormatError(input_path, None, "not a regular file or directory")
    return [input_path]


def _raw_to_doc(raw: _RawDoc, vocab) -> "Doc":
    from spacy.tokens import Doc, Span, SpanGroup

    words = raw.words or []
    n = len(words)
    sent_starts = cast(Optional[List[Union[bool, int, None]]], raw.sent_starts)  # spaCy's hint (a list is invariant)
    doc = Doc(vocab, words=words, spaces=[True] * (n - 1) + [False] if n else [], sent_starts=sent_starts)
    write_clusters(doc, [[Span(doc, s, e + 1) for s, e in cluster] for cluster in raw.clusters])
    speakers = raw.speakers or []
    if any(s is not None for s in speakers):
        spans = []
        start = 0
        for i in range(1, n + 1):
            if i == n or speakers[i] != speakers[start]:
                speaker = speakers[start]
                if speaker is not None:
                    spans.append(Span(doc, start, i, label=speaker))
                start = i
        doc.spans["speakers"] = SpanGroup(doc, name="speakers", spans=spans)
    doc.user_data["doc_id"] = raw.doc_id
    doc.user_data["part"] = raw.part
    return doc


def read_conll_docs(path: Union[str, Path], vocab) -> Iterator["Doc"]:
    """Yield one Doc per (document, part) of a CoNLL-2012 file or directory.

    path: a file, or a directory searched recursively (sorted) for
        `*_conll` / `*.conll` files.
    vocab (Vocab): the vocab the Docs are made with.
    YIELDS (Doc): words from column 4 (space-separated), sentence starts from
        blank lines, clusters in doc.spans["coref_clusters_N"] (N from 1),
        speakers in doc.spans["speakers"], user_data "doc_id" and "part".
    """
    for file in find_conll_files(Path(path)):
        for raw in _iter_raw_docs(file, full=True):
            yield _raw_to_doc(raw, vocab)


def masked_report(masked: Sequence[str]) -> str:
    """The part of a converter's report that says what was skipped as masked
    (always said, 0 included, so a split's report shows it was checked)."""
    names = f" ({', '.join(masked)})" if masked else ""
    return f"{len(masked)} masked documents skipped{names}"


def refuse_all_masked(where: Path, masked: Sequence[str]) -> None:
    """Every document was masked: there is nothing to write, and an empty
    DocBin would only fail later, in training, far from the cause.

    RAISES DataFormatError: naming the input and the masked documents.
    """
    raise DataFormatError(
        where,
        None,
        f"nothing to write: all {len(masked)} documents are masked (GUM's Reddit text, every character "
        f"an underscore) and were skipped ({', '.join(masked)})",
    )


@dataclass
class ConllStats:
    files: int = 0
    docs: int = 0
    tokens: int = 0
    mentions: int = 0
    clusters: int = 0
    seconds: float = 0.0
    masked: List[str] = field(default_factory=list)

    def __str__(self) -> str:
        return (
            f"{self.files} files, {self.docs} docs, {self.tokens} tokens, "
            f"{self.mentions} mentions, {self.clusters} clusters, {masked_report(self.masked)} ({self.seconds:.1f}s)"
        )


def conll_to_docbin(input_path: Path, output_path: Path, *, lang: str = "en") -> ConllStats:
    """Convert CoNLL-2012 file(s) to one DocBin (written atomically).

    input_path (Path): a file, or a directory searched recursively for
        `*_conll` / `*.conll` files (sorted).
    output_path (Path): the .spacy file to write.
    lang (str): language of the blank vocab.
    RETURNS (ConllStats): files, docs, tokens, mentions, clusters, and the
        masked documents skipped.
    RAISES DataFormatError: on bad input, an output path inside the input,
        or every document masked; no output file is written then.
    """
    from spacy.tokens import DocBin

    t0 = time.perf_counter()
    files = find_conll_files(Path(input_path))
    refuse_overwriting_input([input_path, *files], output_path)
    docbin = DocBin(store_user_data=True)
    stats = ConllStats(files=len(files))
    seen: Dict[Tuple[str, str], Path] = {}
    with _cached_msgpack_extensions():
        _add_docs(files, lang, docbin, stats, seen)
    if stats.docs == 0 and stats.masked:
        refuse_all_masked(Path(input_path), stats.masked)
    with atomic_output(output_path) as tmp:
        docbin.to_disk(tmp)
    stats.seconds = time.perf_counter() - t0
    return stats


def _make_vocab(lang: str, path: Path):
    """The vocab of a blank `lang` pipeline, without building the pipeline.

    spacy.blank() loads every spaCy entry point (here spacy-transformers,
    hence transformers), which is slow; the Docs need only the vocab.
    """
    from spacy.util import get_lang_class
    from spacy.vocab import create_vocab

    try:
        lang_class = get_lang_class(lang)
    except ImportError as err:
        raise DataFormatError(path, None, f"unknown language code {quote(lang)} (--lang): {err}") from err
    return create_vocab(lang, lang_class.Defaults)


def _add_docs(files: List[Path], lang: str, docbin, stats: "ConllStats", seen: Dict[Tuple[str, str], Path]) -> None:
    vocab = None  # made on the first document, so bad input fails fast
    for file in files:
        for raw in _iter_raw_docs(file, full=True):
            if vocab is None:
                vocab = _make_vocab(lang, files[0])
            key = (raw.doc_id, raw.part)
            if key in seen:
                raise DataFormatError(
                    file,
                    raw.begin_line,
                    f"document {quote(doc_name(*key))} is also in {seen[key]}; one document must not appear twice",
                )
            seen[key] = file
            if is_masked(raw.words or []):
                stats.masked.append(raw.doc_id if raw.part.strip("0") == "" else f"{raw.doc_id} part {raw.part}")
                continue
            check_not_partly_masked(raw.words or [], file, raw.begin_line)
            docbin.add(_raw_to_doc(raw, vocab))
            stats.docs += 1
            stats.tokens += raw.n_tokens
            stats.clusters += len(raw.clusters)
            stats.mentions += sum(len(c) for c in raw.clusters)


# --------------------------------------------------------------------------- #
# Doc / DocBin -> CoNLL
# --------------------------------------------------------------------------- #


def _clusters_from_doc(doc, prefix: str) -> List[Tuple[int, List[TokenSpan]]]:
    """(cluster number N, mentions) for each non-empty cluster group of the
    Doc, in cluster order (`doc_helpers.clusters`)."""
    return [(n, [(span.start, span.end - 1) for span in group]) for n, group in numbered_clusters(doc, prefix)]


def _coref_cells(n_tokens: int, clusters: Sequence[Tuple[int, Sequence[TokenSpan]]]) -> List[str]:
    """The coreference column for one document, CoNLL style.

    At each token: openings of multi-token mentions (longest first), then
    one-token mentions, then closings (shortest first), joined by `|`. (The
    scorer reads one-token mentions, then openings, then closings whatever
    the order in the cell, so the order is cosmetic.)
    """
    items: Dict[int, List[Tuple[int, int, str]]] = {}
    for cid, mentions in clusters:
        for start, end in mentions:
            if start == end:
                items.setdefault(start, []).append((1, 0, f"({cid})"))
            else:
                items.setdefault(start, []).append((0, -end, f"({cid}"))
                items.setdefault(end, []).append((2, -start, f"{cid})"))
    cells = ["-"] * n_tokens
    for i, entries in items.items():
        if len(entries) == 1:
            cells[i] = entries[0][2]
        else:
            entries.sort(key=lambda e: (e[0], e[1]))  # stable for equal keys
            cells[i] = "|".join(e[2] for e in entries)
    return cells


def _scorer_reading(cells: Sequence[str]) -> List[List[TokenSpan]]:
    """How the reference scorer reads a coreference column (for self-checks)."""
    found: Dict[str, List[TokenSpan]] = {}
    stacks: Dict[str, List[int]] = {}
    for tok, cell in enumerate(cells):
        parsed = _parse_cell(cell) if cell not in NO_VALUE else _EMPTY_CELL
        assert parsed is not None
        singles, opens, closes, order = parsed
        for cid in order:
            found.setdefault(cid, [])
        for cid in singles:
            found[cid].append((tok, tok))
        for cid in opens:
            stacks.setdefault(cid, []).append(tok)
        for cid in closes:
            stack = stacks.get(cid)
            if stack:
                found[cid].append((stack.pop(), tok))
    return _ordered_clusters(found.values())


def _needs_check(mentions: Sequence[TokenSpan]) -> bool:
    """True when mentions of one cluster overlap (only then can the scorer misread them)."""
    multi = sorted((s, e) for s, e in mentions if s != e)
    for (s1, e1), (s2, e2) in zip(multi, multi[1:]):
        if s2 <= e1:
            return True
    return False


def _clean_field(value: str) -> str:
    """A value safe in a whitespace- or tab-separated column.

    Whitespace inside a word (spaCy has whitespace tokens, and words may hold
    spaces) would split the column, so it becomes `_`; an empty value becomes
    `_` too. This changes only the word/speaker columns, never the coreference
    column, which is what the scorer reads. `|` is safe: only the last column
    is split on `|`.
    """
    if not value:
        return "_"
    if _WS_RE.search(value):
        return _WS_RE.sub("_", value)
    return value


def _doc_lines(doc, index: int, prefix: str) -> List[str]:
    doc_id = str(doc.user_data.get("doc_id", f"doc_{index}"))
    part = str(doc.user_data.get("part", "0"))
    name = doc_name(doc_id, part)
    clusters = _clusters_from_doc(doc, prefix)
    n = len(doc)
    cells = _coref_cells(n, clusters)
    if any(_needs_check(m) for _, m in clusters):
        expected = sorted(sorted(set(m)) for _, m in clusters)
        read = sorted(sorted(set(m)) for m in _scorer_reading(cells))
        if expected != read:
            warnings.warn(
                f"document {quote(name)}: some mentions of one cluster overlap (cross, or one ends where another "
                "begins); CoNLL-2012 brackets cannot express that, so the reference scorer will read "
                "different mentions",
                stacklevel=3,
            )
    speakers: List[str] = ["-"] * n
    if "speakers" in doc.spans:
        for span in doc.spans["speakers"]:
            label = _clean_field(span.label_) if span.label_ else "-"
            for i in range(span.start, span.end):
                speakers[i] = label
    col_id = _clean_field(doc_id)
    col_part = str(int(part)) if part.isdigit() else _clean_field(part)
    lines = [f"#begin document {name}"]
    if n:
        from spacy.attrs import ORTH, SENT_START

        # to_array avoids making a Token object per token
        array = doc.to_array([ORTH, SENT_START]).tolist()
        strings = doc.vocab.strings
        word_cache: Dict[int, str] = {}
        word_no = 0
        for i, (orth, sent_start) in enumerate(array):
            if i > 0 and sent_start == 1:
                lines.append("")
                word_no = 0
            word = word_cache.get(orth)
            if word is None:
                word = word_cache[orth] = _clean_field(strings[orth])
            lines.append(f"{col_id}\t{col_part}\t{word_no}\t{word}\t-\t-\t-\t-\t-\t{speakers[i]}\t*\t{cells[i]}")
            word_no += 1
    if n:
        lines.append("")
    lines.append("#end document")
    return lines


def write_conll(docs: Iterable["Doc"], path: Path, *, prefix: str = CLUSTER_PREFIX) -> int:
    """Write Docs as one CoNLL-2012 file the reference scorer reads (atomically).

    Columns (tab-separated, 12): doc id, part number, word number in the
    sentence, word, `-` for POS / parse / lemma / frameset / sense, speaker
    (from doc.spans["speakers"], else `-`), `*` for named entities, and the
    coreference column LAST. Clusters come from the span groups
    f"{prefix}_{N}" (N = 1, 2, ...; other groups are ignored), numbered N.
    doc.user_data "doc_id" / "part" name each document (default `doc_<i>`
    and "0"); blank lines separate sentences.

    RETURNS (int): the number of documents written.
    """
    n_docs = 0
    with atomic_output(path) as tmp:
        with open(tmp, "w", encoding="utf8", newline="\n") as f:
            for doc in docs:
                f.write("\n".join(_doc_lines(doc, n_docs, prefix)))
                f.write("\n")
                n_docs += 1
    return n_docs


def docbin_to_conll(input_path: Path, output_path: Path, *, prefix: str = CLUSTER_PREFIX) -> int:
    """Write the clusters of a DocBin as a CoNLL-2012 file. RETURNS the number of documents."""
    from spacy.vocab import Vocab

    docbin = load_docbin(input_path)
    refuse_overwriting_input([input_path], output_path)
    vocab = Vocab()  # the strings come from the DocBin; no pipeline needed
    with _cached_msgpack_extensions():
        return write_conll(docbin.get_docs(vocab), output_path, prefix=prefix)
