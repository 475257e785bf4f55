"""Corpus-scale annotation: `python -m spacy_memcoref annotate MODEL INPUT OUTPUT_DIR`.

    from spacy_memcoref.annotate import AnnotateOptions, annotate_corpus
    summary = annotate_corpus("training/s2e/model-best", "news.jsonl", "news_coref/", AnnotateOptions(n_process=2))

With a Ray Dataset of your own (needs `pip install "spacy-memcoref[ray]"`):

    from spacy_memcoref.annotate import MemcorefPredictor, annotate_dataset
    ds = annotate_dataset(ray.data.read_json("news/"), "en_memcoref_s2e", workers=4)

Importing this package does not import Ray.
"""

from typing import Any

from ..errors import AnnotateError, Terminated
from .options import AnnotateOptions
from .runner import AnnotateSummary, annotate_corpus, format_summary
from .worker import doc_record

__all__ = [
    "annotate_corpus",
    "AnnotateOptions",
    "AnnotateSummary",
    "AnnotateError",
    "Terminated",
    "format_summary",
    "doc_record",
    "MemcorefPredictor",
    "annotate_dataset",
]


def __getattr__(name: str) -> Any:
    if name in ("MemcorefPredictor", "annotate_dataset"):
        from . import ray_engine

        return getattr(ray_engine, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
