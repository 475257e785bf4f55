"""Loading torch weights from a pipeline's files without running code, and
with a checksum that catches corrupt files.

thinc's PyTorchShim and spacy-transformers' HFShim call `torch.load` without
`weights_only`: on torch < 2.6, or with TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1 on
any torch, a crafted model file then runs code when the pipeline loads. The
shims of this package load with `weights_only=True` explicitly, which no
environment variable turns off, and save a SHA-256 of the weights next to them
(`state_sha256`) that is checked before loading, so bytes changed in the
middle of the weights stop the load instead of predicting garbage. (The
checksum is for corruption, not for security: whoever can write the file can
write the checksum; `weights_only` is what keeps code from running.)

Only import this module from a model builder: it imports torch.
"""

import hashlib
import pickle
import re
from io import BytesIO
from typing import Any, Dict, Optional, Union

import srsly
import torch

CHECKSUM_KEY = "state_sha256"


def weights_checksum(state: bytes) -> str:
    """RETURNS (str): the hex SHA-256 of serialized weights."""
    return hashlib.sha256(state).hexdigest()


def load_weights(
    state: bytes, device: Union[str, "torch.device"], *, checksum: Optional[str], what: str
) -> Dict[str, Any]:
    """Deserialize a state dict saved by `torch.save`, tensors only.

    state (bytes): the serialized weights.
    device (Union[str, torch.device]): where to put the tensors.
    checksum (Optional[str]): the SHA-256 saved with them (None: files saved
        before checksums were written; not checked).
    what (str): names the weights in errors, e.g. "the coreference head".
    RETURNS (Dict[str, Any]): the state dict.
    RAISES ValueError: the checksum does not match (a corrupt file), or the
        bytes hold objects other than tensors (refused, never run).
    """
    if checksum is not None and weights_checksum(state) != checksum:
        raise ValueError(
            f"the weights of {what} do not match the checksum saved with them: the file is corrupt "
            "(changed or damaged since it was saved)"
        )
    try:
        return torch.load(BytesIO(state), map_location=device, weights_only=True)
    except pickle.UnpicklingError as err:
        # torch's message suggests weights_only=False; name only what was refused
        found = re.search(r"[^\n]*unsupported[^\n]*", str(err), re.IGNORECASE)
        detail = f" ({found.group(0).strip()[:200]})" if found else ""
        raise ValueError(
            f"refusing to load the weights of {what}: they hold objects other than tensors, which could "
            f"run code when loaded (a crafted or corrupt file?){detail}"
        ) from None
    except (RuntimeError, EOFError, ValueError) as err:
        raise ValueError(f"the weights of {what} are corrupt: {str(err)[:200]}") from None


def with_checksum(shim_bytes: bytes) -> bytes:
    """A shim's msgpack bytes ({"state": weights, ...}) with the weights' checksum added."""
    msg = srsly.msgpack_loads(shim_bytes)
    if msg.get("state"):
        msg[CHECKSUM_KEY] = weights_checksum(msg["state"])
    return srsly.msgpack_dumps(msg)
