"""Let spaCy's `use_averages = true` reach a PyTorch model inside a Thinc shim.

Thinc's optimizer keeps its parameter averages under the keys its
`finish_update` used, `(shim.id, parameter name)`; PyTorchShim.use_params
(Thinc 8.3) looks for string keys `pytorch_{id}_{name}` that no optimizer
writes, so evaluation and the saved model-best silently used the raw
parameters. Imports torch: only import it from a model builder's modules.
"""

import contextlib
from typing import Any, Dict, Iterator

import torch
from thinc.api import xp2torch


@contextlib.contextmanager
def use_averaged_params(shim: Any, params: Dict[Any, Any]) -> Iterator[None]:
    """Run with each of `shim._model`'s parameters that has an entry
    `(shim.id, name)` in `params` set to it, then put the trained values back.
    Only the parameters replaced are copied aside (a frozen encoder's have no
    average)."""
    replaced = {name: parameter for name, parameter in shim._model.named_parameters() if (shim.id, name) in params}
    if not replaced:
        yield
        return
    backup = {name: parameter.detach().clone() for name, parameter in replaced.items()}
    with torch.no_grad():
        for name, parameter in replaced.items():
            parameter.copy_(xp2torch(params[(shim.id, name)], device=parameter.device))
    try:
        yield
    finally:
        with torch.no_grad():
            for name, parameter in replaced.items():
                parameter.copy_(backup[name])
