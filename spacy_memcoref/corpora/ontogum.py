"""OntoGUM in its native form (the GUM repository's `coref/ontogum/`): a
document is `conll/DOC.conll` (three tab-separated columns: token number,
word, coreference brackets; one document a file, no sentence breaks) joined
with `conllu/DOC.conllu` (the same tokens with sentences and `# speaker`
comments). The words are the conllu's (its ordinary token lines, not the
multiword ranges or empty nodes); the conll's must match them. The join gives the same Docs as the CoNLL-2012 form of OntoGUM
(words, sentence starts, speakers, clusters, doc_id, part "000").

The splits come from GUM's `splits.md` ("## train", "## dev", "## test",
"## test2" headings, one "  * DOC" line a document). Reddit documents ship
masked: every character of every word replaced with "_" ("why" -> "___"),
in the conll file and the conllu's FORM column. They are skipped and
counted, never read as text (`conll.is_masked`). Every other problem is a
DataFormatError naming the file and line.
"""

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Dict, Iterator, List, Optional, Tuple

from ..errors import DataFormatError, clip, quote
from ..util import Clusters, atomic_output, refuse_overwriting_input
from .conll import (
    ClusterCollector,
    _make_vocab,
    _RawDoc,
    _raw_to_doc,
    _read_text,
    check_not_partly_masked,
    is_masked,
    masked_report,
    refuse_all_masked,
)

if TYPE_CHECKING:  # pragma: no cover
    from spacy.tokens import Doc

PART = "000"  # the part number of OntoGUM's CoNLL-2012 files

_HEADING_RE = re.compile(r"^##\s+(\S+)\s*$")
_ITEM_RE = re.compile(r"^\s*[*-]\s+(\S+)\s*$")
_TOKEN_ID_RE = re.compile(r"^\d+$")


def read_splits(path: Path) -> Dict[str, List[str]]:
    """GUM's splits.md: split name -> document names, in file order.

    RAISES DataFormatError: a document line outside a split, a document in
        two splits, an unknown line inside a split, no split at all.
    """
    path = Path(path)
    splits: Dict[str, List[str]] = {}
    where: Dict[str, Tuple[str, int]] = {}
    current: Optional[str] = None
    for lineno, line in enumerate(_read_text(path).splitlines(), 1):
        heading = _HEADING_RE.match(line)
        if heading:
            current = heading.group(1)
            splits.setdefault(current, [])
            continue
        item = _ITEM_RE.match(line)
        if item:
            if current is None:
                raise DataFormatError(path, lineno, f"document {quote(item.group(1))} before any '## split' heading")
            name = item.group(1)
            if name in where:
                raise DataFormatError(
                    path,
                    lineno,
                    f"document {quote(name)} is already in split {where[name][0]!r} (line {where[name][1]})",
                )
            where[name] = (current, lineno)
            splits[current].append(name)
        elif current is not None and line.strip():
            raise DataFormatError(
                path, lineno, f"expected '  * DOCUMENT' or a '## split' heading, found {quote(clip(line))}"
            )
    if not splits:
        raise DataFormatError(
            path, None, "no '## split' headings (GUM's splits.md has ## train, ## dev, ## test, ## test2)"
        )
    return splits


@dataclass
class _Conll3:
    words: List[str]
    clusters: Clusters
    begin_line: int


def _read_three_columns(path: Path) -> _Conll3:
    text = _read_text(path)
    if not text.strip():
        raise DataFormatError(path, None, "the file is empty")
    collector = ClusterCollector(path)
    words: List[str] = []
    begin_line = 0
    ended = False
    for lineno, line in enumerate(text.split("\n"), 1):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        if ended:
            raise DataFormatError(path, lineno, "a line after '# end document' (one document a file)")
        if line.startswith("#"):
            if re.match(r"^#\s*begin document", line):
                if begin_line:
                    raise DataFormatError(
                        path, lineno, f"a second '# begin document' (the first is at line {begin_line})"
                    )
                begin_line = lineno
            elif re.match(r"^#\s*end document", line):
                if not begin_line:
                    raise DataFormatError(path, lineno, "'# end document' without a '# begin document' before it")
                clusters = collector.finish(path.stem, lineno)
                ended = True
            else:
                raise DataFormatError(path, lineno, f"an unknown comment line {quote(clip(line))}")
            continue
        if not begin_line:
            raise DataFormatError(path, lineno, "a token line before '# begin document'")
        fields = line.split("\t")
        if len(fields) != 3:
            raise DataFormatError(
                path, lineno, f"{len(fields)} tab-separated columns; OntoGUM's conll has 3 (number, word, coreference)"
            )
        number, word, cell = fields
        if number != str(len(words)):
            raise DataFormatError(path, lineno, f"token number {quote(clip(number))}, expected {len(words)}")
        collector.add(cell, len(words), lineno)
        words.append(word)
    if not begin_line:
        raise DataFormatError(path, None, "no '# begin document' line")
    if not ended:
        raise DataFormatError(path, begin_line, "the document begins here but never ends ('# end document' missing)")
    return _Conll3(words, clusters, begin_line)


def _read_sentences(path: Path, doc_id: str) -> Tuple[List[str], List[bool], List[Optional[str]]]:
    """(words, sentence starts, speakers) of a .conllu file: its ordinary
    token lines (not multiword ranges "3-4", not empty nodes "8.1"); a
    sentence's speaker is its "# speaker", else the one before it."""
    text = _read_text(path)
    if not text.strip():
        raise DataFormatError(path, None, "the file is empty")
    words: List[str] = []
    starts: List[bool] = []
    speakers: List[Optional[str]] = []
    speaker: Optional[str] = None
    new_sentence = True
    for lineno, line in enumerate(text.split("\n"), 1):
        line = line.rstrip("\r")
        if not line.strip():
            # a sentence without "# speaker" (a caption, a heading inside a
            # talk) keeps the speaker before it, as OntoGUM's CoNLL-2012 files do
            new_sentence = True
            continue
        if line.startswith("#"):
            if line.startswith("# newdoc id"):
                name = line.split("=", 1)[-1].strip()
                if name != doc_id:
                    raise DataFormatError(path, lineno, f"newdoc id {quote(name)}, but the file is {quote(doc_id)}")
            elif line.startswith("# speaker"):
                speaker = line.split("=", 1)[-1].strip() or None
            continue
        fields = line.split("\t")
        if len(fields) != 10:
            raise DataFormatError(path, lineno, f"{len(fields)} tab-separated columns; a CoNLL-U token line has 10")
        if not _TOKEN_ID_RE.match(fields[0]):
            if re.match(r"^\d+[-.]\d+$", fields[0]):
                continue  # a multiword token's range or an empty node: not a token of the conll file
            raise DataFormatError(path, lineno, f"bad token id {quote(clip(fields[0]))}")
        words.append(fields[1])
        starts.append(new_sentence)
        speakers.append(speaker)
        new_sentence = False
    return words, starts, speakers


def read_ontogum_doc(conll_path: Path, conllu_path: Path, vocab) -> Optional["Doc"]:
    """One OntoGUM document as a Doc, or None when its words are masked.

    conll_path (Path): conll/DOC.conll. conllu_path (Path): conllu/DOC.conllu.
    vocab (Vocab): the vocab of the Doc.
    RETURNS (Optional[Doc]): words, sentence starts, speakers
        (doc.spans["speakers"]), clusters (doc.spans["coref_clusters_N"]),
        user_data doc_id and part; None for a masked (Reddit) document.
    """
    conll_path, conllu_path = Path(conll_path), Path(conllu_path)
    doc_id = conll_path.stem
    three = _read_three_columns(conll_path)
    if is_masked(three.words):
        return None
    check_not_partly_masked(three.words, conll_path, three.begin_line)
    words, starts, speakers = _read_sentences(conllu_path, doc_id)
    if len(words) != len(three.words):
        raise DataFormatError(conllu_path, None, f"{len(words)} tokens, but {conll_path.name} has {len(three.words)}")
    for i, (a, b) in enumerate(zip(words, three.words)):
        # the words are the conllu's; the conll's must agree, but an empty
        # one is taken as the conllu's (V11.1.0's conll of GUM_news_iodine
        # has an empty word where the conllu and the CoNLL-2012 file have "|")
        if a != b and b != "":
            raise DataFormatError(
                conllu_path, None, f"token {i} is {quote(clip(a))}, but {conll_path.name} has {quote(clip(b))} there"
            )
    raw = _RawDoc(doc_id, PART, three.begin_line, len(words), three.clusters, words, starts, speakers)
    return _raw_to_doc(raw, vocab)


@dataclass
class OntoGUMStats:
    docs: int = 0
    tokens: int = 0
    clusters: int = 0
    mentions: int = 0
    masked: List[str] = field(default_factory=list)
    seconds: float = 0.0

    def __str__(self) -> str:
        return (
            f"{self.docs} docs, {self.tokens} tokens, {self.mentions} mentions, {self.clusters} clusters, "
            f"{masked_report(self.masked)} ({self.seconds:.1f}s)"
        )


def ontogum_documents(root: Path, *, split: Optional[str] = None, splits_path: Optional[Path] = None) -> List[str]:
    """The document names to convert: those of `split` in splits.md, else
    every conll/*.conll file. A split's document without its files is an
    error (a wrong ONTOGUM_DIR), not a skip."""
    root = Path(root)
    for sub in ("conll", "conllu"):
        if not (root / sub).is_dir():
            raise DataFormatError(
                root / sub,
                None,
                "no such folder: ONTOGUM_DIR must hold conll/ and conllu/ (as coref/ontogum/ in the GUM repository)",
            )
    if split is None and splits_path is not None:
        # refused rather than ignored: a user who names splits.md means a split
        raise ValueError(f"--splits {splits_path} needs --split (train, dev, test or test2): which split to convert?")
    if split is None:
        names = sorted(p.stem for p in (root / "conll").glob("*.conll"))
        if not names:
            raise DataFormatError(root / "conll", None, "no *.conll files")
        return names
    if splits_path is None:
        raise ValueError("--split needs --splits (GUM's splits.md)")
    splits = read_splits(splits_path)
    if split not in splits:
        raise ValueError(f"split {split!r} is not in {splits_path} (it has {', '.join(splits)})")
    if not splits[split]:
        raise DataFormatError(splits_path, None, f"split {split!r} lists no document")
    return splits[split]


def iter_ontogum_docs(root: Path, names: List[str], vocab, stats: OntoGUMStats) -> Iterator["Doc"]:
    """The Docs of `names` in ONTOGUM_DIR `root`; masked ones counted in stats."""
    root = Path(root)
    for name in names:
        conll, conllu = root / "conll" / f"{name}.conll", root / "conllu" / f"{name}.conllu"
        for path in (conll, conllu):
            if not path.is_file():
                raise DataFormatError(path, None, f"no such file (document {quote(name)})")
        doc = read_ontogum_doc(conll, conllu, vocab)
        if doc is None:
            stats.masked.append(name)
            continue
        yield doc


def ontogum_to_docbin(
    root: Path, output_path: Path, *, split: Optional[str] = None, splits_path: Optional[Path] = None, lang: str = "en"
) -> OntoGUMStats:
    """Convert OntoGUM's native files to one DocBin, written atomically.

    root (Path): ONTOGUM_DIR, holding conll/ and conllu/.
    output_path (Path): the .spacy file.
    split (Optional[str]): train, dev, test or test2 (needs splits_path);
        None: every document.
    RETURNS (OntoGUMStats): what was written and what was skipped.
    RAISES DataFormatError: bad input, an unknown `lang`, an output path
        that is or is inside conll/ or conllu/ (or ONTOGUM_DIR itself, or
        splits.md), every document masked.
    RAISES ValueError: a split that is not in splits.md, splits.md without a split.
    """
    from spacy.tokens import DocBin

    from ..doc_helpers.clusters import cluster_span_groups

    start = time.time()
    # what is read: the two folders, not ONTOGUM_DIR as a whole (an output beside them is fine)
    read = [Path(root) / "conll", Path(root) / "conllu", *([splits_path] if splits_path is not None else [])]
    refuse_overwriting_input(read, output_path)
    names = ontogum_documents(root, split=split, splits_path=splits_path)
    vocab = _make_vocab(lang, Path(root))
    stats = OntoGUMStats()
    docbin = DocBin(store_user_data=True)
    for doc in iter_ontogum_docs(root, names, vocab, stats):
        docbin.add(doc)
        stats.docs += 1
        stats.tokens += len(doc)
        groups = cluster_span_groups(doc)
        stats.clusters += len(groups)
        stats.mentions += sum(len(g) for g in groups)
    if stats.docs == 0:
        refuse_all_masked(Path(root), stats.masked)
    with atomic_output(Path(output_path)) as tmp:
        docbin.to_disk(tmp)
    stats.seconds = time.time() - start
    return stats
