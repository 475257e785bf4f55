"""Constructor arguments of the torch modules, from their builders' defaults:
the builders' signatures are the one home of the defaults, and the modules
take required arguments."""
import inspect
from typing import Any, Callable, Dict, Tuple

from spacy_memcoref.models.petra_model import build_petra
from spacy_memcoref.models.s2e_model import build_s2e

PETRA_ARGS: Tuple[str, ...] = (
    "hidden_size", "num_cells", "mlp_size", "usage_decay", "entity_loss_weight", "dropout", "learned_init", "fixed_key_size",
)
S2E_HEAD_ARGS: Tuple[str, ...] = (
    "hidden_size", "dropout", "max_width", "top_lambda", "max_antecedents", "use_speakers", "chunk_size",
    "use_distance", "mention_loss_weight", "learn_link_bias",
)


def builder_defaults(builder: Callable, names: Tuple[str, ...]) -> Dict[str, Any]:
    params = inspect.signature(builder).parameters
    return {name: params[name].default for name in names}


def petra_args(**overrides: Any) -> Dict[str, Any]:
    """pytorch_petra.PeTra's keyword arguments: build_petra's defaults, overridden."""
    return {**builder_defaults(build_petra, PETRA_ARGS), **overrides}


def s2e_head_args(**overrides: Any) -> Dict[str, Any]:
    """pytorch_s2e.S2EHead's keyword arguments: build_s2e's defaults, overridden."""
    return {**builder_defaults(build_s2e, S2E_HEAD_ARGS), **overrides}
