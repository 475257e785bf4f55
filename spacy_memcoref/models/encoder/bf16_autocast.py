"""Run a spacy-transformers encoder's matrix products in bfloat16.

The Hugging Face model's forward runs under `torch.autocast` on the device
its weights are on (CPU or CUDA), so matrix products and attention take
bfloat16 inputs while the weights, their gradients and the optimizer stay
float32; backward runs in the dtypes autocast chose for each op. On a CPU
with native bfloat16 instructions (AVX512-BF16 or AMX) a MiniLM training
step costs about half as much. The outputs are cast back to float32, since
spacy-transformers hands them to numpy, which has no bfloat16.

On a CPU without them (AVX2 only) bfloat16 is emulated and the encoder runs
5-10x *slower*, so the config's `bfloat16 = true` means "where the CPU has
them": elsewhere the encoder runs float32, with one `NoNativeBfloat16Warning`
a process (a shipped model or a preset on such a CPU is then fast, not slow).
`run_in_bfloat16(nlp)` forces autocast whatever the CPU.

spacy-transformers' own `mixed_precision` autocasts on CUDA only (float16 with
a gradient scaler), so it cannot serve a CPU. Nothing about the saved
pipeline changes; the autocast is installed again on the first call after
loading. torch is imported by the functions that need it, never at import.
"""

import warnings
from functools import lru_cache
from pathlib import Path
from typing import Any, List

from spacy.tokens import Doc
from thinc.api import Model
from thinc.types import Floats2d

from .transformer_node import patching_transformer

AUTOCAST_MARK = "_memcoref_bf16_autocast"
# set by `disable`: this model instance runs float32 whatever its config says
OFF_MARK = "_memcoref_bf16_off"
_FLOAT32_FORWARD = "_memcoref_float32_forward"
# set by `run_in_bfloat16`: autocast even on a CPU without native bfloat16
FORCE_MARK = "_memcoref_bf16_forced"
NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16")
_warned = False


class NoNativeBfloat16Warning(UserWarning):
    """A bfloat16 config runs float32 on a CPU without native bfloat16."""


@lru_cache(maxsize=1)
def cpu_has_native_bfloat16() -> bool:
    """Whether this CPU has bfloat16 instructions (AVX512-BF16 or AMX)."""
    return cpuinfo_has_native_bfloat16(Path("/proc/cpuinfo"))


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset:
    """The words of a Linux cpuinfo file (its flags among them); empty where
    it cannot be read (other systems)."""
    try:
        return frozenset(cpuinfo.read_text().split())
    except OSError:
        return frozenset()


def cpuinfo_has_native_bfloat16(cpuinfo: Path) -> bool:
    """Whether a Linux cpuinfo file lists AVX512-BF16 or AMX. Where it cannot
    be read (other systems) the answer is False: float32 is never the slow
    choice."""
    flags = cpu_flags(cpuinfo)
    return any(flag in flags for flag in NATIVE_BF16_FLAGS)


def _autocast_here(hf_model, device_type: str) -> bool:
    """Autocast on a GPU, on a CPU with native bfloat16, or where forced;
    warns once a process when a CPU without it runs float32 instead."""
    global _warned
    if device_type != "cpu" or getattr(hf_model, FORCE_MARK, False) or cpu_has_native_bfloat16():
        return True
    if not _warned:
        _warned = True
        warnings.warn(
            "[memcoref] the encoder's config asks for bfloat16, but this CPU has no native bfloat16 "
            f"({' or '.join(NATIVE_BF16_FLAGS)} in lscpu): running it in float32, which is 5-10x faster here. "
            "spacy_memcoref.run_in_bfloat16(nlp) forces bfloat16.",
            NoNativeBfloat16Warning,
            stacklevel=2,
        )
    return False


def bf16_autocast(tok2vec: Model[List[Doc], List[Floats2d]]) -> Model[List[Doc], List[Floats2d]]:
    """Wrap a spacy-transformers tok2vec so that its transformer runs under
    bfloat16 autocast, in training and at inference.

    tok2vec (Model[List[Doc], List[Floats2d]]): holds a TransformerModel.
    RETURNS (Model[List[Doc], List[Floats2d]]): the same tok2vec, wrapped.
    """
    return patching_transformer(
        "bf16_autocast_transformer",
        tok2vec,
        lambda hf_model, attrs: install(hf_model),
        dict(tok2vec.attrs),
        option="bfloat16",
    )


def install(hf_model) -> None:
    """Make `hf_model.forward` run under bfloat16 autocast on the model's
    device and return float32 tensors. Idempotent. Not on a model with int8
    layers (`int8`): they take float32 inputs and are the faster path."""
    from .int8 import INT8_MARK

    if (
        getattr(hf_model, AUTOCAST_MARK, False)
        or getattr(hf_model, INT8_MARK, False)
        or getattr(hf_model, OFF_MARK, False)
    ):
        return
    forward = hf_model.forward
    setattr(hf_model, _FLOAT32_FORWARD, forward)

    def autocast_forward(*args, **kwargs):
        import torch

        device_type = next(hf_model.parameters()).device.type
        if not _autocast_here(hf_model, device_type):
            return forward(*args, **kwargs)
        with torch.autocast(device_type=device_type, dtype=torch.bfloat16):
            output = forward(*args, **kwargs)
        return _to_float32(output)

    hf_model.forward = autocast_forward
    setattr(hf_model, AUTOCAST_MARK, True)


def disable(hf_model) -> None:
    """Run this Hugging Face model in float32 from now on, even under a
    bfloat16 config (a pipeline compared with itself in both precisions,
    benchmarks/s2e_speed.py --precision): undoes `install` and keeps it off."""
    original = getattr(hf_model, _FLOAT32_FORWARD, None)
    if original is not None:
        hf_model.forward = original
    setattr(hf_model, AUTOCAST_MARK, False)
    setattr(hf_model, OFF_MARK, True)


def _to_float32(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.float() if value.dtype == torch.bfloat16 else value
    if isinstance(value, (tuple, list)):
        return type(value)(_to_float32(v) for v in value)
    if isinstance(value, dict):
        # Hugging Face ModelOutput is an OrderedDict whose items mirror its attributes
        for key in list(value.keys()):
            value[key] = _to_float32(value[key])
        return value
    return value


def pipeline_transformers(nlp) -> list:
    """The Hugging Face models of a loaded pipeline's components' encoders."""
    from .transformer_node import find_transformer

    found = []
    for _name, pipe in nlp.pipeline:
        model = getattr(pipe, "model", None)
        trf = find_transformer(model) if model is not None else None
        if trf is not None and trf.transformer is not None:
            found.append(trf.transformer)
    return found


def run_in_float32(nlp) -> int:
    """Make a loaded pipeline's memcoref encoders run in float32, whatever
    their config's `bfloat16` says (loading with `bfloat16: False` as a
    config override cannot work: the saved model holds the autocast node).

    nlp (Language): a loaded pipeline.
    RETURNS (int): how many encoders were switched.
    """
    transformers = pipeline_transformers(nlp)
    for hf_model in transformers:
        setattr(hf_model, FORCE_MARK, False)
        disable(hf_model)
    return len(transformers)


def run_in_bfloat16(nlp) -> int:
    """Make a loaded pipeline's memcoref encoders run under bfloat16
    autocast, whatever their config's `bfloat16` says: a float32-trained
    pipeline predicting on a CPU with AVX512-BF16/AMX (PeTra-base there:
    1.95x the tokens/s, GAP F1 -0.05; benchmarks/README.md). Also on a CPU
    without them, where a bfloat16 config otherwise runs float32: slower
    there, not wrong. Encoders quantized to int8 stay int8.

    nlp (Language): a loaded pipeline.
    RETURNS (int): how many encoders were switched.
    """
    transformers = pipeline_transformers(nlp)
    for hf_model in transformers:
        setattr(hf_model, OFF_MARK, False)
        setattr(hf_model, FORCE_MARK, True)
        install(hf_model)
    return len(transformers)
