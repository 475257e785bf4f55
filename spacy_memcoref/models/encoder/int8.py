"""Dynamic int8 quantization of a trained pipeline's Linear layers, for CPU
inference.

`torch.ao.quantization.quantize_dynamic` swaps each `nn.Linear` for one that
keeps its weight in int8 (one scale per output channel) and quantizes its
input on the fly; matrix products then run in int8 (fbgemm: AVX2, faster
with AVX512-VNNI or AMX). Quantized here: every Linear of the encoder
(attention and feed-forward), which is where the time goes (the s2e head
costs ~10% of the pipeline's, benchmarks/s2e_speed.py). The heads stay
float32: their scores are what the tuned thresholds cut, and PeTra's
controller reads the weights of its Linears as matrices.

The saved weights describe themselves: a quantized Linear's state holds
`_packed_params`, so a shim that finds such keys quantizes its freshly built
module the same way before loading (`quantize_module_like`); the pipeline's
config is the float32 one (a `bfloat16 = true` in it stays, and does
nothing: autocast leaves int8 modules alone, `bf16_autocast.install`).
Loading keeps `weights_only=True` and the checksum (`torch_weights`).
Quantized modules run on CPU only.

torch 2.13 marks eager-mode quantization as migrating to torchao; it is
still torch's own API and needs no other package, so it is used here (the
warning is silenced where this module calls it).
"""

import warnings
from typing import Dict, Iterable

import torch

PACKED_MARK = "._packed_params._packed_params"
# set on a module whose Linear layers are int8: bfloat16 autocast leaves it alone
INT8_MARK = "_memcoref_int8"


def _quantize_dynamic(module: torch.nn.Module) -> torch.nn.Module:
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # in place: the layers other code holds (the partly frozen encoder's
        # bottom layers, for one) stay the same objects
        quantize_dynamic(module, {torch.nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8, inplace=True)
    setattr(module, INT8_MARK, True)
    return module


def quantize_module(module: torch.nn.Module) -> int:
    """Quantize every nn.Linear inside `module`, in place.

    RETURNS (int): the number of Linear layers quantized.
    """
    n = sum(1 for m in module.modules() if type(m) is torch.nn.Linear)
    if n:
        if any(p.device.type != "cpu" for p in module.parameters()):
            raise ValueError("int8 quantization runs on CPU: load the pipeline without --gpu-id / use_gpu")
        _quantize_dynamic(module.eval())
    return n


def is_quantized_state(state_dict: Dict[str, object]) -> bool:
    """Whether a state dict was saved from int8-quantized Linear layers."""
    return any(key.endswith(PACKED_MARK) for key in state_dict)


def quantize_module_like(module: torch.nn.Module, state_dict: Dict[str, object], device) -> None:
    """Before loading a quantized state dict: quantize the Linear layers of
    the fresh `module` that are quantized in it (all or none).

    RAISES ValueError: the pipeline is loaded onto a GPU (int8 is CPU only).
    """
    if not is_quantized_state(state_dict):
        return
    if torch.device(device).type != "cpu":
        raise ValueError(
            "this pipeline's weights are int8 (made by `python -m spacy_memcoref quantize`), which run on CPU "
            "only: load it without a GPU (no --gpu-id / spacy.require_gpu), or use the float32 pipeline on a GPU"
        )
    _quantize_dynamic(module.eval())


def quantized_layer_count(modules: Iterable[torch.nn.Module]) -> int:
    """How many int8 dynamic Linear layers the modules hold."""
    from torch.ao.nn.quantized.dynamic import Linear as DynamicLinear

    return sum(1 for module in modules for m in module.modules() if isinstance(m, DynamicLinear))


def quantize_encoders(model) -> int:
    """Quantize the transformer encoder(s) inside a thinc model, in place.

    model (thinc Model): a memcoref component's model.
    RETURNS (int): Linear layers quantized (0: no transformer encoder).
    RAISES ValueError: an encoder is already int8, or is on a GPU.
    """
    from spacy_transformers.layers.hf_shim import HFShim

    count = 0
    for node in model.walk():
        for shim in node.shims:
            if isinstance(shim, HFShim) and shim._model is not None:
                if quantized_layer_count([shim._model]):
                    raise ValueError("its encoder is already int8")
                count += quantize_module(shim._model)
    return count
