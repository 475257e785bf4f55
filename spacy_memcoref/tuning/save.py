"""Saving a pipeline with new decoder settings of one component."""
from pathlib import Path
from typing import Any, Dict, Union

from spacy.language import Language


def save_with_settings(nlp: Language, component: str, updates: Dict[str, Any], output: Union[str, Path]) -> Dict[str, Any]:
    """Apply `updates` to the component's decoder and save the pipeline to
    `output` with them. Every setting chosen after training
    (decoder.COMPONENT_SETTINGS: s2e's link_threshold, PeTra's gap_threshold,
    gap_calibration and people_alpha) is a setting of the component: kept in
    its cfg and in config.cfg's component block (the factory's argument).

    nlp (Language): the pipeline.
    component (str): the coreference component.
    updates (Dict[str, Any]): setting -> value.
    output (Union[str, Path]): the folder to save to.
    RETURNS (Dict[str, Any]): the settings as stored (validated).
    RAISES ValueError: a setting the component's decoder does not own, or an
        invalid value (nothing is saved).
    """
    pipe = nlp.get_pipe(component)
    decoder = pipe.model.attrs.get("decoder")
    if decoder is None:
        raise ValueError(f"the component {component!r} has no decoder (not a spacy_memcoref coreference component)")
    owned = tuple(decoder.COMPONENT_SETTINGS)
    unknown = sorted(set(updates) - set(owned))
    if unknown:
        raise ValueError(f"the component {component!r} has no setting {', '.join(unknown)} (it has {', '.join(owned)})")
    stored = decoder.configure(updates)
    pipe.cfg.update(stored)
    # the pipeline's own copy of the component's config block: nlp.config,
    # hence the config.cfg that nlp.to_disk() writes, is built from it
    nlp.get_pipe_config(component).update(stored)
    nlp.to_disk(output)
    return stored

