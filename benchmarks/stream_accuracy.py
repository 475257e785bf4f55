"""The price of streaming: gold documents read whole against the same
documents read through `spacy_memcoref.Stream` one gold sentence a piece,
CoNLL F1 (MUC, B3, CEAFe) of both by the project's scorer, side by side in
one run.

For each gold document:

- whole: the pipeline over the document's text;
- stream: a fresh `Stream(nlp)`, each gold sentence's text added in order,
  and the pieces' Docs joined into one document
  (`spacy_memcoref.stream.join_pieces`: each entity id one cluster, with the
  earlier pieces' mentions that joined it later, doc.user_data
  ["stream_joined"]);
- stream, Docs as returned: the pieces' own clusters alone, without the
  joined mentions (what a reader of the returned Docs has: an entity's
  first mention is in no cluster when its second came in a later piece).

Each response's mentions are mapped to the gold Doc's tokens (character
offsets, alignment "expand"), clusters of one mention are dropped (the gold
has none and the whole-document decoder writes none; the stream makes them
for a speaker's lone "I"; the count is printed), and the responses are
scored against the gold clusters (doc.spans["coref_clusters_N"]) by
`scoring.spacy_scorer.score_coref_examples`, the scorer of
`spacy_memcoref.coref_scorer.v1` (`spacy train`, `memcoref evaluate`).

Without --speakers, the text alone (as the shipped models' dev scores in
RESULTS.md); with it, the gold speaker turns (doc.spans["speakers"]) go to
both: the whole Doc's speakers, each piece's `speaker=`. The gold Docs need
sentence boundaries (`memcoref convert conll` / `convert ontogum` keep them).

    python benchmarks/stream_accuracy.py --dev corpus/ontogum/dev.spacy [--model s2e-ontogum]
        [--window-tokens 512] [--limit N] [--speakers] [--threads 2]
"""

import argparse
import bisect
import sys
import time
from typing import Dict, List, Optional, Sequence, Tuple

import spacy
from spacy.tokens import Doc, DocBin
from spacy.training import Example

from _common import machine_line, quiet, set_threads, table
from spacy_memcoref.doc_helpers.clusters import CLUSTER_PREFIX, cluster_key, numbered_clusters
from spacy_memcoref.scoring.spacy_scorer import score_coref_examples
from spacy_memcoref.stream import JOINED_KEY, SPEAKERS_KEY, Stream, join_pieces

CharClusters = List[List[Tuple[int, int]]]


def read_gold(path: str, vocab, limit: Optional[int]) -> List[Doc]:
    """The gold Docs; exits with a message naming a document without sentence boundaries."""
    docs = list(DocBin().from_disk(path).get_docs(vocab))[:limit]
    if not docs:
        sys.exit(f"{path}: no documents")
    missing = [
        d.user_data.get("doc_id", f"document {i}") for i, d in enumerate(docs) if not d.has_annotation("SENT_START")
    ]
    if missing:
        sys.exit(
            f"{path}: {len(missing)} document(s) without sentence boundaries (SENT_START), so no sentences to "
            f"stream: {', '.join(map(str, missing[:5]))}. Convert the corpus with `memcoref convert conll` "
            "or `convert ontogum`, which keep them."
        )
    return docs


def speaker_of(gold: Doc, start: int) -> Optional[str]:
    """The label of the gold speaker turn holding token `start`, None without one."""
    for turn in gold.spans.get(SPEAKERS_KEY, ()):
        if turn.start <= start < turn.end:
            return turn.label_
    return None


def char_clusters(doc: Doc, prefix: str = CLUSTER_PREFIX) -> CharClusters:
    return [[(s.start_char, s.end_char) for s in group] for _, group in numbered_clusters(doc, prefix)]


def on_gold_tokens(gold: Doc, clusters: CharClusters) -> Tuple[Doc, int]:
    """A Doc of the gold words holding the clusters (gold-text character
    offsets) as spans expanded to the gold tokens; clusters of one mention
    are left out. RETURNS the Doc and how many clusters were left out."""
    doc = Doc(gold.vocab, words=[t.text for t in gold], spaces=[bool(t.whitespace_) for t in gold])
    n, dropped = 0, 0
    for cluster in clusters:
        spans = {}
        for start, end in cluster:
            span = doc.char_span(start, end, alignment_mode="expand")
            if span is not None and len(span):
                spans[(span.start, span.end)] = span
        if len(spans) < 2:
            dropped += 1
            continue
        n += 1
        doc.spans[cluster_key(n)] = [spans[k] for k in sorted(spans)]
    return doc, dropped


def whole(nlp, gold: Doc, speakers: bool) -> CharClusters:
    doc = nlp.make_doc(gold.text)
    if speakers and SPEAKERS_KEY in gold.spans:
        turns = [
            doc.char_span(t.start_char, t.end_char, label=t.label_, alignment_mode="expand")
            for t in gold.spans[SPEAKERS_KEY]
        ]
        doc.spans[SPEAKERS_KEY] = [t for t in turns if t is not None]
    return char_clusters(nlp(doc))


def streamed(nlp, gold: Doc, speakers: bool, window_tokens: Optional[int]) -> Tuple[CharClusters, CharClusters, int]:
    """RETURNS (clusters with the joined mentions, clusters of the Docs as
    returned, pieces), in gold-text character offsets."""
    stream = Stream(nlp) if window_tokens is None else Stream(nlp, window_tokens=window_tokens)
    sents = list(gold.sents)
    docs = [stream.add(s.text, speaker=speaker_of(gold, s.start) if speakers else None) for s in sents]
    gold_starts = [s.start_char for s in sents]

    def to_gold(joined: Doc) -> CharClusters:
        # each piece's offset in the joined text (join_pieces's rule), then the sentence's in the gold text
        starts, position = [], 0
        for d in docs:
            starts.append(position)
            position += len(d.text) + (1 if len(d) and not d[-1].is_space and not d[-1].whitespace_ else 0)
        out = []
        for cluster in char_clusters(joined):
            mapped = []
            for s, e in cluster:
                k = bisect.bisect_right(starts, s) - 1
                shift = gold_starts[k] - starts[k]
                if joined.text[s:e] != gold.text[s + shift : e + shift]:
                    raise AssertionError(f"mention {joined.text[s:e]!r} does not map to the gold text")
                mapped.append((s + shift, e + shift))
            out.append(mapped)
        return out

    with_joined = to_gold(join_pieces(docs))
    for d in docs:
        d.user_data.pop(JOINED_KEY, None)
    as_returned = to_gold(join_pieces(docs))
    return with_joined, as_returned, len(docs)


def same_start(doc: Doc) -> int:
    """How many of the response's mentions start where another of its
    mentions starts (one mention read with two boundaries, or nested ones
    such as a possessor and its phrase)."""
    starts: Dict[int, set] = {}
    for _, group in numbered_clusters(doc):
        for span in group:
            starts.setdefault(span.start, set()).add(span.end)
    return sum(len(ends) for ends in starts.values() if len(ends) > 1)


def score_row(name: str, examples: Sequence[Example], dropped: int, seconds: float) -> List[object]:
    s = score_coref_examples(examples)
    return [
        name,
        f"{100 * s['coref_mentions_r']:.1f} / {100 * s['coref_mentions_p']:.1f}",
        sum(same_start(eg.predicted) for eg in examples),
        sum(len(numbered_clusters(eg.predicted)) for eg in examples),
        f"{100 * s['coref_muc_r']:.1f} / {100 * s['coref_muc_p']:.1f}",
        100 * s["coref_muc_f"],
        100 * s["coref_b3_f"],
        100 * s["coref_ceafe_f"],
        100 * s["coref_conll_f"],
        dropped,
        round(seconds) if seconds == seconds else "-",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="s2e-ontogum", help="a shipped model's name or a pipeline folder")
    parser.add_argument("--dev", required=True, help="a DocBin of gold documents with sentence boundaries")
    parser.add_argument("--window-tokens", type=int, default=None, help="the Stream's window (default: the Stream's)")
    parser.add_argument("--limit", type=int, default=None, help="the first N documents only")
    parser.add_argument("--speakers", action="store_true", help="give both readings the gold speaker turns")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    quiet()
    threads = set_threads(args.threads)
    read_gold(args.dev, spacy.blank("en").vocab, args.limit)  # the sentence check, before the model loads
    from spacy_memcoref.loading import load_pipeline

    nlp = load_pipeline(args.model)
    window = Stream(nlp).window_tokens if args.window_tokens is None else args.window_tokens
    golds = read_gold(args.dev, nlp.vocab, args.limit)
    print(machine_line(threads))
    examples: Dict[str, List[Example]] = {"whole": [], "stream": [], "returned": []}
    dropped = {k: 0 for k in examples}
    seconds = {"whole": 0.0, "stream": 0.0}
    per_doc, n_pieces = [], 0
    for i, gold in enumerate(golds, start=1):
        t0 = time.perf_counter()
        responses = {"whole": whole(nlp, gold, args.speakers)}
        t1 = time.perf_counter()
        responses["stream"], responses["returned"], pieces = streamed(nlp, gold, args.speakers, args.window_tokens)
        seconds["whole"] += t1 - t0
        seconds["stream"] += time.perf_counter() - t1
        n_pieces += pieces
        f1 = {}
        for key, clusters in responses.items():
            predicted, n_dropped = on_gold_tokens(gold, clusters)
            eg = Example(predicted, gold)
            examples[key].append(eg)
            dropped[key] += n_dropped
            f1[key] = 100 * score_coref_examples([eg])["coref_conll_f"]
        doc_id = gold.user_data.get("doc_id", str(i))
        per_doc.append(
            [
                doc_id,
                len(gold),
                pieces,
                f1["whole"],
                f1["stream"],
                f1["stream"] - f1["whole"],
            ]
        )
        print(
            f"[{i}/{len(golds)}] {doc_id}: {pieces} pieces, CoNLL F1 whole {f1['whole']:.1f}, stream {f1['stream']:.1f}",
            file=sys.stderr,
            flush=True,
        )
    n_tokens = sum(len(g) for g in golds)
    print(
        f"model {args.model}, {len(golds)} documents, {n_tokens:,} tokens, {n_pieces:,} pieces (gold sentences) "
        f"({args.dev}), {sum(len(numbered_clusters(g)) for g in golds)} gold clusters; window {window} tokens; speakers: {'gold turns' if args.speakers else 'none (the text alone)'}"
    )
    print("Per document, CoNLL F1:")
    print(table(["document", "tokens", "pieces", "whole", "stream", "stream - whole"], per_doc))
    print()
    rows = [
        score_row("whole document", examples["whole"], dropped["whole"], seconds["whole"]),
        score_row("stream, one sentence a piece", examples["stream"], dropped["stream"], seconds["stream"]),
        score_row(
            "stream, Docs as returned (no stream_joined)", examples["returned"], dropped["returned"], float("nan")
        ),
    ]
    print(
        table(
            [
                "reading",
                "mentions R / P",
                "mentions sharing a start",
                "clusters",
                "MUC R / P",
                "MUC F1",
                "B3 F1",
                "CEAFe F1",
                "CoNLL F1",
                "one-mention clusters dropped",
                "seconds",
            ],
            rows,
        )
    )
    conll = {k: 100 * score_coref_examples(v)["coref_conll_f"] for k, v in examples.items()}
    print(
        f"gap (stream - whole): {conll['stream'] - conll['whole']:+.2f} CoNLL F1 "
        f"(Docs as returned: {conll['returned'] - conll['whole']:+.2f}); "
        "seconds are wall time, only as good as the load average"
    )


if __name__ == "__main__":
    main()
