"""Saving a pipeline: the one rule of where a command may write one
(`check_pipeline_output`), and saving with new decoder settings of one
component (`save_with_settings`)."""

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, Optional, Union

from spacy.language import Language

from ..errors import DataFormatError
from ..util import atomic_output_dir, refuse_overwriting_input

# what makes a folder a spaCy pipeline folder (or a shipped model's, which
# has both too): a command may write a pipeline over one, as over its own
# earlier output, never among other files
PIPELINE_FILES = ("config.cfg", "meta.json")


def is_pipeline_dir(path: Union[str, Path]) -> bool:
    """Whether `path` is a folder that holds config.cfg and meta.json."""
    path = Path(path)
    return path.is_dir() and all((path / name).is_file() for name in PIPELINE_FILES)


def check_pipeline_output(output: Union[str, Path], inputs: Iterable[Optional[Union[str, Path]]] = ()) -> Path:
    """Refuse, before anything is computed, an output folder that a command
    must not write a pipeline to: the one home of this rule for every
    command that saves a pipeline (tune-link-threshold, tune-gap-threshold,
    count-people --output, quantize, pretrained-build).

    Refused: one of the command's inputs (the model folder, the data files)
    or a path inside one or holding one (util.refuse_overwriting_input,
    compared resolved); an existing file (or a path below one); an existing
    folder that holds files but is not a pipeline folder (config.cfg and
    meta.json), where the pipeline would be mixed in with the user's files.
    Allowed: a new folder, an empty one, and a pipeline folder (an earlier
    output, written over).

    output (Union[str, Path]): the folder the pipeline is to be written to.
    inputs (Iterable[Optional[Union[str, Path]]]): what the command reads
        (None entries, e.g. an option not given, are skipped).
    RETURNS (Path): the output.
    RAISES DataFormatError: one line naming the output and the reason.
    """
    output = Path(output)
    refuse_overwriting_input([Path(source) for source in inputs if source is not None], output)
    if output.exists() and not output.is_dir():
        raise DataFormatError(
            output, None, "exists and is a file, not a folder to write a pipeline to; give another output path"
        )
    for parent in output.parents:
        if parent.exists():
            if not parent.is_dir():
                raise DataFormatError(output, None, f"{parent} is a file, not a folder; give another output path")
            break
    if output.is_dir() and not is_pipeline_dir(output) and any(output.iterdir()):
        raise DataFormatError(
            output,
            None,
            "exists and is not an empty directory or a pipeline folder (with config.cfg and meta.json): the "
            "pipeline would be written among its files; give another output path",
        )
    return output


@contextlib.contextmanager
def pipeline_output_dir(output: Union[str, Path]) -> Iterator[Path]:
    """Yield a temporary folder beside `output`; on success it becomes
    `output` (util.atomic_output_dir), replacing a pipeline folder there
    (an earlier output, as check_pipeline_output allows) only once the new
    one is complete.

    output (Union[str, Path]): the folder (new, empty, or a pipeline folder).
    YIELDS (Path): the temporary folder to write into.
    """
    output = Path(output)
    if not (output.is_dir() and any(output.iterdir())):
        with atomic_output_dir(output) as tmp:
            yield tmp
        return
    staged = Path(tempfile.mkdtemp(prefix=f".{output.name}.", suffix=".new", dir=output.parent))
    try:
        with atomic_output_dir(staged / output.name) as tmp:
            yield tmp
        old = staged / ".old"
        os.rename(output, old)
        try:
            os.rename(staged / output.name, output)
        except BaseException:
            os.rename(old, output)
            raise
    finally:
        shutil.rmtree(staged, ignore_errors=True)


def save_with_settings(
    nlp: Language, component: str, updates: Dict[str, Any], output: Union[str, Path]
) -> Dict[str, Any]:
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
    pipe: Any = nlp.get_pipe(component)  # a component (model, cfg); get_pipe types it as a Callable[[Doc], Doc]
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
