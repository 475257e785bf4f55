"""Callbacks for `spacy train` configs (`[training.before_update]`)."""
from typing import Any, Callable, Dict

from spacy.language import Language
from spacy.util import registry


@registry.callbacks("spacy_memcoref.torch_threads.v1")
def make_torch_threads(threads: int = 1) -> Callable[[Language, Dict[str, Any]], None]:
    """Set torch's CPU thread count before the first update.

    PeTra's memory controller is a loop of small ops: on a 2-core machine a
    second thread buys nothing and, when the machine is busy, makes updates
    many times slower. Setting it here (not with OMP_NUM_THREADS) lets
    `spacy project run` and plain `spacy train` do the right thing; only
    training runs it, never a loaded pipeline.

    threads (int): torch.set_num_threads value; 0 leaves torch's default.
    RETURNS (Callable): a before_update callback.
    """
    if not isinstance(threads, int) or threads < 0:
        raise ValueError(f"spacy_memcoref.torch_threads.v1: threads must be an integer >= 0, got {threads!r}")

    def before_update(nlp: Language, info: Dict[str, Any]) -> None:
        if threads == 0:
            return
        import torch

        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)

    return before_update
