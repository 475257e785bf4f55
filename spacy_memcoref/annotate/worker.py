"""The work of one shard, the same in every engine: read its items, run the
pipeline over the documents with `nlp.pipe` in batches, and serialize the
output files (JSONL records, a DocBin, the errors) as bytes for the writer.

A document's record:

    {"id": "...", "n_tokens": 9, "clusters": [
        {"name": "Alice", "mentions": [{"start": 0, "end": 5, "text": "Alice"},
                                       {"start": 15, "end": 18, "text": "She"}]}]}

id is a string (a JSON id 7 is written "7"); start/end are character
offsets into the text (Python string indices, end exclusive). The clusters
are spacy_memcoref.entities' records (EntityRecord.to_cluster_record), one
rule for both: mentions in text order (by first token, a longer mention
before a shorter one that starts where it does), and name the cluster's
representative (resolution's rule: its first proper-noun mention, else its
first non-pronoun mention; without a possessive marker, as
resolution.representative_name gives it), else null (pronouns only). With
`resolved`, the record also has "resolved" (the text with pronouns
replaced, spacy_memcoref.resolve) and "edits" (one {"source": [start, end],
"target": [start, end], "text": ...} a replacement); a DocBin Doc then
holds the same in user_data["resolved"] = {"text": ..., "edits": [...]}, as
`predict --resolved` stores it.
"""

import dataclasses
import json
import os
import resource
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

from ..doc_helpers.clusters import CLUSTER_PREFIX, clear_clusters
from ..entities import entities
from ..resolution import edits_as_records, resolve
from ._faults import DIE_ONCE, STALL
from .inputs import Item, ShardPlan, read_shard
from .results import ShardResult


def doc_record(doc_id: Any, doc, prefix: str = CLUSTER_PREFIX, *, resolved: bool = False) -> Dict[str, Any]:
    """The JSON record of an annotated Doc.

    doc_id (Any): the document id.
    doc (Doc): the Doc with clusters in doc.spans[f"{prefix}_{i}"].
    prefix (str): the span-group prefix of the clusters.
    resolved (bool): add "resolved" (text) and "edits".
    RETURNS (Dict[str, Any]): id, n_tokens and clusters (name and mentions:
        entities(doc, prefix=prefix), as EntityRecord.to_cluster_record).
    """
    clusters = [entity.to_cluster_record() for entity in entities(doc, prefix=prefix)]
    record = {"id": doc_id, "n_tokens": len(doc), "clusters": clusters}
    if resolved:
        result = resolve(doc, prefix=prefix)
        record["resolved"] = result.text
        record["edits"] = edits_as_records(result)
    return record


def dumps(record: Dict[str, Any]) -> str:
    """One JSONL line (no newline), the same bytes in every engine."""
    return json.dumps(record, ensure_ascii=False)


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MB: VmHWM where Linux
    has it (ru_maxrss of a spawned child is floored at its parent's peak)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _refuse_too_long(item: Item, max_length: int) -> Item:
    """A text longer than nlp.max_length is a bad document (spaCy would stop
    the whole shard with E088): named by file and line like a bad line, and
    skipped with --skip-errors."""
    if item.error is None and isinstance(item.content, str) and len(item.content) > max_length:
        reason = (
            f"text of {len(item.content):,} characters is longer than the pipeline's nlp.max_length "
            f"({max_length:,}; spaCy's E088): split the text, or raise nlp.max_length in the pipeline's config"
        )
        return dataclasses.replace(item, content=None, error=reason, excerpt=item.content[:80] + "...")
    return item


def annotate_shard(
    nlp,
    plan: ShardPlan,
    options: Dict[str, Any],
    *,
    on_docs: Optional[Callable[[int, int], None]] = None,
) -> ShardResult:
    """Annotate one shard.

    nlp (Language): the loaded pipeline.
    plan (ShardPlan): the shard.
    options (Dict[str, Any]): text_field, id_field, encoding, batch_size,
        formats (list of "jsonl"/"spacy"), prefix, skip_errors, resolved.
    on_docs (Optional[Callable[[int, int], None]]): called with (documents,
        tokens) as documents are done, for a progress bar.
    RETURNS (ShardResult): the counts, the files' bytes and the ids of the
        shard, and the worker's pid, peak RSS and timings; or, when errors
        are not skipped and the shard holds a bad item, only `fatal`.
    """
    t_start = time.time()
    prefix = options.get("prefix") or CLUSTER_PREFIX
    formats = options.get("formats") or ["jsonl"]
    result = ShardResult(index=plan.index, digest=plan.digest, n_items=plan.n_items, pid=os.getpid())
    items = list(
        read_shard(
            plan,
            vocab=nlp.vocab,
            text_field=options.get("text_field", "text"),
            id_field=options.get("id_field", "id"),
            encoding=options.get("encoding", "utf-8"),
        )
    )
    if len(items) != plan.n_items:
        raise RuntimeError(
            f"shard {plan.index}: read {len(items)} items, planned {plan.n_items} (did the input change?)"
        )
    items = [_refuse_too_long(item, nlp.max_length) for item in items]
    bad = [item for item in items if item.error is not None]
    if bad and not options.get("skip_errors"):
        result.fatal = bad[0].error_message()
        return result
    good = [item for item in items if item.error is None]
    for item in good:
        if not isinstance(item.content, str):  # a Doc from a DocBin: drop its gold clusters
            clear_clusters(item.content, prefix)
    lines: List[str] = []
    docbin = None
    if "spacy" in formats:
        from spacy.tokens import DocBin

        docbin = DocBin(store_user_data=True)
    die_once = options.get(DIE_ONCE)  # tests only (annotate._faults)
    stall = options.get(STALL)  # tests only
    resolved = bool(options.get("resolved"))
    docs = nlp.pipe((item.content for item in good), batch_size=int(options.get("batch_size", 8)))
    for item, doc in zip(good, docs):
        record = doc_record(item.id, doc, prefix, resolved=resolved)
        lines.append(dumps(record))
        result.n_docs += 1
        result.n_tokens += record["n_tokens"]
        result.n_clusters += len(record["clusters"])
        assert item.id is not None  # a good item has its id (inputs.read_shard)
        result.ids.append(item.id)
        if docbin is not None:
            doc.user_data.setdefault("doc_id", item.id)
            if resolved:  # where `predict --resolved` stores it
                doc.user_data["resolved"] = {"text": record["resolved"], "edits": record["edits"]}
            docbin.add(doc)
        if on_docs is not None:
            on_docs(1, record["n_tokens"])
        if die_once is not None:
            die_once.strike(plan.index)
        if stall is not None:
            stall.strike(plan.index)
    if result.n_docs != len(good):
        raise RuntimeError(f"shard {plan.index}: the pipeline returned {result.n_docs} of {len(good)} documents")
    result.n_errors = len(bad)
    if "jsonl" in formats:
        result.files["jsonl"] = "".join(line + "\n" for line in lines).encode("utf-8")
    if docbin is not None:
        result.files["spacy"] = docbin.to_bytes()
    if bad:
        result.files["errors.jsonl"] = "".join(dumps(item.error_record()) + "\n" for item in bad).encode("utf-8")
    result.t_start, result.t_end = t_start, time.time()
    result.peak_rss_mb = peak_rss_mb()
    return result


def coref_prefixes(nlp) -> List[str]:
    """The span_cluster_prefix of each memcoref component of a loaded
    pipeline (enabled ones), in pipeline order: where it writes clusters."""
    from ..pipeline.coref_component import coref_components

    prefixes: List[str] = []
    for _, pipe in coref_components(nlp):
        if pipe.prefix not in prefixes:
            prefixes.append(pipe.prefix)
    return prefixes


def choose_prefix(prefix: Optional[str], written: Optional[Sequence[str]], model: str) -> str:
    """The prefix of the clusters to read: `prefix` when the pipeline writes
    it, the pipeline's own when None; a prefix the pipeline's coreference
    components do not write (every record would have no clusters) is refused.
    A pipeline with no memcoref component (another coreference component)
    takes any prefix.

    prefix (Optional[str]): --prefix, or None.
    written (Optional[Sequence[str]]): the prefixes the pipeline writes
        (loading.ResolvedModel.span_prefixes or coref_prefixes; None or
        empty: unknown).
    model (str): the pipeline, for the message.
    RETURNS (str): the prefix.
    RAISES ValueError: the pipeline writes no clusters under `prefix`.
    """
    if prefix is None or prefix == "":
        return written[0] if written else CLUSTER_PREFIX
    if written and prefix not in written:
        names = ", ".join(repr(p) for p in written)
        which = "components write them under the prefixes" if len(written) > 1 else "component writes them under"
        raise ValueError(
            f"--prefix {prefix!r}: the pipeline {model} writes no clusters under that prefix; its coreference "
            f"{which} {names} (doc.spans['{written[0]}_1'], ...): give one of those, or leave --prefix out"
        )
    return prefix
