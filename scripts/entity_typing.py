"""Entity typing over GUM's own entity layer, with and without entity gating
(configs/entity_typing.cfg, configs/entity_typing_gated.cfg): what the
project's `entity-typing` workflow runs besides training.

    python scripts/entity_typing.py coref-model s2e-ontogum training/entity_typing/s2e-ontogum
    python scripts/entity_typing.py lengths corpus/entity_typing/train.spacy corpus/entity_typing/dev.spacy
    python scripts/entity_typing.py report --dev corpus/entity_typing/dev.spacy \\
        [--pool corpus/entity_typing/train.spacy] [--coref-model s2e-ontogum] \\
        [--json metrics/entity_typing/report.json] [--markdown metrics/entity_typing/report.md] \\
        training/entity_typing/plain_seed0/model-best training/entity_typing/gated_seed0/model-best ...

`coref-model` writes a shipped coreference model (stored as what training
changed: spacy_memcoref.pretrained) as an ordinary spaCy pipeline folder,
which a config's `[components.memcoref] source` can load.

`lengths` prints the length distribution of GUM's mentions
(doc.spans["gum_mentions"]), the share each n-gram size of the suggester
covers.

`report` runs each trained pipeline (a PATH, or NAME=PATH; the name
defaults to the run's folder, e.g. gated_seed0 for
training/entity_typing/gated_seed0/model-best) over the dev Docs, on the
gold words (without the gold sentences or speakers: as in training, where
the predicted Docs are made from the text), and prints, for each run and
for the mean of the runs of one config (the name up to `_seed`):

- P / R / F1: the spancat's micro scores on doc.spans["gum_mentions"], a
  predicted span right when its start, end and label are a gold mention's
  (spaCy's spans_gum_mentions_p / _r / _f, which training selects on);
- typed right given the span: of the gold mentions whose exact span the
  spancat predicts (with any label), the share it labels with the gold type
  (typing apart from finding);
- pronoun recall: the share of gold one-word pronoun mentions ("she", "it",
  "they", ...: spacy_memcoref.scoring.pronouns.PRONOUNS) that get the right
  span and type, the mentions a cluster should help most;
- within-entity label consistency, defined precisely: the entities are
  GUM's gold entities with two or more mentions in a document (GUM's own
  coreference: the entity id of each mention of doc.spans["gum_mentions"],
  span.id_; OntoGUM's clusters are derived from it). A mention's predicted
  types are the labels of the predicted spans with exactly its start and
  end (at most one with the configs' max_positive = 1). An entity is
  counted when at least two of its mentions get a predicted type (mentions
  with none are left out, not held against it), and is consistent when all
  its typed mentions get the same single type. Consistency = consistent /
  counted; coverage = counted / all entities of two or more mentions. Gold's
  own consistency (the same share with the gold types, over every such
  entity) is printed for reference.

Then cross-document matching with the coreference model's own entity
vectors (doc._.entity_vectors, from --coref-model, s2e-ontogum by default):
the named people are the gold mentions labelled "person" with an identity
(span.kb_id_, GUM's Wikipedia title) whose identity occurs in more than one
document of dev (and of --pool, when given: e.g. the train documents, as
more documents to match against). For each dev document such a person is in,
their entity there is the predicted cluster with the most mentions that are
exactly their gold mentions (none: the model has no cluster for them there);
the nearest vector (cosine) among every predicted cluster of every other
document (dev, and the pool) is printed with that cluster's identity (the
commonest identity of the gold mentions its mentions exactly are) and
whether it is the same person, and the rank of the nearest cluster that is
them. When no named person occurs in more than one document, it says so.

--json and --markdown write the numbers (fractions) and the tables
(percentages).
"""

import argparse
import json
import statistics
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Set, Tuple

MENTIONS_KEY = "gum_mentions"
CLUSTER_PREFIX = "coref_clusters"
PERSON = "person"

Bounds = Tuple[int, int]  # (start, end), end exclusive


# ----- small helpers -------------------------------------------------------------------


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown table (benchmarks/_common.table's layout: text left, numbers right)."""
    cells = [[str(v) for v in row] for row in rows]
    left = [any(not _numeric(row[i]) for row in rows) for i in range(len(headers))]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    out = ["| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths)) + " |"]
    out.append("|" + "|".join(("-" * (w + 2)) if lf else ("-" * (w + 1) + ":") for w, lf in zip(widths, left)) + "|")
    for r in cells:
        out.append("| " + " | ".join(c.ljust(w) if lf else c.rjust(w) for c, w, lf in zip(r, widths, left)) + " |")
    return "\n".join(out)


def _numeric(value: Any) -> bool:
    """A number ("12.5", "1,024", "12.5 ± 0.3") or a number left out ("-", "n/a")."""
    text = str(value).replace(",", "").split(" ± ")[0]
    try:
        float(text)
    except ValueError:
        return text in ("-", "n/a")
    return True


def pct(value: Optional[float]) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}"


def ratio(num: int, den: int) -> Optional[float]:
    return num / den if den else None


def read_docs(path: str, vocab: Any = None) -> List[Any]:
    from spacy_memcoref.corpora.docbin import read_docbin

    return read_docbin(path, vocab)


def doc_id(doc: Any) -> str:
    return str(doc.user_data.get("doc_id", "")) if doc.user_data else ""


def require_mentions(docs: Iterable[Any], path: str) -> None:
    """RAISES SystemExit: a Doc without GUM's entity layer (say how to add it)."""
    for i, doc in enumerate(docs):
        if MENTIONS_KEY not in doc.spans:
            raise SystemExit(
                f"{path}: Doc {i} ({doc_id(doc) or 'no doc_id'}) has no doc.spans[{MENTIONS_KEY!r}]: convert it "
                "with GUM's entity layer (`python -m spacy_memcoref convert ontogum ... --gum-entities GUM_DEP_DIR`)"
            )


def on_gold_words(nlp: Any, refs: Sequence[Any]) -> List[Any]:
    """The pipeline's Docs of the references' words and spaces, nothing else
    (no sentences, no speakers), run through the pipeline."""
    from spacy.tokens import Doc

    docs = [Doc(nlp.vocab, words=[t.text for t in r], spaces=[bool(t.whitespace_) for t in r]) for r in refs]
    return list(nlp.pipe(docs, batch_size=4))


# ----- coref-model ---------------------------------------------------------------------


def coref_model(model: str, output: str) -> int:
    """Write the pipeline `model` names (a shipped model's name or folder, a
    pipeline folder or package: loading's one rule) as a spaCy pipeline folder."""
    from spacy_memcoref.loading import load_pipeline
    from spacy_memcoref.tuning.save import check_pipeline_output, pipeline_output_dir

    out = check_pipeline_output(output)
    nlp = load_pipeline(model)
    with pipeline_output_dir(out) as tmp:
        nlp.to_disk(tmp)
    print(f"wrote {out}: {model} ({', '.join(nlp.pipe_names)}) as a spaCy pipeline folder")
    return 0


# ----- lengths -------------------------------------------------------------------------


def lengths(paths: Sequence[str]) -> int:
    for path in paths:
        docs = read_docs(path)
        require_mentions(docs, path)
        counts = Counter(len(span) for doc in docs for span in doc.spans[MENTIONS_KEY])
        total = sum(counts.values())
        rows, covered = [], 0
        for n in range(1, max(counts) + 1):
            covered += counts.get(n, 0)
            if n <= 12 or n in (15, 20, 30, max(counts)):
                rows.append([f"{n}", f"{counts.get(n, 0):,}", f"{100 * covered / total:.1f}"])
        print(f"{path}: {len(docs)} docs, {total:,} mentions, the longest {max(counts)} tokens")
        print(table(["tokens", "mentions", "% covered by sizes 1..n"], rows))
        print()
    return 0


# ----- report: the spancat -------------------------------------------------------------


def gold_types(doc: Any) -> Dict[Bounds, str]:
    return {(s.start, s.end): s.label_ for s in doc.spans[MENTIONS_KEY]}


def predicted_types(doc: Any) -> Dict[Bounds, Set[str]]:
    out: Dict[Bounds, Set[str]] = defaultdict(set)
    for span in doc.spans.get(MENTIONS_KEY, []):
        out[(span.start, span.end)].add(span.label_)
    return out


def entities(doc: Any) -> List[List[Bounds]]:
    """GUM's gold entities of two or more mentions: their mentions' bounds."""
    by_id: Dict[str, List[Bounds]] = defaultdict(list)
    for span in doc.spans[MENTIONS_KEY]:
        by_id[span.id_].append((span.start, span.end))
    return [bounds for bounds in by_id.values() if len(bounds) >= 2]


def consistency(pairs: Iterable[Tuple[Any, Dict[Bounds, Set[str]]]]) -> Dict[str, Any]:
    """Within-entity label consistency (the module's docstring defines it)
    over (reference Doc, bounds -> predicted types) pairs."""
    consistent = counted = total = 0
    for ref, types in pairs:
        for bounds in entities(ref):
            total += 1
            typed = [types[b] for b in bounds if types.get(b)]
            if len(typed) < 2:
                continue
            counted += 1
            consistent += len(set().union(*typed)) == 1 and all(len(t) == 1 for t in typed)
    return {
        "consistency": ratio(consistent, counted),
        "coverage": ratio(counted, total),
        "consistent": consistent,
        "counted": counted,
        "entities": total,
    }


def score_run(refs: Sequence[Any], preds: Sequence[Any]) -> Dict[str, Any]:
    from spacy_memcoref.scoring.pronouns import PRONOUNS

    tp = n_pred = n_gold = 0
    found = typed_right = 0
    pron = pron_right = 0
    pairs = []
    for ref, pred in zip(refs, preds):
        gold = gold_types(ref)
        types = predicted_types(pred)
        pairs.append((ref, types))
        n_gold += len(gold)
        n_pred += sum(len(labels) for labels in types.values())
        for bounds, label in gold.items():
            labels = types.get(bounds, set())
            tp += label in labels
            if labels:
                found += 1
                typed_right += labels == {label}
            if bounds[1] - bounds[0] == 1 and ref[bounds[0]].lower_ in PRONOUNS:
                pron += 1
                pron_right += label in labels
    p, r = ratio(tp, n_pred), ratio(tp, n_gold)
    f = 2 * p * r / (p + r) if p and r else 0.0
    return {
        "p": p,
        "r": r,
        "f": f,
        "typed_right_given_span": ratio(typed_right, found),
        "pronoun_recall": ratio(pron_right, pron),
        "pronoun_mentions": pron,
        **consistency(pairs),
    }


def run_name(spec: str) -> Tuple[str, str]:
    """(name, path) of a NAME=PATH or PATH argument."""
    if "=" in spec and not Path(spec).exists():
        name, path = spec.split("=", 1)
        return name, path
    path = Path(spec)
    return (path.parent.name if path.name in ("model-best", "model-last") else path.name), spec


def config_of(name: str) -> str:
    return name.split("_seed")[0]


def mean_rows(runs: Dict[str, Dict[str, Any]], keys: Sequence[str]) -> Dict[str, Dict[str, Any]]:
    """The mean (and the spread, max - min) of each score over the runs of one config."""
    groups: Dict[str, List[Dict[str, Any]]] = defaultdict(list)
    for name, scores in runs.items():
        groups[config_of(name)].append(scores)
    out = {}
    for config, members in groups.items():
        if len(members) < 2:
            continue
        entry: Dict[str, Any] = {"runs": len(members)}
        for key in keys:
            values = [m[key] for m in members if m[key] is not None]
            entry[key] = statistics.fmean(values) if values else None
            entry[key + "_spread"] = (max(values) - min(values)) if values else None
        out[config] = entry
    return out


RUN_COLUMNS = [
    ("p", "P"),
    ("r", "R"),
    ("f", "F1"),
    ("typed_right_given_span", "typed right given the span"),
    ("pronoun_recall", "pronoun R"),
    ("consistency", "label consistency"),
    ("coverage", "entities counted"),
]


def run_table(runs: Dict[str, Dict[str, Any]], means: Dict[str, Dict[str, Any]], gold: Dict[str, Any]) -> str:
    rows = []
    for name, scores in runs.items():
        rows.append([name] + [pct(scores[key]) for key, _ in RUN_COLUMNS])
    for config, scores in means.items():
        cells = []
        for key, _ in RUN_COLUMNS:
            value, spread = scores[key], scores[key + "_spread"]
            cells.append("n/a" if value is None else f"{100 * value:.1f} ± {100 * spread / 2:.1f}")
        rows.append([f"{config} (mean of {scores['runs']})"] + cells)
    rows.append(["gold"] + ["-"] * 5 + [pct(gold["consistency"]), pct(gold["coverage"])])
    return table(["run"] + [title for _, title in RUN_COLUMNS], rows)


# ----- report: cross-document matching -------------------------------------------------


def exact_identities(ref: Any) -> Dict[Bounds, str]:
    return {(s.start, s.end): s.kb_id_ for s in ref.spans[MENTIONS_KEY] if s.kb_id_}


def predicted_clusters(pred: Any) -> List[Tuple[Any, List[Bounds]]]:
    """(entity vector, mention bounds) of each predicted cluster with a vector."""
    from spacy_memcoref.doc_helpers.clusters import numbered_clusters
    from spacy_memcoref.doc_helpers.entity_vectors import entity_vector_map

    vectors = entity_vector_map(pred, CLUSTER_PREFIX)
    return [
        (vectors[number], [(s.start, s.end) for s in group])
        for number, group in numbered_clusters(pred, CLUSTER_PREFIX)
        if number in vectors
    ]


def cluster_identity(bounds: Sequence[Bounds], identities: Dict[Bounds, str]) -> str:
    found = Counter(identities[b] for b in bounds if b in identities)
    return found.most_common(1)[0][0] if found else ""


def cross_document(dev_refs: Sequence[Any], pool_refs: Sequence[Any], nlp: Any) -> Tuple[Dict[str, Any], List[str]]:
    import numpy

    refs = list(dev_refs) + list(pool_refs)
    in_dev = [True] * len(dev_refs) + [False] * len(pool_refs)
    preds = on_gold_words(nlp, refs)
    named: Dict[str, Set[int]] = defaultdict(set)
    for i, ref in enumerate(refs):
        for span in ref.spans[MENTIONS_KEY]:
            if span.label_ == PERSON and span.kb_id_:
                named[span.kb_id_].add(i)
    people = sorted(p for p, docs in named.items() if len(docs) > 1 and any(in_dev[i] for i in docs))
    # every predicted cluster of every document: (doc, vector, identity, a name for it)
    clusters: List[Tuple[int, Any, str, str]] = []
    for i, (ref, pred) in enumerate(zip(refs, preds)):
        identities = exact_identities(ref)
        for vector, bounds in predicted_clusters(pred):
            identity = cluster_identity(bounds, identities)
            # shown by a mention that is a gold mention of its identity, else its longest
            named_as = [b for b in bounds if identity and identities.get(b) == identity]
            shown = named_as[0] if named_as else max(bounds, key=lambda b: b[1] - b[0])
            clusters.append((i, vector, identity, pred[shown[0] : shown[1]].text))
    matrix = numpy.stack([c[1] for c in clusters]) if clusters else numpy.zeros((0, 1), dtype="float32")
    norms = numpy.linalg.norm(matrix, axis=1) + 1e-12
    lines: List[str] = []
    records = []
    scope = "dev" + (" + pool" if pool_refs else "")
    lines.append(
        f"Cross-document matching ({len(dev_refs)} dev documents"
        + (f", {len(pool_refs)} pool documents" if pool_refs else "")
        + f"; {len(clusters)} predicted clusters with an entity vector)"
    )
    if not people:
        lines.append(f"No named person (label person, an identity) occurs in more than one document of {scope}.")
        return {"scope": scope, "people": [], "queries": []}, lines
    lines.append(
        f"Named people in more than one document of {scope}: {len(people)} "
        f"({', '.join(f'{p} ({len(named[p])} docs)' for p in people)})"
    )
    rows = []
    for person in people:
        for i in sorted(named[person]):
            if not in_dev[i]:
                continue
            ref, pred = refs[i], preds[i]
            theirs = {(s.start, s.end) for s in ref.spans[MENTIONS_KEY] if s.kb_id_ == person}
            best, best_n = None, 0
            for vector, bounds in predicted_clusters(pred):
                n = sum(b in theirs for b in bounds)
                if n > best_n:
                    best, best_n = vector, n
            record: Dict[str, Any] = {"person": person, "doc": doc_id(ref), "mentions": len(theirs)}
            others = [k for k, c in enumerate(clusters) if c[0] != i]
            if best is None or not others:
                record.update(cluster=False)
                rows.append([person, doc_id(ref), "no cluster", "-", "-", "-", "-", "-"])
                records.append(record)
                continue
            sims = (matrix[others] @ best) / (norms[others] * (numpy.linalg.norm(best) + 1e-12))
            order = numpy.argsort(-sims)
            top = clusters[others[int(order[0])]]
            same = top[2] == person
            ranks = [r for r, k in enumerate(order, 1) if clusters[others[int(k)]][2] == person]
            record.update(
                cluster=True,
                nearest_doc=doc_id(refs[top[0]]),
                nearest_identity=top[2],
                nearest_text=top[3],
                cosine=float(sims[order[0]]),
                same=same,
                rank_of_same=ranks[0] if ranks else None,
                candidates=len(others),
            )
            records.append(record)
            rows.append(
                [
                    person,
                    doc_id(ref),
                    f"{doc_id(refs[top[0]])}: {top[3][:40]!r}",
                    top[2] or "(none)",
                    f"{float(sims[order[0]]):.3f}",
                    "yes" if same else "no",
                    str(ranks[0]) if ranks else "not clustered elsewhere",
                    f"{len(others):,}",
                ]
            )
    lines.append(
        table(
            [
                "person",
                "dev document",
                "nearest cluster elsewhere",
                "its identity",
                "cosine",
                "same person",
                "rank of theirs",
                "candidates",
            ],
            rows,
        )
    )
    matched = [r for r in records if r.get("cluster")]
    lines.append(
        f"Same person nearest: {sum(r['same'] for r in matched)} of {len(matched)} queries with a cluster "
        f"({len(records) - len(matched)} without one: the model did not cluster the person's mentions there)"
    )
    return {"scope": scope, "people": people, "queries": records}, lines


def report(args: argparse.Namespace) -> int:
    import warnings

    import spacy

    from spacy_memcoref.loading import load_pipeline

    warnings.filterwarnings("ignore")
    vocab = spacy.blank("en").vocab
    refs = read_docs(args.dev, vocab)
    require_mentions(refs, args.dev)
    pool = read_docs(args.pool, vocab) if args.pool else []
    require_mentions(pool, args.pool or "")
    n_mentions = sum(len(r.spans[MENTIONS_KEY]) for r in refs)
    out: List[str] = [f"{args.dev}: {len(refs)} docs, {sum(len(r) for r in refs):,} tokens, {n_mentions:,} mentions"]
    runs: Dict[str, Dict[str, Any]] = {}
    for spec in args.pipelines:
        name, path = run_name(spec)
        if name in runs:
            raise SystemExit(f"two runs named {name!r}: give NAME=PATH")
        started = time.perf_counter()
        nlp = load_pipeline(path)
        if "spancat" not in nlp.pipe_names:
            raise SystemExit(f"{path}: no spancat in the pipeline ({', '.join(nlp.pipe_names)})")
        preds = on_gold_words(nlp, refs)
        runs[name] = score_run(refs, preds)
        runs[name]["path"] = path
        runs[name]["seconds"] = round(time.perf_counter() - started, 1)
        print(f"{name}: {path}, {runs[name]['seconds']}s", file=sys.stderr)
    gold = consistency((ref, {b: {label} for b, label in gold_types(ref).items()}) for ref in refs)
    means = mean_rows(runs, [key for key, _ in RUN_COLUMNS])
    if runs:
        out.append("")
        out.append("Entity typing on dev (percent; mean ± half the spread over seeds)")
        out.append(run_table(runs, means, gold))
    out.append("")
    out.append(
        f"Gold's own label consistency: {pct(gold['consistency'])} ({gold['consistent']} of {gold['entities']} "
        "entities of two or more mentions have one type)"
    )
    started = time.perf_counter()
    xdoc, lines = cross_document(refs, pool, load_pipeline(args.coref_model))
    print(f"cross-document matching ({args.coref_model}): {time.perf_counter() - started:.1f}s", file=sys.stderr)
    out.append("")
    out.extend(lines)
    text = "\n".join(out)
    print(text)
    result = {
        "dev": args.dev,
        "pool": args.pool,
        "coref_model": args.coref_model,
        "runs": runs,
        "means": means,
        "gold": gold,
        "cross_document": xdoc,
    }
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf8")
    if args.markdown:
        Path(args.markdown).parent.mkdir(parents=True, exist_ok=True)
        Path(args.markdown).write_text(text + "\n", encoding="utf8")
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    export = sub.add_parser("coref-model", help="write a shipped coreference model as a spaCy pipeline folder")
    export.add_argument("model", help="a shipped model's name (s2e-ontogum) or any pipeline")
    export.add_argument("output", help="the folder to write")
    measure = sub.add_parser("lengths", help="the length distribution of GUM's mentions")
    measure.add_argument("docbins", nargs="+")
    rep = sub.add_parser("report", help="score trained pipelines on dev; cross-document matching")
    rep.add_argument("pipelines", nargs="*", help="trained pipelines: PATH or NAME=PATH")
    rep.add_argument("--dev", required=True, help="dev Docs with GUM's entity layer")
    rep.add_argument("--pool", default=None, help="more documents to match people against (e.g. train)")
    rep.add_argument("--coref-model", default="s2e-ontogum", help="the entity vectors' model")
    rep.add_argument("--json", default=None)
    rep.add_argument("--markdown", default=None)
    args = parser.parse_args(argv)
    try:
        if args.command == "coref-model":
            return coref_model(args.model, args.output)
        if args.command == "lengths":
            return lengths(args.docbins)
        return report(args)
    except (ValueError, OSError) as err:  # DataFormatError, PretrainedError, a pipeline that cannot load
        print(f"error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
