"""scripts/build_gap_pairs.py: GAP-form rows from documents with full
clusters (steps 1-6 of its docstring), on small hand-made CoNLL snippets;
every file it writes is read back by the GAP reader, which checks each
mention's text at its offset."""

import pytest

from spacy_memcoref.corpora.gap import read_gap_rows

from conftest import load_script


@pytest.fixture(scope="module")
def bgp():
    return load_script("build_gap_pairs")


def _conll(name, sentences):
    """CoNLL-2012 lines from sentences written 'Mary|(0) met Anna|(1) .'
    (a cell after |, as in the coreference column)."""
    lines = [f"#begin document ({name}); part 0"]
    for sentence in sentences:
        for i, token in enumerate(sentence.split()):
            word, _, cell = token.partition("|")
            lines.append("\t".join([name, "0", str(i), word] + ["_"] * 8 + [cell or "-"]))
        lines.append("")
    lines.append("#end document")
    return "\n".join(lines) + "\n"


def _build(bgp, tmp_path, sentences, *args):
    source = tmp_path / "doc.conll"
    source.write_text(_conll("doc", sentences))
    out = tmp_path / "pairs.tsv"
    assert bgp.main([str(source), str(out), "--no-balance", *args]) == 0
    return list(read_gap_rows(out))


TWO_WOMEN = [
    "Mary|(0) met Anna|(1) in Paris .",
    "Anna|(1) gave her|(0) a book from her|(1) bag .",
    "She|(0) thanked Anna|(1) and left .",
]


def test_the_pronouns_own_name_is_true_and_the_nearest_other_false(bgp, tmp_path):
    rows = _build(bgp, tmp_path, TWO_WOMEN)
    # "her" of sentence 2: Mary (TRUE) and Anna (FALSE) before it; "She" of sentence 3 the same, Anna's latest name
    assert [(r.pronoun, r.a, r.a_coref, r.b, r.b_coref) for r in rows] == [
        ("her", "Mary", True, "Anna", False),
        ("She", "Mary", True, "Anna", False),
    ]
    she = rows[1]
    assert she.text.startswith("Mary met Anna") and she.text.endswith("and left .")
    assert she.text[she.b_offset :].startswith("Anna gave")  # the latest Anna before the pronoun
    assert she.id == "doc-2" and she.url == "doc"


def test_a_pronoun_whose_entity_has_no_name_there_gives_neither(bgp, tmp_path):
    rows = _build(
        bgp,
        tmp_path,
        [
            "Mary|(0) and Anna|(1) met the woman|(2) .",
            "Mary|(0) saw her|(1) sister ; Anna|(1) saw her|(0) brother .",
            "The woman|(2) said she|(2) was late .",
        ],
    )
    neither = [r for r in rows if r.pronoun == "she"]
    assert [(r.a, r.a_coref, r.b, r.b_coref) for r in neither] == [("Mary", False, "Anna", False)]


def test_people_of_the_other_gender_or_of_none_are_never_candidates(bgp, tmp_path, capsys):
    source = tmp_path / "doc.conll"
    source.write_text(
        _conll("doc", ["John|(0) met Mary|(1) near Paris|(2) .", "Paris|(2) was cold , and he|(0) saw her|(1) ."])
    )
    # one man, one woman and a place: no pronoun has two people of its gender before it, so no row;
    # a GAP file without rows is not one `convert gap` reads: nothing is written
    assert bgp.main([str(source), str(tmp_path / "pairs.tsv")]) == 1
    assert "no GAP row" in capsys.readouterr().err and not (tmp_path / "pairs.tsv").exists()


@pytest.mark.parametrize(
    "words,expected",
    [
        ("Mary", "Mary"),
        ("Mr. Elliot", "Mr. Elliot"),
        ("Ludwig van Beethoven", "Ludwig van Beethoven"),
        ("John 's", "John"),
        ("The Doctor", None),
        ("Her Majesty", None),
        ("Sir", None),
        ("the man", None),
        ("She", None),
        ("Anna and her", None),
        ("A B C D E F", None),
    ],
)
def test_what_is_a_name(bgp, words, expected):
    tokens = words.split()
    found = bgp.is_name(tokens, (0, len(tokens) - 1))
    assert (None if found is None else " ".join(tokens[found[0] : found[1] + 1])) == expected


# a nurse and a mechanic, as in the two-occupation sentences: no name at all
TWO_OCCUPATIONS = [
    "The|(0 nurse|0) called the|(1 mechanic|1) .",
    "The|(1 mechanic|1) said that she|(1) was late , and her|(0) brother laughed .",
]


def test_mentions_offer_common_nouns_where_names_offer_nothing(bgp, tmp_path):
    source = tmp_path / "doc.conll"
    source.write_text(_conll("doc", TWO_OCCUPATIONS))
    assert bgp.main([str(source), str(tmp_path / "names.tsv"), "--no-balance"]) == 1  # no name: no row
    rows = _build(bgp, tmp_path, TWO_OCCUPATIONS, "--candidates", "mentions", "--rows-per-sentence", "2")
    # "she": the mechanic's latest mention (TRUE) and the nurse (FALSE); "her": the nurse (TRUE), and the
    # mechanic's latest mention is "she", a pronoun, so "The mechanic" is the distractor
    assert [(r.pronoun, r.a, r.a_coref, r.b, r.b_coref) for r in rows] == [
        ("she", "The nurse", False, "The mechanic", True),
        ("her", "The nurse", True, "The mechanic", False),
    ]


@pytest.mark.parametrize(
    "words,expected",
    [
        ("the man", "the man"),
        ("her sister 's", "her sister"),
        ("Mary", "Mary"),
        ("She", None),
        ("him", None),
        ("who", None),
        ("-- ,", None),
        ("the man who sold the old house", None),
    ],
)
def test_what_is_a_candidate_mention(bgp, words, expected):
    tokens = words.split()
    found = bgp.is_candidate(tokens, (0, len(tokens) - 1))
    assert (None if found is None else " ".join(tokens[found[0] : found[1] + 1])) == expected


def test_overlapping_candidates_give_no_row(bgp):
    # "the wife of John" (entity 1) holds "John" (entity 0): not a choice between two people
    names = [((0, 3), 1), ((3, 3), 0)]
    assert bgp.pair_for(6, 0, 0, names) is None
    assert bgp.pair_for(6, 0, 0, [((0, 1), 1), ((3, 3), 0)]) == (((0, 1), False), ((3, 3), True))


def test_a_row_overlapping_an_excluded_gap_text_is_left_out(bgp, tmp_path):
    kept = _build(bgp, tmp_path, TWO_WOMEN)
    gap = tmp_path / "gap.tsv"
    header = "ID\tText\tPronoun\tPronoun-offset\tA\tA-offset\tA-coref\tB\tB-offset\tB-coref\tURL\n"
    text = "So a book from her bag . She thanked Anna and left , said Kim ."
    gap.write_text(
        header
        + f"v-1\t{text}\tShe\t{text.index('She')}\tAnna\t{text.index('Anna')}\tFALSE\tKim\t{text.index('Kim')}\tTRUE\tu\n"
    )
    rows = _build(bgp, tmp_path, TWO_WOMEN, "--exclude", str(gap))
    # the second row's text holds the 8 words "a book from her bag . she thanked": out; the first's does not
    assert [r.pronoun for r in kept] == ["her", "She"] and [r.pronoun for r in rows] == ["her"]


def test_balanced_keeps_as_many_feminine_rows_as_masculine_in_text_order(bgp):
    rows = [{"Pronoun": p, "n": i} for i, p in enumerate(["he", "his", "she", "him", "He", "her"])]
    kept = bgp.balanced(rows, seed=0)
    genders = [bgp.GAP_PRONOUNS[r["Pronoun"].lower()] for r in kept]
    assert genders.count("masculine") == genders.count("feminine") == 2
    assert [r["n"] for r in kept] == sorted(r["n"] for r in kept)
    assert bgp.balanced(rows, seed=0) == kept


def test_bad_input_gets_a_clear_error(bgp, tmp_path, capsys):
    assert bgp.main([str(tmp_path / "missing.conll"), str(tmp_path / "out.tsv")]) == 1
    assert "missing.conll: no such file or folder" in capsys.readouterr().err
    source = tmp_path / "doc.conll"
    source.write_text(_conll("doc", TWO_WOMEN))
    assert bgp.main([str(source), str(source)]) == 1  # never writes over its input
    assert source.read_text() == _conll("doc", TWO_WOMEN)
    assert "doc.conll" in capsys.readouterr().err
