"""The decoders (each model's decisions on a prediction) and the tuning rule:
the same decisions as the code they replace (the formulas it had are
written out here), and the builders as the one home of the defaults."""

import inspect
import random

import numpy
import pytest
import spacy
import torch

from spacy_memcoref.decoders.calibration import CLASS_WEIGHT_SHIFT, calibrate
from spacy_memcoref.decoders.petra import PeTraDecoder, people_count
from spacy_memcoref.decoders.predictions import S2EPrediction
from spacy_memcoref.decoders.s2e import S2EDecoder, clusters_from_links
from spacy_memcoref.tuning.grid import LINK_THRESHOLDS, PROBABILITY_GRID, best_on_grid
from spacy_memcoref.tuning.link_threshold import best_threshold
from spacy_memcoref.tuning.people import choose_alpha

from conftest import petra_config, s2e_config


# ----- s2e -------------------------------------------------------------------------


def _old_links_to_clusters(starts, ends, best, scores, threshold):
    """pytorch_s2e.links_to_clusters as it was: a torch comparison in the
    scores' dtype."""
    chosen = torch.where(scores > threshold, best, torch.full_like(best, -1))
    return clusters_from_links(starts.tolist(), ends.tolist(), chosen.tolist())


def test_s2e_decoder_links_as_the_head_did():
    gen = torch.Generator().manual_seed(0)
    n = 60
    starts = torch.arange(n)
    ends = starts + torch.randint(0, 3, (n,), generator=gen)
    best = torch.tensor([-1] + [int(torch.randint(0, q, (1,), generator=gen)) for q in range(1, n)])
    scores = torch.randn(n, generator=gen) * 2
    thresholds = [0.0, 0.1, -0.3, 1 / 3, -2.0, 0.25]
    # scores that sit exactly on (the float32 value of) a threshold
    for i, t in enumerate(thresholds):
        scores[5 * i + 1] = t
    scores[0] = -1e30  # no antecedent
    prediction = S2EPrediction(links=(starts.tolist(), ends.tolist(), best.tolist(), scores.tolist()))
    decoder = S2EDecoder(0.0)
    for t in thresholds + list(LINK_THRESHOLDS):
        assert decoder.clusters(prediction, t) == _old_links_to_clusters(starts, ends, best, scores, t), t
        decoder.configure({"link_threshold": t})
        assert decoder.clusters(prediction) == _old_links_to_clusters(starts, ends, best, scores, t), t
    assert decoder.clusters(S2EPrediction()) == []


def test_s2e_decoder_settings():
    decoder = S2EDecoder(-1)
    assert decoder.link_threshold == -1.0 and isinstance(decoder.link_threshold, float)
    assert decoder.configure({"gap_threshold": 0.3}) == {}  # not its setting
    assert decoder.configure({"link_threshold": None}) == {} and decoder.link_threshold == -1.0
    with pytest.raises(ValueError, match="link_threshold"):
        decoder.configure({"link_threshold": "low"})


# ----- PeTra ------------------------------------------------------------------------


def _old_gap_probs(p_a, p_b, cfg):
    """write_petra_extras + CorefComponent.set_annotations as they were."""
    probs = {"A": float(p_a), "B": float(p_b)}
    if "gap_calibration" in cfg:
        calibration = cfg["gap_calibration"]
        for key in ("A", "B"):
            probs[f"{key}_raw"] = probs[key]
            probs[key] = calibrate(probs[key], calibration)
        probs["calibration_scale"], probs["calibration_shift"] = map(float, calibration)
    if "gap_threshold" in cfg:
        probs["threshold"] = float(cfg["gap_threshold"])
    return probs


@pytest.mark.parametrize(
    "cfg",
    [
        {},
        {"gap_threshold": 0.5},
        {"gap_calibration": [1.0, CLASS_WEIGHT_SHIFT]},
        {"gap_threshold": 0.37, "gap_calibration": [0.25, 0.65]},
    ],
)
def test_petra_decoder_gap_probabilities_as_the_component_wrote_them(cfg):
    decoder = PeTraDecoder()
    assert decoder.configure({key: cfg.get(key) for key in PeTraDecoder.COMPONENT_SETTINGS}) == cfg
    for p_a, p_b in ((0.9345972537994385, 0.010830073617398739), (0.0, 1.0), (0.5, 0.04)):
        got = decoder.gap_probabilities((numpy.float32(p_a), p_b))
        want = _old_gap_probs(numpy.float32(p_a), p_b, cfg)
        assert got == want and list(got) == list(want)


def test_petra_decoder_settings_are_checked_and_unset():
    decoder = PeTraDecoder(gap_threshold=1, gap_calibration=(2, 0), people_alpha=0.3)
    assert (decoder.gap_threshold, decoder.gap_calibration, decoder.people_alpha) == (1.0, [2.0, 0.0], 0.3)
    assert decoder.calibration() == (2.0, 0.0)
    decoder.configure({"gap_threshold": None, "gap_calibration": None})
    assert decoder.gap_threshold is None and decoder.calibration() == (1.0, 0.0) and decoder.people_alpha == 0.3
    with pytest.raises(ValueError, match=r"gap_threshold must be a probability in \[0, 1\]"):
        decoder.configure({"gap_threshold": 1.5})
    with pytest.raises(ValueError, match="gap_calibration"):
        decoder.configure({"gap_calibration": [0.0, 1.0]})
    with pytest.raises(ValueError, match="people_alpha"):
        decoder.configure({"people_alpha": -0.1})


def test_people_count():
    overwrite = numpy.array(
        [[0.9, 0.0], [0.05, 0.0], [0.0, 0.05], [0.0, 0.6], [0.1, 0.0], [0.5, 0.0]], dtype=numpy.float32
    )
    assert people_count(overwrite, 0.5) == 3
    assert people_count(overwrite, 0.08) == 4  # + 0.1; the two 0.05 stay out
    assert people_count(torch.from_numpy(overwrite), 0.5) == 3


# ----- the tuning rule ------------------------------------------------------------


def _old_best_link_threshold(table):
    return max(table, key=lambda t: (round(table[t]["coref_conll_f"], 10), -abs(t)))


def _old_best_gap_threshold(table):
    best_f = max(scores["gap_f"] for _, scores in table)
    tied = [t for t, scores in table if scores["gap_f"] == best_f]
    return tied[(len(tied) - 1) // 2]


def _old_choose_alpha(table):
    best_key = min((errors, abs_err) for _, errors, abs_err in table)
    tied = [a for a, errors, abs_err in table if (errors, abs_err) == best_key]
    return tied[(len(tied) - 1) // 2]


def test_one_rule_picks_what_the_three_rules_picked():
    rng = random.Random(0)
    for _ in range(300):
        levels = [rng.choice([0.2, 0.5, 0.5 + 1e-12, 0.7]) for _ in range(4)]
        links = {t: {"coref_conll_f": rng.choice(levels)} for t in LINK_THRESHOLDS}
        assert best_threshold(links) == _old_best_link_threshold(links)
        gap = [(t, {"gap_f": rng.choice(levels)}) for t in PROBABILITY_GRID]
        assert best_on_grid(gap, lambda s: s["gap_f"]) == _old_best_gap_threshold(gap)
    over = [numpy.random.default_rng(i).random((12, 3)).astype(numpy.float32) for i in range(6)]
    for seed in range(50):
        gold = list(numpy.random.default_rng(seed).integers(0, 8, 6))
        alpha, table = choose_alpha(over, gold)
        assert alpha == _old_choose_alpha(table)
    # a symmetric tie: the first in grid order, as max() did
    assert best_threshold({-0.5: {"coref_conll_f": 0.6}, 0.5: {"coref_conll_f": 0.6}}) == -0.5
    with pytest.raises(ValueError):
        best_on_grid([], lambda s: s)


# ----- the builders are the home of the defaults -------------------------------------


def test_torch_modules_take_the_builders_settings_as_required_arguments():
    from spacy_memcoref.models.petra.petra_model import build_petra
    from spacy_memcoref.models.petra.pytorch_petra import PeTra
    from spacy_memcoref.models.petra.pytorch_petra_head import PeTraHead
    from spacy_memcoref.models.s2e.pytorch_s2e import S2EHead
    from spacy_memcoref.models.s2e.s2e_model import build_s2e

    for module, builder, own in (
        (PeTra, build_petra, {"input_size", "temperature"}),
        (PeTraHead, build_petra, {"petra_kwargs", "mix_layers"}),
        (S2EHead, build_s2e, set()),
    ):
        params = inspect.signature(module).parameters
        builder_params = inspect.signature(builder).parameters
        for name, param in params.items():
            if name in own:
                continue
            assert param.default is inspect.Parameter.empty, f"{module.__name__}({name}) repeats a default"
            assert name in builder_params, f"{module.__name__}({name}) is not a setting of {builder.__name__}"


@pytest.mark.parametrize("factory", ["memcoref", "memcoref_petra"])
def test_factory_defaults_are_the_builders_defaults(factory):
    """add_pipe(factory) and the registered architectures agree on every
    option (PeTra.v1 once defaulted encoder_layers to 1, its factory to 4)."""
    import inspect

    from spacy.util import registry

    nlp = spacy.blank("en")
    nlp.add_pipe(factory)
    model_cfg = nlp.config["components"][factory]["model"]
    for cfg in (model_cfg, model_cfg["tok2vec"]):
        builder = registry.architectures.get(cfg["@architectures"])
        defaults = {
            p.name: p.default
            for p in inspect.signature(builder).parameters.values()
            if p.default is not inspect.Parameter.empty
        }
        assert {k: v for k, v in cfg.items() if k in defaults} == defaults
        assert set(cfg) - set(defaults) <= {"@architectures", "tok2vec"}


# ----- saving ----------------------------------------------------------------------


def test_save_with_settings_stores_each_setting_where_the_pipeline_keeps_it(tmp_path):
    import spacy
    from thinc.api import Config

    from spacy_memcoref.tuning.save import save_with_settings

    nlp = spacy.blank("en")
    nlp.add_pipe("memcoref", config=s2e_config(hidden_size=8))
    nlp.add_pipe("memcoref_petra", config={**petra_config(), "span_cluster_prefix": "petra"})
    nlp.initialize()
    with pytest.raises(ValueError, match="no setting gap_threshold"):
        save_with_settings(nlp, "memcoref", {"gap_threshold": 0.3}, tmp_path / "refused")
    with pytest.raises(ValueError, match="link_threshold"):
        save_with_settings(nlp, "memcoref", {"link_threshold": "low"}, tmp_path / "refused")
    assert not (tmp_path / "refused").exists()
    assert save_with_settings(nlp, "memcoref", {"link_threshold": -1.5}, tmp_path / "s2e") == {"link_threshold": -1.5}
    assert nlp.get_pipe("memcoref").decoder.link_threshold == -1.5  # applied in memory too
    assert nlp.get_pipe("memcoref").cfg["link_threshold"] == -1.5  # the component's setting
    updates = {"gap_threshold": 0.3, "gap_calibration": (0.5, 1), "people_alpha": 0.25}
    save_with_settings(nlp, "memcoref_petra", updates, tmp_path / "petra")
    config = Config().from_disk(tmp_path / "petra" / "config.cfg", interpolate=False)["components"]
    # every setting chosen after training: in the component's block, none in the model's
    assert config["memcoref"]["link_threshold"] == -1.5 and config["memcoref"]["model"]["link_threshold"] == 0.0
    assert config["memcoref_petra"]["gap_threshold"] == 0.3 and config["memcoref_petra"]["gap_calibration"] == [
        0.5,
        1.0,
    ]
    assert config["memcoref_petra"]["people_alpha"] == 0.25
    loaded = spacy.load(tmp_path / "petra")
    assert loaded.get_pipe("memcoref").decoder.link_threshold == -1.5
    petra = loaded.get_pipe("memcoref_petra")
    # (srsly's JSON reads the cfg's 0.3 back as 0.30000000000000004, as it did before)
    assert (petra.cfg["gap_threshold"], petra.cfg["gap_calibration"], petra.cfg["people_alpha"]) == (
        pytest.approx(0.3),
        [0.5, 1.0],
        0.25,
    )
    decoder = petra.decoder
    assert (decoder.gap_threshold, decoder.gap_calibration, decoder.people_alpha) == (
        petra.cfg["gap_threshold"],
        [0.5, 1.0],
        0.25,
    )
