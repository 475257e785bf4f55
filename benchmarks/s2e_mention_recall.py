"""Where a trained s2e pipeline loses gold mentions on a dev DocBin.

A gold mention reaches the output only when it survives two steps: the
mention scorer keeps it among the ceil(top_lambda * T) best candidates of its
document, and then a link above the component's threshold joins it to a
cluster (it links to an antecedent, or a later mention links to it). This
script counts, for each pipeline given, side by side:

  kept         gold mentions among the kept candidates (pruning recall)
  in output    gold mentions in the output clusters (mention recall, exact
               bounds; it equals the reference scorer's mention recall, which
               the script also prints from spacy_memcoref.scoring as a check)
  first / later
               the first mention of each gold chain against the later ones
               (no antecedent of its chain precedes a first mention: it is in
               the output when a later mention links to it, or when it links
               to a span outside its chain), and where later mentions' own
               links go: to an
               earlier mention of their chain (a right antecedent), to
               another chain's mention, or to a span in no chain
  by width     1 token, 2-3, 4 or more
  by GUM layer (--gum-entities: GUM's dep/ folder, matched by doc_id) the
               mention recall by information status and by entity type, and
               what the output's mentions outside the gold chains are: GUM
               mentions (mostly singletons, which OntoGUM leaves out) or not
               mentions at all

Each pipeline decides with its own link threshold (tune-link-threshold's),
so compare tuned pipelines with tuned ones. --top-lambda overrides the
head's pruning ratio (the config's is 0.4) to see what pruning costs.

    python benchmarks/s2e_mention_recall.py training/s2e/model-tuned OTHER/model-tuned \\
        --dev corpus/ontogum/dev.spacy --gum-entities assets/gum_dep
"""

import argparse
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

from spacy_memcoref.util import TokenSpan  # noqa: E402


class Tally:
    """Named (hits, total) pairs, in the order first seen."""

    def __init__(self) -> None:
        self.counts: Dict[str, List[int]] = {}

    def add(self, row: str, hit: bool, n: int = 1) -> None:
        cell = self.counts.setdefault(row, [0, 0])
        cell[0] += n if hit else 0
        cell[1] += n

    def cell(self, row: str) -> str:
        hits, total = self.counts.get(row, (0, 0))
        return f"{100 * hits / total:.1f}% of {total:,}" if total else "-"


def gold_chains(doc) -> List[List[TokenSpan]]:
    from spacy_memcoref.doc_helpers.clusters import cluster_span_groups

    return [sorted({(s.start, s.end - 1) for s in group}) for group in cluster_span_groups(doc)]


def width_bucket(m: TokenSpan) -> str:
    width = m[1] - m[0] + 1
    return "1 token" if width == 1 else "2-3 tokens" if width <= 3 else "4+ tokens"


def tally_document(
    tally: Tally, chains, prediction, clusters, gum: Optional[Dict[TokenSpan, Tuple[str, str]]], threshold: float
) -> None:
    """Add one document's counts (see the module docstring for the rows)."""
    starts, ends, best, scores = prediction.links if prediction.links is not None else ([], [], [], [])
    candidates = list(zip(starts, ends))
    index = {m: i for i, m in enumerate(candidates)}
    kept = set(candidates)
    output = {m for cluster in clusters for m in cluster}
    chain_of = {m: c for c, chain in enumerate(chains) for m in chain}
    for chain in chains:
        for position, m in enumerate(chain):
            tally.add("gold mentions kept by pruning", m in kept)
            tally.add("gold mentions in the output (mention recall)", m in output)
            if position == 0:
                tally.add("first mention of a chain: in the output", m in output)
            else:
                tally.add("later mentions: in the output", m in output)
                i = index.get(m)
                linked = i is not None and best[i] >= 0 and float(numpy.float32(scores[i])) > threshold
                antecedent_chain = chain_of.get(candidates[best[i]], -1) if linked else None
                tally.add(
                    "later mentions: linked to an earlier mention of their chain",
                    linked and antecedent_chain == chain_of[m],
                )
                tally.add(
                    "later mentions: linked to a mention of another chain",
                    linked and antecedent_chain not in (-1, chain_of[m]),
                )
                tally.add("later mentions: linked to a span outside every chain", linked and antecedent_chain == -1)
            tally.add(f"width {width_bucket(m)}: kept by pruning", m in kept)
            tally.add(f"width {width_bucket(m)}: in the output", m in output)
            if gum is not None:
                etype, infstat = gum.get(m, ("(not a GUM mention)", "(not a GUM mention)"))
                tally.add(f"information status {infstat}: in the output", m in output)
                tally.add(f"entity type {etype}: in the output", m in output)
    for m in output:
        if m not in chain_of:
            where = "not a gold mention"
            if gum is not None:
                where += ": a GUM mention" if m in gum else ": not a GUM mention either"
            tally.add(f"output mentions: {where}", True)
    if gum is not None:
        singletons = [m for m in gum if m not in chain_of]
        for m in singletons:
            tally.add("GUM mentions outside the gold chains: kept by pruning", m in kept)
            tally.add("GUM mentions outside the gold chains: in the output", m in output)


def gum_layer(doc) -> Optional[Dict[TokenSpan, Tuple[str, str]]]:
    from spacy_memcoref.corpora.gum_entities import INFSTAT_KEY, MENTIONS_KEY

    if MENTIONS_KEY not in doc.spans:
        return None
    types = doc.spans[MENTIONS_KEY]
    infstat = doc.spans[INFSTAT_KEY] if INFSTAT_KEY in doc.spans else types
    return {(t.start, t.end - 1): (t.label_, i.label_) for t, i in zip(types, infstat)}


def run_pipeline(path: str, docs, gum_docs, top_lambda: Optional[float]):
    """The tally and the reference-scorer counts of one pipeline on the Docs."""
    import spacy
    import spacy_memcoref
    from spacy_memcoref.scoring.coref_metrics import CorefEvaluator

    # a folder, or the name of a model shipped inside the package ("s2e-ontogum")
    nlp = spacy.load(path) if Path(path).exists() else spacy_memcoref.load(path)
    component = nlp.get_pipe("memcoref")
    heads = [
        m
        for node in component.model.walk()
        for shim in node.shims
        for m in shim._model.modules()
        if hasattr(m, "top_lambda")
    ]
    if not heads:
        sys.exit(f"{path}: its memcoref component is not s2e (no top_lambda): this script reads s2e's candidates")
    if top_lambda is not None:
        heads[0].top_lambda = top_lambda
    decoder = component.decoder
    # compared in float32, as the decoder compares the head's scores (decoders.s2e)
    threshold = float(numpy.float32(decoder.link_threshold))
    tally, evaluator = Tally(), CorefEvaluator()
    for doc, gum in zip(docs, gum_docs):
        chains = gold_chains(doc)
        bare = doc.copy()  # the gold tokens and sentences, and its speakers (as evaluation copies them)
        for key in list(bare.spans):
            if key != "speakers":
                del bare.spans[key]
        prediction = component.predict([bare])[0]
        clusters = decoder.clusters(prediction)
        tally_document(tally, chains, prediction, clusters, gum, threshold)
        evaluator.add_document(chains, clusters)
    scores = evaluator.scores()
    hits, total = tally.counts["gold mentions in the output (mention recall)"]
    if total and abs(hits / total - scores["coref_mentions_r"]) > 1e-9:
        sys.exit(
            f"{path}: this script's mention recall ({hits}/{total}) differs from the scorer's "
            f"({scores['coref_mentions_r']:.6f}): the breakdown would not add up to the score; "
            "a gold mention in two chains, or a repeated one, is the likely cause"
        )
    return tally, scores, threshold, heads[0].top_lambda


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "models", nargs="+", help="trained s2e pipelines: folders (e.g. model-tuned) or a shipped name (s2e-ontogum)"
    )
    parser.add_argument("--dev", required=True, help="a DocBin with gold clusters (e.g. corpus/ontogum/dev.spacy)")
    parser.add_argument("--gum-entities", default=None, help="GUM's dep/ folder: break recall down by its layer")
    parser.add_argument("--top-lambda", type=float, default=None, help="override the head's pruning ratio")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args(argv)
    C.quiet()
    threads = C.set_threads(args.threads)
    import spacy
    from spacy.tokens import DocBin

    vocab = spacy.blank("en").vocab
    docs = list(DocBin().from_disk(args.dev).get_docs(vocab))
    gum_docs: List[Optional[Dict[TokenSpan, Tuple[str, str]]]] = [None] * len(docs)
    if args.gum_entities:
        from spacy_memcoref.corpora.gum_entities import attach_gum_entities

        docs = attach_gum_entities(docs, args.gum_entities)
        gum_docs = [gum_layer(doc) for doc in docs]
    print(C.machine_line(threads))
    print(f"{args.dev}: {len(docs)} documents, {sum(len(d) for d in docs):,} tokens\n")
    results = [run_pipeline(path, docs, gum_docs, args.top_lambda) for path in args.models]
    rows: List[str] = []
    for tally, *_ in results:
        rows += [r for r in tally.counts if r not in rows]
    # grouped as the module docstring lists them; within a group, the largest first
    groups = (
        "gold mentions",
        "first mention",
        "later mentions",
        "width",
        "information status",
        "entity type",
        "output mentions",
        "GUM mentions",
    )
    first_total = results[0][0].counts
    rows.sort(
        key=lambda r: (
            next(i for i, g in enumerate(groups) if r.startswith(g)),
            -first_total.get(r, (0, 0))[1] if r.startswith(("information", "entity")) else 0,
            r,
        )
    )
    names = [str(Path(p)) for p in args.models]
    print("| | " + " | ".join(names) + " |")
    print("| --- |" + " --: |" * len(names))
    print(
        "| CoNLL F1 (spacy_memcoref.scoring) | "
        + " | ".join(f"{100 * s['coref_conll_f']:.2f}" for _, s, _, _ in results)
        + " |"
    )
    print(
        "| mention recall / precision, the scorer's | "
        + " | ".join(f"{100 * s['coref_mentions_r']:.1f} / {100 * s['coref_mentions_p']:.1f}" for _, s, _, _ in results)
        + " |"
    )
    print("| link threshold; top_lambda | " + " | ".join(f"{t:g}; {lam:g}" for _, _, t, lam in results) + " |")
    for row in rows:
        print(
            f"| {row} | "
            + " | ".join(
                tally.cell(row) if not row.startswith("output mentions") else f"{tally.counts.get(row, (0, 0))[1]:,}"
                for tally, *_ in results
            )
            + " |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
