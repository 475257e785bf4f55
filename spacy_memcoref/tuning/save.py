"""Saving a pipeline with new decoder settings of one component."""
from pathlib import Path
from typing import Any, Dict, Tuple, Union

from spacy.language import Language


def save_with_settings(nlp: Language, component: str, updates: Dict[str, Any], output: Union[str, Path]) -> Dict[str, Any]:
    """Apply `updates` to the component's decoder and save the pipeline to
    `output` with them, where the pipeline keeps each setting:

    - a setting of the component (decoder.COMPONENT_SETTINGS: PeTra's
      gap_threshold, gap_calibration, people_alpha) in its cfg, and in
      config.cfg's component block where the factory takes it;
    - a setting of the model (decoder.MODEL_SETTINGS: s2e's link_threshold)
      in config.cfg's model block, from where the builder gives it to the
      decoder when the pipeline is loaded.

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
    owned = tuple(decoder.COMPONENT_SETTINGS) + tuple(decoder.MODEL_SETTINGS)
    unknown = sorted(set(updates) - set(owned))
    if unknown:
        raise ValueError(f"the component {component!r} has no setting {', '.join(unknown)} (it has {', '.join(owned)})")
    stored = decoder.configure(updates)
    pipe.cfg.update({key: value for key, value in stored.items() if key in decoder.COMPONENT_SETTINGS})
    # the pipeline's own copy of the component's config block: nlp.config,
    # hence the config.cfg that nlp.to_disk() writes, is built from it
    _set_in_block(nlp.get_pipe_config(component), stored, decoder.MODEL_SETTINGS)
    nlp.to_disk(output)
    return stored


def _set_in_block(block: Dict[str, Any], settings: Dict[str, Any], model_settings: Tuple[str, ...]) -> None:
    """Write settings into a component's config block: a model setting into
    its model block, a component setting where the factory takes it (people_alpha
    is not a factory argument)."""
    for key, value in settings.items():
        if key in model_settings and isinstance(block.get("model"), dict):
            block["model"][key] = value
        elif key not in model_settings and key in block:
            block[key] = value
