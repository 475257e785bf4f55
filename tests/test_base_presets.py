"""The base-encoder presets (configs/petra_gap_base.cfg, configs/s2e_base.cfg)
build from their files with a small random MPNet in place of the base
encoder, overfit a tiny batch, fine-tune only their top layers and keep the
frozen layers' work in the cache."""

from pathlib import Path

import pytest
import spacy
from spacy.util import load_config, load_model_from_config
from thinc.api import Adam, fix_random_seed

from spacy_memcoref.doc_helpers.gold import NoGumLayerWarning
from spacy_memcoref.models.encoder.frozen_encoder import frozen_cache
from spacy_memcoref.models.encoder.transformer_node import find_transformer

from conftest import gap_examples, make_examples

CONFIGS = Path(__file__).resolve().parent.parent / "configs"

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _preset(name, encoder, **overrides):
    config = load_config(
        CONFIGS / name,
        overrides={"paths.train": "unused", "paths.dev": "unused", "paths.encoder": str(encoder), **overrides},
        interpolate=True,
    )
    return load_model_from_config(config, auto_fill=True, validate=True)


def _overfit(nlp, examples, steps, rate):
    fix_random_seed(0)
    nlp.initialize(lambda: examples)
    optimizer = Adam(rate)
    name = nlp.pipe_names[0]
    return [nlp.update(examples, sgd=optimizer, drop=0.0)[name] for _ in range(steps)]


PETRA_KEEP_LAYERS = "components.memcoref_petra.model.tok2vec.transformer_config.num_hidden_layers"


def test_petra_base_preset_overfits_and_trains_the_top_layers_only(tiny_mpnet):
    # the preset keeps the bottom 8 of 12 layers, fine-tunes the top 2 and
    # PeTra reads the last; the tiny MPNet has 4, all kept here
    model_cfg = load_config(CONFIGS / "petra_gap_base.cfg")["components"]["memcoref_petra"]["model"]
    assert model_cfg["tok2vec"]["transformer_config"]["num_hidden_layers"] == 8
    assert model_cfg["tok2vec"]["trainable_layers"] == 2
    assert (model_cfg["freeze_encoder"], model_cfg["encoder_layers"], model_cfg["skip_top_layers"]) == (False, 1, 0)
    nlp = _preset("petra_gap_base.cfg", tiny_mpnet, **{PETRA_KEEP_LAYERS: 4})
    model = nlp.get_pipe("memcoref_petra").model
    assert frozen_cache(model) is None  # the whole-encoder cache is the frozen setting's
    examples = gap_examples(nlp)
    losses = _overfit(nlp, examples, 60, 0.00025)  # the head at the preset's 20x: 5e-3
    assert min(losses[-5:]) < 0.3 * losses[0], losses
    hf = find_transformer(model).transformer
    assert all(not p.requires_grad for p in hf.encoder.layer[1].parameters())
    assert all(p.requires_grad for p in hf.encoder.layer[2].parameters())
    cache = hf._memcoref_bottom_cache
    assert cache.used > 0 and cache.hits > 0


KEEP_LAYERS = "components.memcoref.model.tok2vec.transformer_config.num_hidden_layers"
TRAINABLE = "components.memcoref.model.tok2vec.trainable_layers"


def test_s2e_base_preset_overfits_and_trains_the_top_layers_only(tiny_mpnet):
    # the preset keeps the bottom 8 of 12 layers and fine-tunes the top 4 of
    # them; the tiny MPNet has 4, all kept here, and the top 3 fine-tuned
    # (one at least stays frozen)
    tok2vec = load_config(CONFIGS / "s2e_base.cfg")["components"]["memcoref"]["model"]["tok2vec"]
    assert tok2vec["transformer_config"]["num_hidden_layers"] == 8
    assert tok2vec["trainable_layers"] == 4
    nlp = _preset("s2e_base.cfg", tiny_mpnet, **{KEEP_LAYERS: 4, TRAINABLE: 3})
    examples = make_examples(nlp)
    # the preset's all-mentions scorer learns from the cluster mentions on
    # Docs without GUM's layer, and says so
    with pytest.warns(NoGumLayerWarning):
        losses = _overfit(nlp, examples, 60, 0.00015)  # the head at the preset's 10x: 1.5e-3
    assert min(losses[-5:]) < 0.3 * losses[0], losses
    hf = find_transformer(nlp.get_pipe("memcoref").model).transformer
    assert all(not p.requires_grad for p in hf.encoder.layer[0].parameters())
    assert all(p.requires_grad for p in hf.encoder.layer[1].parameters())
    cache = hf._memcoref_bottom_cache
    assert cache.used > 0 and cache.hits > 0


def test_s2e_base_keeps_the_bottom_layers_and_refuses_more_than_the_encoder_has(tiny_mpnet):
    nlp = _preset("s2e_base.cfg", tiny_mpnet, **{KEEP_LAYERS: 3, TRAINABLE: 2})
    nlp.initialize(lambda: make_examples(nlp))
    hf = find_transformer(nlp.get_pipe("memcoref").model).transformer
    assert len(hf.encoder.layer) == 3
    # the kept layers are the checkpoint's bottom ones, not new random ones
    full = _preset("s2e_base.cfg", tiny_mpnet, **{KEEP_LAYERS: 4, TRAINABLE: 3})
    full.initialize(lambda: make_examples(full))
    full_hf = find_transformer(full.get_pipe("memcoref").model).transformer
    for kept, original in zip(hf.encoder.layer[2].parameters(), full_hf.encoder.layer[2].parameters()):
        assert (kept == original).all()
    with pytest.raises(ValueError, match="has 4 layers"):
        _preset("s2e_base.cfg", tiny_mpnet, **{KEEP_LAYERS: 8})
