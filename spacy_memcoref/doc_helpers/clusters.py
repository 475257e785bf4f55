"""The cluster span-group convention, in one place.

A Doc's coreference clusters are the span groups ``doc.spans[f"{prefix}_{N}"]``
(spaCy's own convention, so spaCy's coref scorer, ``span_cleaner`` and
displaCy's span renderer work unchanged), one group a cluster, one span a
mention (full spans, not heads); writers number them N = 1, 2, ...

The rule every reader here follows:

- a key is a cluster key when it is ``prefix + "_" + N`` as a whole, N one or
  more ASCII digits (``0-9``; "_01" is cluster 1; "_x", "_1a", "_ 1", "_-1",
  "_1\\n", non-ASCII digits such as "_١" or "_²" are not cluster keys);
- keys are ordered by N, then by the key itself (so "_01" before "_1",
  whatever order they were added in);
- `cluster_keys` lists every cluster key (empty groups too: what to clear);
  the readers of clusters (`cluster_span_groups`, `numbered_clusters`,
  `token_clusters`, `char_clusters`) skip empty groups.

No spaCy import at module level: the CLI imports this module for its
defaults and must stay fast.
"""

import re
from typing import TYPE_CHECKING, Iterable, List, Optional, Sequence, Tuple, cast

from ..util import Clusters

if TYPE_CHECKING:  # pragma: no cover
    from spacy.tokens import Doc, Span, SpanGroup

CLUSTER_PREFIX = "coref_clusters"

CharMention = Tuple[int, int]  # (start_char, end_char), end exclusive

_NUMBER = re.compile(r"[0-9]+")


def cluster_key(number: int, prefix: str = CLUSTER_PREFIX) -> str:
    """The span-group key of cluster `number`.

    number (int): the cluster number (writers count from 1).
    prefix (str): the cluster prefix.
    RETURNS (str): f"{prefix}_{number}".
    """
    return f"{prefix}_{number}"


def cluster_number(key: str, prefix: str = CLUSTER_PREFIX) -> Optional[int]:
    """The N of a cluster key f"{prefix}_{N}", None for any other key.

    key (str): a span-group key.
    prefix (str): the cluster prefix.
    RETURNS (Optional[int]): N, or None.
    """
    marker = prefix + "_"
    if not key.startswith(marker):
        return None
    suffix = key[len(marker) :]
    return int(suffix) if _NUMBER.fullmatch(suffix) else None


def cluster_keys(doc: "Doc", prefix: str = CLUSTER_PREFIX) -> List[str]:
    """Every cluster key of a Doc, empty groups included, in cluster order.

    doc (Doc): the Doc.
    prefix (str): the cluster prefix.
    RETURNS (List[str]): the keys, ordered by (N, key).
    """
    numbered = []
    for key in doc.spans:
        number = cluster_number(key, prefix)
        if number is not None:
            numbered.append((number, key))
    return [key for _, key in sorted(numbered)]


def numbered_clusters(doc: "Doc", prefix: str = CLUSTER_PREFIX) -> List[Tuple[int, "SpanGroup"]]:
    """(N, span group) for every non-empty cluster group, in cluster order.

    doc (Doc): the Doc.
    prefix (str): the cluster prefix.
    RETURNS (List[Tuple[int, SpanGroup]]): the clusters with their numbers.
    """
    out = []
    for key in cluster_keys(doc, prefix):
        group = doc.spans[key]
        if len(group):
            out.append((cast(int, cluster_number(key, prefix)), group))  # cluster_keys: numbered keys only
    return out


def cluster_span_groups(doc: "Doc", prefix: str = CLUSTER_PREFIX) -> List["SpanGroup"]:
    """The non-empty cluster groups of a Doc, in cluster order.

    RETURNS (List[SpanGroup]): one group (of mention spans) a cluster.
    """
    return [group for _, group in numbered_clusters(doc, prefix)]


def token_clusters(doc: "Doc", prefix: str = CLUSTER_PREFIX) -> Clusters:
    """The clusters of a Doc as inclusive token ranges, in cluster order.

    RETURNS (Clusters): (start, end) a mention (TokenSpan), end inclusive.
    """
    return [[(span.start, span.end - 1) for span in group] for group in cluster_span_groups(doc, prefix)]


def char_clusters(doc: "Doc", prefix: str = CLUSTER_PREFIX) -> List[List[CharMention]]:
    """The clusters of a Doc as character ranges, in cluster order (for
    comparing Docs that may be tokenized differently).

    RETURNS (List[List[Tuple[int, int]]]): (start_char, end_char) a mention.
    """
    return [[(span.start_char, span.end_char) for span in group] for group in cluster_span_groups(doc, prefix)]


def clear_clusters(doc: "Doc", prefix: str = CLUSTER_PREFIX) -> None:
    """Delete every cluster group of a Doc (empty ones too).

    doc (Doc): the Doc, changed in place.
    prefix (str): the cluster prefix.
    """
    for key in cluster_keys(doc, prefix):
        del doc.spans[key]


def write_clusters(doc: "Doc", clusters: Iterable[Sequence["Span"]], prefix: str = CLUSTER_PREFIX) -> None:
    """Replace the clusters of a Doc: clear its cluster groups, then write
    one group a cluster, numbered from 1 in the order given.

    doc (Doc): the Doc, changed in place.
    clusters (Iterable[Sequence[Span]]): the mentions of each cluster, spans
        of `doc` (their labels are kept).
    prefix (str): the cluster prefix.
    """
    clear_clusters(doc, prefix)
    for number, mentions in enumerate(clusters, start=1):
        doc.spans[cluster_key(number, prefix)] = list(mentions)
