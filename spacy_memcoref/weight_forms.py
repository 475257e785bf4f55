"""How a shipped model stores the encoder matrices that training changed:
the forms a stored tensor takes in weights.safetensors and how each is
expanded back to a dense tensor at load time.

- `full`: the tuned tensor itself, in the model's storage dtype (bfloat16).
- `int8`: the tuned matrix in 8-bit weight-only form: each row scaled by
  its largest absolute value over 127 and rounded (`KEY#int8`, `KEY#scale`);
  about half the size of bfloat16.
- `lowrank`: what training added to the base encoder's matrix, as the best
  rank-r product B @ A (truncated SVD, Eckart-Young), `KEY#lowrank_b`
  [out, r] and `KEY#lowrank_a` [r, in], in the storage dtype; expanded as
  base + B @ A. This is the form of a LoRA adapter, extracted from a full
  fine-tune after the fact (the fine-tune is not repeated with adapters).

Only 2-D encoder matrices are compressed; vectors (biases, layer norms) and
the coreference head are stored `full` in every form. Every form expands to
dense float tensors before the pipeline runs, so prediction runs at the
speed of the full model. torch is imported by the functions.
"""

from typing import Any, Dict, Iterator, Mapping, Tuple

FORMS = ("full", "int8", "lowrank")
INT8, SCALE = "#int8", "#scale"
LOWRANK_A, LOWRANK_B = "#lowrank_a", "#lowrank_b"
SUFFIXES = (INT8, SCALE, LOWRANK_A, LOWRANK_B)


def check_form(form: str, rank: int) -> None:
    """RAISES ValueError: an unknown form, or a rank that is no positive integer."""
    if form not in FORMS:
        raise ValueError(f"form must be one of {', '.join(FORMS)}, got {form!r}")
    if form == "lowrank" and (isinstance(rank, bool) or not isinstance(rank, int) or rank < 1):
        raise ValueError(f"rank must be a positive integer, got {rank!r}")


def compressible(value: Any) -> bool:
    """A matrix worth compressing: 2-D floating point."""
    return value.is_floating_point() and value.dim() == 2


def pack(key: str, trained: Any, base: Any, form: str, *, rank: int, dtype: Any) -> Dict[str, Any]:
    """The stored tensors of one changed encoder tensor.

    key (str): its key in weights.safetensors (`{component}/{node}/{param}`).
    trained, base: the tuned tensor and the base encoder's (same shape).
    form (str): one of FORMS; a tensor that is not a matrix is stored full.
    rank (int): lowrank's r (capped at the matrix's smaller side).
    dtype: the torch dtype of `full` and `lowrank` tensors.
    RETURNS (Dict[str, Any]): stored key -> tensor.
    """
    import torch

    if form == "full" or not compressible(trained) or trained.shape != base.shape:
        return {key: _cast(trained, dtype)}
    if form == "int8":
        matrix = trained.detach().float()
        scale = matrix.abs().amax(dim=1).clamp(min=torch.finfo(torch.float32).tiny) / 127.0
        values = torch.round(matrix / scale[:, None]).clamp(-127, 127).to(torch.int8)
        return {key + INT8: values.contiguous(), key + SCALE: scale.contiguous()}
    # in float64 on one thread: LAPACK splits the work by the thread count, and
    # the singular vectors' last bits with it, so a rebuild with another count
    # (another machine's, or beside a training) stored other bytes for the
    # same model; float64 leaves what other CPUs' kernels change below bfloat16
    delta = trained.detach().double() - base.detach().double()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        u, s, vh = torch.linalg.svd(delta, full_matrices=False)
    finally:
        torch.set_num_threads(threads)
    r = min(rank, s.numel())
    root = s[:r].sqrt()
    return {
        key + LOWRANK_B: (u[:, :r] * root[None, :]).to(dtype).contiguous(),
        key + LOWRANK_A: (root[:, None] * vh[:r]).to(dtype).contiguous(),
    }


def stored_keys(stored: Mapping[str, Any]) -> Iterator[Tuple[str, str]]:
    """(key of the dense tensor, how it is stored) for each tensor in `stored`:
    "full", "int8" or "lowrank"; each dense key once."""
    seen = set()
    for name in stored:
        for suffix in SUFFIXES:
            if name.endswith(suffix):
                key, form = name[: -len(suffix)], "int8" if suffix in (INT8, SCALE) else "lowrank"
                break
        else:
            key, form = name, "full"
        if key not in seen:
            seen.add(key)
            yield key, form


def unpack(stored: Mapping[str, Any], key: str, form: str, base: Any, *, where: str) -> Any:
    """The dense tensor `key` of the stored tensors, in base's dtype.

    base: the tensor the model has now (the base encoder's; its shape and
        dtype are the result's).
    where (str): the file, for errors.
    RAISES ValueError: a part of a compressed tensor missing, or shapes that
        do not make base's.
    """
    import torch

    if form == "full":
        value = stored[key]
    elif form == "int8":
        _require(stored, key, (INT8, SCALE), where)
        values, scale = stored[key + INT8], stored[key + SCALE]
        value = values.float() * scale.float()[:, None]
    else:
        _require(stored, key, (LOWRANK_A, LOWRANK_B), where)
        b, a = stored[key + LOWRANK_B], stored[key + LOWRANK_A]
        if b.dim() != 2 or a.dim() != 2 or b.shape[1] != a.shape[0]:
            raise ValueError(f"{where}: {key}'s low-rank factors have shapes {tuple(b.shape)} and {tuple(a.shape)}")
        value = base.detach().float() + b.float() @ a.float()
    if tuple(value.shape) != tuple(base.shape):
        raise ValueError(f"{where}: {key} has shape {tuple(value.shape)}, the model {tuple(base.shape)}")
    with torch.no_grad():
        return value.to(base.dtype)


def _require(stored: Mapping[str, Any], key: str, suffixes: Tuple[str, str], where: str) -> None:
    missing = [key + suffix for suffix in suffixes if key + suffix not in stored]
    if missing:
        raise ValueError(f"{where}: {missing[0]} is missing (a compressed tensor is stored in two parts)")


def _cast(value: Any, dtype: Any) -> Any:
    if not value.is_floating_point():
        return value.detach().contiguous()
    return value.detach().to(dtype).contiguous()
