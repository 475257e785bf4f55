"""Thinc glue shared by the s2e and PeTra models: an encoder (tok2vec) chained
to a PyTorch coreference head that computes its own loss.

The model's input is ``(docs, golds)`` with ``golds`` None at inference; its
output is ``(loss, predictions)``. Backpropagating the scalar 1.0 through it
trains the head and the encoder together, so the component never touches a
tensor. Each builder also gives the component two hooks, in the model's
attrs: ``make_gold(example, prefix) -> (gold, n_missed)`` builds a document's
gold in the form its head wants, and ``decoder`` (a torch-free object of the
decoders package) owns the decisions taken on a prediction and writes it:
``decoder.configure(settings)`` takes the component's settings,
``decoder.clusters(prediction)`` gives the clusters and
``decoder.write(doc, prediction)`` writes what a prediction holds beyond
them. Only import this module from a model builder: it imports torch.
"""

from typing import Any, Callable, Dict, List, Optional, Tuple, cast

import torch
from spacy.tokens import Doc
from spacy.training import Example
from thinc.api import ArgsKwargs, Dropout, Model, PyTorchShim, torch2xp, xp2torch
from thinc.types import Floats2d

from ..corpora.gender_swap import gender_mirror_doc
from ..decoders.protocol import Decoder
from . import after_fork  # noqa: F401 (nlp.pipe(n_process=k) forks: one torch thread in the children)
from .averaged_params import use_averaged_params
from .encoder.encoder import encode_for_inference

CorefInput = Tuple[List[Doc], Optional[List[Any]]]
CorefOutput = Tuple[float, List[Any]]
# (doc, token vectors as a torch tensor) -> the head's per-document input; a
# head that reads a gender mirror (set_gender_mirror) is also given the
# mirror's token vectors, as a third argument
MakeHeadInput = Callable[..., Any]
# (example, cluster prefix) -> (the document's gold for the head, gold mentions left out)
MakeGold = Callable[[Example, str], Tuple[Any, int]]


class ScaledLRPyTorchShim(PyTorchShim):
    """A PyTorchShim whose parameters learn `lr_scale` times faster than the
    rest of the pipeline: the s2e reference trains its head at 3e-4 and the
    encoder at 1e-5, and Thinc has one optimizer for both."""

    def __init__(self, model: torch.nn.Module, *, lr_scale: float = 1.0, **kwargs: Any) -> None:
        super().__init__(model, **kwargs)
        self.lr_scale = lr_scale

    def to_bytes(self) -> bytes:
        """As PyTorchShim, plus the checksum of the weights (`torch_weights`)."""
        from .torch_weights import with_checksum

        return with_checksum(super().to_bytes())

    def from_bytes(self, bytes_data: bytes) -> "ScaledLRPyTorchShim":
        """As PyTorchShim, but tensors only (torch.load(weights_only=True)
        whatever the torch version or TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD say),
        after checking the checksum saved with them."""
        import srsly
        from thinc.api import get_torch_default_device

        from .torch_weights import CHECKSUM_KEY, load_weights

        device = get_torch_default_device()
        msg = srsly.msgpack_loads(bytes_data)
        state_dict = load_weights(msg["state"], device, checksum=msg.get(CHECKSUM_KEY), what="the coreference head")
        self.cfg = msg["config"]
        self._model.load_state_dict(state_dict)
        self._model.to(device)
        self._grad_scaler.to_(device)
        return self

    def use_params(self, params: Dict[Any, Any]):
        """Run with the optimizer's averages of the head's parameters
        (`use_averages = true`; see averaged_params)."""
        return use_averaged_params(self, params)

    def finish_update(self, optimizer) -> None:
        for name, torch_data in self._model.named_parameters():
            if torch_data.grad is None:
                continue
            if not self._grad_scaler.found_inf:
                param, _ = optimizer(
                    (self.id, name),
                    torch2xp(torch_data.data),
                    torch2xp(torch_data.grad),
                    lr_scale=self.lr_scale,
                )
                torch_data.data = xp2torch(param, requires_grad=True, device=torch_data.device)
            torch_data.grad.zero_()
        self._grad_scaler.update()


def build_coref_model(
    name: str,
    tok2vec: Model[List[Doc], List[Floats2d]],
    head: torch.nn.Module,
    make_head_input: MakeHeadInput,
    *,
    make_gold: MakeGold,
    decoder: Decoder[Any],
    lr_scale: float = 1.0,
    reads_mirror: Optional[Callable[[Doc], bool]] = None,
) -> Model[CorefInput, CorefOutput]:
    """Chain an encoder and a torch head into one Thinc model.

    name (str): the Thinc model's name.
    tok2vec (Model[List[Doc], List[Floats2d]]): the encoder.
    head (torch.nn.Module): forward(inputs, golds) -> (loss or None, predictions).
    make_head_input (MakeHeadInput): builds the head's input for one document.
    make_gold (MakeGold): the component's gold hook (attrs["make_gold"]).
    decoder (Decoder[Any]): the model's decoder (attrs["decoder"]; a
        decoders.protocol.Decoder: decoders.s2e, decoders.petra).
    lr_scale (float): learning-rate multiplier for the head's parameters.
    reads_mirror (Optional[Callable[[Doc], bool]]): the Docs whose gender
        mirror the head reads, when set_gender_mirror is on (None: every one);
        a module-level function, so that the model pickles.
    RETURNS (Model[CorefInput, CorefOutput]): the model.
    """
    head_layer: Model[Any, Any] = Model(
        f"{name}_head",
        _head_forward,
        shims=[ScaledLRPyTorchShim(head, lr_scale=lr_scale)],
        attrs={"make_head_input": make_head_input},
    )
    # [training] dropout reaches this layer through set_dropout_rate: it
    # drops token vectors between the encoder and the head while training.
    return Model(
        name,
        _forward,
        init=_init,
        layers=[tok2vec, head_layer, Dropout(0.0)],
        attrs={
            "make_gold": make_gold,
            "decoder": decoder,
            "set_gender_mirror": set_gender_mirror,
            "reads_mirror": reads_mirror,
        },
    )


def _head_module(model: Model) -> Any:
    """The torch head of a model of build_coref_model (its settings that are
    not saved, such as gender_mirror, are plain attributes)."""
    return model.layers[1].shims[0]._model


def set_gender_mirror(model: Model, on: bool) -> None:
    """Whether the model, predicting, reads each Doc twice, as it is and as
    its gender mirror (corpora.gender_swap.gender_mirror_doc: he <-> she,
    father <-> mother, John <-> Patricia, token for token), and its head
    decides by the mean of the two readings' scores. A function of the
    model, not of one head, so that a copy of the model sets its own head;
    training never reads the mirror.

    model (Model): a model of build_coref_model.
    on (bool): read the mirror too.
    RAISES ValueError: on, for a head that cannot read a mirror.
    """
    # a model of another form (a stub or wrapper that took this model's
    # attrs) has no head here: it reads no mirror
    has_head = len(model.layers) > 1 and bool(model.layers[1].shims)
    head: Any = _head_module(model) if has_head else None
    if not hasattr(head, "gender_mirror"):
        if on:
            raise ValueError(f"the {model.name!r} model's head cannot read a gender mirror")
        return
    head.gender_mirror = bool(on)


def _forward(model: Model, inputs: CorefInput, is_train: bool):
    docs, golds = inputs
    tok2vec, head, dropout = model.layers
    # Encoders choke on empty docs; the head handles them on its own.
    nonempty = [i for i, doc in enumerate(docs) if len(doc)]
    # the gender mirror's token vectors a Doc, where the head reads one
    doc_mirrors: List[Optional[Floats2d]] = [None for _ in docs]
    backprop_tok2vec: Optional[Callable[[Any], Any]]
    if nonempty:
        batch = [docs[i] for i in nonempty]
        if is_train:
            vectors, backprop_encoder = tok2vec(batch, is_train)
            vectors, backprop_dropout = dropout(vectors, is_train)

            def backprop_tok2vec(d_vectors):
                return backprop_encoder(backprop_dropout(d_vectors))

        else:
            vectors, backprop_tok2vec = encode_for_inference(tok2vec, batch), None
            if golds is None and getattr(_head_module(model), "gender_mirror", False):
                # a Doc with no word to swap is its own mirror: the mean of two
                # equal readings is the one reading, so it is read once
                reads_mirror = model.attrs.get("reads_mirror")
                wanted = [i for i in nonempty if reads_mirror is None or reads_mirror(docs[i])]
                mirrored = [(i, gender_mirror_doc(docs[i])) for i in wanted]
                mirrored = [(i, m) for i, m in mirrored if [t.text for t in m] != [t.text for t in docs[i]]]
                if mirrored:
                    mirrors = encode_for_inference(tok2vec, [m for _, m in mirrored])
                    for (i, _), vec in zip(mirrored, mirrors):
                        doc_mirrors[i] = vec
        width = vectors[0].shape[1]
    else:
        vectors, backprop_tok2vec, width = [], None, 1
    doc_vectors: List[Floats2d] = [model.ops.alloc2f(0, width) for _ in docs]
    for i, vec in zip(nonempty, vectors):
        doc_vectors[i] = vec
    output, backprop_head = head((docs, doc_vectors, golds, doc_mirrors), is_train)

    def backprop(d_loss: float) -> CorefInput:
        d_vectors = backprop_head(d_loss)
        if backprop_tok2vec is not None:
            backprop_tok2vec([d_vectors[i] for i in nonempty])
        return inputs

    return output, backprop


def _head_forward(model: Model, inputs, is_train: bool):
    # (docs, vectors, golds) or, from _forward, the mirrors' vectors too
    docs, doc_vectors, golds = inputs[:3]
    doc_mirrors = inputs[3] if len(inputs) > 3 else [None for _ in docs]
    make_head_input = model.attrs["make_head_input"]
    shim = cast(ScaledLRPyTorchShim, model.shims[0])
    device = shim.device
    tensors = [xp2torch(vec, requires_grad=is_train, device=device) for vec in doc_vectors]
    head_inputs = [
        make_head_input(doc, tensor)
        if mirror is None
        else make_head_input(doc, tensor, xp2torch(mirror, requires_grad=False, device=device))
        for doc, tensor, mirror in zip(docs, tensors, doc_mirrors)
    ]
    (loss, predictions), torch_backprop = shim(ArgsKwargs(args=(head_inputs, golds), kwargs={}), is_train)
    loss_value = float(loss.detach()) if loss is not None else 0.0

    def backprop(d_loss: float) -> List[Floats2d]:
        if loss is not None and loss.requires_grad:
            grad = torch.tensor(float(d_loss), dtype=loss.dtype, device=loss.device)
            torch_backprop(ArgsKwargs(args=(loss,), kwargs={"grad_tensors": grad}))
        return [
            cast(Floats2d, torch2xp(t.grad)) if t.grad is not None else model.ops.alloc2f(*vec.shape)
            for t, vec in zip(tensors, doc_vectors)
        ]

    return (loss_value, predictions), backprop


def _init(model: Model, X: Optional[CorefInput] = None, Y=None) -> None:
    tok2vec = model.layers[0]
    docs = list(X[0]) if X is not None else None
    tok2vec.initialize(X=[d for d in docs if len(d)] if docs else None)
    if docs:
        # Run the head once so its lazy (input-width-dependent) layers exist
        # before the first update or serialization.
        model.predict((docs, None))


def sentence_ids(doc: Doc, device: torch.device) -> Optional[torch.Tensor]:
    """Sentence index a token, or None when the Doc has no sentence boundaries."""
    if len(doc) == 0 or not doc.has_annotation("SENT_START"):
        return None
    starts = [1 if tok.is_sent_start else 0 for tok in doc]
    starts[0] = 0
    ids = torch.tensor(starts, dtype=torch.long, device=device)
    return torch.cumsum(ids, 0)


def speaker_ids(doc: Doc, device: torch.device, key: str = "speakers") -> Optional[torch.Tensor]:
    """Speaker index a token from doc.spans[key] (labels), -1 where unknown;
    None when the Doc has no speaker spans."""
    if key not in doc.spans or len(doc.spans[key]) == 0:
        return None
    ids = [-1] * len(doc)
    labels: dict = {}
    for span in doc.spans[key]:
        idx = labels.setdefault(span.label_, len(labels))
        for i in range(span.start, span.end):
            ids[i] = idx
    return torch.tensor(ids, dtype=torch.long, device=device)
