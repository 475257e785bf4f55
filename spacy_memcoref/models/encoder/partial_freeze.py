"""Fine-tune only the top layers of a spacy-transformers encoder.

The embeddings and the bottom layers of the Hugging Face model run without
gradients and without dropout, so their output for a window of word pieces
depends on that window alone. Once training has begun, that output is
cached a window at a time (encoder_cache.EncoderCache, the frozen encoder's
cache too, least recently used out): from the second epoch on, a training
step runs only the top layers forward and backward, and an evaluation only
the top layers forward. Nothing about the saved pipeline changes (same
modules, same state dict); the freeze is installed again on the first call
after loading.

torch is imported by the functions that need it, never at module import.
"""

from typing import List, cast

from spacy.tokens import Doc
from thinc.api import Model
from thinc.types import Floats2d

from .encoder_cache import EncoderCache
from .transformer_node import patching_transformer

FROZEN_MARK = "_memcoref_trainable_layers"


def partially_frozen(
    tok2vec: Model[List[Doc], List[Floats2d]], *, trainable_layers: int, cache_mb: int
) -> Model[List[Doc], List[Floats2d]]:
    """Wrap a spacy-transformers tok2vec so that only its transformer's top
    `trainable_layers` layers train.

    tok2vec (Model[List[Doc], List[Floats2d]]): holds a TransformerModel.
    trainable_layers (int): layers at the top that keep training (>= 1).
    cache_mb (int): most megabytes of cached bottom-layer outputs (0: no cache).
    RETURNS (Model[List[Doc], List[Floats2d]]): the same tok2vec, wrapped.
    """
    return patching_transformer(
        "partially_frozen_transformer",
        tok2vec,
        lambda hf_model, attrs: install(hf_model, attrs["trainable_layers"], attrs["cache_mb"]),
        {**tok2vec.attrs, "trainable_layers": trainable_layers, "cache_mb": cache_mb},
        option="trainable_layers",
    )


def install(hf_model, trainable_layers: int, cache_mb: int) -> None:
    """Freeze the embeddings and all but the top `trainable_layers` layers of
    a BERT-style model (`.embeddings`, `.encoder.layer`) in place: the
    embeddings module computes the frozen layers too, and the frozen layers
    pass their input through inside the encoder. Idempotent."""
    if getattr(hf_model, FROZEN_MARK, None) == trainable_layers:
        return
    if getattr(hf_model, FROZEN_MARK, None) is not None:
        raise ValueError("the transformer is already frozen with another trainable_layers")
    layers = getattr(getattr(hf_model, "encoder", None), "layer", None)
    if getattr(hf_model, "embeddings", None) is None or layers is None:
        raise ValueError(
            f"trainable_layers supports BERT-style transformers (.embeddings, .encoder.layer; BERT, RoBERTa, MPNet), "
            f"not {type(hf_model).__name__}"
        )
    if not 1 <= trainable_layers <= len(layers):
        raise ValueError(
            f"trainable_layers must be between 1 and {len(layers)} for this transformer, got {trainable_layers}"
        )
    pad_id = hf_model.config.pad_token_id
    if pad_id is None:
        raise ValueError("trainable_layers needs a transformer config with a pad_token_id")
    frozen_layers = list(layers)[: len(layers) - trainable_layers]
    embeddings = hf_model.embeddings
    embed = embeddings.forward
    # MPNet's encoder adds a relative position bias, computed from the
    # hidden states' shape, to every layer's attention; it is frozen with
    # the bottom layers, whose cached output depends on it
    relative_bias = getattr(hf_model.encoder, "compute_position_bias", None)
    frozen_modules = [embeddings, *frozen_layers]
    if relative_bias is not None:
        frozen_modules.append(hf_model.encoder.relative_attention_bias)
    for module in frozen_modules:
        module.requires_grad_(False)
    cache = EncoderCache(cache_mb * 2**20)
    seen_training = [False]

    def bottom(input_ids, token_type_ids, position_ids):
        mask = input_ids != pad_id
        modes = [m.training for m in frozen_modules]
        for m in frozen_modules:
            m.train(False)
        try:
            hidden = embed(input_ids=input_ids, token_type_ids=token_type_ids, position_ids=position_ids)
            extended = hf_model.get_extended_attention_mask(mask.long(), input_ids.shape)
            extra = {"position_bias": relative_bias(hidden)} if relative_bias is not None else {}
            for layer in frozen_layers:
                hidden = type(layer).forward(layer, hidden, attention_mask=extended, **extra)[0]
        finally:
            for m, mode in zip(frozen_modules, modes):
                m.train(mode)
        return hidden.masked_fill(~mask[..., None], 0.0)

    def frozen_embeddings(input_ids=None, token_type_ids=None, position_ids=None, inputs_embeds=None, **kwargs):
        import torch

        if input_ids is None or inputs_embeds is not None or kwargs.get("past_key_values_length"):
            raise ValueError("trainable_layers: the frozen encoder takes input_ids only")
        # the cache serves from the first training call on (epochs and the
        # evaluations between them); a model that only predicts keeps nothing
        seen_training[0] = seen_training[0] or hf_model.training
        with torch.no_grad():
            if not seen_training[0] or cache.limit == 0:
                return bottom(input_ids, token_type_ids, position_ids)
            return cached_bottom(input_ids, token_type_ids, position_ids)

    def cached_bottom(input_ids, token_type_ids, position_ids):
        import torch

        mask = input_ids != pad_id
        lengths = mask.sum(1).tolist()
        keys = []
        for row, n in enumerate(lengths):
            if not bool(mask[row, :n].all()):
                # left padding or a pad id inside the text: no cache for this batch
                return bottom(input_ids, token_type_ids, position_ids)
            ids = input_ids[row, :n]
            types = token_type_ids[row, :n] if token_type_ids is not None else ids.new_zeros(0)
            keys.append(ids.cpu().numpy().tobytes() + b"|" + types.cpu().numpy().tobytes())
        missing = [row for row, key in enumerate(keys) if cache.get(key) is None]
        if missing:
            index = torch.tensor(missing, device=input_ids.device)
            fresh = bottom(
                input_ids[index],
                token_type_ids[index] if token_type_ids is not None else None,
                position_ids[index]
                if position_ids is not None and position_ids.shape[0] == input_ids.shape[0]
                else position_ids,
            )
            for i, row in enumerate(missing):
                cache.put(keys[row], fresh[i, : lengths[row]].clone())
        width = hf_model.config.hidden_size
        dtype = next(embeddings.parameters()).dtype
        out = torch.zeros(input_ids.shape[0], input_ids.shape[1], width, dtype=dtype, device=input_ids.device)
        fresh_rows = {row: i for i, row in enumerate(missing)}
        for row, key in enumerate(keys):
            n = lengths[row]
            if row in fresh_rows:
                out[row, :n] = fresh[fresh_rows[row], :n]
            else:
                out[row, :n] = cast(torch.Tensor, cache.get(key))  # cached: not missing
        return out

    def pass_through(hidden_states, *args, **kwargs):
        return (hidden_states,)

    embeddings.forward = frozen_embeddings
    for layer in frozen_layers:
        layer.forward = pass_through
    setattr(hf_model, FROZEN_MARK, trainable_layers)
    hf_model._memcoref_bottom_cache = cache
