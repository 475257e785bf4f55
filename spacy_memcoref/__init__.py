"""spacy_memcoref: coreference resolution components for spaCy.

Only cheap imports here: spaCy imports every factory module when a pipeline is
created, so torch and transformers are imported lazily by the model builders.
"""

from typing import Optional

from .about import __version__

# Registers doc._.memory_log and token._.memory_usage (spaCy only, no torch),
# so Docs read back from a DocBin have them without loading a pipeline.
from .doc_helpers import memory_log  # noqa: F401

# doc._.entity_vectors, likewise
from .doc_helpers import entity_vectors as _entity_vectors  # noqa: F401
from .entities import EntityRecord, Mention, entities
from .models.encoder.bf16_autocast import run_in_bfloat16, run_in_float32
from .resolution import Edit, Resolved, register_extension, resolve
from .stream import Stream, StreamEntity, join_pieces

# doc._.coref_resolved: resolve(doc).text, computed when read
register_extension()


def load(name: Optional[str] = None, *, encoder: Optional[str] = None):
    """A trained coreference pipeline that ships inside the package.

    name (Optional[str]): a shipped model's name, or the folder of one built
        by `python -m spacy_memcoref pretrained-build`. None: the default,
        "s2e-ontogum-base" (s2e on all-mpnet-base-v2, trained on OntoGUM; the
        encoder, 420 MB, is found in the Hugging Face cache or downloaded
        there once, or taken from `encoder` or $SPACY_MEMCOREF_ENCODER).
        "s2e-ontogum" (on the embedded MiniLM), "petra-ontogum" (every
        entity through a memory of 40, on the embedded MiniLM) and
        "petra-gap" (PeTra on GAP) need nothing but the package. `python -m spacy_memcoref info`
        says what each was trained on.
    encoder (Optional[str]): a local folder of the default model's encoder.
    RETURNS (spacy.language.Language): the pipeline.
    """
    # imported here: it imports spaCy's pipeline machinery and, on load, torch
    from .pretrained import DEFAULT_MODEL
    from .pretrained import load as load_pretrained

    return load_pretrained(DEFAULT_MODEL if name is None else name, encoder=encoder)


__all__ = [
    "__version__",
    "load",
    "resolve",
    "Resolved",
    "Edit",
    "entities",
    "EntityRecord",
    "Mention",
    "run_in_float32",
    "run_in_bfloat16",
    "Stream",
    "StreamEntity",
    "join_pieces",
]
