"""The `[training.before_update]` callbacks: torch threads and glibc's
memory release (configs use spacy_memcoref.before_update.v1); its dropout
swap: tests/test_cpu_dropout.py."""

import sys

import pytest
import torch
from spacy.util import registry

from spacy_memcoref import training_callbacks as tc


class FakeGlibc:
    def __init__(self):
        self.calls = []

    def mallopt(self, param, value):
        self.calls.append(("mallopt", param, value))
        return 1

    def malloc_trim(self, pad):
        self.calls.append(("malloc_trim", pad))
        return 1


def test_before_update_sets_glibc_when_made_then_trims_before_every_update(monkeypatch):
    fake = FakeGlibc()
    monkeypatch.setattr(tc, "_glibc", lambda: fake)
    threads = torch.get_num_threads()
    try:
        callback = registry.callbacks.get("spacy_memcoref.before_update.v1")(
            threads=1, release_memory=True, numpy_dropout=False
        )
        # set when the config is resolved, before the pipeline is initialized:
        # two arenas, the mmap threshold fixed at 4 MB (what MALLOC_ARENA_MAX=2
        # MALLOC_MMAP_THRESHOLD_=4194304 set) and one trim; no trim threshold,
        # which would pin the mmap threshold at 128 KB and fault nearly every
        # tensor in afresh
        assert fake.calls == [
            ("mallopt", tc._M_ARENA_MAX, 2),
            ("mallopt", tc._M_MMAP_THRESHOLD, 4 * 1024 * 1024),
            ("malloc_trim", 0),
        ]
        for step in range(0, 101):
            callback(None, {"step": step, "epoch": 0})
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(threads)
    assert fake.calls[3:] == [("malloc_trim", 0)] * 101  # before every update


def test_release_memory_off_touches_nothing(monkeypatch):
    fake = FakeGlibc()
    monkeypatch.setattr(tc, "_glibc", lambda: fake)
    callback = tc.make_before_update(threads=0, release_memory=False, numpy_dropout=False)
    callback(None, {"step": 0})
    callback(None, {"step": 50})
    assert fake.calls == []


def test_without_glibc_it_does_nothing_and_says_so(monkeypatch):
    monkeypatch.setattr(tc, "_glibc", lambda: None)
    assert tc.release_memory_settings() is False
    callback = tc.make_before_update(threads=0, numpy_dropout=False)
    callback(None, {"step": 0})
    callback(None, {"step": 50})  # no error without a C library to call


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc is Linux's C library")
def test_real_glibc_accepts_the_settings():
    assert tc.release_memory_settings() is True


@pytest.mark.parametrize("kwargs", [{"threads": -1}, {"threads": True}, {"release_memory": "yes"}])
def test_bad_settings_are_refused(kwargs):
    with pytest.raises(ValueError, match="spacy_memcoref.before_update.v1"):
        tc.make_before_update(**kwargs)


@pytest.mark.parametrize(
    "mode,switch,hinted",
    [
        ("always [madvise] never\n", None, True),
        ("[always] madvise never\n", None, False),  # not measured: PyTorch's buffers may be on 2 MB pages already
        ("always madvise [never]\n", None, False),  # the kernel grants no 2 MB pages
        ("always [madvise] never\n", "1", False),
        ("always [madvise] never\n", "0", False),  # the user chose
        (None, None, False),  # no such file: not Linux, or no THP in the kernel
    ],
)
def test_huge_pages_hint_only_where_2mb_pages_are_to_be_had(monkeypatch, tmp_path, capsys, mode, switch, hinted):
    mode_file = tmp_path / "enabled"
    if mode is not None:
        mode_file.write_text(mode)
    monkeypatch.setattr(tc, "THP_MODE_FILE", mode_file)
    if switch is None:
        monkeypatch.delenv("THP_MEM_ALLOC_ENABLE", raising=False)
    else:
        monkeypatch.setenv("THP_MEM_ALLOC_ENABLE", switch)
    monkeypatch.setattr(tc, "_glibc", lambda: FakeGlibc())
    monkeypatch.setattr(tc, "_hinted", False)
    tc.make_before_update(threads=0, release_memory=True)
    out = capsys.readouterr().out
    assert ("THP_MEM_ALLOC_ENABLE=1 in the environment of `spacy train`" in out) is hinted, out
    assert (tc.huge_pages_hint() is not None) is hinted
    tc.make_before_update(threads=0, release_memory=True)  # spaCy resolves [training] twice: one line
    assert "THP_MEM_ALLOC_ENABLE" not in capsys.readouterr().out
    monkeypatch.setattr(tc, "_hinted", False)
    tc.make_before_update(threads=0, release_memory=False)  # nothing to speed up: no trims, no hint
    assert "THP_MEM_ALLOC_ENABLE" not in capsys.readouterr().out
