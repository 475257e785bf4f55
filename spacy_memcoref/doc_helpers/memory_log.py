"""PeTra's memory log on Docs and Tokens (no torch here).

- ``doc._.memory_log``: None, or a dict of float32 numpy arrays
  ``entity`` [T], ``overwrite`` [T, N], ``coref`` [T, N], ``usage`` [T, N]
  (T = tokens, N = memory cells), written by the PeTra model's
  decoder (decoders.petra.PeTraDecoder).
- ``token._.memory_usage``: the token's [N] usage row (a view into the Doc's
  log), None when the Doc has no log.

PeTra also writes the link probabilities of a GAP Doc beside the log (see
``doc_helpers.gap_annotation.GAP_PROBS_KEY``).

The log lives in doc.user_data (as every Doc extension value does), so it
survives ``DocBin(store_user_data=True)`` and ``doc.to_bytes()``: srsly's
msgpack stores numpy arrays with their dtype and shape.
"""

from typing import Any, Dict, Mapping, Optional

import numpy
from spacy.tokens import Doc, Token

from . import LOG_KEYS

MEMORY_LOG_ATTR = "memory_log"
MEMORY_USAGE_ATTR = "memory_usage"


def _memory_usage(token: Token) -> Optional[numpy.ndarray]:
    log = token.doc._.get(MEMORY_LOG_ATTR)
    if not log or "usage" not in log:
        return None
    return log["usage"][token.i]


def register_extensions() -> None:
    """Register doc._.memory_log and token._.memory_usage (idempotent)."""
    if not Doc.has_extension(MEMORY_LOG_ATTR):
        Doc.set_extension(MEMORY_LOG_ATTR, default=None)
    Token.set_extension(MEMORY_USAGE_ATTR, getter=_memory_usage, force=True)


def as_memory_log(log: Mapping[str, Any]) -> Dict[str, numpy.ndarray]:
    """A memory log as contiguous float32 numpy arrays, validated.

    log (Mapping[str, Any]): entity [T], overwrite/coref/usage [T, N].
    RETURNS (Dict[str, numpy.ndarray]): the four arrays.
    """
    out = {key: numpy.ascontiguousarray(numpy.asarray(log[key], dtype=numpy.float32)) for key in LOG_KEYS}
    n_tokens = out["entity"].shape[0]
    if out["entity"].ndim != 1:
        raise ValueError(f"memory log 'entity' must be [T], got shape {out['entity'].shape}")
    for key in LOG_KEYS[1:]:
        if out[key].ndim != 2 or out[key].shape[0] != n_tokens:
            raise ValueError(f"memory log {key!r} must be [T={n_tokens}, N], got shape {out[key].shape}")
    return out


def set_memory_log(doc: Doc, log: Mapping[str, Any]) -> None:
    """Store a memory log on a Doc (doc._.memory_log).

    doc (Doc): the Doc, len(doc) == T.
    log (Mapping[str, Any]): the log (arrays or nested lists).
    """
    arrays = as_memory_log(log)
    if arrays["entity"].shape[0] != len(doc):
        raise ValueError(f"memory log has {arrays['entity'].shape[0]} tokens, the Doc {len(doc)}")
    doc._.set(MEMORY_LOG_ATTR, arrays)


def get_memory_log(doc: Doc) -> Optional[Dict[str, numpy.ndarray]]:
    """RETURNS (Optional[Dict[str, numpy.ndarray]]): doc._.memory_log."""
    return doc._.get(MEMORY_LOG_ATTR)


register_extensions()
