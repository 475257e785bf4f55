"""Entity gating for a downstream component: `spacy_memcoref.EntityGating.v1`.

Wraps the tok2vec of a component later in the pipeline (a NER, a span
categorizer, a text classifier) and mixes into each token that is inside a
mention the vector of the mention's entity, as CoreLM's entity-gating layer
does (Stylianou & Vlahavas): for a token t of a mention of cluster c, with
the coreference model's entity vector e_c (doc._.entity_vectors),

    p_t = W e_c                       (the entity, in the tok2vec's width)
    g_t = sigmoid(G [h_t; p_t] + b)   (a gate a dimension)
    out_t = h_t + g_t * p_t

and out_t = h_t for a token in no mention. With every gate closed (g = 0)
the layer gives exactly the wrapped tok2vec's output; the gate bias starts
at `init_gate_bias` (mostly closed), so training starts near the wrapped
model. The vectors come from the coreference component, which must run
before (in `[training] annotating_components` while training, frozen), so
the layer needs no torch and trains the way any Thinc layer does.
"""

from typing import Any, Callable, List, Optional, Tuple, cast

import numpy
from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Model
from thinc.types import Floats2d

from ..doc_helpers.clusters import CLUSTER_PREFIX
from ..doc_helpers.entity_vectors import ENTITY_VECTORS_ATTR, token_entity_rows


@registry.architectures("spacy_memcoref.EntityGating.v1")
def build_entity_gating(
    tok2vec: Model[List[Doc], List[Floats2d]],
    *,
    entity_width: int = 1024,
    span_cluster_prefix: str = CLUSTER_PREFIX,
    init_gate_bias: float = -2.0,
) -> Model[List[Doc], List[Floats2d]]:
    """A tok2vec whose tokens inside a mention take in their entity's vector.

    tok2vec (Model[List[Doc], List[Floats2d]]): the wrapped tok2vec.
    entity_width (int): the entity vectors' width (doc._.entity_vectors; 2 x
        the s2e head's hidden size: 1,024 for the shipped s2e models; PeTra's
        hidden size, its cell size: 200 for petra-gap).
    span_cluster_prefix (str): the coreference component's cluster prefix.
    init_gate_bias (float): the gates' bias at the start (sigmoid(-2) = 0.12).
    RETURNS (Model[List[Doc], List[Floats2d]]): one vector a token, the
        wrapped tok2vec's width.
    """
    if not isinstance(entity_width, int) or isinstance(entity_width, bool) or entity_width < 1:
        raise ValueError(
            f"spacy_memcoref.EntityGating.v1: entity_width must be a positive integer, got {entity_width!r}"
        )
    return Model(
        "entity_gating",
        _forward,
        init=_init,
        layers=[tok2vec],
        dims={"nO": tok2vec.get_dim("nO") if tok2vec.has_dim("nO") else None, "nE": entity_width},
        params={"W": None, "G": None, "b": None},
        attrs={"prefix": span_cluster_prefix, "init_gate_bias": float(init_gate_bias)},
    )


def _init(model: Model, X: Optional[List[Doc]] = None, Y: Any = None) -> None:
    tok2vec = model.layers[0]
    tok2vec.initialize(X=X)
    width = tok2vec.get_dim("nO")
    model.set_dim("nO", width)
    n_e = model.get_dim("nE")
    ops = model.ops
    # W: Glorot-uniform, as Thinc's Linear; G starts at zero, so that the
    # gates start at sigmoid(init_gate_bias) everywhere
    limit = numpy.sqrt(6.0 / (width + n_e))
    model.set_param(
        "W", ops.asarray2f(cast(Floats2d, numpy.random.uniform(-limit, limit, (width, n_e)).astype("float32")))
    )
    model.set_param("G", ops.alloc2f(width, 2 * width))
    model.set_param("b", ops.asarray1f(cast(Any, numpy.full(width, model.attrs["init_gate_bias"], dtype="float32"))))


def _sigmoid(z: numpy.ndarray, xp: Any) -> numpy.ndarray:
    """Without overflow, and exactly 0 for a very negative input (closed gates)."""
    positive = z >= 0
    exp = xp.exp(-xp.abs(z))
    return xp.where(positive, 1.0 / (1.0 + exp), exp / (1.0 + exp))


def _entity_inputs(model: Model, doc: Doc) -> Tuple[Any, Any]:
    """The Doc's tokens in a mention (indices) and their entities' vectors
    ([M, nE]), or (None, None) when it has none."""
    stored = doc._.get(ENTITY_VECTORS_ATTR)
    if not stored:
        return None, None
    vectors = stored["vectors"]
    if vectors.shape[1] != model.get_dim("nE"):
        raise ValueError(
            f"EntityGating.v1: the Doc's entity vectors are {vectors.shape[1]} wide, the layer's entity_width is "
            f"{model.get_dim('nE')}: set entity_width to the coreference model's (s2e: 2 x its hidden_size; PeTra: its hidden_size)"
        )
    rows = token_entity_rows(doc, model.attrs["prefix"])
    inside = numpy.nonzero(rows >= 0)[0]
    if inside.size == 0:
        return None, None
    return model.ops.asarray1i(cast(Any, inside)), model.ops.asarray2f(vectors[rows[inside]])


def _forward(model: Model, docs: List[Doc], is_train: bool) -> Tuple[List[Floats2d], Callable]:
    tok2vec = model.layers[0]
    hidden, backprop_tok2vec = tok2vec(docs, is_train)
    W, G, b = model.get_param("W"), model.get_param("G"), model.get_param("b")
    xp = model.ops.xp
    width = W.shape[0]
    outputs: List[Any] = []
    saved: List[Any] = []
    h: Any
    for doc, h in zip(docs, hidden):
        inside, entities = _entity_inputs(model, doc)
        if inside is None:
            outputs.append(h)
            saved.append(None)
            continue
        h_in = h[inside]
        p = entities @ W.T  # [M, w]
        both = xp.concatenate([h_in, p], axis=1)  # [M, 2w]
        g = _sigmoid(both @ G.T + b, xp)  # [M, w]
        out = h.copy()
        out[inside] = h_in + g * p
        outputs.append(out)
        saved.append((inside, entities, p, both, g))

    def backprop(d_outputs: List[Floats2d]) -> Any:
        d_hidden = []
        d_out: Any
        for d_out, kept in zip(d_outputs, saved):
            if kept is None:
                d_hidden.append(d_out)
                continue
            inside, entities, p, both, g = kept
            d_o = d_out[inside]
            d_z = d_o * p * g * (1.0 - g)  # through the gate
            model.inc_grad("G", d_z.T @ both)
            model.inc_grad("b", d_z.sum(axis=0))
            d_both = d_z @ G  # [M, 2w]
            d_p = d_o * g + d_both[:, width:]
            model.inc_grad("W", d_p.T @ entities)
            d_h = d_out.copy()
            d_h[inside] = d_o + d_both[:, :width]
            d_hidden.append(d_h)
        return backprop_tok2vec(d_hidden)

    return cast(List[Floats2d], outputs), backprop
