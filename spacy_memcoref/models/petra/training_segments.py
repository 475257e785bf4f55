"""Long documents read in segments while PeTra trains.

PeTra's controller is a loop over tokens: an update costs the length of the
longest document of the batch in sequential steps, however many documents
run beside it. A GAP text is ~100 tokens; an OntoGUM document ~1,000, so
one OntoGUM update would cost ten GAP updates. In training (only), a
document longer than `max_tokens` is cut into segments of at most
`max_tokens` tokens that the batch runs side by side, each from an empty
memory, like truncated backpropagation through time:

- a cut never falls inside a labelled span that fits in a segment: it
  moves back to the start of the span it would split (a span longer than
  a segment is cut where the segment ends);
- a span keeps its labels with the spans of its own segment; a pair across
  two segments is left out (counted), as the memory of one segment never
  sees the other;
- prediction always reads the whole document, memory carried throughout;
  the usage decay (0.98 a token) frees a cell within a few hundred tokens,
  so a segment of a few hundred tokens sees the memory states that matter.

Pure PyTorch; no spaCy, no Thinc.
"""

from typing import List, Optional, Sequence, Tuple

from torch import Tensor

from .pytorch_petra import SparseGold


def cut_points(n_tokens: int, spans: Sequence[Tuple[int, int]], max_tokens: int) -> List[int]:
    """Segment starts for a document of `n_tokens` tokens: 0, then each next
    start at most `max_tokens` after the last, moved back so that no span
    (inclusive token range) of at most `max_tokens` tokens is split.
    RETURNS the starts, 0 first."""
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
    starts = [0]
    while n_tokens - starts[-1] > max_tokens:
        cut = starts[-1] + max_tokens
        moved = True
        while moved:  # a cut moved back may fall inside another (nested) span
            moved = False
            for start, end in spans:
                fits = end - start + 1 <= max_tokens  # a longer span is split wherever the cut falls
                if fits and start < cut <= end and start > starts[-1]:
                    cut, moved = start, True
        starts.append(cut)
    return starts


def split_for_training(
    feats: Sequence[Tensor], golds: Sequence[Optional[SparseGold]], max_tokens: int
) -> Tuple[List[Tensor], List[Optional[SparseGold]], int]:
    """The batch with every document longer than `max_tokens` cut into
    segments (module docstring).

    feats (Sequence[Tensor]): each document's features [T, d].
    golds (Sequence[Optional[SparseGold]]): each document's labels or None.
    max_tokens (int): the longest segment; 0 keeps every document whole.
    RETURNS (Tuple[List[Tensor], List[Optional[SparseGold]], int]): the
        segments' features and labels, and the number of span pairs left
        out because their spans fell in different segments.
    """
    if max_tokens == 0:
        return list(feats), list(golds), 0
    out_feats: List[Tensor] = []
    out_golds: List[Optional[SparseGold]] = []
    dropped = 0
    for x, gold in zip(feats, golds):
        n_tokens = int(x.shape[0])
        spans = list(gold.spans) if gold is not None else []
        starts = cut_points(n_tokens, spans, max_tokens)
        if len(starts) == 1:
            out_feats.append(x)
            out_golds.append(gold)
            continue
        ends = starts[1:] + [n_tokens]
        segment_of = [next(s for s in range(len(starts)) if starts[s] <= a < ends[s]) for a, _ in spans]
        for s, (begin, end) in enumerate(zip(starts, ends)):
            out_feats.append(x[begin:end])
            if gold is None:
                out_golds.append(None)
                continue
            index = {}
            seg_spans: List[Tuple[int, int]] = []
            for i, (a, b) in enumerate(spans):
                if segment_of[i] == s:
                    index[i] = len(seg_spans)
                    seg_spans.append((a - begin, min(b, end - 1) - begin))
            pairs = [(index[i], index[j], label) for i, j, label in gold.pairs if i in index and j in index]
            out_golds.append(SparseGold(spans=seg_spans, pairs=pairs))
        dropped += sum(1 for i, j, _ in gold.pairs if segment_of[i] != segment_of[j]) if gold is not None else 0
    return out_feats, out_golds, dropped
