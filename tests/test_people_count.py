"""scripts/build_people_count.py: the people-counting set derived from
LitBank-style coreference CoNLL (rules 1-4 of its docstring), on small
hand-made CoNLL snippets; the real LitBank only where ../shared is present."""

import json
from pathlib import Path

import pytest

from spacy_memcoref.corpora.people import read_people_tsv

from conftest import load_script

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "assets" / "demo" / "litbank"


@pytest.fixture(scope="module")
def bpc():
    return load_script("build_people_count")


def _conll(name, sentences):
    """LitBank's CoNLL form from sentences of (word, coref cell) pairs."""
    lines = [f"#begin document ({name}); part 0"]
    for sentence in sentences:
        for i, (word, cell) in enumerate(sentence):
            lines.append("\t".join([name, "0", str(i), word] + ["_"] * 8 + [cell]))
        lines.append("")
    lines.append("#end document")
    return "\n".join(lines) + "\n"


def _sentence(text):
    """'Mr.|(0 Elliot|0) was here' -> [(Mr., (0), (Elliot, 0)), (was, ), (here, )]"""
    out = []
    for token in text.split():
        word, _, cell = token.partition("|")
        out.append((word, cell))
    return out


# -- rule 2: who is a person ---------------------------------------------------------------


@pytest.mark.parametrize(
    "words,expected",
    [
        ("she", "pronoun"),
        ("Himself", "pronoun"),
        ("I", "pronoun"),
        ("they", None),
        ("it", None),
        ("you", None),
        ("Mr. Elliot", "title"),
        ("Lady Russell", "title"),
        ("lady friends", None),  # a title must be capitalized; head "friends" is plural
        ("Mr. and Mrs. Smith", None),  # a coordination is a group
        ("the man and his wife", None),
        ("a man who , for his own amusement , read", "noun"),
        ("his father", "noun"),
        ("the old gentleman", "noun"),
        ("the daughter of James Stevenson", "noun"),
        ("the gardener 's lodge", None),  # the head follows the possessive
        ("the men", None),
        ("Kellynch Hall", None),
        ("Elizabeth", None),  # a bare name: no evidence by itself
    ],
)
def test_mention_evidence(bpc, words, expected):
    assert bpc.mention_evidence(words.split()) == expected


def test_classify_cluster(bpc):
    person, evidence = bpc.classify_cluster([["Elizabeth"], ["she"], ["her"]])
    assert person == bpc.PERSON and evidence == ["pronoun: she", "pronoun: her"]
    assert bpc.classify_cluster([["London"], ["London"]])[0] == bpc.OTHER
    assert bpc.classify_cluster([["the boys"], ["they"]]) == (bpc.OTHER, ["group/thing: they"])
    # a ship called "her" and "it": conflicting
    assert bpc.classify_cluster([["the", "Fuwalda"], ["her"], ["it"]])[0] == bpc.CONFLICTING


# -- rule 1: windows; rule 4: text -------------------------------------------------------------


def test_sentence_windows(bpc):
    # sentences of 3, 4, 10, 2, 2 tokens
    starts = []
    for n in (3, 4, 10, 2, 2):
        starts += [True] + [False] * (n - 1)
    # the 10-token sentence is longer than max: skipped
    assert bpc.sentence_windows(starts, min_tokens=4, max_tokens=8) == [(0, 7), (17, 21)]
    # 2 + 2 tokens < min: dropped
    assert bpc.sentence_windows(starts, min_tokens=5, max_tokens=8) == [(0, 7)]
    assert bpc.sentence_windows(starts, min_tokens=1, max_tokens=100) == [(0, 21)]
    assert bpc.sentence_windows([], min_tokens=1, max_tokens=5) == []


def test_detokenize(bpc):
    words = "He said , \" I do n't know . \" ( She was Tom 's sister . ) “ Yes , ” she said .".split()
    assert bpc.detokenize(words) == "He said, \"I don't know.\" (She was Tom's sister.) “Yes,” she said."


# -- rules 1-4 on a document --------------------------------------------------------------------

SNIPPET = [
    # 0: Sir Walter Elliot , of Kellynch Hall , was a man who read . (predicate nominal: not a person)
    "Sir|(0 Walter|- Elliot|0) ,|- of|- Kellynch|(1 Hall|1) ,|- was|- a|(2 man|- who|- read|2) .|-",
    # 1: His daughter , Miss Anne , a quiet girl , loved him . (appositives: one person)
    "His|(3|(0) daughter|3) ,|- Miss|(4 Anne|4) ,|- a|(5 quiet|- girl|5) ,|- loved|- him|(0) .|-",
    # 2: She and Mary went to London . (Mary: a bare name, never a pronoun: not seen)
    "She|(4) and|- Mary|(6) went|- to|- London|(7) .|-",
    # 3: The boys said they saw the captain . (a group; the captain is a person noun)
    "The|(8 boys|8) said|- they|(8) saw|- the|(9 captain|9) .|-",
    # 4: The ship , which she loved , was lost ; it sank . (her/it: conflicting)
    "The|(10 ship|10) ,|- which|- she|(4) loved|- ,|- was|- lost|- ;|- it|(10) sank|- .|-",
]


def _write(tmp_path, sentences, name="snippet"):
    conll = _conll(name, [_sentence(s.replace("|-", "|")) for s in sentences])
    path = tmp_path / f"{name}.conll"
    path.write_text(conll, encoding="utf8")
    return path


def test_derive_rows_on_a_snippet(bpc, tmp_path):
    path = _write(tmp_path, SNIPPET[:4] + [SNIPPET[4].replace("she|(4)", "she|(10)")])
    ((doc_id, words, starts, clusters),) = list(bpc.read_litbank(path))
    assert doc_id == "snippet" and len(clusters) == 11
    # one sentence a window (14, 13, 7, 8 and 13 tokens)
    rows, stats = bpc.derive_rows(doc_id, words, starts, clusters, min_tokens=1, max_tokens=14)
    assert [r["id"] for r in rows] == ["snippet-0", "snippet-1", "snippet-2", "snippet-3"]
    assert [r["count"] for r in rows] == [
        1,  # Sir Walter Elliot (the predicate "a man who read" is no one new)
        2,  # Sir Walter (His, him) and his daughter = Miss Anne = a quiet girl
        1,  # Anne (She); Mary has no pronoun, title or noun: not seen
        1,  # the captain; the boys are a group
    ]
    assert stats["windows"] == 5 and stats["dropped_conflicting"] == 1  # the ship: "she" and "it"
    assert stats[bpc.CONFLICTING] == 1
    second = rows[1]
    assert second["text"] == "His daughter, Miss Anne, a quiet girl, loved him."
    anne = [p for p in second["people"] if 3 in p["clusters"]]
    assert len(anne) == 1 and sorted(anne[0]["clusters"]) == [3, 4, 5]
    # all in one window: Sir Walter, Anne (three clusters, one person), the captain; the ship's
    # conflict leaves the window out
    rows, _ = bpc.derive_rows(doc_id, words, starts, clusters[:10], min_tokens=1, max_tokens=100)
    assert [r["count"] for r in rows] == [3]


def test_a_list_of_names_stays_several_people(bpc, tmp_path):
    path = _write(
        tmp_path,
        ["Sara|(0) ,|- Mike|(1) and|- Jenny|(2) swam|- .|-", "She|(0) ,|- he|(1) and|- she|(2) ate|- .|-"],
        name="names",
    )
    ((doc_id, words, starts, clusters),) = list(bpc.read_litbank(path))
    rows, _ = bpc.derive_rows(doc_id, words, starts, clusters, min_tokens=1, max_tokens=100)
    assert [r["count"] for r in rows] == [3]


# -- the script -------------------------------------------------------------------------------


def test_script_writes_a_people_tsv_the_cli_reads(bpc, tmp_path):
    out = tmp_path / "people" / "demo.tsv"
    explain = tmp_path / "demo.jsonl"
    assert bpc.main([str(DEMO), str(out), "--explain", str(explain)]) == 0
    rows = read_people_tsv(out)
    assert [(ex_id, count) for _, ex_id, _, count in rows] == [
        ("demo_harbour-0", 3),  # Martha, Tom, the captain
        ("demo_harbour-1", 4),  # Martha (his aunt), Tom, the captain, the fisherman
        ("demo_market-0", 4),  # Mr. Okafor, Ada, the woman, the baker
        ("demo_market-1", 3),  # Ada, the boy, Mr. Okafor
    ]
    assert rows[0][2].startswith("Old Martha kept the lighthouse at Kerrow for forty years, and she")
    details = [json.loads(line) for line in explain.read_text(encoding="utf8").splitlines()]
    assert [d["count"] for d in details] == [3, 4, 4, 3]
    assert all(len(d["people"]) == d["count"] for d in details)
    assert not out.with_name(out.name + ".tmp").exists()


def test_script_errors(bpc, tmp_path, capsys):
    out = tmp_path / "out.tsv"
    assert bpc.main([str(tmp_path / "missing"), str(out)]) == 1
    assert "LitBank not found" in capsys.readouterr().err
    assert bpc.main([str(DEMO), str(out), "--min-tokens", "500", "--max-tokens", "600"]) == 1
    assert "no window" in capsys.readouterr().err
    assert bpc.main([str(DEMO), str(out), "--min-tokens", "9", "--max-tokens", "3"]) == 2
    bad = tmp_path / "bad.conll"
    bad.write_text(
        "#begin document (x); part 0\nx\t0\t0\tHi\t_\t_\t_\t_\t_\t_\t_\t_\t(0\n#end document\n", encoding="utf8"
    )
    assert bpc.main([str(bad), str(out)]) == 1
    assert "bad.conll" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.shared_data
def test_litbank_gives_a_large_set(bpc, shared_data, tmp_path):
    out = tmp_path / "litbank.tsv"
    assert bpc.main([str(shared_data / "litbank"), str(out)]) == 0
    rows = read_people_tsv(out)
    counts = [count for *_, count in rows]
    assert len(rows) > 1000
    assert 1.5 < sum(counts) / len(counts) < 4.0
    assert len(set(counts)) >= 6
