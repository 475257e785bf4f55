"""PeTra reading on: the memory and the GRU state carried from one piece of
text to the next, so that a stream (spacy_memcoref.stream) feeds a
conversation turn by turn and the memory cells hold its entities across
turns, in a state of fixed size (N cells of d, usage, the GRU's d).

The encoder still sees context: the piece's tokens are encoded inside a
Doc that holds the latest earlier pieces too (the stream's window), and
the memory reads only the piece's own tokens, from where it stood after the
previous piece. Reading a document in pieces this way gives the memory log
of reading it whole, when each piece's context holds everything before it
(tested).
"""

from dataclasses import dataclass
from typing import Optional

import numpy
from spacy.tokens import Doc
from thinc.api import Model

from ...decoders.predictions import LogDecoding, MemoryLog
from ...doc_helpers import LOG_KEYS
from ..encoder.encoder import encode_for_inference


@dataclass
class MemoryState:
    """Where PeTra stands after a piece: float32 arrays.

    gru (numpy.ndarray): the GRU's state [d].
    memory (numpy.ndarray): the cells [N, d].
    usage (numpy.ndarray): the cells' usage [N].
    """

    gru: numpy.ndarray
    memory: numpy.ndarray
    usage: numpy.ndarray


@dataclass
class PieceReading:
    """What reading a piece gives.

    log (MemoryLog): the piece's memory log (float32: entity [T],
        overwrite / coref / usage [T, N]).
    state (MemoryState): where the memory stands after it.
    decoding (LogDecoding): the head's settings for decoding a log into
        mentions (entity threshold, fewest mentions of an entity).
    """

    log: MemoryLog
    state: MemoryState
    decoding: LogDecoding


def read_on(model: Model, doc: Doc, start: int, state: Optional[MemoryState]) -> PieceReading:
    """The memory log of doc[start:], read from `state` (None: the initial
    memory), the tokens before `start` being context for the encoder only.

    model (Model): a model built by spacy_memcoref.PeTra.v1, trained.
    doc (Doc): the context and the piece, the piece last.
    start (int): the piece's first token.
    state (Optional[MemoryState]): where the memory stood after the
        previous piece.
    RETURNS (PieceReading): the piece's log (T = len(doc) - start rows),
        the state after its last token, the head's decoding settings.
    """
    import torch
    from thinc.api import xp2torch

    if not 0 <= start <= len(doc):
        raise ValueError(f"read_on: start {start} is outside the Doc of {len(doc)} tokens")
    tok2vec, head_layer = model.layers[0], model.layers[1]
    head = head_layer.shims[0]._model
    petra = head.petra
    if petra is None:
        raise ValueError("read_on: the PeTra head has no weights yet (train or load the pipeline)")
    device = next(petra.parameters()).device
    dtype = petra.gru.weight_ih_l0.dtype
    n, d = petra.num_cells, petra.hidden_size
    training = head.training
    head.eval()  # prediction's choices: the argmax cell, no dropout
    try:
        return _read(tok2vec, head, petra, doc, start, state, device, dtype, n, d)
    finally:
        head.train(training)


def _read(
    tok2vec: Model, head, petra, doc: Doc, start: int, state: Optional[MemoryState], device, dtype, n: int, d: int
) -> PieceReading:
    import torch
    from thinc.api import xp2torch

    with torch.no_grad():
        if state is None:
            mem, usage = petra.initial_memory(1, device, dtype)
            h0 = None
        else:
            _check_state(state, n, d)
            mem = torch.as_tensor(state.memory, device=device, dtype=dtype).unsqueeze(0)
            usage = torch.as_tensor(state.usage, device=device, dtype=dtype).unsqueeze(0)
            h0 = torch.as_tensor(state.gru, device=device, dtype=dtype).view(1, 1, d)
        if start < len(doc):
            vectors = encode_for_inference(tok2vec, [doc])[0]
            x = xp2torch(vectors[start:], device=device).to(dtype)
            if head.mix is not None:
                x = head.mix(x)
            h, h_n = petra.gru(x.unsqueeze(0), h0)
            lengths = torch.tensor([h.shape[1]], dtype=torch.long, device=device)
            logs, (mem, usage) = petra.run_controller(h, lengths, state=(mem, usage))
            gru = h_n.view(d)
        else:
            logs = {
                "entity": torch.zeros(1, 0, device=device, dtype=dtype),
                **{key: torch.zeros(1, 0, n, device=device, dtype=dtype) for key in ("overwrite", "coref", "usage")},
            }
            gru = h0.view(d) if h0 is not None else torch.zeros(d, device=device, dtype=dtype)
    log = {key: logs[key][0].float().cpu().numpy().astype("float32", copy=False) for key in LOG_KEYS}
    after = MemoryState(
        gru=gru.float().cpu().numpy().astype("float32"),
        memory=mem[0].float().cpu().numpy().astype("float32"),
        usage=usage[0].float().cpu().numpy().astype("float32"),
    )
    return PieceReading(log, after, LogDecoding(threshold=head.entity_threshold, min_mentions=head.min_mentions))


def _check_state(state: MemoryState, n: int, d: int) -> None:
    shapes = {"gru": (d,), "memory": (n, d), "usage": (n,)}
    for name, shape in shapes.items():
        found = tuple(numpy.shape(getattr(state, name)))
        if found != shape:
            raise ValueError(f"read_on: the state's {name} has shape {found}, this model's is {shape}")
