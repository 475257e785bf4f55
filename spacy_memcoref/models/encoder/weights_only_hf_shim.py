"""spacy-transformers' HFShim with the transformer's weights loaded as
tensors only and checked against the checksum saved with them (see
`torch_weights`). `build_embedded_transformer` gives its TransformerModel
this shim. Imports spacy_transformers: only import it from a model builder.
"""

import warnings

import srsly
from spacy.util import SimpleFrozenDict
from spacy_transformers.data_classes import HFObjects
from spacy_transformers.layers.hf_shim import HFShim
from spacy_transformers.util import make_tempdir
from thinc.api import Model, get_torch_default_device

from ..averaged_params import use_averaged_params
from .int8 import quantize_module_like
from ..torch_weights import CHECKSUM_KEY, load_weights, with_checksum


class WeightsOnlyHFShim(HFShim):
    """HFShim (spacy-transformers 1.4) whose from_bytes loads the weights with
    `load_weights` (weights_only=True, checksum checked) before anything else,
    whose to_bytes saves the checksum, and whose use_params applies the
    optimizer's averages; otherwise as HFShim."""

    def to_bytes(self) -> bytes:
        return with_checksum(super().to_bytes())

    def use_params(self, params):
        """Run with the optimizer's averages of the fine-tuned weights
        (`use_averages = true`; see averaged_params)."""
        return use_averaged_params(self, params)

    def from_bytes(self, bytes_data: bytes) -> "WeightsOnlyHFShim":
        msg = srsly.msgpack_loads(bytes_data)
        config_dict = msg["config"]
        tok_dict = msg["tokenizer"]
        if not config_dict:
            self._hfmodel = HFObjects(None, None, None, msg["_init_tokenizer_config"], msg["_init_transformer_config"])
            return self
        device = get_torch_default_device()
        # the weights first: a crafted or corrupt file stops here
        state_dict = load_weights(msg["state"], device, checksum=msg.get(CHECKSUM_KEY), what="the transformer encoder")
        with make_tempdir() as temp_dir:
            srsly.write_json(temp_dir / "config.json", config_dict)
            config = self.config_cls.from_pretrained(temp_dir / "config.json")
            tok_kwargs = tok_dict.pop("kwargs", {})
            for name, data in tok_dict.items():
                (temp_dir / name).write_bytes(data)
            tokenizer = self.tokenizer_cls.from_pretrained(str(temp_dir.absolute()), **tok_kwargs)
            vocab_file_contents = None
            if hasattr(tokenizer, "vocab_file"):
                vocab_file_name = tokenizer.vocab_files_names["vocab_file"]
                vocab_file_contents = (temp_dir / vocab_file_name).read_bytes()
        transformer = self.model_cls.from_config(config)
        # int8 weights (`spacy_memcoref quantize`): quantize the fresh model the same way first
        quantize_module_like(transformer, state_dict, device)
        self._hfmodel = HFObjects(tokenizer, transformer, vocab_file_contents, SimpleFrozenDict(), SimpleFrozenDict())
        self._model = transformer
        try:
            self._model.load_state_dict(state_dict)
        except RuntimeError:
            # as HFShim: weights saved with another transformers version may
            # name a buffer differently
            warnings.warn(
                "Error loading saved torch state_dict with strict=True, likely due to differences between "
                "'transformers' versions. Attempting to load with strict=False as a fallback."
            )
            self._model.load_state_dict(state_dict, strict=False)
        self._model.to(device)
        return self


def use_weights_only_shims(model: Model) -> Model:
    """Give every spacy-transformers HFShim inside `model` this class (in
    place: the shim keeps its id, model and settings). RETURNS the model."""
    for node in model.walk():
        for shim in node.shims:
            if type(shim) is HFShim:
                shim.__class__ = WeightsOnlyHFShim
    return model
