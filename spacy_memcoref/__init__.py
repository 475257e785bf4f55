"""spacy_memcoref: coreference resolution components for spaCy.

Only cheap imports here: spaCy imports every factory module when a pipeline is
created, so torch and transformers are imported lazily by the model builders.
"""
from .about import __version__

__all__ = ["__version__"]
