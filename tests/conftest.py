"""Shared fixtures. Tests that need ../shared (data, reference scorers) skip,
saying why, when it is absent."""
import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("MEMCOREF_SHARED", REPO.parent / "shared"))


def _require(path: Path, what: str) -> Path:
    if not path.exists():
        pytest.skip(f"{what} not found at {path} (set MEMCOREF_SHARED to the shared/ folder)")
    return path


@pytest.fixture(scope="session")
def shared_data() -> Path:
    return _require(SHARED / "data", "shared data")


@pytest.fixture(scope="session")
def conll_scorer() -> Path:
    scorer = _require(SHARED / "tools" / "conll-scorer" / "scorer.pl", "CoNLL-2012 reference scorer")
    if shutil.which("perl") is None:
        pytest.skip("perl is not installed; the CoNLL-2012 reference scorer needs it")
    return scorer


@pytest.fixture(scope="session")
def gap_scorer() -> Path:
    return _require(SHARED / "tools" / "gap-scorer" / "gap_scorer.py", "official GAP scorer")


@pytest.fixture(scope="module")
def one_torch_thread():
    """Tiny tensors: threads only add contention on a shared machine."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def tiny_mpnet(tmp_path_factory) -> Path:
    """A small random MPNet (4 layers, width 32) as a Hugging Face folder,
    with the embedded MiniLM's word-piece tokenizer: the base presets'
    architecture (relative position bias included) without a download."""
    import torch
    from transformers import MPNetConfig, MPNetModel

    from spacy_memcoref.models.encoder import embedded_encoder_path

    path = tmp_path_factory.mktemp("tiny_mpnet")
    source = Path(embedded_encoder_path())
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        shutil.copy(source / name, path / name)
    torch.manual_seed(0)
    config = MPNetConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=4,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=514,
        pad_token_id=0,
    )
    MPNetModel(config).save_pretrained(path)
    return path
