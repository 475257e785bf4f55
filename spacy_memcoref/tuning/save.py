"""Saving a pipeline with new decoder settings of one component."""
from pathlib import Path
from typing import Any, Dict, Union

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
    from thinc.api import Config

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
    nlp.to_disk(output)
    config_path = Path(output) / "config.cfg"
    config = Config().from_disk(config_path, interpolate=False)
    block = config["components"][component]
    changed = False
    for key, value in stored.items():
        if key in decoder.MODEL_SETTINGS:
            block["model"][key] = value
            changed = True
        elif key in block:  # a factory argument (people_alpha is not one)
            block[key] = value
            changed = True
    if changed:
        config.to_disk(config_path)
    return stored
