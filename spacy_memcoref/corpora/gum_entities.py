"""GUM's own entity layer: every mention (singletons included) with its
entity type and information status, read from GUM's `dep/DOC.conllu` files
and put on the OntoGUM Docs as extra supervision.

OntoGUM (the OntoNotes-scheme conversion that s2e is scored on) keeps only
mentions that corefer; GUM's MISC column `Entity=` marks every mention. The
format (GUM's README, "Entity"; CorefUD's bracket scheme):

- each document declares its field order once, e.g.
  `# global.Entity = GRP-etype-infstat-salience-centering-minspan-link-identity`
  (GRP: the entity/coreference group id; the fields are joined by "-"; the
  last field, identity (a Wikipedia title), is present only for named
  entities, and may itself contain "-");
- a mention opens on its first token with `(GRP-etype-infstat-...` and closes
  on its last token with `GRP)`; a one-token mention is `(GRP-...)` on one
  token; brackets of nested mentions are concatenated on a token without a
  separator, e.g. `Entity=(175-time-giv:inact-nnnnn-cf5-1-coref)189)188)`;
- the brackets of a token are read in the order written; a closing `GRP)`
  closes the latest still-open mention of entity GRP (a stack per GRP).

Token indexes are document-level indexes over the ordinary token lines
(`3`, not the multiword-token ranges `3-4` nor the empty nodes `5.1`), which
is how OntoGUM numbers its tokens, so the mentions align with the OntoGUM
Docs token for token. An `Entity=` on a range or an empty node cannot be
placed on such a token and is refused (GUM V11.1.0 has none).

On a Doc (`add_gum_mentions`) the mentions are two parallel SpanGroups, one
span per mention, in the same order (by start, then longer first, then the
order the mentions were opened in):

- `doc.spans["gum_mentions"]`: label = entity type ("person", "place", ...),
  `span.id_` = the GRP id as written ("12": the same id = the same entity in
  GUM's own coreference, so singletons are the ids seen once),
  `span.kb_id_` = the identity (Wikipedia title) or "";
- `doc.spans["gum_infstat"]`: the same spans, label = information status
  ("new", "giv:act", "giv:inact", "acc:inf", "acc:aggr", "acc:com", and
  GUM's rare "undefined").

Both survive `DocBin(store_user_data=True)`. A training loss reads a
mention's span from either group and its two labels at the same index.

Every problem is a DataFormatError naming the file, the line and the
document.
"""

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Dict, Iterable, Iterator, List, Optional, Tuple, Union

from ..doc_helpers.gold import GUM_INFSTAT_KEY, GUM_MENTIONS_KEY
from ..errors import DataFormatError, clip, quote
from ..util import atomic_output, refuse_overwriting_input
from .conll import _read_text
from .docbin import load_docbin

if TYPE_CHECKING:  # pragma: no cover
    from spacy.tokens import Doc

# the span groups' names: their home is doc_helpers.gold, which reads them for training
MENTIONS_KEY = GUM_MENTIONS_KEY
INFSTAT_KEY = GUM_INFSTAT_KEY
CONLLU_SUFFIX = ".conllu"

# the field order is each document's own `# global.Entity` line (GUM V11.1.0:
# GRP-etype-infstat-salience-centering-minspan-link-identity)
_REQUIRED_FIELDS = ("etype", "infstat")
_ID_FIELDS = ("GRP", "eid")  # GUM calls the entity id GRP, CorefUD eid

_GLOBAL_RE = re.compile(r"^#\s*global\.Entity\s*=\s*(\S+)\s*$")
_NEWDOC_RE = re.compile(r"^#\s*newdoc\s+id\s*=\s*(\S+)\s*$")
# one bracket item: an opening "(GRP-fields" (its fields run to the next
# bracket) with an optional ")" (a one-token mention), or a closing "GRP)";
# a value is such items concatenated
_ITEM_RE = re.compile(r"\(([^()]*)(\)?)|([^()]+)\)")
_ITEMS_RE = re.compile(r"(?:\([^()]*\)?|[^()]+\))+")
_TOKEN_ID_RE = re.compile(r"^[1-9][0-9]*$")
_RANGE_ID_RE = re.compile(r"^[0-9]+-[0-9]+$")
_EMPTY_ID_RE = re.compile(r"^[0-9]+\.[0-9]+$")


@dataclass(frozen=True)
class GumMention:
    """One mention of GUM's entity layer.

    start (int): its first token, a document-level index (0-based).
    end (int): one past its last token: END EXCLUSIVE, as spaCy's Span.end.
    entity (str): the GRP id as written; the same id = the same entity.
    etype (str): the entity type (person, place, organization, object, event,
        time, substance, animal, plant, abstract, quantity).
    infstat (str): the information status (new, giv:act, giv:inact, acc:inf,
        acc:aggr, acc:com, ...).
    attrs (Tuple[Tuple[str, str], ...]): every declared field after GRP, by
        name, as written (salience, centering, minspan, link, identity, ...;
        a trailing field left out is absent).
    line (int): the line the mention opens on.
    """

    start: int
    end: int
    entity: str
    etype: str
    infstat: str
    attrs: Tuple[Tuple[str, str], ...] = ()
    line: int = 0

    def get(self, name: str, default: Optional[str] = None) -> Optional[str]:
        """A field by its declared name ("link", "identity", ...), else default."""
        for key, value in self.attrs:
            if key == name:
                return value
        return default

    @property
    def identity(self) -> str:
        """The Wikipedia title of a named entity, "" when there is none."""
        return self.get("identity") or ""

    @property
    def link(self) -> str:
        """The coreference link type (coref, ana, appos, cata, disc, pred, sgl), "" when absent."""
        return self.get("link") or ""


@dataclass
class GumDoc:
    """One document of GUM's entity layer.

    doc_id (str): the `# newdoc id`.
    path (Path): the file it was read from.
    begin_line (int): the line of its `# newdoc id`.
    words (List[str]): its ordinary tokens' forms (the OntoGUM Doc's words).
    lines (List[int]): the line of each token.
    sent_starts (List[bool]): whether each token starts a sentence.
    heads (List[int]): each token's syntactic head (HEAD column) as a
        document-level token index, -1 for a sentence's root.
    deprels (List[str]): each token's DEPREL (basic relation, e.g. "nsubj", "cop").
    mentions (List[GumMention]): every mention, sorted by start, longer
        first, then in the order opened.
    """

    doc_id: str
    path: Path
    begin_line: int
    words: List[str] = field(default_factory=list)
    lines: List[int] = field(default_factory=list)
    sent_starts: List[bool] = field(default_factory=list)
    heads: List[int] = field(default_factory=list)
    deprels: List[str] = field(default_factory=list)
    mentions: List[GumMention] = field(default_factory=list)

    def singletons(self) -> List[GumMention]:
        """The mentions whose entity (GRP id) has no other mention in the document."""
        counts: Dict[str, int] = {}
        for mention in self.mentions:
            counts[mention.entity] = counts.get(mention.entity, 0) + 1
        return [m for m in self.mentions if counts[m.entity] == 1]


# --------------------------------------------------------------------------- #
# Reading
# --------------------------------------------------------------------------- #


def _parse_fields(header: str, path: Path, lineno: int) -> Tuple[str, ...]:
    names = tuple(header.split("-"))
    if names[0] not in _ID_FIELDS:
        raise DataFormatError(
            path,
            lineno,
            f"'# global.Entity' must start with the entity id field (GRP or eid), found {quote(clip(header))}",
        )
    missing = [name for name in _REQUIRED_FIELDS if name not in names]
    if missing or len(set(names)) != len(names):
        raise DataFormatError(
            path,
            lineno,
            f"'# global.Entity = {clip(header)}' lacks {', '.join(missing) or 'unique field names'} "
            "(GUM declares GRP-etype-infstat-salience-centering-minspan-link-identity)",
        )
    return names


class _DocReader:
    """The token lines of one document: words and the Entity= brackets."""

    def __init__(self, path: Path, doc_id: str, lineno: int, fields: Optional[Tuple[str, ...]]) -> None:
        self.doc = GumDoc(doc_id, path, lineno)
        self.fields = fields
        self.stacks: Dict[str, List[Tuple[int, str, Tuple[Tuple[str, str], ...], int, int]]] = {}
        self.found: List[Tuple[int, int, int, GumMention]] = []  # (start, -end, order, mention)
        self.opened = 0

    def where(self) -> str:
        return f"document {quote(self.doc.doc_id)}"

    def entity(self, value: str, tok: int, lineno: int) -> None:
        path = self.doc.path
        if not _ITEMS_RE.fullmatch(value):
            raise DataFormatError(
                path,
                lineno,
                f"{self.where()}: bad Entity value {quote(value)}: expected brackets such as "
                "'(12-person-new-...' (opening), '12)' (closing) or '(12-person-new-...)' (one token), concatenated",
            )
        if self.fields is None:
            raise DataFormatError(
                path,
                lineno,
                f"{self.where()}: an Entity annotation before any '# global.Entity = ...' line (the field order)",
            )
        n_fields = len(self.fields)
        for content, single, closing in _ITEM_RE.findall(value):
            if closing:
                stack = self.stacks.get(closing)
                if not stack:
                    raise DataFormatError(
                        path,
                        lineno,
                        f"{self.where()}: closing bracket '{clip(closing)})' with no open mention of entity {clip(closing)}",
                    )
                self.close(stack.pop(), tok)
                continue
            opening, _, rest = content.partition("-")
            # the last declared field (identity) may itself hold "-"
            values = rest.split("-", n_fields - 2) if rest and n_fields > 1 else []
            attrs = tuple(zip(self.fields[1:], values))
            named = dict(attrs)
            if not opening or not all(named.get(name) for name in _REQUIRED_FIELDS):
                raise DataFormatError(
                    path,
                    lineno,
                    f"{self.where()}: a mention with no entity id, or without {' or '.join(_REQUIRED_FIELDS)}, "
                    f"in {quote(value)} (declared: {'-'.join(self.fields)})",
                )
            item = (tok, opening, attrs, lineno, self.opened)
            self.opened += 1
            if single:
                self.close(item, tok)
            else:
                self.stacks.setdefault(opening, []).append(item)

    def close(self, item: Tuple[int, str, Tuple[Tuple[str, str], ...], int, int], tok: int) -> None:
        start, entity, attrs, lineno, order = item
        named = dict(attrs)
        mention = GumMention(start, tok + 1, entity, named["etype"], named["infstat"], attrs, lineno)
        self.found.append((start, -(tok + 1), order, mention))

    def finish(self, end_line: int) -> GumDoc:
        for entity, stack in self.stacks.items():
            if stack:
                raise DataFormatError(
                    self.doc.path,
                    stack[-1][3],
                    f"{self.where()}: a mention of entity {clip(entity)} opened here is "
                    f"never closed (the document ends at line {end_line})",
                )
        self.found.sort(key=lambda found: found[:3])
        self.doc.mentions = [found[3] for found in self.found]
        return self.doc


def iter_gum_docs(path: Union[str, Path]) -> Iterator[GumDoc]:
    """The documents of one GUM .conllu file, in file order.

    path (Union[str, Path]): the file (one or more `# newdoc id` documents).
    YIELDS (GumDoc): each document with its words and mentions.
    RAISES DataFormatError: naming the file, line and document.
    """
    path = Path(path)
    text = _read_text(path)
    if not text.strip():
        raise DataFormatError(path, None, "the file is empty")
    reader: Optional[_DocReader] = None
    fields: Optional[Tuple[str, ...]] = None
    new_sentence = True
    expected_id = 1
    sent_start = 0
    lineno = 0
    for lineno, line in enumerate(text.split("\n"), 1):
        line = line.rstrip("\r")
        if not line.strip():
            new_sentence = True
            expected_id = 1
            continue
        if line.startswith("#"):
            newdoc = _NEWDOC_RE.match(line)
            if newdoc:
                if reader is not None:
                    yield reader.finish(lineno - 1)
                reader = _DocReader(path, newdoc.group(1), lineno, fields)
                continue
            header = _GLOBAL_RE.match(line)
            if header:
                fields = _parse_fields(header.group(1), path, lineno)
                if reader is not None:
                    reader.fields = fields
            continue
        columns = line.split("\t")
        if len(columns) != 10:
            raise DataFormatError(path, lineno, f"{len(columns)} tab-separated columns; a CoNLL-U token line has 10")
        token_id, form, misc = columns[0], columns[1], columns[9]
        entity = None
        if misc not in ("_", ""):
            for part in misc.split("|"):
                if part.startswith("Entity="):
                    entity = part[len("Entity=") :]
        if _RANGE_ID_RE.match(token_id) or _EMPTY_ID_RE.match(token_id):
            if entity is not None:
                kind = "a multiword-token range" if "-" in token_id else "an empty node"
                where = f"{reader.where()}: " if reader is not None else ""
                raise DataFormatError(
                    path,
                    lineno,
                    f"{where}an Entity annotation on {kind} ({quote(token_id)}): its mentions cannot be "
                    "placed on the document's ordinary tokens",
                )
            continue
        if not _TOKEN_ID_RE.match(token_id):
            raise DataFormatError(
                path,
                lineno,
                f"bad token id {quote(clip(token_id))} (expected 1, 2, ..., a range 3-4 or an empty node 5.1)",
            )
        if int(token_id) != expected_id:
            raise DataFormatError(
                path,
                lineno,
                f"token id {quote(token_id)}, expected {expected_id} (a missing blank line between sentences?)",
            )
        expected_id += 1
        if reader is None:
            raise DataFormatError(path, lineno, "a token line before any '# newdoc id = ...' line")
        doc = reader.doc
        tok = len(doc.words)
        doc.words.append(form)
        doc.lines.append(lineno)
        if new_sentence:
            sent_start = tok
        doc.sent_starts.append(new_sentence)
        new_sentence = False
        head = columns[6]
        if not head.isdigit():
            raise DataFormatError(
                path, lineno, f"bad HEAD {quote(clip(head))} (expected a token number, 0 for the root)"
            )
        doc.heads.append(sent_start + int(head) - 1 if head != "0" else -1)
        doc.deprels.append(columns[7])
        if entity is not None:
            reader.entity(entity, tok, lineno)
    if reader is None:
        raise DataFormatError(path, None, "no '# newdoc id = ...' line: not a GUM document")
    yield reader.finish(lineno)


def find_gum_files(path: Union[str, Path]) -> List[Path]:
    """A .conllu file, or the *.conllu files of a folder (recursively, sorted)."""
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.rglob(f"*{CONLLU_SUFFIX}") if p.is_file())
        if not files:
            raise DataFormatError(path, None, f"no *{CONLLU_SUFFIX} files in this folder (expected GUM's dep/ folder)")
        return files
    if not path.exists():
        raise DataFormatError(path, None, "no such file or directory (expected GUM's dep/ folder or a .conllu file)")
    return [path]


def read_gum_entities(path: Union[str, Path]) -> Dict[str, GumDoc]:
    """GUM's entity layer: document id -> its words and every mention.

    path (Union[str, Path]): GUM's dep/ folder (every *.conllu, recursively)
        or one .conllu file.
    RETURNS (Dict[str, GumDoc]): by `# newdoc id`, in file order. Each
        GumDoc's `mentions` are GumMention(start, end EXCLUSIVE, entity id,
        etype, infstat, attrs, line), document-level token indexes over the
        ordinary tokens (no multiword ranges, no empty nodes).
    RAISES DataFormatError: an unbalanced or malformed bracket, a document in
        two files, a bad token line: naming the file, the line and the document.
    """
    docs: Dict[str, GumDoc] = {}
    for file in find_gum_files(path):
        for doc in iter_gum_docs(file):
            if doc.doc_id in docs:
                first = docs[doc.doc_id]
                raise DataFormatError(
                    file,
                    doc.begin_line,
                    f"document {quote(doc.doc_id)} again (first in {first.path}, line {first.begin_line})",
                )
            docs[doc.doc_id] = doc
    return docs


# --------------------------------------------------------------------------- #
# Putting the mentions on OntoGUM Docs
# --------------------------------------------------------------------------- #


def _doc_id(doc: "Doc") -> str:
    return str(doc.user_data.get("doc_id", "")) if doc.user_data else ""


def check_alignment(doc: "Doc", gum_doc: GumDoc) -> None:
    """Refuse a Doc whose words are not the GUM document's, in order.

    RAISES DataFormatError: naming the GUM file, the line of the first
        differing token (or of the document) and both documents.
    """
    name = f"document {quote(gum_doc.doc_id)}"
    doc_id = _doc_id(doc)
    if doc_id and doc_id != gum_doc.doc_id:
        raise DataFormatError(gum_doc.path, gum_doc.begin_line, f"{name} is not the Doc's document {quote(doc_id)}")
    words = [token.text for token in doc]
    for i, (ours, theirs) in enumerate(zip(words, gum_doc.words)):
        if ours != theirs:
            raise DataFormatError(
                gum_doc.path,
                gum_doc.lines[i],
                f"{name}: token {i} is {quote(theirs)} here but {quote(ours)} in the "
                "Doc: the two are not the same tokens",
            )
    if len(words) != len(gum_doc.words):
        line = gum_doc.lines[len(words)] if len(gum_doc.words) > len(words) else gum_doc.begin_line
        raise DataFormatError(
            gum_doc.path,
            line,
            f"{name} has {len(gum_doc.words)} tokens, the Doc {len(words)} (the first "
            f"{min(len(words), len(gum_doc.words))} agree): the two are not the same tokens",
        )


def add_gum_mentions(
    doc: "Doc", gum_doc: GumDoc, key: str = MENTIONS_KEY, *, infstat_key: Optional[str] = INFSTAT_KEY
) -> "Doc":
    """Put GUM's mentions on a Doc of the same document (e.g. an OntoGUM Doc).

    doc (Doc): the Doc; its words must be the GUM document's, in order.
    gum_doc (GumDoc): the document from read_gum_entities.
    key (str): the span group of the mentions: label = entity type,
        span.id_ = GUM's entity id, span.kb_id_ = identity or "".
    infstat_key (Optional[str]): the parallel span group (same spans, same
        order), label = information status; None: not written.
    RETURNS (Doc): the same Doc.
    RAISES DataFormatError: the words differ (the file, line, document, token).
    """
    from spacy.tokens import Span, SpanGroup

    check_alignment(doc, gum_doc)
    mentions = gum_doc.mentions
    spans = [Span(doc, m.start, m.end, label=m.etype, kb_id=m.identity, span_id=m.entity) for m in mentions]
    doc.spans[key] = SpanGroup(doc, name=key, spans=spans)
    if infstat_key is not None:
        infstat = [Span(doc, m.start, m.end, label=m.infstat, kb_id=m.identity, span_id=m.entity) for m in mentions]
        doc.spans[infstat_key] = SpanGroup(doc, name=infstat_key, spans=infstat)
    return doc


def attach_gum_entities(
    docs: Iterable["Doc"],
    gum: Union[str, Path, Dict[str, GumDoc]],
    *,
    key: str = MENTIONS_KEY,
    infstat_key: Optional[str] = INFSTAT_KEY,
    missing: str = "error",
) -> List["Doc"]:
    """Add GUM's mentions to every Doc, matched by `doc.user_data["doc_id"]`
    (what the CoNLL-2012 and OntoGUM readers set).

    docs (Iterable[Doc]): e.g. read_conll_docs(...) or a DocBin's docs.
    gum (Union[str, Path, Dict[str, GumDoc]]): GUM's dep/ folder, or what
        read_gum_entities returned.
    key, infstat_key: as add_gum_mentions.
    missing (str): a Doc with no GUM document: "error" (the default) or
        "skip" (left as it is).
    RETURNS (List[Doc]): the Docs, in order.
    RAISES DataFormatError: a Doc without doc_id, or with no GUM document
        (missing="error"), or whose words differ.
    """
    if missing not in ("error", "skip"):
        raise ValueError(f"missing must be 'error' or 'skip', not {missing!r}")
    where = Path(gum) if not isinstance(gum, dict) else None
    gum_docs = gum if isinstance(gum, dict) else read_gum_entities(gum)
    out = []
    for i, doc in enumerate(docs):
        doc_id = _doc_id(doc)
        gum_doc = gum_docs.get(doc_id) if doc_id else None
        if gum_doc is None:
            if missing == "error":
                reason = (
                    f"Doc {i} has no user_data['doc_id'] to find its GUM document by"
                    if not doc_id
                    else f"Doc {i} ({quote(doc_id)}) has no GUM document in GUM's entity layer"
                )
                raise DataFormatError(where or "GUM's entity layer", None, reason)
        else:
            add_gum_mentions(doc, gum_doc, key, infstat_key=infstat_key)
        out.append(doc)
    return out


def attach_gum_entities_docbin(
    input_path: Union[str, Path],
    output_path: Union[str, Path],
    gum: Union[str, Path, Dict[str, GumDoc]],
    *,
    key: str = MENTIONS_KEY,
    infstat_key: Optional[str] = INFSTAT_KEY,
    missing: str = "error",
) -> int:
    """A DocBin's Docs with GUM's mentions added, written (atomically) as a new DocBin.

    input_path: the DocBin to read (e.g. corpus/ontogum/train.spacy).
    output_path: the DocBin to write (never the input).
    gum, key, infstat_key, missing: as attach_gum_entities.
    RETURNS (int): the number of Docs written.
    """
    from spacy.tokens import DocBin
    from spacy.vocab import Vocab

    refuse_overwriting_input([Path(input_path)], Path(output_path))
    docs = list(load_docbin(input_path).get_docs(Vocab()))
    docs = attach_gum_entities(docs, gum, key=key, infstat_key=infstat_key, missing=missing)
    out = DocBin(store_user_data=True, docs=docs)
    with atomic_output(Path(output_path)) as tmp:
        out.to_disk(tmp)
    return len(docs)
