"""Entity vectors from a model's own features (numpy, torch-free): the
pooling rule, in one place.

s2e: a cluster's vector is the mean over its mentions of [a^s(start);
a^e(end)], the antecedent endpoint features the head compares mentions
with (pytorch_s2e: the antecedent score is bilinear in them), so two
mentions the model links have near vectors in the space it links in.
"""
import numpy

from ..util import Clusters


def pool_endpoints(endpoints: numpy.ndarray, clusters: Clusters) -> numpy.ndarray:
    """One vector a cluster from token-level endpoint features.

    endpoints (numpy.ndarray): [T, 2h]: a^s in the first h columns, a^e in
        the last h.
    clusters (Clusters): inclusive token spans.
    RETURNS (numpy.ndarray): [K, 2h] float32, a row a cluster in order.
    """
    endpoints = numpy.asarray(endpoints, dtype=numpy.float32)
    if endpoints.ndim != 2 or endpoints.shape[1] % 2:
        raise ValueError(f"endpoint features must be [T, 2h], got shape {endpoints.shape}")
    half = endpoints.shape[1] // 2
    out = numpy.zeros((len(clusters), endpoints.shape[1]), dtype=numpy.float32)
    for row, cluster in enumerate(clusters):
        starts = [s for s, _ in cluster]
        ends = [e for _, e in cluster]
        out[row, :half] = endpoints[starts, :half].mean(axis=0)
        out[row, half:] = endpoints[ends, half:].mean(axis=0)
    return out
