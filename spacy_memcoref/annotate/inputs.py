"""Corpus input for `annotate`: find the input files, cut the stream of
documents into numbered shards, and read one shard back.

The input is a stream of *items* in a fixed order: the non-blank lines of the
JSONL files, the .txt files, or the Docs of the DocBin files, files in sorted
order of their relative paths (a folder is walked depth-first, each level in
name order). Shard k holds items [k * shard_size, (k + 1) * shard_size), so
every engine cuts the same shards.

Bad input, one rule for lines and files: an item that cannot be made a
document is a *bad item* at its place in the stream, recorded as
`file[:line]: reason` (an error record {"file", "line", "reason"} in
shard-*.errors.jsonl with --skip-errors; without it, the run stops at the
shard that holds it with that message, and writes nothing of that shard: the
shards before it are kept whole, so a rerun resumes). A bad line (malformed JSON, no text, undecodable bytes) is one
bad item. So is a bad *file*, as a whole: a folder or file that cannot be
listed, opened or read, a symbolic link loop (a link that resolves to itself,
or a folder link that leads back to a folder above it: never followed), a
broken link with the input's suffix, and a DocBin that does not decode (a
truncated or corrupt .spacy file). A bad file counts as exactly one item and
one error, whatever it may have held, since its documents cannot be counted;
so items in = documents out + errors, always, and the other files' documents
are all annotated.

Document ids are strings in the output (a JSON id 7 is written "7"). Ids
need not be unique: a document whose id an earlier one has is annotated all
the same, and counted (the runner warns once a run; `shard_ids` gives the
ids of a shard done by an earlier run, so that the count covers the whole
output on resume too).

Planning a shard (`plan_shards`) reads the bytes once to find where the shard
starts and ends and to fingerprint it (a digest that resume compares); reading
it (`read_shard`) parses the items, on whatever machine annotates the shard.
Neither holds more than one shard in memory.
"""

import errno
import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, NamedTuple, Optional, Tuple, Union

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

    def entries(self) -> Iterator[Tuple[str, Optional[str]]]:
        """(relative posix path, None) of each input file, in input order,
        and (relative path, reason) at its place of each bad entry that
        may hold input: a folder that cannot be listed, a symbolic link loop,
        an unreadable or broken entry with the input's suffix."""
        if self.single is not None:
            yield self.single, None
            return
        for entry in _walk(Path(self.root), self.exclude):
            if entry.error is not None:
                if entry.folder or SUFFIXES.get(Path(entry.rel).suffix) == self.kind:
                    yield entry.rel, entry.error
            elif SUFFIXES.get(Path(entry.rel).suffix) == self.kind:
                yield entry.rel, None


@dataclass
class ShardPlan:
    """One shard of the input: where its items are and a digest of them.

    index (int): the shard number, from 0.
    kind (str): the input kind.
    root (str): absolute folder of the relative paths in parts.
    parts (List[Union[list, dict]]): per input file the shard touches:
        jsonl [relpath, start byte, end byte, line number of the first item],
        txt [relpath], spacy [relpath, first doc, end doc].
        A bad file is the part {"file": relpath, "line": line or None,
        "error": reason}: one item.
    n_items (int): items (documents, good or bad) in the shard.
    digest (str): sha1 over the items' locations and bytes.
    """

    index: int
    kind: str
    root: str
    parts: List[Union[list, Dict[str, Any]]] = field(default_factory=list)
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
    id (Optional[str]): the document id, as a string (None for a bad item
        whose id is unknown).
    content (Union[str, Doc, None]): the text, or a Doc from a DocBin.
    error (Optional[str]): why the item is bad; None for a document.
    excerpt (Optional[str]): the start of a bad line, for the errors file.
    """

    file: str
    line: Optional[int]
    id: Optional[str]
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


class _Entry(NamedTuple):
    """A file found by _walk, or a bad entry (error: why) at its place;
    folder: the bad entry is (or may be) a folder, so it may hold input of
    any kind."""

    rel: str
    error: Optional[str] = None
    folder: bool = False


def _walk(folder: Path, exclude: Optional[str]) -> Iterator[_Entry]:
    """The files under folder, as relative posix paths: depth-first, each
    level in name order, hidden entries (".name") and `exclude` left out.
    A subfolder that cannot be listed, a symbolic link loop (never followed)
    and an entry that cannot be looked at come as bad entries at their place;
    a root folder that cannot be listed raises DataFormatError."""

    def bad_stat(entry: os.DirEntry, prefix: str, err: OSError) -> _Entry:
        rel = f"{prefix}{entry.name}"
        if err.errno == errno.ELOOP:
            return _Entry(rel, f"a symbolic link loop ({err.strerror}): not followed", folder=True)
        return _Entry(rel, f"cannot read: {err.strerror or err}")

    def walk(current: Path, prefix: str, above: frozenset) -> Iterator[_Entry]:
        try:
            entries = sorted(os.scandir(current), key=lambda e: e.name)
        except OSError as err:
            if not prefix:
                raise DataFormatError(current, None, f"cannot read the folder: {err.strerror or err}") from None
            yield _Entry(prefix.rstrip("/"), f"cannot read the folder: {err.strerror or err}", folder=True)
            return
        for entry in entries:
            if entry.name.startswith("."):
                continue
            try:
                is_dir = entry.is_dir(follow_symlinks=True)
                is_file = not is_dir and entry.is_file(follow_symlinks=True)
                key = None
                if is_dir:
                    stat = entry.stat(follow_symlinks=True)
                    key = (stat.st_dev, stat.st_ino)
            except OSError as err:
                yield bad_stat(entry, prefix, err)
                continue
            if is_dir:
                if exclude is not None and os.path.abspath(entry.path) == exclude:
                    continue
                if key in above:
                    target = os.path.realpath(entry.path)
                    yield _Entry(
                        f"{prefix}{entry.name}",
                        f"a symbolic link loop: it leads back to {target}, a folder above it (not followed)",
                        folder=True,
                    )
                    continue
                yield from walk(Path(entry.path), f"{prefix}{entry.name}/", above | {key})
            elif is_file:
                yield _Entry(f"{prefix}{entry.name}")
            elif entry.is_symlink() and not os.path.exists(entry.path):
                yield _Entry(f"{prefix}{entry.name}", "a broken symbolic link: its target does not exist")
            # else a socket, FIFO or device: no input

    try:
        root = os.stat(folder)
    except OSError as err:
        raise DataFormatError(folder, None, f"cannot read the folder: {err.strerror or err}") from None
    yield from walk(folder, "", frozenset({(root.st_dev, root.st_ino)}))


def resolve_input(
    path: Union[str, Path], input_format: str = "auto", *, output_dir: Optional[Union[str, Path]] = None
) -> InputSpec:
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
                p,
                None,
                f"cannot tell the input format from the suffix {p.suffix!r}: give --input-format jsonl, txt or spacy",
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
    for entry in _walk(p, exclude):
        if entry.error is not None:  # a bad entry tells no kind; it is reported when the input is read
            continue
        kind = SUFFIXES.get(Path(entry.rel).suffix)
        if kind is not None and kind not in found:
            found[kind] = entry.rel
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
        raise DataFormatError(
            p, None, f"the folder holds several kinds of input ({kinds}): choose one with --input-format"
        )
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
    """(number of Docs, sha1 of the file) of a DocBin; DataFormatError when
    it cannot be opened or read or does not decode."""
    from spacy.tokens import DocBin

    with _open(path) as file_:
        try:
            data = file_.read()
        except OSError as err:
            raise DataFormatError(path, None, f"cannot read: {err.strerror or err}") from None
    try:
        n_docs = len(DocBin().from_bytes(data))
    except Exception as err:  # zlib / msgpack errors of a file that is not a DocBin
        raise docbin_error(path, data[:2], err) from None
    return n_docs, hashlib.sha1(data).hexdigest()


def plan_shards(spec: InputSpec, shard_size: int) -> Iterator[ShardPlan]:
    """Cut the input into shards of shard_size items, lazily, in order.

    spec (InputSpec): the input.
    shard_size (int): items a shard.
    YIELDS (ShardPlan): shard 0, 1, ...; an empty input yields none. A bad
        file (see the module docstring) is one bad item of its shard.
    """
    if shard_size < 1:
        raise ValueError(f"shard size must be at least 1, got {shard_size}")
    # the open shard (a ShardPlan or None), its sha1, the last closed shard's index
    state: Dict[str, Any] = {"plan": None, "hash": None}

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

    def bad_file(rel: str, line: Optional[int], reason: str) -> Optional[ShardPlan]:
        """Add a bad file as one item; RETURNS the shard when that fills it."""
        plan = current()
        plan.parts.append({"file": rel, "line": line, "error": reason})
        plan.n_items += 1
        state["hash"].update(f"{rel}\0{line}\0error\0{reason}\n".encode("utf-8", "surrogateescape"))
        return close() if plan.n_items == shard_size else None

    for rel, error in spec.entries():
        path = os.path.join(spec.root, rel)
        if error is not None:
            full = bad_file(rel, None, error)
            if full is not None:
                yield full
            continue
        if spec.kind == "jsonl":
            try:
                file_ = _open(path)
            except DataFormatError as err:
                full = bad_file(rel, None, err.reason)
                if full is not None:
                    yield full
                continue
            with file_:
                offset = 0
                part = None
                line_no = 0
                lines = iter(file_)
                while True:
                    try:
                        raw = next(lines)
                    except StopIteration:
                        break
                    except OSError as err:  # an I/O error part way: the rest of the file is one bad item
                        full = bad_file(
                            rel, line_no + 1, f"cannot read the file from this line on: {err.strerror or err}"
                        )
                        if full is not None:
                            yield full
                        break
                    line_no += 1
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
            try:
                with _open(path) as file_:
                    data = file_.read()
            except DataFormatError as err:
                data, reason = None, err.reason
            except OSError as err:
                data, reason = None, f"cannot read: {err.strerror or err}"
            if data is None:
                full = bad_file(rel, None, reason)
                if full is not None:
                    yield full
                continue
            plan = current()
            plan.parts.append([rel])
            plan.n_items += 1
            state["hash"].update(f"{rel}\0{len(data)}\0".encode("utf-8"))
            state["hash"].update(data)
            if plan.n_items == shard_size:
                yield close()
        else:
            try:
                n_docs, file_sha = _docbin_len(path)
            except DataFormatError as err:
                full = bad_file(rel, None, err.reason)
                if full is not None:
                    yield full
                continue
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
    doc_id = str(doc_id)  # 7 and "7" are the same id, written "7"
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
        return Item(
            path, line, rel, None, error=f"undecodable bytes: not {encoding} (byte {err.start + 1} of the file)"
        )
    if text.startswith("\ufeff"):
        text = text[1:]
    return Item(path, None, rel, text)


def _docbin_id(user: Dict[Any, Any], rel: str, index: int) -> str:
    """The id of Doc `index` of a DocBin, from its user_data."""
    doc_id = user.get("doc_id")
    if isinstance(doc_id, (str, int)) and not isinstance(doc_id, bool):
        part = user.get("part")
        return f"{doc_id}#{part}" if part is not None else str(doc_id)
    gap = user.get("gap")
    if isinstance(gap, dict) and isinstance(gap.get("id"), str):
        return gap["id"]
    return f"{rel}#{index}"


class _DocBinCache:
    """The last DocBin read, so the shards of one file do not reread it."""

    path: Optional[str] = None
    docbin: Any = None  # a spacy.tokens.DocBin


def read_shard(
    plan: ShardPlan, *, vocab=None, text_field: str = "text", id_field: str = "id", encoding: str = "utf-8"
) -> Iterator[Item]:
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
        if isinstance(part, dict):  # a bad file: one bad item
            yield Item(os.path.join(plan.root, part["file"]), part["line"], None, None, error=part["error"])
            continue
        rel = part[0]
        path = os.path.join(plan.root, rel)
        if plan.kind == "jsonl":
            for line_no, raw in _jsonl_lines(path, part):
                yield _json_item(path, rel, line_no, raw, text_field=text_field, id_field=id_field, encoding=encoding)
        elif plan.kind == "txt":
            with _open(path) as file_:
                data = file_.read()
            yield _txt_item(path, rel, data, encoding)
        else:
            from spacy.tokens import DocBin

            _, first, end = part
            if vocab is None:
                raise ValueError("reading a DocBin needs the pipeline's vocab")
            docbin = _cached_docbin(path)
            for i, doc in enumerate(_docbin_slice(docbin, first, end).get_docs(vocab), start=first):
                yield Item(path, None, _docbin_id(doc.user_data, rel, i), doc)


def _jsonl_lines(path: str, part: list) -> Iterator[Tuple[int, bytes]]:
    """(line number, bytes) of the non-blank lines of a JSONL shard part
    [relpath, start byte, end byte, first line number]."""
    _, start, end, line_no = part
    with _open(path) as file_:
        file_.seek(start)
        pos = start
        while pos < end:
            raw = file_.readline()
            if not raw:
                raise DataFormatError(
                    path, line_no, "the file is shorter than when the shards were planned (changed during the run?)"
                )
            pos += len(raw)
            if not _is_blank(raw):
                yield line_no, raw
            line_no += 1


def _cached_docbin(path: str):
    """The DocBin of a file planned as good (the last one read is kept)."""
    from spacy.tokens import DocBin

    if _DocBinCache.path != path:
        _DocBinCache.path, _DocBinCache.docbin = None, None
        with _open(path) as file_:
            data = file_.read()
        try:
            _DocBinCache.docbin = DocBin(store_user_data=True).from_bytes(data)
        except Exception as err:  # it decoded when the shards were planned: changed during the run
            raise docbin_error(path, data[:2], err) from None
        _DocBinCache.path = path
    return _DocBinCache.docbin


def shard_ids(
    plan: ShardPlan, *, text_field: str = "text", id_field: str = "id", encoding: str = "utf-8"
) -> Iterator[str]:
    """The ids of a shard's documents, as read_shard gives them, without
    making the documents (for the duplicate count of a shard done by an
    earlier run). Bad items have none. (A text longer than the pipeline's
    nlp.max_length, bad only to the worker, is counted here.)

    plan (ShardPlan): the shard.
    text_field, id_field, encoding: as for read_shard.
    YIELDS (str): the ids, in input order.
    """
    import srsly

    for part in plan.parts:
        if isinstance(part, dict):
            continue
        rel = part[0]
        if plan.kind == "txt":
            yield rel  # an undecodable file's too: a path is unique anyway
        elif plan.kind == "jsonl":
            path = os.path.join(plan.root, rel)
            for line_no, raw in _jsonl_lines(path, part):
                item = _json_item(path, rel, line_no, raw, text_field=text_field, id_field=id_field, encoding=encoding)
                if item.error is None:
                    assert item.id is not None  # a good item has its id (_json_item)
                    yield item.id
        else:
            _, first, end = part
            docbin = _cached_docbin(os.path.join(plan.root, rel))
            for i in range(first, end):
                data = docbin.user_data[i] if i < len(docbin.user_data) else None
                user = srsly.msgpack_loads(data, use_list=False) if data is not None else {}
                yield _docbin_id(user, rel, i)


def _docbin_slice(docbin, first: int, end: int):
    """A DocBin of Docs [first, end) of another, without making the others."""
    import copy

    part = copy.copy(docbin)
    for name in ("tokens", "spaces", "cats", "flags", "span_groups", "user_data"):
        setattr(part, name, getattr(docbin, name)[first:end])
    return part
