"""What the component asks of a decoder (typing only; torch-free).

Every model's builder hands its decoder to the component through the
model's attrs (models.thinc_glue.build_coref_model); the component
(pipeline.coref_component) knows nothing of the model behind it, so it reads
its decoder through this Protocol: decoders.s2e.S2EDecoder and
decoders.petra.PeTraDecoder have its members. A decoder reads the
predictions of its own model only (decoders.predictions), so the
prediction's type is the Protocol's parameter; the component, which passes
a model's predictions to that model's decoder unread, holds a Decoder[Any].
"""

from typing import Any, ClassVar, Dict, FrozenSet, Mapping, Optional, Protocol, Tuple, TypeVar

import numpy
from spacy.tokens import Doc

from ..util import Clusters
from .constraints import ALL_RULES

PredictionT_contra = TypeVar("PredictionT_contra", contravariant=True)


class Decoder(Protocol[PredictionT_contra]):
    """A model's decisions on its predictions, and the writing of them on a Doc.

    COMPONENT_SETTINGS (Tuple[str, ...]): the settings chosen after training
        that the decoder owns, kept in the component's cfg and config block
        (its factory's arguments).
    """

    COMPONENT_SETTINGS: ClassVar[Tuple[str, ...]]

    def configure(self, settings: Mapping[str, Any]) -> Dict[str, Any]:
        """Take the settings this decoder owns from `settings`, validated;
        other keys are ignored.

        RETURNS (Dict[str, Any]): the settings taken, as stored in the
            component's cfg.
        """
        ...

    def clusters(
        self, prediction: PredictionT_contra, *, doc: Optional[Doc] = None, rules: FrozenSet[str] = ALL_RULES
    ) -> Clusters:
        """The clusters of one prediction (inclusive token spans); with its
        Doc, under decoders.constraints' `rules`."""
        ...

    def entity_vectors(
        self,
        prediction: PredictionT_contra,
        clusters: Clusters,
        *,
        doc: Optional[Doc] = None,
        rules: FrozenSet[str] = ALL_RULES,
    ) -> Optional[Tuple[numpy.ndarray, str]]:
        """One vector a cluster of `clusters` (as `clusters` gave them with
        this `doc` and these `rules`, and as written on the Doc) from the
        model's own features, [K, D] float32, and what they are
        (doc_helpers.entity_vectors); None when the model gives none."""
        ...

    def write(self, doc: Doc, prediction: PredictionT_contra) -> None:
        """Write what a prediction holds beyond its clusters on its Doc."""
        ...
