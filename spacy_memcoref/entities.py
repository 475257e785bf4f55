"""Entity records: one a cluster, with its representative name, its
mentions (token and character offsets, text) and a vector:

- by default the coreference model's own (doc._.entity_vectors, written by
  the component when it ran: for s2e the mean of its antecedent endpoint
  features over the mentions; doc_helpers.entity_vectors), free to read;
- with vectors_from=nlp, the mean of the encoder's token vectors over the
  mentions' heads instead (the encoder runs again): a vector in the
  encoder's own space, comparable with the token vectors of any text the
  same encoder reads (e.g. to match an entity against words that no
  cluster holds), and available for Docs whose clusters came from
  elsewhere (gold, another tool);
- None when neither is there.

The one builder of a cluster's record: `annotate`'s JSONL records are these
records too (EntityRecord.to_cluster_record). The rules:

- mentions: the cluster's non-empty spans in text order, by first token,
  a longer mention before a shorter one that starts where it does (the
  order `resolve` reads them in); zero-width spans are no mentions, and a
  cluster of none is no record;
- name: the representative's name as `resolve` writes it (resolution's
  rules 1 and 2: the first proper-noun mention, else the first non-pronoun
  one, without a final possessive marker or an aside); None (JSON null)
  when no mention can represent the cluster (pronouns only, or a lone word
  that names nothing): the clusters `resolve` leaves alone.

Heads: span.root when the Doc has a dependency parse, else the mention's
last token (the head of most English noun phrases without a modifier after
the noun). The vectors cost nothing unless asked for: the encoder runs again
only then.
"""

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Optional

from .doc_helpers.clusters import CLUSTER_PREFIX, numbered_clusters
from .doc_helpers.entity_vectors import entity_vector_map
from .resolution import is_tagged, representative_name, representative_of

if TYPE_CHECKING:  # pragma: no cover
    import numpy
    from spacy.language import Language
    from spacy.tokens import Doc, Span


@dataclass
class Mention:
    """A mention: tokens [start, end) and characters [start_char, end_char) of doc.text."""

    start: int
    end: int
    start_char: int
    end_char: int
    text: str


@dataclass
class EntityRecord:
    """One cluster.

    cluster (int): N of its span group doc.spans[f"{prefix}_{N}"].
    name (Optional[str]): its representative's name (resolution's rules:
        first proper-noun mention, else first non-pronoun, without a final
        possessive marker); None when no mention can represent it (pronouns
        only).
    mentions (List[Mention]): in text order (by first token, the longer of
        two that start together first).
    vector (Optional[numpy.ndarray]): the model's own entity vector
        (doc._.entity_vectors), or with vectors_from the mean encoder vector
        over the mentions' heads, [width] float32; None without either.
    """

    cluster: int
    name: Optional[str]
    mentions: List[Mention] = field(default_factory=list)
    vector: Optional["numpy.ndarray"] = None

    def to_dict(self) -> Dict[str, Any]:
        """JSON-ready: the vector as a list of floats (or None)."""
        return {
            "cluster": self.cluster,
            "name": self.name,
            "mentions": [vars(m).copy() for m in self.mentions],
            "vector": None if self.vector is None else [float(x) for x in self.vector],
        }

    def to_cluster_record(self) -> Dict[str, Any]:
        """The cluster as `annotate` writes it in a JSONL record: {"name",
        "mentions": [{"start", "end", "text"}]}, start/end character offsets
        into doc.text (end exclusive); no cluster number, no vector."""
        return {
            "name": self.name,
            "mentions": [{"start": m.start_char, "end": m.end_char, "text": m.text} for m in self.mentions],
        }


def mention_head(span: "Span", parsed: Optional[bool] = None) -> int:
    """RETURNS (int): the Doc index of a mention's head token.

    parsed (Optional[bool]): doc.has_annotation("DEP"), a scan of the Doc:
        pass it when asking for many mentions (None: look).
    """
    if parsed is None:
        parsed = span.doc.has_annotation("DEP")
    return span.root.i if parsed else span.end - 1


def entities(
    doc: "Doc", *, vectors_from: Optional["Language"] = None, prefix: str = CLUSTER_PREFIX
) -> List[EntityRecord]:
    """One record a cluster of the Doc (doc.spans[f"{prefix}_{N}"], empty
    groups skipped), mentions and name by the rules at the top of this
    module.

    doc (Doc): a Doc with clusters (from either model, a DocBin or by hand).
    vectors_from (Optional[Language]): a pipeline with a memcoref component:
        its encoder gives each record a vector, in place of the model's own
        (None: the model's own, doc._.entity_vectors, where the Doc has them).
    prefix (str): the cluster prefix.
    RETURNS (List[EntityRecord]): in cluster order.
    """
    clusters = [
        (n, sorted((s for s in group if len(s)), key=lambda s: (s.start, -s.end)))
        for n, group in numbered_clusters(doc, prefix)
    ]
    clusters = [(n, spans) for n, spans in clusters if spans]
    records = []
    tagged = is_tagged(doc)
    own = entity_vector_map(doc, prefix)
    for number, spans in clusters:
        representative = representative_of(spans, tagged)
        records.append(
            EntityRecord(
                cluster=number,
                # without a possessive marker: "Mary", not "Mary's"
                name=representative_name(representative, tagged) if representative is not None else None,
                mentions=[Mention(s.start, s.end, s.start_char, s.end_char, s.text) for s in spans],
                vector=own.get(number),
            )
        )
    if vectors_from is not None and records:
        from .pipeline.coref_component import coref_components

        found = coref_components(vectors_from)
        if not found:
            raise ValueError(f"vectors_from: the pipeline has no memcoref component (pipes: {vectors_from.pipe_names})")
        token_vectors = found[0][1].token_vectors([doc])[0]
        parsed = doc.has_annotation("DEP")
        for record, (_, spans) in zip(records, clusters):
            heads = sorted({mention_head(s, parsed) for s in spans})
            record.vector = token_vectors[heads].mean(axis=0).astype("float32")
    return records
