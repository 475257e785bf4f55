"""Corpus input for `annotate`: find the input files, cut the stream of
documents into numbered shards, and read one shard back.

The input is a stream of *items* in a fixed order: the non-blank lines of the
JSONL files, the .txt files, or the Docs of the DocBin files, files in sorted
order of their relative paths (a folder is walked depth-first, each level in
name order). Shard k holds items [k * shard_size, (k + 1) * shard_size), so
every engine cuts the same shards.

Planning a shard (`plan_shards`) reads the bytes once to find where the shard
starts and ends and to fingerprint it (a digest that resume compares); reading
it (`read_shard`) parses the items, on whatever machine annotates the shard.
Neither holds more than one shard in memory.
"""
import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

from ..corpora.docbin import docbin_error
from ..errors import DataFormatError

KINDS = ("jsonl", "txt", "spacy")
SUFFIXES = {".jsonl": "jsonl", ".txt": "txt", ".spacy": "spacy"}
EXCERPT_CHARS = 300


@dataclass(frozen=True)
class InputSpec:
    """Where the corpus is and how to read it.

    root (str): absolute folder the relative file paths start from.
    kind (str): "jsonl", "txt" or "spacy".
    single (Optional[str]): the file's name when INPUT is one file, else None.
    exclude (Optional[str]): an absolute folder inside root to leave out (the
        output folder, when it lies inside the input folder).
    """

    root: str
    kind: str
    single: Optional[str] = None
    exclude: Optional[str] = None

    @property
    def path(self) -> str:
        return os.path.join(self.root, self.single) if self.single else self.root

    def files(self) -> Iterator[str]:
        """Relative (posix) paths of the input files, in input order."""
        if self.single is not None:
            yield self.single
            return
        for rel in _walk(Path(self.root), self.exclude):
            if SUFFIXES.get(Path(rel).suffix) == self.kind:
                yield rel


@dataclass
class ShardPlan:
    """One shard of the input: where its items are and a digest of them.

    index (int): the shard number, from 0.
    kind (str): the input kind.
    root (str): absolute folder of the relative paths in parts.
    parts (List[list]): per input file the shard touches:
        jsonl [relpath, start byte, end byte, line number of the first item],
        txt [relpath], spacy [relpath, first doc, end doc].
    n_items (int): items (documents, good or bad) in the shard.
    digest (str): sha1 over the items' locations and bytes.
    """

    index: int
    kind: str
    root: str
    parts: List[list] = field(default_factory=list)
    n_items: int = 0
    digest: str = ""

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "ShardPlan":
        return cls(**data)


@dataclass
class Item:
    """One input item: a document, or a bad line with the reason.

    file (str): the input file (absolute path).
    line (Optional[int]): its 1-based line (JSONL: the item's line; txt: the
        line of an undecodable byte; otherwise None).
    id (Any): the document id (None for a bad item whose id is unknown).
    content (Union[str, Doc, None]): the text, or a Doc from a DocBin.
    error (Optional[str]): why the item is bad; None for a document.
    excerpt (Optional[str]): the start of a bad line, for the errors file.
    """

    file: str
    line: Optional[int]
    id: Any
    content: Any
    error: Optional[str] = None
    excerpt: Optional[str] = None

    def error_record(self) -> Dict[str, Any]:
        record: Dict[str, Any] = {"file": self.file, "line": self.line, "reason": self.error}
        if self.id is not None:
            record["id"] = self.id
        if self.excerpt is not None:
            record["excerpt"] = self.excerpt
        return record

    def error_message(self) -> str:
        return str(DataFormatError(self.file, self.line, self.error or ""))


def _walk(folder: Path, exclude: Optional[str]) -> Iterator[str]:
    """Relative posix paths of the files under folder: depth-first, each
    level in name order, hidden entries (".name") and `exclude` left out."""

    def walk(current: Path, prefix: str) -> Iterator[str]:
        try:
            entries = sorted(os.scandir(current), key=lambda e: e.name)
        except OSError as err:
            raise DataFormatError(current, None, f"cannot read the folder: {err.strerror or err}") from None
        for entry in entries:
            if entry.name.startswith("."):
                continue
            if entry.is_dir(follow_symlinks=True):
                if exclude is not None and os.path.abspath(entry.path) == exclude:
                    continue
                yield from walk(Path(entry.path), f"{prefix}{entry.name}/")
            elif entry.is_file(follow_symlinks=True):
                yield f"{prefix}{entry.name}"

    yield from walk(folder, "")


def resolve_input(path: Union[str, Path], input_format: str = "auto", *, output_dir: Optional[Union[str, Path]] = None) -> InputSpec:
    """Check INPUT and tell its kind.

    path (Union[str, Path]): a .jsonl, .txt or .spacy file, or a folder of them.
    input_format (str): "auto" (by file suffix) or one of KINDS.
    output_dir (Optional[Union[str, Path]]): left out when it is inside a folder INPUT.
    RETURNS (InputSpec): the input.
    """
    if input_format != "auto" and input_format not in KINDS:
        raise ValueError(f"--input-format must be auto, {', '.join(KINDS)}; got {input_format!r}")
    p = Path(path)
    if not p.exists():
        raise DataFormatError(p, None, "no such file or folder")
    p = p.resolve()
    if p.is_file():
        kind = input_format if input_format != "auto" else SUFFIXES.get(p.suffix)
        if kind is None:
            raise DataFormatError(
                p, None, f"cannot tell the input format from the suffix {p.suffix!r}: give --input-format jsonl, txt or spacy"
            )
        if not os.access(p, os.R_OK):
            raise DataFormatError(p, None, "the file is not readable")
        return InputSpec(root=str(p.parent), kind=kind, single=p.name)
    if not p.is_dir():
        raise DataFormatError(p, None, "not a file or a folder")
    exclude = None
    if output_dir is not None:
        out = Path(output_dir).resolve()
        if out == p:
            raise ValueError(f"OUTPUT_DIR {out} is the input folder: choose another folder")
        if p in out.parents:
            exclude = str(out)
    found: Dict[str, str] = {}
    for rel in _walk(p, exclude):
        kind = SUFFIXES.get(Path(rel).suffix)
        if kind is not None and kind not in found:
            found[kind] = rel
            if input_format == "auto" and len(found) > 1:
                break
        if input_format != "auto" and input_format in found:
            break
    if input_format != "auto":
        if input_format not in found:
            raise DataFormatError(p, None, f"no *.{input_format} files in the folder")
        return InputSpec(root=str(p), kind=input_format, exclude=exclude)
    if not found:
        raise DataFormatError(p, None, "no input files in the folder (*.jsonl, *.txt or *.spacy)")
    if len(found) > 1:
        kinds = ", ".join(f"*.{k} ({v})" for k, v in found.items())
        raise DataFormatError(p, None, f"the folder holds several kinds of input ({kinds}): choose one with --input-format")
    return InputSpec(root=str(p), kind=next(iter(found)), exclude=exclude)


# ----- planning ---------------------------------------------------------------


def _is_blank(raw: bytes) -> bool:
    return not raw.strip()


def _open(path: str):
    try:
        return open(path, "rb")
    except OSError as err:
        raise DataFormatError(path, None, f"cannot open: {err.strerror or err}") from None


def _docbin_len(path: str) -> Tuple[int, str]:
    """(number of Docs, sha1 of the file) of a DocBin."""
    from spacy.tokens import DocBin

    with _open(path) as file_:
        data = file_.read()
    try:
        n_docs = len(DocBin().from_bytes(data))
    except Exception as err:  # zlib / msgpack errors of a file that is not a DocBin
        raise docbin_error(path, data[:2], err) from None
    return n_docs, hashlib.sha1(data).hexdigest()


def plan_shards(spec: InputSpec, shard_size: int) -> Iterator[ShardPlan]:
    """Cut the input into shards of shard_size items, lazily, in order.

    spec (InputSpec): the input.
    shard_size (int): items a shard.
    YIELDS (ShardPlan): shard 0, 1, ...; an empty input yields none.
    """
    if shard_size < 1:
        raise ValueError(f"shard size must be at least 1, got {shard_size}")
    state = {"plan": None, "hash": None}

    def current() -> ShardPlan:
        if state["plan"] is None:
            index = 0 if state.get("last") is None else state["last"] + 1
            state["plan"] = ShardPlan(index=index, kind=spec.kind, root=spec.root)
            state["hash"] = hashlib.sha1()
        return state["plan"]

    def close() -> ShardPlan:
        plan = state["plan"]
        plan.digest = state["hash"].hexdigest()
        state["last"] = plan.index
        state["plan"] = None
        return plan

    for rel in spec.files():
        path = os.path.join(spec.root, rel)
        if spec.kind == "jsonl":
            with _open(path) as file_:
                offset = 0
                part = None
                for line_no, raw in enumerate(file_, start=1):
                    start, offset = offset, offset + len(raw)
                    if _is_blank(raw):
                        continue
                    plan = current()
                    if part is None:
                        part = [rel, start, offset, line_no]
                        plan.parts.append(part)
                    part[2] = offset
                    plan.n_items += 1
                    state["hash"].update(f"{rel}\0{line_no}\0".encode("utf-8"))
                    state["hash"].update(raw.rstrip(b"\r\n"))
                    state["hash"].update(b"\n")
                    if plan.n_items == shard_size:
                        part = None
                        yield close()
        elif spec.kind == "txt":
            with _open(path) as file_:
                data = file_.read()
            plan = current()
            plan.parts.append([rel])
            plan.n_items += 1
            state["hash"].update(f"{rel}\0{len(data)}\0".encode("utf-8"))
            state["hash"].update(data)
            if plan.n_items == shard_size:
                yield close()
        else:
            n_docs, file_sha = _docbin_len(path)
            first = 0
            while first < n_docs:
                plan = current()
                take = min(n_docs - first, shard_size - plan.n_items)
                plan.parts.append([rel, first, first + take])
                plan.n_items += take
                state["hash"].update(f"{rel}\0{file_sha}\0{first}\0{first + take}\0".encode("utf-8"))
                first += take
                if plan.n_items == shard_size:
                    yield close()
    if state["plan"] is not None:
        yield close()


# ----- reading ----------------------------------------------------------------


def _excerpt(raw: bytes, encoding: str) -> str:
    text = raw.rstrip(b"\r\n").decode(encoding, errors="replace")
    return text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS] + "..."


def _json_item(path: str, rel: str, line_no: int, raw: bytes, *, text_field: str, id_field: str, encoding: str) -> Item:
    def bad(reason: str, doc_id: Any = None) -> Item:
        return Item(path, line_no, doc_id, None, error=reason, excerpt=_excerpt(raw, encoding))

    try:
        line = raw.decode(encoding)
    except UnicodeDecodeError as err:
        return bad(f"undecodable bytes: not {encoding} (byte {err.start + 1} of the line)")
    if line_no == 1 and line.startswith("\ufeff"):
        line = line[1:]
    try:
        record = json.loads(line)
    except json.JSONDecodeError as err:
        return bad(f"malformed JSON: {err.msg} (column {err.colno})")
    if not isinstance(record, dict):
        return bad(f"expected a JSON object, found {type(record).__name__}")
    doc_id = record.get(id_field)
    if doc_id is None:
        doc_id = f"{rel}:{line_no}"
    elif isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)):
        return bad(f"field {id_field!r} must be a string or an integer, found {type(doc_id).__name__}")
    if text_field not in record:
        return bad(f"missing text field {text_field!r}", doc_id)
    text = record[text_field]
    if not isinstance(text, str):
        return bad(f"field {text_field!r} must be a string, found {type(text).__name__}", doc_id)
    return Item(path, line_no, doc_id, text)


def _txt_item(path: str, rel: str, data: bytes, encoding: str) -> Item:
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        return Item(path, line, rel, None, error=f"undecodable bytes: not {encoding} (byte {err.start + 1} of the file)")
    if text.startswith("\ufeff"):
        text = text[1:]
    return Item(path, None, rel, text)


def _docbin_id(doc, rel: str, index: int) -> Any:
    user = doc.user_data
    doc_id = user.get("doc_id")
    if isinstance(doc_id, (str, int)) and not isinstance(doc_id, bool):
        part = user.get("part")
        return f"{doc_id}#{part}" if part is not None else doc_id
    gap = user.get("gap")
    if isinstance(gap, dict) and isinstance(gap.get("id"), str):
        return gap["id"]
    return f"{rel}#{index}"


class _DocBinCache:
    """The last DocBin read, so the shards of one file do not reread it."""

    path: Optional[str] = None
    docbin = None


def read_shard(plan: ShardPlan, *, vocab=None, text_field: str = "text", id_field: str = "id", encoding: str = "utf-8") -> Iterator[Item]:
    """Read the items of a shard, in input order.

    plan (ShardPlan): the shard.
    vocab (Optional[Vocab]): the vocab Docs from a DocBin are made with.
    text_field (str): JSONL field of the text.
    id_field (str): JSONL field of the document id (default when absent:
        "relpath:line").
    encoding (str): encoding of JSONL and txt files.
    YIELDS (Item): the shard's items (plan.n_items of them).
    """
    for part in plan.parts:
        rel = part[0]
        path = os.path.join(plan.root, rel)
        if plan.kind == "jsonl":
            _, start, end, line_no = part
            with _open(path) as file_:
                file_.seek(start)
                pos = start
                while pos < end:
                    raw = file_.readline()
                    if not raw:
                        raise DataFormatError(path, line_no, "the file is shorter than when the shards were planned (changed during the run?)")
                    pos += len(raw)
                    if not _is_blank(raw):
                        yield _json_item(path, rel, line_no, raw, text_field=text_field, id_field=id_field, encoding=encoding)
                    line_no += 1
        elif plan.kind == "txt":
            with _open(path) as file_:
                data = file_.read()
            yield _txt_item(path, rel, data, encoding)
        else:
            from spacy.tokens import DocBin

            _, first, end = part
            if _DocBinCache.path != path:
                _DocBinCache.path, _DocBinCache.docbin = None, None
                with _open(path) as file_:
                    _DocBinCache.docbin = DocBin(store_user_data=True).from_bytes(file_.read())
                _DocBinCache.path = path
            if vocab is None:
                raise ValueError("reading a DocBin needs the pipeline's vocab")
            for i, doc in enumerate(_docbin_slice(_DocBinCache.docbin, first, end).get_docs(vocab), start=first):
                yield Item(path, None, _docbin_id(doc, rel, i), doc)


def _docbin_slice(docbin, first: int, end: int):
    """A DocBin of Docs [first, end) of another, without making the others."""
    import copy

    part = copy.copy(docbin)
    for name in ("tokens", "spaces", "cats", "flags", "span_groups", "user_data"):
        setattr(part, name, getattr(docbin, name)[first:end])
    return part
