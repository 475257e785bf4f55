"""The coreference model's own entity vectors on a Doc (no torch here).

``doc._.entity_vectors``: None, or a dict
- ``clusters``: int64 [K], the cluster numbers N (doc.spans[f"{prefix}_{N}"])
  in the order of the rows;
- ``vectors``: float32 [K, D], one row a cluster;
- ``source``: what the rows are (ENDPOINTS_SOURCE: s2e's antecedent endpoint
  features, the mean over the cluster's mentions of [a^s(first token);
  a^e(last token)], D = 2 x the head's hidden size: 1,024 for the shipped
  s2e models; MEMORY_CELL_SOURCE: PeTra's memory cell, the state m^i of
  the cluster's cell right after the update at its last token, D = the
  cell size, hidden_size: 200 for the shipped petra-gap);
- ``prefix``: the cluster prefix the numbers belong to.

One set a Doc: with two coreference components (two prefixes), the last
one to run writes it.

Written by the component when it writes the clusters (its
``entity_vectors`` setting; on by default), so no second encoder pass is
needed. Like the memory log it lives in doc.user_data, so it survives
``DocBin(store_user_data=True)`` and ``doc.to_bytes()``.
"""

from typing import Any, Dict, Optional, Sequence

import numpy
from spacy.tokens import Doc

from .clusters import CLUSTER_PREFIX

ENTITY_VECTORS_ATTR = "entity_vectors"
ENDPOINTS_SOURCE = "s2e-antecedent-endpoints"
MEMORY_CELL_SOURCE = "petra-memory-cell"


def register_extensions() -> None:
    """Register doc._.entity_vectors (idempotent)."""
    if not Doc.has_extension(ENTITY_VECTORS_ATTR):
        Doc.set_extension(ENTITY_VECTORS_ATTR, default=None)


def set_entity_vectors(
    doc: Doc, clusters: Sequence[int], vectors: Any, source: str, prefix: str = CLUSTER_PREFIX
) -> None:
    """Store one vector a cluster on a Doc.

    doc (Doc): the Doc.
    clusters (Sequence[int]): the cluster numbers, one a row.
    vectors (array-like): [K, D].
    source (str): what the rows are.
    prefix (str): the clusters' prefix.
    """
    rows = numpy.ascontiguousarray(numpy.asarray(vectors, dtype=numpy.float32))
    numbers = numpy.asarray(list(clusters), dtype=numpy.int64)
    if rows.ndim != 2 or rows.shape[0] != numbers.shape[0]:
        raise ValueError(f"entity vectors must be [K={numbers.shape[0]}, D], got shape {rows.shape}")
    doc._.set(ENTITY_VECTORS_ATTR, {"clusters": numbers, "vectors": rows, "source": source, "prefix": prefix})


def clear_entity_vectors(doc: Doc) -> None:
    doc._.set(ENTITY_VECTORS_ATTR, None)


def entity_vector_map(doc: Doc, prefix: str = CLUSTER_PREFIX) -> Dict[int, numpy.ndarray]:
    """RETURNS (Dict[int, numpy.ndarray]): cluster number -> its vector, for
    the clusters of `prefix`; empty when the Doc has none for them."""
    stored: Optional[Dict[str, Any]] = doc._.get(ENTITY_VECTORS_ATTR)
    if not stored or stored.get("prefix", CLUSTER_PREFIX) != prefix:
        return {}
    return {int(n): stored["vectors"][i] for i, n in enumerate(stored["clusters"])}


register_extensions()


def token_entity_rows(doc: Doc, prefix: str = CLUSTER_PREFIX) -> numpy.ndarray:
    """Each token's row in doc._.entity_vectors["vectors"]: the row of the
    cluster of the mention it is in (the shortest, when mentions nest), -1
    for a token in no mention of a cluster with a vector.

    RETURNS (numpy.ndarray): int64 [T].
    """
    from .clusters import numbered_clusters

    rows = numpy.full(len(doc), -1, dtype=numpy.int64)
    stored: Optional[Dict[str, Any]] = doc._.get(ENTITY_VECTORS_ATTR)
    if not stored or stored.get("prefix", CLUSTER_PREFIX) != prefix:
        return rows
    row_of = {int(n): i for i, n in enumerate(stored["clusters"])}
    width = numpy.full(len(doc), len(doc) + 1, dtype=numpy.int64)
    for number, group in numbered_clusters(doc, prefix):
        if number not in row_of:
            continue
        for span in group:
            shorter = width[span.start : span.end] > len(span)
            rows[span.start : span.end][shorter] = row_of[number]
            width[span.start : span.end][shorter] = len(span)
    return rows
