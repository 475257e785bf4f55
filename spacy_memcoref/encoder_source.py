"""Where a shipped model's base encoder comes from when it is not the
embedded MiniLM: a shipped model that stores what training changed on top
of a Hugging Face encoder (all-mpnet-base-v2) needs that encoder's own
weights, which are too large to ship (420 MB).

The encoder is looked for, in this order:

1. the folder given to `load(..., encoder=FOLDER)`;
2. the folder in the environment variable SPACY_MEMCOREF_ENCODER;
3. the Hugging Face cache (HF_HOME / HF_HUB_CACHE), by the encoder's name;
4. the Hugging Face Hub, downloaded into that cache, unless the machine is
   offline (HF_HUB_OFFLINE=1) or the download fails.

Whatever is found, its weights file must have the SHA-256 recorded when the
model was built: a stored change applies only to the weights it was
computed from. When nothing is found, one line says how to get it.
"""

import os
import sys
from pathlib import Path
from typing import Optional, Union

from .errors import EncoderMismatch, EncoderNotFound, shorten
from .util import file_sha256

ENV_VAR = "SPACY_MEMCOREF_ENCODER"
WEIGHTS = "model.safetensors"
# what the pipeline reads of a Hugging Face encoder folder
FILES = ("config.json", WEIGHTS, "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt")


def locate(
    hub_name: str,
    sha256: str,
    *,
    model: str,
    path: Optional[Union[str, Path]] = None,
    download: bool = True,
    offline_model: Optional[str] = None,
) -> Path:
    """The folder of the encoder `hub_name`, its weights checked.

    hub_name (str): its name on the Hugging Face Hub.
    sha256 (str): the SHA-256 its model.safetensors must have.
    model (str): the shipped model that needs it (for messages).
    path: a folder given by the caller (wins over everything else).
    download (bool): allow step 4 (a download into the Hugging Face cache).
    offline_model (Optional[str]): a shipped model that needs no download,
        named in the message when nothing is found.
    RETURNS (Path): the folder.
    RAISES EncoderNotFound: a given folder without the weights, or nothing
        found anywhere; EncoderMismatch: weights of another SHA-256.
    """
    if path is None and os.environ.get(ENV_VAR):
        path, given = os.environ[ENV_VAR], f"${ENV_VAR}"
    else:
        given = "encoder="
    folder: Optional[Path]
    if path is not None:
        folder = Path(path).expanduser()
        if not (folder / WEIGHTS).is_file():
            raise EncoderNotFound(
                f"{folder}: no {WEIGHTS} there ({given} names the folder of {hub_name} for the model {model!r}: "
                f"a Hugging Face model folder with {', '.join(FILES)})"
            )
        return _checked(folder, hub_name, sha256, model)
    folder = cached(hub_name)
    reason = "not in the Hugging Face cache"
    if folder is None and download and not _offline():
        folder, reason = _download(hub_name, model)
    elif folder is None:
        reason += "; the machine is offline (HF_HUB_OFFLINE)" if _offline() else ""
    if folder is None:
        instead = f"; {offline_model!r} needs no download" if offline_model else ""
        raise EncoderNotFound(
            f"the model {model!r} needs the encoder {hub_name} (about 420 MB), {reason}: run once with internet "
            f"access, or pass load({model!r}, encoder=FOLDER) or set {ENV_VAR}=FOLDER to a local copy{instead}"
        )
    return _checked(folder, hub_name, sha256, model)


def _checked(folder: Path, hub_name: str, sha256: str, model: str) -> Path:
    weights = folder / WEIGHTS
    digest = file_sha256(weights)
    if digest != sha256:
        raise EncoderMismatch(
            f"{weights}: SHA-256 {digest[:12]}..., but the model {model!r} was trained on {hub_name} with "
            f"{sha256[:12]}...: a stored change applies only to the weights it was computed from"
        )
    return folder


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def cached(hub_name: str) -> Optional[Path]:
    """The encoder's snapshot in the Hugging Face cache, if it is complete."""
    try:
        from huggingface_hub import snapshot_download

        folder = Path(snapshot_download(hub_name, allow_patterns=list(FILES), local_files_only=True))
    except Exception:  # huggingface_hub raises several kinds for "not cached"
        return None
    return folder if (folder / WEIGHTS).is_file() and (folder / "config.json").is_file() else None


def _download(hub_name: str, model: str):
    """(folder, None) after a download into the Hugging Face cache, or
    (None, why it failed)."""
    try:
        from huggingface_hub import snapshot_download

        print(
            f"spacy_memcoref: downloading {hub_name} (about 420 MB) for {model!r} into the Hugging Face cache",
            file=sys.stderr,
        )
        folder = Path(snapshot_download(hub_name, allow_patterns=list(FILES)))
    except Exception as err:
        reason = " ".join(str(err).split()) or type(err).__name__
        return None, f"not in the Hugging Face cache, and the download failed ({shorten(reason, 200)})"
    if not (folder / WEIGHTS).is_file():
        return None, f"downloaded, but the Hub's copy has no {WEIGHTS}"
    return folder, None
