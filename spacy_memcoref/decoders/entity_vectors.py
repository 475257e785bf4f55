"""Entity vectors from a model's own features (numpy, torch-free): the
pooling rule, in one place.

s2e: a cluster's vector is the mean over its mentions of [a^s(start);
a^e(end)], the antecedent endpoint features the head compares mentions
with (pytorch_s2e: the antecedent score is bilinear in them), so two
mentions the model links have near vectors in the space it links in.
"""

from typing import Sequence

import numpy

from ..util import Clusters


def pool_endpoints(
    endpoints: numpy.ndarray, starts: Sequence[int], ends: Sequence[int], clusters: Clusters
) -> numpy.ndarray:
    """One vector a cluster from its mentions' endpoint features.

    endpoints (numpy.ndarray): [n, 2h], a row a candidate mention: a^s of its
        start in the first h columns, a^e of its end in the last h.
    starts, ends (Sequence[int]): the candidates' first and last tokens.
    clusters (Clusters): inclusive token spans, each a candidate.
    RETURNS (numpy.ndarray): [K, 2h] float32, a row a cluster in order.
    RAISES ValueError: a mention that is no candidate.
    """
    endpoints = numpy.asarray(endpoints, dtype=numpy.float32)
    if endpoints.ndim != 2 or endpoints.shape[0] != len(starts) or len(starts) != len(ends):
        raise ValueError(f"endpoint features must be [n={len(starts)}, 2h], got shape {endpoints.shape}")
    row_of = {(s, e): i for i, (s, e) in enumerate(zip(starts, ends))}
    out = numpy.zeros((len(clusters), endpoints.shape[1]), dtype=numpy.float32)
    for row, cluster in enumerate(clusters):
        missing = [m for m in cluster if (m[0], m[1]) not in row_of]
        if missing:
            raise ValueError(f"entity vectors: mention {missing[0]} is not one of the model's candidates")
        out[row] = endpoints[[row_of[(m[0], m[1])] for m in cluster]].mean(axis=0)
    return out
