"""A fine-tuned pipeline moved part of the way back to the pipeline it was
fine-tuned from: every trained weight of its coreference components set to
(1 - weight) * source + weight * fine-tuned (WiSE-FT, Wortsman et al.
2022, "Robust fine-tuning of zero-shot models"). A fine-tune on new data
(GAP's rows) gains on what that data teaches and loses a little on what the
source was trained for; a point between the two kept most of the gain and
none of the loss for the default s2e (benchmarks/RESULTS.md, "Two people
and one pronoun")."""

from typing import Any, Dict, Iterator, List, Tuple

from spacy.language import Language

# (component, node index in model.walk(), node name, tensor name): where a weight lives
WeightKey = Tuple[str, int, str, str]


def _weights(nlp: Language) -> Iterator[Tuple[WeightKey, Any, Any]]:
    """(key, value, node) of every trained weight of the pipeline's
    coreference components: Thinc's own parameters (the node's, by the
    key's last part), and each floating-point tensor (parameters and
    buffers, themselves: set in place) of the torch modules its shims hold."""
    import torch

    from ..pipeline.coref_component import coref_components, coref_torch_modules

    for pipe_name, pipe in coref_components(nlp, include_disabled=True):
        for index, node in enumerate(pipe.model.walk()):
            for name in node.param_names:
                if node.has_param(name):
                    yield (pipe_name, index, node.name, name), node.get_param(name), node
    for pipe_name, index, node, module in coref_torch_modules(nlp, include_disabled=True):
        for tensor_name, tensor in module.state_dict(keep_vars=True).items():
            if torch.is_floating_point(tensor):
                yield (pipe_name, index, node.name, tensor_name), tensor, node


def interpolate_weights(source: Language, finetuned: Language, weight: float) -> int:
    """Set each trained weight of `finetuned`'s coreference components to
    (1 - weight) * its value in `source` + weight * its own value, in place.

    source (Language): the pipeline `finetuned` was fine-tuned from.
    finetuned (Language): the fine-tuned pipeline; changed in place (not
        at all when the two do not match).
    weight (float): 0 gives `source`'s weights, 1 leaves `finetuned` as it is.
    RETURNS (int): the number of weights that differed between the two.
    RAISES ValueError: a weight outside [0, 1]; the two pipelines differ in
        their components, their layers or a weight's shape (named).
    """
    import torch
    from thinc.api import get_array_module

    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"the weight of the fine-tuned pipeline is {weight}; it must lie in [0, 1]")
    theirs: Dict[WeightKey, Any] = {key: value for key, value, _ in _weights(source)}
    ours: List[Tuple[WeightKey, Any, Any]] = list(_weights(finetuned))
    missing = sorted(set(theirs) - {key for key, _, _ in ours})
    extra = sorted({key for key, _, _ in ours} - set(theirs))
    if missing or extra:
        where = "; ".join(
            [f"only in the source: {'/'.join(map(str, k))}" for k in missing[:3]]
            + [f"only in the fine-tuned: {'/'.join(map(str, k))}" for k in extra[:3]]
        )
        raise ValueError(f"the two pipelines are not one architecture ({where})")
    for key, value, _ in ours:  # every shape checked before any weight changes
        if tuple(theirs[key].shape) != tuple(value.shape):
            raise ValueError(
                f"{'/'.join(map(str, key))}: shape {tuple(theirs[key].shape)} in the source, "
                f"{tuple(value.shape)} in the fine-tuned pipeline"
            )
    differed = 0
    for key, value, node in ours:
        other = theirs[key]
        if isinstance(value, torch.Tensor):
            differed += int(not torch.equal(other, value))
            mixed = (1.0 - weight) * other.detach().float() + weight * value.detach().float()
            with torch.no_grad():
                value.copy_(mixed.to(value.dtype))
        else:  # a Thinc parameter: a numpy (or cupy) array
            xp = get_array_module(value)
            other = xp.asarray(other)
            differed += int(not xp.array_equal(other, value))
            node.set_param(key[3], ((1.0 - weight) * other + weight * value).astype(value.dtype))
    return differed
