"""The small forms a shipped model's tuned encoder layers are stored in
(spacy_memcoref.weight_forms), a shipped model on a Hugging Face encoder
(pretrained.build(..., encoder=...)), and how load() finds that encoder
(spacy_memcoref.encoder_source)."""

import json
import shutil
from pathlib import Path

import numpy
import pytest
from spacy.util import load_config

from spacy_memcoref import encoder_source, pretrained, weight_forms
from spacy_memcoref.errors import EncoderMismatch, EncoderNotFound, PretrainedError

REPO = Path(__file__).resolve().parent.parent
HUB_NAME = "test-org/tiny-mpnet"

pytestmark = pytest.mark.usefixtures("one_torch_thread")


# ----- the forms, against numpy ------------------------------------------


def _matrices(seed=0, out=24, inp=40):
    import torch

    generator = torch.Generator().manual_seed(seed)
    base = torch.randn(out, inp, generator=generator)
    return base, base + 0.05 * torch.randn(out, inp, generator=generator)


def test_lowrank_is_the_best_rank_r_approximation_of_what_training_added():
    import torch

    base, trained = _matrices()
    packed = weight_forms.pack("k", trained, base, "lowrank", rank=5, dtype=torch.float32)
    assert packed["k#lowrank_b"].shape == (24, 5) and packed["k#lowrank_a"].shape == (5, 40)
    value = weight_forms.unpack(packed, "k", "lowrank", base, where="f")
    # Eckart-Young: the error of the best rank-5 approximation is the norm of
    # the singular values left out (numpy's SVD, computed apart)
    singular = numpy.linalg.svd((trained - base).numpy().astype(numpy.float64), compute_uv=False)
    error = numpy.linalg.norm((value - trained).numpy().astype(numpy.float64))
    assert error == pytest.approx(numpy.sqrt((singular[5:] ** 2).sum()), rel=1e-4)
    # a rank at least the matrix's smaller side is exact
    whole = weight_forms.pack("k", trained, base, "lowrank", rank=100, dtype=torch.float32)
    assert whole["k#lowrank_a"].shape == (24, 40)
    assert torch.allclose(weight_forms.unpack(whole, "k", "lowrank", base, where="f"), trained, atol=1e-5)


def test_lowrank_stores_the_same_bytes_whatever_the_thread_count():
    """A rebuild with another thread count (another machine's, or beside a
    training) must store the same model: LAPACK's result depends on its thread count (a 256 x 128
    delta in float32 gave other bfloat16 bytes on one and two threads)."""
    import torch

    base, trained = _matrices(seed=3, out=256, inp=128)
    threads = torch.get_num_threads()
    packed = []
    try:
        for n in (2, 1):
            torch.set_num_threads(n)
            packed.append(weight_forms.pack("k", trained, base, "lowrank", rank=8, dtype=torch.bfloat16))
            assert torch.get_num_threads() == n  # and pack gives the threads back
    finally:
        torch.set_num_threads(threads)
    assert packed[0].keys() == packed[1].keys()
    assert all(torch.equal(packed[0][k], packed[1][k]) for k in packed[0])


def test_int8_rounds_each_row_by_its_own_scale():
    import torch

    _, trained = _matrices(1)
    packed = weight_forms.pack("k", trained, trained, "int8", rank=1, dtype=torch.bfloat16)
    assert packed["k#int8"].dtype == torch.int8
    array = trained.numpy().astype(numpy.float64)
    scale = numpy.abs(array).max(axis=1) / 127
    expected = numpy.clip(numpy.round(array / scale[:, None]), -127, 127) * scale[:, None]
    value = weight_forms.unpack(packed, "k", "int8", trained, where="f").numpy()
    assert numpy.allclose(value, expected, atol=1e-6)
    assert (numpy.abs(value - array) <= scale[:, None] / 2 + 1e-6).all()


def test_vectors_and_integer_tensors_are_stored_whole():
    import torch

    bias = torch.randn(8)
    for form in weight_forms.FORMS:
        assert set(weight_forms.pack("b", bias, bias * 0, form, rank=2, dtype=torch.float32)) == {"b"}


def test_a_missing_part_of_a_compressed_tensor_is_named():
    import torch

    base, trained = _matrices()
    packed = weight_forms.pack("enc/x", trained, base, "int8", rank=1, dtype=torch.float32)
    del packed["enc/x#scale"]
    with pytest.raises(ValueError, match=r"weights\.safetensors: enc/x#scale is missing"):
        weight_forms.unpack(packed, "enc/x", "int8", base, where="weights.safetensors")
    with pytest.raises(ValueError, match="form must be one of full, int8, lowrank"):
        weight_forms.check_form("int4", 1)


# ----- a shipped model on a Hugging Face encoder ------------------------------


@pytest.fixture(scope="module")
def trained_on_hub_encoder(tiny_mpnet, tmp_path_factory):
    """configs/s2e_base.cfg on the tiny MPNet, its top 2 of 4 layers and head
    changed as training leaves them, saved."""
    import torch

    config = load_config(
        REPO / "configs" / "s2e_base.cfg",
        overrides={
            "paths.train": None,
            "paths.dev": None,
            "paths.encoder": str(tiny_mpnet),
            "components.memcoref.model.tok2vec.transformer_config.num_hidden_layers": 4,
            "components.memcoref.model.tok2vec.trainable_layers": 2,
            "components.memcoref.model.tok2vec.bfloat16": False,
        },
    )
    nlp = pretrained.from_config(config)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for _, node, module in pretrained.torch_modules(nlp):
            for key, value in module.named_parameters():
                if not pretrained.is_encoder(node) or ".layer.2." in key or ".layer.3." in key:
                    value.add_(torch.randn(value.shape, generator=generator) * 0.05)
    nlp.get_pipe("memcoref").cfg["updates"] = 500
    path = tmp_path_factory.mktemp("hub_trained") / "pipeline"
    nlp.to_disk(path)
    return nlp, path


def _state(nlp):
    return {(p, n, k): v for p, n, m in pretrained.torch_modules(nlp) for k, v in m.state_dict().items()}


def _clusters(nlp, texts):
    return [
        [
            [(s.start, s.end) for s in group]
            for key, group in sorted(doc.spans.items())
            if key.startswith("coref_clusters_")
        ]
        for doc in nlp.pipe(texts)
    ]


TEXTS = [
    "Alice met Bob in Paris. She thanked him there.",
    "The nurse said that she would call the doctor, and he agreed.",
]


@pytest.mark.parametrize("form, rank", [("full", 64), ("lowrank", 64)])
def test_a_stored_form_gives_the_full_models_clusters(trained_on_hub_encoder, tiny_mpnet, tmp_path, form, rank):
    """Stored in float32, the full form and a low-rank form of full rank
    (the tiny encoder is 32 wide) load back to the trained weights and the
    same clusters, the encoder found from the folder given to load()."""
    import torch

    nlp, path = trained_on_hub_encoder
    meta = pretrained.build(
        path, tmp_path / "m", name="test-base", dtype="float32", form=form, rank=rank, encoder=HUB_NAME
    )
    assert meta["base_encoder"]["hub"] == HUB_NAME and "package" not in meta["base_encoder"]
    assert meta["form"]["encoder"] == form
    stored_config = (tmp_path / "m" / pretrained.CONFIG_FILE).read_text(encoding="utf8")
    assert str(tiny_mpnet) not in stored_config  # the stored config names the encoder, not this machine's folder
    loaded = pretrained.load(tmp_path / "m", encoder=tiny_mpnet)
    before, after = _state(nlp), _state(loaded)
    compared = [key for key in after if key in before]
    assert compared and all(torch.allclose(before[key].float(), after[key].float(), atol=1e-5) for key in compared)
    assert _clusters(loaded, TEXTS) == _clusters(nlp, TEXTS)


def test_the_small_forms_are_smaller_and_close(trained_on_hub_encoder, tiny_mpnet, tmp_path):
    import torch

    nlp, path = trained_on_hub_encoder
    sizes, errors = {}, {}
    for form, rank in (("full", 0), ("int8", 0), ("lowrank", 4)):
        out = tmp_path / form
        meta = pretrained.build(path, out, name="test-base", form=form, rank=rank or 1, encoder=HUB_NAME)
        stored = pretrained.read_weights(out / pretrained.WEIGHTS_FILE)
        sizes[form] = sum(v.numel() * v.element_size() for k, v in stored.items() if "/hf-pytorch/" in k)
        loaded = _state(pretrained.load(out, encoder=tiny_mpnet))
        trained = _state(nlp)
        key = ("memcoref", "hf-pytorch", "encoder.layer.3.output.dense.weight")
        errors[form] = float((loaded[key] - trained[key]).abs().max())
        bottom = ("memcoref", "hf-pytorch", "encoder.layer.0.output.dense.weight")
        assert torch.equal(loaded[bottom], trained[bottom])  # untouched layers come from the encoder itself
    # bytes of the stored encoder tensors: int8 about half of bfloat16 (a
    # float32 scale a row on top), rank 4 of 32-wide matrices less again
    assert sizes["lowrank"] < sizes["int8"] < 0.6 * sizes["full"]
    assert errors["full"] < 1e-2 and errors["int8"] < 2e-2  # bfloat16 / 8-bit rounding of values ~0.1-1


def test_build_needs_the_encoder_as_a_local_folder(trained_on_hub_encoder, tmp_path):
    _, path = trained_on_hub_encoder
    with pytest.raises(ValueError, match="--encoder"):
        pretrained.build(path, tmp_path / "m", name="test-base")  # a path encoder, no --encoder name


# ----- finding the encoder ---------------------------------------------------


@pytest.fixture
def built(trained_on_hub_encoder, tmp_path):
    _, path = trained_on_hub_encoder
    pretrained.build(path, tmp_path / "m", name="test-base", form="lowrank", rank=4, encoder=HUB_NAME)
    return tmp_path / "m"


def test_a_build_stores_the_same_bytes_each_time(built, trained_on_hub_encoder, tmp_path):
    """pretrained-build of one pipeline gives one weights file, so its
    SHA-256 in meta.json names the model, not the run (safetensors wrote
    several metadata keys in a new order each time)."""
    _, path = trained_on_hub_encoder
    first = (built / pretrained.WEIGHTS_FILE).read_bytes()
    for i in range(3):
        again = tmp_path / f"again{i}"
        pretrained.build(path, again, name="test-base", form="lowrank", rank=4, encoder=HUB_NAME)
        assert (again / pretrained.WEIGHTS_FILE).read_bytes() == first, i


@pytest.fixture
def empty_hub_cache(tmp_path, monkeypatch):
    import huggingface_hub.constants

    cache = tmp_path / "hf-cache"
    cache.mkdir()
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.delenv(encoder_source.ENV_VAR, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return cache


def _as_cached(source: Path, cache: Path) -> Path:
    """A snapshot of `source` laid out as huggingface_hub caches HUB_NAME."""
    repo = cache / ("models--" + HUB_NAME.replace("/", "--"))
    snapshot = repo / "snapshots" / "0123456789abcdef0123456789abcdef01234567"
    shutil.copytree(source, snapshot)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(snapshot.name)
    return snapshot


def test_an_absent_encoder_gets_one_line_that_says_how_to_get_it(built, empty_hub_cache):
    with pytest.raises(EncoderNotFound) as info:
        pretrained.load(built)
    message = str(info.value)
    assert "\n" not in message and isinstance(info.value, PretrainedError)
    for fragment in (
        HUB_NAME,
        "encoder=FOLDER",
        encoder_source.ENV_VAR,
        "offline (HF_HUB_OFFLINE)",
        f"{pretrained.OFFLINE_MODEL!r} needs no download",
    ):
        assert fragment in message, message


def test_the_encoder_is_found_in_the_hugging_face_cache(built, empty_hub_cache, tiny_mpnet, trained_on_hub_encoder):
    snapshot = _as_cached(tiny_mpnet, empty_hub_cache)
    loaded = pretrained.load(built)
    assert loaded.config["components"]["memcoref"]["model"]["tok2vec"]["name"] == str(snapshot)


def test_the_environment_variable_names_a_local_copy(built, empty_hub_cache, tiny_mpnet, monkeypatch):
    monkeypatch.setenv(encoder_source.ENV_VAR, str(tiny_mpnet))
    assert pretrained.load(built).config["components"]["memcoref"]["model"]["tok2vec"]["name"] == str(tiny_mpnet)
    monkeypatch.setenv(encoder_source.ENV_VAR, str(built))  # a folder without the weights
    with pytest.raises(EncoderNotFound, match=rf"no model\.safetensors there \(\${encoder_source.ENV_VAR} names"):
        pretrained.load(built)


def test_online_the_encoder_is_downloaded_into_the_cache(built, empty_hub_cache, tiny_mpnet, monkeypatch, capsys):
    import huggingface_hub

    monkeypatch.delenv("HF_HUB_OFFLINE")
    calls = []

    def fake_snapshot_download(repo_id, allow_patterns=None, local_files_only=False, **_):
        calls.append((repo_id, local_files_only))
        if local_files_only:
            raise huggingface_hub.errors.LocalEntryNotFoundError("not cached")
        return str(_as_cached(tiny_mpnet, empty_hub_cache))

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot_download)
    pretrained.load(built)
    assert calls == [(HUB_NAME, True), (HUB_NAME, False)]
    assert f"downloading {HUB_NAME}" in capsys.readouterr().err

    def failing(repo_id, **_):
        raise OSError("Network is unreachable")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", failing)
    with pytest.raises(EncoderNotFound, match=r"the download failed \(Network is unreachable\)"):
        pretrained.load(built)


def test_an_encoder_of_other_weights_is_refused(built, empty_hub_cache, tiny_mpnet, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(tiny_mpnet, other)
    data = bytearray((other / "model.safetensors").read_bytes())
    data[-1] ^= 0x01
    (other / "model.safetensors").write_bytes(bytes(data))
    with pytest.raises(EncoderMismatch, match=r"model\.safetensors: SHA-256 .* was trained on test-org/tiny-mpnet"):
        pretrained.load(built, encoder=other)


def test_an_embedded_encoder_model_takes_no_encoder_argument(tiny_mpnet):
    with pytest.raises(PretrainedError, match="takes no encoder="):
        pretrained.load(pretrained.OFFLINE_MODEL, encoder=tiny_mpnet)


def test_info_says_where_the_encoder_comes_from(built):
    lines = "\n".join(pretrained.describe(json.loads((built / pretrained.META_FILE).read_text())))
    assert "Hugging Face Hub" in lines and "lowrank, rank 4" in lines
