"""spacy_memcoref: coreference resolution components for spaCy.

Only cheap imports here: spaCy imports every factory module when a pipeline is
created, so torch and transformers are imported lazily by the model builders.
"""
from .about import __version__

# Registers doc._.memory_log and token._.memory_usage (spaCy only, no torch),
# so Docs read back from a DocBin have them without loading a pipeline.
from .doc_helpers import memory_log  # noqa: F401
from .entities import EntityRecord, Mention, entities
from .models.bf16_autocast import run_in_bfloat16, run_in_float32
from .resolution import Edit, Resolved, register_extension, resolve

# doc._.coref_resolved: resolve(doc).text, computed when read
register_extension()

__all__ = ["__version__", "resolve", "Resolved", "Edit", "entities", "EntityRecord", "Mention", "run_in_float32", "run_in_bfloat16"]
