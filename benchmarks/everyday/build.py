"""Build the "everyday text" coreference set: bracket markup -> CoNLL-2012.

Reads tests/data/everyday/everyday.txt (texts written for this project, with
gold mentions written `[text of the mention|E]`, nested as `[[Her|m] father|f]`)
and writes tests/data/everyday/everyday.v4_gold_conll in the layout of the
demo files (assets/demo/conll): 12 columns separated by three spaces, the
speaker in column 10 (dialogue texts only), coreference brackets last.

    python benchmarks/everyday/build.py            # (re)write the .v4_gold_conll
    python benchmarks/everyday/build.py --check    # fail if it is out of date

Tokens: spaCy's blank English tokenizer on the text with the markup removed;
sentences: spaCy's rule-based Sentencizer, plus a new sentence after every
line break; whitespace tokens are dropped. A mention that does not fall on
token boundaries, an entity with a single mention, or malformed markup is an
error naming the text id, the line and the mention. Only the standard library
and spaCy are used.
"""

import argparse
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SOURCE = ROOT / "tests" / "data" / "everyday" / "everyday.txt"
DEFAULT_OUTPUT = ROOT / "tests" / "data" / "everyday" / "everyday.v4_gold_conll"

DOC_PREFIX = "everyday/"
PART = "000"
SEP = "   "  # the demo files align columns with three spaces
KINDS = ("biography", "news", "dialogue", "instructions", "recipe", "fiction", "two_person", "they", "letter")
ID_RE = re.compile(r"^[a-z0-9_]+$")
LABEL_RE = re.compile(r"^[A-Za-z0-9_]+$")
ID_LINE_RE = re.compile(r"^#\s*id:\s*(.*?)\s*$")
KIND_LINE_RE = re.compile(r"^#\s*kind:\s*(.*?)\s*$")
# a dialogue line: "Name: what they say" (one-word names: the speaker column
# must not hold whitespace)
SPEAKER_RE = re.compile(r"^([A-Z][A-Za-z]*):\s")


class BuildError(Exception):
    pass


@dataclass
class Mention:
    start: int  # character offsets in the plain text, end exclusive
    end: int
    label: str
    line: int  # line number in the source file
    text: str


@dataclass
class Text:
    id: str
    kind: str
    line: int  # line of `# id:`
    lines: List[Tuple[int, str]] = field(default_factory=list)  # (source line number, raw markup)
    plain: str = ""
    line_starts: List[int] = field(default_factory=list)  # plain offset where each line starts
    mentions: List[Mention] = field(default_factory=list)


def _err(path: Path, line: Optional[int], text_id: Optional[str], msg: str) -> BuildError:
    where = f"{path}:{line}" if line is not None else str(path)
    what = f" (text {text_id!r})" if text_id else ""
    return BuildError(f"{where}{what}: {msg}")


# --------------------------------------------------------------------------- #
# Reading the source
# --------------------------------------------------------------------------- #


def read_source(path: Path) -> List[Text]:
    """Split the source file into texts (header lines and raw markup lines)."""
    try:
        raw = path.read_text(encoding="utf8")
    except (OSError, UnicodeDecodeError) as e:
        raise _err(path, None, None, f"cannot read: {e}")
    if raw.startswith("\ufeff"):
        raw = raw[1:]
    texts: List[Text] = []
    current: Optional[Text] = None
    expect_kind = False
    for lineno, line in enumerate(raw.split("\n"), 1):
        line = line.rstrip()
        m_id = ID_LINE_RE.match(line)
        if m_id:
            if current is not None and not current.lines:
                raise _err(path, current.line, current.id, "text has no lines")
            text_id = m_id.group(1)
            if not ID_RE.match(text_id):
                raise _err(path, lineno, text_id, "id must be lowercase letters, digits and '_'")
            if any(t.id == text_id for t in texts):
                raise _err(path, lineno, text_id, "id used twice")
            current = Text(id=text_id, kind="", line=lineno)
            texts.append(current)
            expect_kind = True
            continue
        if expect_kind:
            m_kind = KIND_LINE_RE.match(line)
            if not m_kind:
                raise _err(path, lineno, current.id, "'# kind: KIND' must follow '# id:'")
            kind = m_kind.group(1)
            if kind not in KINDS:
                raise _err(path, lineno, current.id, f"unknown kind {kind!r} (one of {', '.join(KINDS)})")
            current.kind = kind
            expect_kind = False
            continue
        if not line:
            if current is not None and current.lines:
                current = None  # a blank line ends the text
            continue
        if line.startswith("#"):
            if current is not None:
                raise _err(path, lineno, current.id, "a '#' line inside a text")
            continue  # a comment between texts
        if current is None:
            raise _err(path, lineno, None, "a text line outside a text (no '# id:' line before it)")
        current.lines.append((lineno, line))
    if current is not None and expect_kind:
        raise _err(path, current.line, current.id, "'# kind:' line missing")
    if current is not None and not current.lines:
        raise _err(path, current.line, current.id, "text has no lines")
    if not texts:
        raise _err(path, None, None, "no texts")
    for text in texts:
        parse_markup(text, path)
    return texts


def parse_markup(text: Text, path: Path) -> None:
    """Strip the bracket markup: fill text.plain, text.line_starts, text.mentions."""
    plain: List[str] = []
    n = 0  # len of the plain text so far
    stack: List[Tuple[int, int, int]] = []  # (plain start, source line, column)
    for i, (lineno, raw) in enumerate(text.lines):
        if i:
            plain.append("\n")
            n += 1
        text.line_starts.append(n)
        j = 0
        while j < len(raw):
            ch = raw[j]
            if ch == "[":
                stack.append((n, lineno, j + 1))
                j += 1
            elif ch == "|":
                close = raw.find("]", j)
                label = raw[j + 1 : close] if close >= 0 else raw[j + 1 :]
                if close < 0 or not LABEL_RE.match(label):
                    raise _err(
                        path,
                        lineno,
                        text.id,
                        f"column {j + 1}: '|' must be followed by an entity label "
                        f"([A-Za-z0-9_]) and ']' (a literal '|' is not allowed)",
                    )
                if not stack:
                    raise _err(path, lineno, text.id, f"column {j + 1}: '|{label}]' closes no '['")
                start, start_line, col = stack.pop()
                if start_line != lineno:
                    raise _err(path, start_line, text.id, f"column {col}: a mention must not span lines")
                mention_text = "".join(plain)[start:n]
                if not mention_text or mention_text != mention_text.strip():
                    raise _err(
                        path, lineno, text.id, f"mention {mention_text!r}|{label}: empty, or whitespace at its edge"
                    )
                text.mentions.append(Mention(start, n, label, lineno, mention_text))
                j = close + 1
            elif ch == "]":
                raise _err(
                    path, lineno, text.id, f"column {j + 1}: ']' without '|LABEL' (a literal ']' is not allowed)"
                )
            else:
                plain.append(ch)
                n += 1
                j += 1
    if stack:
        _, line, col = stack[-1]
        raise _err(path, line, text.id, f"column {col}: '[' is never closed with '|LABEL]'")
    text.plain = "".join(plain)


# --------------------------------------------------------------------------- #
# Tokens, sentences, clusters
# --------------------------------------------------------------------------- #


@dataclass
class Built:
    text: Text
    words: List[str]
    sent_starts: List[bool]
    speakers: List[str]
    clusters: List[List[Tuple[int, int]]]  # cluster id = index; mentions (start, end) inclusive token indices


def make_nlp():
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return nlp


def build_text(text: Text, nlp, path: Path) -> Built:
    doc = nlp(text.plain)
    kept: List[int] = []  # spaCy token index of each kept token
    sent_starts: List[bool] = []
    new_sent = True
    for tok in doc:
        if tok.is_space:
            if "\n" in tok.text or tok.is_sent_start:
                new_sent = True
            continue
        sent_starts.append(new_sent or bool(tok.is_sent_start))
        new_sent = False
        kept.append(tok.i)
    words = [doc[i].text for i in kept]
    start_of: Dict[int, int] = {doc[i].idx: k for k, i in enumerate(kept)}
    end_of: Dict[int, int] = {doc[i].idx + len(doc[i]): k for k, i in enumerate(kept)}

    # speakers
    if text.kind == "dialogue":
        line_speakers = []
        for (lineno, _), start in zip(text.lines, text.line_starts):
            line_plain = text.plain[start:].split("\n", 1)[0]
            m = SPEAKER_RE.match(line_plain)
            if not m:
                raise _err(path, lineno, text.id, "a dialogue line must start with 'Name: ' (one word)")
            line_speakers.append(m.group(1))
        speakers = []
        for i in kept:
            idx = doc[i].idx
            line_no = max(k for k, s in enumerate(text.line_starts) if s <= idx)
            speakers.append(line_speakers[line_no])
    else:
        speakers = ["-"] * len(kept)

    # mentions -> token spans
    spans: Dict[Tuple[int, int], Mention] = {}
    by_label: Dict[str, List[Tuple[int, int]]] = {}
    for m in text.mentions:
        s, e = start_of.get(m.start), end_of.get(m.end)
        if s is None or e is None or e < s:
            toks = [t.text for t in doc if t.idx < m.end and t.idx + len(t) > m.start]
            raise _err(
                path,
                m.line,
                text.id,
                f"mention {m.text!r}|{m.label} does not align with token boundaries (spaCy's tokens there: {toks})",
            )
        if (s, e) in spans:
            other = spans[(s, e)]
            raise _err(path, m.line, text.id, f"mention {m.text!r} is marked twice (|{other.label} and |{m.label})")
        spans[(s, e)] = m
        by_label.setdefault(m.label, []).append((s, e))
    for label, mentions in by_label.items():
        if len(mentions) < 2:
            m = next(x for x in text.mentions if x.label == label)
            raise _err(
                path, m.line, text.id, f"entity {label!r} has a single mention ({m.text!r}); singletons are not marked"
            )
    # cluster ids in order of first mention (at one token: the longer mention first)
    order = sorted(by_label, key=lambda lab: min((s, -e) for s, e in by_label[lab]))
    clusters = [sorted(by_label[lab]) for lab in order]
    return Built(text, words, sent_starts, speakers, clusters)


def coref_cells(n: int, clusters: List[List[Tuple[int, int]]]) -> List[str]:
    """Openings (longest first), one-token mentions, closings (shortest first), joined by '|'."""
    items: Dict[int, List[Tuple[int, int, str]]] = {}
    for cid, mentions in enumerate(clusters):
        for s, e in mentions:
            if s == e:
                items.setdefault(s, []).append((1, 0, f"({cid})"))
            else:
                items.setdefault(s, []).append((0, -e, f"({cid}"))
                items.setdefault(e, []).append((2, -s, f"{cid})"))
    cells = ["-"] * n
    for i, entries in items.items():
        entries.sort(key=lambda x: (x[0], x[1]))
        cells[i] = "|".join(x[2] for x in entries)
    return cells


def conll_lines(built: Built) -> List[str]:
    doc_id = DOC_PREFIX + built.text.id
    lines = [f"#begin document ({doc_id}); part {PART}"]
    cells = coref_cells(len(built.words), built.clusters)
    word_no = 0
    for i, word in enumerate(built.words):
        if i and built.sent_starts[i]:
            lines.append("")
            word_no = 0
        cols = [doc_id, str(int(PART)), str(word_no), word, "-", "*", "-", "-", "-", built.speakers[i], "*", cells[i]]
        lines.append(SEP.join(cols))
        word_no += 1
    lines.append("")
    lines.append("#end document")
    return lines


def build(source: Path) -> Tuple[str, List[Built]]:
    texts = read_source(source)
    nlp = make_nlp()
    built = [build_text(t, nlp, source) for t in texts]
    out: List[str] = []
    for b in built:
        out.extend(conll_lines(b))
    return "\n".join(out) + "\n", built


def summary(built: List[Built]) -> str:
    kinds = Counter(b.text.kind for b in built)
    n_mentions = sum(len(m) for b in built for m in b.clusters)
    n_clusters = sum(len(b.clusters) for b in built)
    n_tokens = sum(len(b.words) for b in built)
    per_kind = ", ".join(f"{k} {kinds[k]}" for k in KINDS if kinds[k])
    return f"{len(built)} texts ({per_kind}); {n_tokens} tokens, {n_mentions} mentions, {n_clusters} clusters"


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="the bracket-markup texts")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="the CoNLL-2012 file to write")
    parser.add_argument(
        "--check", action="store_true", help="rebuild in memory and fail if the output file differs (writes nothing)"
    )
    args = parser.parse_args(argv)
    try:
        conll, built = build(args.source)
    except BuildError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if args.check:
        try:
            current = args.output.read_text(encoding="utf8")
        except OSError as e:
            print(f"error: cannot read {args.output}: {e}", file=sys.stderr)
            return 1
        if current != conll:
            old, new = current.split("\n"), conll.split("\n")
            line = next((i for i, (a, b) in enumerate(zip(old, new), 1) if a != b), min(len(old), len(new)) + 1)
            print(
                f"error: {args.output} is out of date (first difference at line {line}); "
                f"run python benchmarks/everyday/build.py",
                file=sys.stderr,
            )
            return 1
        print(f"{args.output} is up to date: {summary(built)}")
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.output.with_name(args.output.name + ".tmp")
    tmp.write_text(conll, encoding="utf8", newline="\n")
    tmp.replace(args.output)
    print(f"wrote {args.output}: {summary(built)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
