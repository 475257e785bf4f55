"""The `memcoref` pipeline component: writes coreference clusters to
doc.spans[f"{prefix}_{i}"] (i from 1), spaCy's own convention, so spaCy's
scorers, span_cleaner and displaCy's span renderer work unchanged.

The model (s2e or PeTra) computes its own loss from the gold it is given and
brings its own hooks (thinc_glue: ``make_gold`` and the ``decoder``, which
owns the decisions taken on a prediction and the settings of them); this
module only moves Docs, gold, settings and predictions around.
"""

import inspect
import warnings
from itertools import islice
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Tuple, Union, cast

import numpy
import srsly
from spacy import util
from spacy.errors import Errors
from spacy.language import Language
from spacy.pipeline import TrainablePipe
from spacy.pipeline.pipe import deserialize_config
from spacy.tokens import Doc
from spacy.training import Example, validate_examples, validate_get_examples
from spacy.vocab import Vocab
from thinc.api import Model, Optimizer, set_dropout_rate

from ..doc_helpers import memory_log  # noqa: F401 (registers doc._.memory_log, token._.memory_usage)
from ..decoders.calibration import CLASS_WEIGHT_SHIFT
from ..decoders.petra import DEFAULT_GAP_THRESHOLD
from ..decoders.predictions import Prediction
from ..decoders.protocol import Decoder
from ..doc_helpers.clusters import CLUSTER_PREFIX, write_clusters
from ..doc_helpers.entity_vectors import clear_entity_vectors, set_entity_vectors
from ..doc_helpers.gold import copy_speakers
from ..doc_helpers.transcripts import find_transcript_speakers
from ..errors import ModelLoadError
from ..models.encoder.encoder import build_embedded_transformer, encode_for_inference
from ..models.petra.petra_model import build_petra, is_petra_model
from ..models.s2e.s2e_model import build_s2e

# the factories' names: "memcoref" (s2e by default, PeTra when given a PeTra
# model) and "memcoref_petra"; what a config's `factory` says of a component
S2E_FACTORY = "memcoref"
PETRA_FACTORY = "memcoref_petra"
COREF_FACTORIES = (S2E_FACTORY, PETRA_FACTORY)
# the kinds of coreference component, by model (coref_kind)
COREF_KINDS = ("s2e", "petra")

# fewer updates than this and predict() warns that the clusters mean nothing
# (the demo trains 8 and 20; the presets 600 to 3,000)
MIN_TRAINED_UPDATES = 100


class UntrainedWarning(UserWarning):
    """A coreference component predicts with a head that was never (or
    barely) trained."""


def ensure_sentences(docs: List[Doc]) -> None:
    """Give a Doc without sentence boundaries some: spaCy's rule-based
    Sentencizer, and a sentence start after every line break. s2e keeps a
    mention inside one sentence when sentences are known; Docs read from a
    corpus carry gold ones, but raw text from `nlp(text)` has none, and
    mentions then ran across sentences ("... met Pierre Curie. He")."""
    missing = [doc for doc in docs if len(doc) and not doc.has_annotation("SENT_START")]
    if not missing:
        return
    from spacy.pipeline import Sentencizer

    splitter = Sentencizer()
    for doc in missing:
        splitter(doc)
        for token in doc[:-1]:
            # spaCy keeps a line break as a whitespace token of its own
            if token.is_space and "\n" in token.text:
                doc[token.i + 1].is_sent_start = True


def architecture_config(name: str, builder: Callable, **sub_models: Dict[str, Any]) -> Dict[str, Any]:
    """The config block of a registered architecture with its builder's
    keyword defaults: the builders' signatures are the one home of the
    defaults, so a factory's default config cannot drift from them."""
    config: Dict[str, Any] = {"@architectures": name}
    for param in inspect.signature(builder).parameters.values():
        if param.default is not inspect.Parameter.empty:
            config[param.name] = param.default
    config.update(sub_models)
    return config


DEFAULT_ENCODER = architecture_config("spacy_memcoref.EmbeddedTransformer.v1", build_embedded_transformer)
DEFAULT_S2E_MODEL = architecture_config("spacy_memcoref.S2E.v1", build_s2e, tok2vec=DEFAULT_ENCODER)

DEFAULT_SCORE_WEIGHTS: Dict[str, Optional[float]] = {
    "coref_conll_f": 1.0,
    "coref_muc_f": 0.0,
    "coref_b3_f": 0.0,
    "coref_ceafe_f": 0.0,
    "coref_lea_f": 0.0,
}


@Language.factory(
    S2E_FACTORY,
    assigns=["doc.spans", "doc._.memory_log"],
    default_config={
        "model": DEFAULT_S2E_MODEL,
        "span_cluster_prefix": CLUSTER_PREFIX,
        "link_threshold": None,
        "memory_cells": 0,
        "memory_mentions": 8,
        "entity_vectors": True,
        "find_speakers": True,
        "gender_mirror": False,
        "scorer": {"@scorers": "spacy_memcoref.coref_scorer.v1"},
    },
    default_score_weights=DEFAULT_SCORE_WEIGHTS,
)
def make_memcoref(
    nlp: Language,
    name: str,
    model: Model,
    span_cluster_prefix: str,
    link_threshold: Optional[float],
    scorer: Optional[Callable],
    entity_vectors: bool = True,
    memory_cells: int = 0,
    memory_mentions: int = 8,
    find_speakers: bool = True,
    gender_mirror: bool = False,
) -> "CorefComponent":
    """Coreference resolution with s2e (default) or PeTra, chosen by the model.
    s2e links a mention to its best antecedent when that pair scores above
    link_threshold (`tune-link-threshold` chooses and stores it; null: the
    model block's link_threshold, where earlier versions kept it).
    memory_cells: 0, every preceding mention may be an antecedent; N > 0, the
    mentions are read through a memory of N entities, each keeping
    memory_mentions of its mentions (the first and the latest;
    decoders.memory): at most N x memory_mentions held, however long the
    text; the memory's reading goes to doc._.memory_log.
    entity_vectors: write doc._.entity_vectors, one vector a cluster from the
    model's own features (doc_helpers.entity_vectors); false: none, no bytes.
    find_speakers: a Doc without doc.spans["speakers"] whose text is a chat
    transcript (`Name: text` lines) gets its turns there
    (doc_helpers.transcripts); false: never.
    gender_mirror: read each Doc twice, as it is and with he <-> she,
    father <-> mother, John <-> Patricia swapped, and decide by the mean of
    the two readings' scores, so that no link rests on a stereotype of one
    gender (a Doc with such words costs twice the encoder's time)."""
    check_prefix_is_free(nlp, name, span_cluster_prefix)
    return CorefComponent(
        nlp.vocab,
        model,
        name,
        span_cluster_prefix=span_cluster_prefix,
        scorer=scorer,
        settings={"link_threshold": link_threshold},
        memory=(memory_cells, memory_mentions),
        entity_vectors=entity_vectors,
        find_speakers=find_speakers,
        gender_mirror=gender_mirror,
    )


# ----- PeTra ----------------------------------------------------------

DEFAULT_PETRA_MODEL = architecture_config("spacy_memcoref.PeTra.v1", build_petra, tok2vec=DEFAULT_ENCODER)

DEFAULT_PETRA_SCORE_WEIGHTS = {
    "gap_f": 1.0,
    "gap_f_masc": 0.0,
    "gap_f_fem": 0.0,
    "gap_bias": None,
    "coref_conll_f": 0.0,
}


@Language.factory(
    PETRA_FACTORY,
    assigns=["doc.spans", "doc._.memory_log"],
    default_config={
        "model": DEFAULT_PETRA_MODEL,
        "span_cluster_prefix": CLUSTER_PREFIX,
        "gap_threshold": DEFAULT_GAP_THRESHOLD,
        "gap_calibration": [1.0, CLASS_WEIGHT_SHIFT],
        "people_alpha": None,
        "entity_vectors": True,
        "find_speakers": True,
        "gender_mirror": False,
        "scorer": {"@scorers": "spacy_memcoref.gap_scorer.v1"},
    },
    default_score_weights=DEFAULT_PETRA_SCORE_WEIGHTS,
)
def make_memcoref_petra(
    nlp: Language,
    name: str,
    model: Model,
    span_cluster_prefix: str,
    gap_threshold: float,
    gap_calibration: List[float],
    people_alpha: Optional[float],
    scorer: Optional[Callable],
    entity_vectors: bool = True,
    find_speakers: bool = True,
    gender_mirror: bool = False,
) -> "CorefComponent":
    """PeTra (bounded memory) coreference: clusters like `memcoref`, plus
    doc._.memory_log and, for GAP Docs, doc.user_data["gap_probs"]. A GAP
    candidate is linked when its calibrated probability,
    sigmoid(scale * logit(p) + shift) with [scale, shift] = gap_calibration,
    is >= gap_threshold. The default calibration [1, ln 10] undoes the 5 : 50
    class weights of the loss; `tune-gap-threshold` fits both on validation
    data. people_alpha: the overwrite probability that counts a new person
    (`count-people --output` chooses and stores it; null: the default).
    The model's decoder applies them (decoders.petra). find_speakers: as
    `memcoref`'s. gender_mirror: a GAP Doc's pair gets the mean of the link
    probabilities of two readings, the text and its gender mirror (he <-> she,
    ...); the clusters and memory log are the text's own reading."""
    check_prefix_is_free(nlp, name, span_cluster_prefix)
    return CorefComponent(
        nlp.vocab,
        model,
        name,
        span_cluster_prefix=span_cluster_prefix,
        scorer=scorer,
        settings={"gap_threshold": gap_threshold, "gap_calibration": gap_calibration, "people_alpha": people_alpha},
        entity_vectors=entity_vectors,
        find_speakers=find_speakers,
        gender_mirror=gender_mirror,
    )


def check_prefix_is_free(nlp: Language, name: str, prefix: str) -> None:
    """Refuse a second coreference component writing the same span groups:
    each clears f"{prefix}_*" before writing, so the later one would silently
    erase the earlier one's clusters.

    RAISES ValueError: another CorefComponent of `nlp` has the prefix.
    """
    for other_name, other in coref_components(nlp, include_disabled=True):
        if other_name != name and other.prefix == prefix:
            raise ValueError(
                f"The coreference component '{name}' would write its clusters to doc.spans['{prefix}_*'], "
                f"where '{other_name}' writes its own, and erase them: give one of them another "
                f"span_cluster_prefix (e.g. config={{'span_cluster_prefix': '{name}_clusters'}})."
            )


def coref_kind(pipe: Any) -> Optional[str]:
    """RETURNS (Optional[str]): "petra" for a CorefComponent with a PeTra
    model (from either factory: `memcoref` takes a PeTra model too), "s2e"
    for another CorefComponent, None for any other component."""
    if not isinstance(pipe, CorefComponent):
        return None
    return "petra" if is_petra_model(pipe.model) else "s2e"


def coref_components(
    nlp: Language, kind: Optional[str] = None, *, include_disabled: bool = False
) -> List[Tuple[str, "CorefComponent"]]:
    """The spacy_memcoref coreference components of a pipeline: the one
    lookup of them (the CLI, annotate, entities, the shipped models and the
    benchmarks ask here).

    nlp (Language): the pipeline.
    kind (Optional[str]): None: every one; "s2e" or "petra": those of that
        kind (coref_kind: by the model, whatever the factory).
    include_disabled (bool): disabled components too (nlp.components; by
        default nlp.pipeline, the ones that run).
    RETURNS (List[Tuple[str, CorefComponent]]): (name, component), in
        pipeline order.
    RAISES ValueError: an unknown kind.
    """
    if kind is not None and kind not in COREF_KINDS:
        raise ValueError(f"kind {kind!r}: expected None or one of {', '.join(repr(k) for k in COREF_KINDS)}")
    pipes = nlp.components if include_disabled else nlp.pipeline
    return [
        (name, cast(CorefComponent, pipe))
        for name, pipe in pipes
        if coref_kind(pipe) is not None and (kind is None or coref_kind(pipe) == kind)
    ]


def coref_torch_modules(nlp: Language, *, include_disabled: bool = False) -> Iterator[Tuple[str, int, Model, Any]]:
    """(component, node index in model.walk(), node, torch module) of every
    torch module the coreference components' shims hold (the encoder's and
    the head's), each once per component: the one walk over them (the
    shipped models' storage and `interpolate` ask here).

    include_disabled (bool): as for coref_components.
    """
    for pipe_name, pipe in coref_components(nlp, include_disabled=include_disabled):
        seen = set()
        for index, node in enumerate(pipe.model.walk()):
            for shim in node.shims:
                module = getattr(shim, "_model", None)
                if module is None or id(module) in seen:
                    continue
                seen.add(id(module))
                yield pipe_name, index, node, module


class CorefComponent(TrainablePipe):
    """Coreference clusters from a model whose input is (docs, golds) and whose
    output is (loss, one prediction a doc: decoders.predictions), decoded and
    written by the model's decoder.

    settings (Optional[Dict[str, Any]]): the decoder's settings kept in the
        component's cfg (e.g. PeTra's gap_threshold and gap_calibration; the
        scorer receives them from cfg too, the tuning commands rewrite them);
        None values are left out, keys the decoder does not own are ignored.
    memory (Tuple[int, int]): s2e's bounded entity memory, (cells, mentions
        a cell); (0, 8): none (decoders.memory).
    find_speakers (bool): give a Doc without speaker turns those of its
        chat transcript, where its text is one (doc_helpers.transcripts).
    gender_mirror (bool): predict from the mean of two readings, each Doc
        and its gender mirror (models.thinc_glue.set_gender_mirror).
    """

    def __init__(
        self,
        vocab: Vocab,
        model: Model,
        name: str = "memcoref",
        *,
        span_cluster_prefix: str = CLUSTER_PREFIX,
        scorer: Optional[Callable] = None,
        settings: Optional[Dict[str, Any]] = None,
        entity_vectors: bool = True,
        memory: Tuple[int, int] = (0, 8),
        find_speakers: bool = True,
        gender_mirror: bool = False,
    ) -> None:
        if not span_cluster_prefix or not isinstance(span_cluster_prefix, str):
            raise ValueError(f"span_cluster_prefix must be a non-empty string, got {span_cluster_prefix!r}")
        if not isinstance(entity_vectors, bool):
            raise ValueError(f"entity_vectors must be true or false, got {entity_vectors!r}")
        if not isinstance(find_speakers, bool):
            raise ValueError(f"find_speakers must be true or false, got {find_speakers!r}")
        if not isinstance(gender_mirror, bool):
            raise ValueError(f"gender_mirror must be true or false, got {gender_mirror!r}")
        self.vocab = vocab
        self.model = model
        self.name = name
        self.scorer = scorer
        self.cfg: Dict[str, Any] = {"span_cluster_prefix": span_cluster_prefix}
        # from the config alone (not the cfg saved with the weights): a user's choice, not a tuned setting
        self.entity_vectors = entity_vectors
        self.find_speakers = find_speakers
        self.gender_mirror = gender_mirror
        self._set_gender_mirror()  # refuses a head that cannot read a mirror
        if settings:
            self.cfg.update(self._hook("decoder").configure(settings))
        # from the config alone too: the memory's size is a user's choice
        decoder = self._hook("decoder")
        if not hasattr(decoder, "set_memory"):
            if memory[0]:
                raise ValueError(
                    f"memory_cells = {memory[0]!r}: the bounded memory reads s2e's antecedent choices, and the "
                    f"{name!r} component's model {model.name!r} is no s2e model (PeTra has a memory of its own: "
                    "num_cells)"
                )
        else:
            decoder.set_memory(*memory)
        self._warned_unaligned = False
        self._warned_untrained = False

    def _set_gender_mirror(self) -> None:
        """Tell the model whether to read each Doc's gender mirror too
        (models.thinc_glue.set_gender_mirror)."""
        set_gender_mirror = self.model.attrs.get("set_gender_mirror")
        if set_gender_mirror is not None:
            set_gender_mirror(self.model, self.gender_mirror)
        elif self.gender_mirror:
            raise ValueError(f"gender_mirror: the '{self.name}' component's model {self.model.name!r} reads no mirror")

    @property
    def prefix(self) -> str:
        return self.cfg["span_cluster_prefix"]

    def _hook(self, name: str) -> Any:
        """One of the model's hooks (make_gold, decoder: see
        models.thinc_glue), which every builder of this package sets."""
        hook = self.model.attrs.get(name)
        if hook is None:
            raise ValueError(
                f"The '{self.name}' component's model {self.model.name!r} sets no {name!r} hook in its attrs "
                "(the coreference builders set make_gold and decoder)"
            )
        return hook

    @property
    def decoder(self) -> Decoder[Any]:
        """The model's decoder (decoders.s2e.S2EDecoder,
        decoders.petra.PeTraDecoder: a decoders.protocol.Decoder of the
        model's predictions), which takes the decisions on a
        prediction, configured with the settings the cfg holds now (a loaded
        cfg, a tuned one)."""
        decoder: Decoder[Any] = self._hook("decoder")
        decoder.configure({key: self.cfg.get(key) for key in decoder.COMPONENT_SETTINGS})
        return decoder

    # ----- inference ----------------------------------------------------------

    def predict(self, docs: Iterable[Doc]) -> List[Prediction]:
        docs = list(docs)
        if not self._is_initialized():
            raise ValueError(
                f"The '{self.name}' component is not initialized: train it with "
                "`spacy train`, call nlp.initialize(), or load a trained pipeline."
            )
        self._warn_if_untrained()
        ensure_sentences(docs)
        if self.find_speakers:
            for doc in docs:
                find_transcript_speakers(doc)
        # a model that keeps features for the entity vectors only (PeTra's
        # cell states) keeps none with the setting off
        keep_entity_states = self.model.attrs.get("keep_entity_states")
        if keep_entity_states is not None:
            keep_entity_states(self.model, self.entity_vectors)
        # set before each call, as the entity states: a copy of the model (nlp.pipe's
        # processes, a reloaded pipeline) reads the component's setting
        self._set_gender_mirror()
        _, predictions = self.model.predict((docs, None))
        return predictions

    def _warn_if_untrained(self) -> None:
        """Warn once when the head has seen fewer than MIN_TRAINED_UPDATES
        updates: its clusters are then noise, not a poor model's guesses.
        A pipeline saved before updates were counted has no count and is
        trusted."""
        updates = self.cfg.get("updates")
        if updates is None or updates >= MIN_TRAINED_UPDATES or self._warned_untrained:
            return
        self._warned_untrained = True
        warnings.warn(
            f"[{self.name}] this coreference component was trained for {updates} update(s) only: its clusters "
            "mean nothing. Train it (spacy train) or load a trained one: spacy_memcoref.load('s2e-ontogum') "
            "or spacy_memcoref.load('petra-gap').",
            UntrainedWarning,
        )

    def read_on(self, doc: Doc, start: int, state: Optional[Any] = None) -> Any:
        """PeTra only: read doc[start:] with the memory as it stood after
        the text before (a stream's earlier pieces), the tokens before
        `start` being the encoder's context only (models.petra.petra_stream).

        doc (Doc): the context, then the piece.
        start (int): the piece's first token.
        state (Optional[MemoryState]): what the previous call returned;
            None: the initial memory.
        RETURNS (PieceReading): the piece's memory log (as doc._.memory_log
            holds one), the state after it, the head's decoding settings.
        """
        if not is_petra_model(self.model):
            raise ValueError(f"[{self.name}] read_on carries a PeTra memory; this component's model is s2e")
        if not self._is_initialized():
            raise ValueError(f"The '{self.name}' component is not initialized")
        self._warn_if_untrained()
        from ..models.petra.petra_stream import read_on

        return read_on(self.model, doc, start, state)

    def token_vectors(self, docs: Iterable[Doc]) -> List[Any]:
        """The encoder's vectors for each Doc's tokens, as the model's head
        reads them (entities(..., vectors_from=nlp) averages them over
        mention heads). Runs the encoder again: nothing is kept from predict.

        docs (Iterable[Doc]): the Docs.
        RETURNS (List[numpy.ndarray]): one [len(doc), width] float32 array a Doc.
        """
        docs = list(docs)
        if not self._is_initialized():
            raise ValueError(f"The '{self.name}' component is not initialized")
        tok2vec = self.model.layers[0]
        nonempty = [doc for doc in docs if len(doc)]
        vectors = iter(encode_for_inference(tok2vec, nonempty) if nonempty else [])
        out = []
        for doc in docs:
            out.append(self.model.ops.to_numpy(next(vectors)) if len(doc) else None)
        width = next((v.shape[1] for v in out if v is not None), 0)
        return [v if v is not None else numpy.zeros((0, width), dtype="float32") for v in out]

    def set_annotations(self, docs: Iterable[Doc], predictions: List[Prediction]) -> None:
        """Write one prediction a Doc, paired by position.

        RAISES ValueError: not one prediction a Doc (nothing is written).
        """
        docs = list(docs)
        predictions = list(predictions)
        if len(predictions) != len(docs):
            raise ValueError(
                f"The '{self.name}' component's model returned {len(predictions)} prediction(s) for "
                f"{len(docs)} Docs: it must return one a Doc, in order, or Docs would get the clusters "
                "of other Docs"
            )
        decoder = self.decoder
        for doc, prediction in zip(docs, predictions):
            token_clusters = decoder.clusters(prediction, doc=doc)
            write_clusters(
                doc, [[doc[start : end + 1] for start, end in cluster] for cluster in token_clusters], self.prefix
            )
            decoder.write(doc, prediction)
            vectors = decoder.entity_vectors(prediction, token_clusters, doc=doc) if self.entity_vectors else None
            if vectors is None:
                clear_entity_vectors(doc)
            else:
                set_entity_vectors(doc, range(1, len(token_clusters) + 1), vectors[0], vectors[1], self.prefix)

    # ----- training -----------------------------------------------------------

    def _golds(self, examples: List[Example]) -> List[Any]:
        make_gold = self._hook("make_gold")
        golds = []
        n_missed = 0
        for eg in examples:
            copy_speakers(eg)
            gold, missed = make_gold(eg, self.prefix)
            golds.append(gold)
            n_missed += missed
        if n_missed and not self._warned_unaligned:
            warnings.warn(
                f"[{self.name}] {n_missed} gold mention(s) in this batch do not align with the "
                "predicted tokens and were left out of the loss (warned once)."
            )
            self._warned_unaligned = True
        return golds

    def update(
        self,
        examples: Iterable[Example],
        *,
        drop: float = 0.0,
        sgd: Optional[Optimizer] = None,
        losses: Optional[Dict[str, float]] = None,
    ) -> Dict[str, float]:
        if losses is None:
            losses = {}
        losses.setdefault(self.name, 0.0)
        examples = list(examples)
        validate_examples(examples, "CorefComponent.update")
        if not examples:
            return losses
        docs = [eg.predicted for eg in examples]
        set_dropout_rate(self.model, drop)
        (loss, _), backprop = self.model.begin_update((docs, self._golds(examples)))
        backprop(1.0)
        if sgd is not None:
            self.finish_update(sgd)
        losses[self.name] += loss
        self.cfg["updates"] = int(self.cfg.get("updates") or 0) + 1
        return losses

    def get_loss(self, examples: Iterable[Example], scores: Any = None) -> Tuple[float, None]:
        """The model's loss on `examples` (without dropout); the gradient is
        taken inside the model, so no d_scores are returned."""
        examples = list(examples)
        validate_examples(examples, "CorefComponent.get_loss")
        (loss, _) = self.model.predict(([eg.predicted for eg in examples], self._golds(examples)))
        return loss, None

    def initialize(
        self,
        get_examples: Optional[Callable[[], Iterable[Example]]] = None,
        *,
        nlp: Optional[Language] = None,
    ) -> None:
        """Load the encoder and size the head from a sample of the training
        examples (or one placeholder Doc when none are given)."""
        if nlp is not None:
            check_prefix_is_free(nlp, self.name, self.prefix)
        if get_examples is not None:
            validate_get_examples(get_examples, "CorefComponent.initialize")
            docs = [eg.predicted for eg in islice(get_examples(), 10)]
        else:
            docs = []
        if not any(len(doc) for doc in docs):
            docs = [Doc(self.vocab, words=["memcoref", "initialization"])]
        self.model.initialize(X=(docs, None))
        self.cfg["initialized"] = True
        # counted by update(); predict() warns while it is below MIN_TRAINED_UPDATES
        self.cfg["updates"] = 0

    # ----- serialization ------------------------------------------------------

    def _load_model(self, data: bytes, source: Union[str, Path]) -> None:
        """self.model.from_bytes(data), naming `source` when it fails.

        RAISES ModelLoadError (a ValueError): the bytes cannot be loaded; the
            deserializer's error is chained.
        """
        try:
            self.model.from_bytes(data)
        except MemoryError:
            raise
        except Exception as err:
            # spaCy reports an AttributeError here as a config/model mismatch (E149)
            reason = Errors.E149 if isinstance(err, AttributeError) else str(err) or type(err).__name__
            raise ModelLoadError(source, "the coreference model", reason) from err

    def from_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = tuple()) -> "CorefComponent":
        """TrainablePipe.from_disk, whose errors on a model file that cannot be
        loaded (truncated, corrupt, failing its checksum) name the file.

        RAISES ModelLoadError (a ValueError): the model file cannot be loaded.
        """
        self._validate_serialization_attrs()

        def load_model(p: Path) -> None:
            with open(p, "rb") as file_:
                self._load_model(file_.read(), Path(p))

        deserialize: Dict[str, Callable[[Path], Any]] = {
            "cfg": lambda p: self.cfg.update(deserialize_config(p)),
            "vocab": lambda p: self.vocab.from_disk(p, exclude=exclude),
            "model": load_model,
        }
        util.from_disk(path, deserialize, exclude)
        return self

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = tuple()) -> "CorefComponent":
        """TrainablePipe.from_bytes, whose errors on model bytes that cannot be
        loaded name the component.

        RAISES ModelLoadError (a ValueError): the model bytes cannot be loaded.
        """
        self._validate_serialization_attrs()
        deserialize = {
            "cfg": lambda b: self.cfg.update(srsly.json_loads(b)),
            "vocab": lambda b: self.vocab.from_bytes(b, exclude=exclude),
            "model": lambda b: self._load_model(b, f"the '{self.name}' component's model bytes"),
        }
        util.from_bytes(bytes_data, deserialize, exclude)
        return self

    def _is_initialized(self) -> bool:
        return bool(self.cfg.get("initialized"))

    def add_label(self, label: str) -> int:
        raise NotImplementedError(f"The '{self.name}' component has no labels")
