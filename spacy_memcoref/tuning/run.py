"""Running a pipeline over validation data, as tuning and the commands do:
every input gives its Doc back (`pipe_all`), gold clusters are dropped
before (`annotate_docs`), and the component tuned is found by name or kind
(`petra_component`, `coref_component`)."""

from typing import Any, Iterator, List, Optional, Sequence, Tuple

from spacy.language import Language
from spacy.tokens import Doc

from ..doc_helpers.clusters import clear_clusters
from ..pipeline.coref_component import coref_components


def pipe_all(nlp: Language, items: Sequence[Any], batch_size: int) -> Iterator[Doc]:
    """Yield nlp.pipe(items) and check it gave one Doc an input: results are
    paired with inputs by position, so a short result must not pass.

    RAISES ValueError: the pipeline returned more or fewer Docs than inputs.
    """
    n_out = 0
    for doc in nlp.pipe(items, batch_size=batch_size):
        n_out += 1
        if n_out > len(items):
            break
        yield doc
    if n_out != len(items):
        raise ValueError(f"the pipeline returned {n_out} Docs for {len(items)} inputs")


def annotate_docs(nlp: Language, docs: List[Doc], batch_size: int, prefix: str) -> List[Doc]:
    """The Docs annotated by the pipeline, their clusters under `prefix`
    (the gold ones) removed first."""
    for doc in docs:
        clear_clusters(doc, prefix)
    return list(pipe_all(nlp, docs, batch_size))


def petra_component(nlp: Language, component: Optional[str]) -> Tuple[str, Any]:
    """(name, component) of the PeTra coreference component of a pipeline:
    `component` when given, else the first PeTra one.

    RAISES ValueError: no such component, or no PeTra component.
    """
    if component is not None:
        if component not in nlp.pipe_names:
            raise ValueError(f"no component {component!r} in the pipeline ({', '.join(nlp.pipe_names)})")
        return component, nlp.get_pipe(component)
    found = coref_components(nlp, "petra")
    if found:
        return found[0]
    raise ValueError(f"the pipeline has no PeTra coreference component ({', '.join(nlp.pipe_names)})")


def coref_component(nlp: Language, component: Optional[str], model: str) -> Tuple[str, Any]:
    """(name, component) of a coreference component of a pipeline:
    `component` when given, else the first coreference component.

    model (str): the pipeline, for the message.
    RAISES ValueError: no such component, or no coreference component.
    """
    names = [name for name, _ in coref_components(nlp)]
    name = component or (names[0] if names else None)
    if name is None or name not in nlp.pipe_names:
        raise ValueError(
            f"{model}: no coreference component {component or ''!r} in the pipeline ({', '.join(nlp.pipe_names)})"
        )
    return name, nlp.get_pipe(name)
