"""Clusters from links: each candidate joined to its chosen antecedent, the
union of the links (the one home of that rule: s2e's decoding and the
bounded memory's both end in it)."""

from typing import Dict, List, Sequence

from ..util import Clusters, TokenSpan


def link_groups(links: Sequence[int]) -> List[int]:
    """Each candidate's group under the union of the links (-1: none): a
    group's id is one of its candidates' indices, the same for all of them."""
    parent = list(range(len(links)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for q, c in enumerate(links):
        if c >= 0:
            parent[find(q)] = find(c)
    return [find(i) for i in range(len(links))]


def clusters_from_links(starts: Sequence[int], ends: Sequence[int], links: Sequence[int]) -> Clusters:
    """Union candidates with their chosen antecedent (-1: none); clusters of
    two or more mentions, each sorted, in order of their first mention."""
    groups: Dict[int, List[TokenSpan]] = {}
    for i, group in enumerate(link_groups(links)):
        groups.setdefault(group, []).append((starts[i], ends[i]))
    clusters = [sorted(set(g)) for g in groups.values() if len(g) > 1]
    return sorted(clusters, key=lambda c: c[0])
