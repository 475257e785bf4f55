"""Dropout with its mask drawn by numpy, for training on AMD (and other
non-Intel) CPUs.

PyTorch's CPU dropout draws its mask with `bernoulli_`, which takes MKL's
vectorized generator on Intel CPUs only; on any other vendor it falls back to
one thread drawing from a Mersenne Twister an element at a time
(aten/src/ATen/native/cpu/DistributionKernels.cpp: "The situation of AMD,
move to using the default version"). Training s2e-base draws a mask for the
attention probabilities of each fine-tuned layer (windows x 12 heads x ~330
x ~330 word pieces, ~14M elements) and for its hidden states: on an AMD EPYC
`bernoulli_` took a tenth of an update's CPU time in a profile. With
numpy's PCG64 a mask costs half as much, forward and backward
(benchmarks/cpu_dropout.py).

`CpuDropout` is `nn.Dropout` with that mask: the same distribution (each
element dropped with probability p, independently; the rest scaled by
1/(1-p)), another random stream. Its seed is drawn from torch's default
generator at every call, so `torch.manual_seed` (spaCy's `system.seed`)
still makes a run repeat itself. On another device, in evaluation, or with
p = 0 it is torch's own dropout. It holds no state: a module holding it
saves and loads as with `nn.Dropout`.

The training callback installs it (training_callbacks, `numpy_dropout`).
"""

from pathlib import Path

import numpy
import torch
from torch import nn

INTEL_VENDOR = "GenuineIntel"


def torch_dropout_is_vectorized(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether torch's own CPU dropout takes MKL's vectorized generator here:
    an Intel CPU (cpuinfo's vendor_id) and a torch built with MKL. Where
    cpuinfo cannot be read (other systems) the answer is True: torch's
    dropout stays where it is not known to be slow."""
    try:
        words = cpuinfo.read_text().split()
    except OSError:
        return True
    return INTEL_VENDOR in words and torch.backends.mkl.is_available()


def uniforms(shape: torch.Size) -> torch.Tensor:
    """A float32 tensor of `shape`, uniform on [0, 1) (24-bit resolution),
    from numpy's PCG64 seeded from torch's default generator."""
    seed = int(torch.randint(0, 2**62, (1,), dtype=torch.int64))
    n = int(numpy.prod(shape, dtype=numpy.int64))
    return torch.from_numpy(numpy.random.Generator(numpy.random.PCG64(seed)).random(n, dtype=numpy.float32)).view(shape)


class CpuDropout(nn.Dropout):
    """nn.Dropout whose training mask on a CPU comes from `uniforms`: an
    element is dropped where its uniform is below p (within 2**-24 of p)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p in (0.0, 1.0) or x.device.type != "cpu" or x.numel() == 0:
            return super().forward(x)
        scale = 1.0 / (1.0 - self.p)
        if x.dtype == torch.float32:
            # the uniforms become the scaled keep mask in place (0 or
            # 1/(1-p)), so forward and backward are one multiplication
            # each; autograd keeps it, as torch's CPU dropout keeps its
            # noise tensor (the same size)
            keep = uniforms(x.shape).ge_(self.p).mul_(scale)
            return x.mul_(keep) if self.inplace else x * keep
        # bfloat16 and others: a bool mask, and the scale applied to each
        # element in float32 (torch's CPU dropout rounds it to the dtype
        # first: results may differ in the last place)
        drop = uniforms(x.shape) < self.p
        if self.inplace:
            return x.masked_fill_(drop, 0.0).mul_(scale)
        return x.masked_fill(drop, 0.0).mul_(scale)


def use_cpu_dropout(module: nn.Module) -> int:
    """Replace every `nn.Dropout` below a torch module with a `CpuDropout`
    of the same p, in training or evaluation mode as it was; idempotent.

    RETURNS (int): how many were replaced by this call.
    """
    replaced = 0
    for parent in list(module.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is nn.Dropout:
                swapped = CpuDropout(p=child.p, inplace=child.inplace)
                swapped.train(child.training)
                setattr(parent, name, swapped)
                replaced += 1
    return replaced
