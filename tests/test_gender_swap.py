"""The gender-swap augmenter: hand-checked swaps, spans and labels kept,
the augmenter through spaCy's own config and Corpus, bad levels."""

import random
from pathlib import Path

import pytest
import spacy
from spacy.tokens import Doc, DocBin
from spacy.training import Example
from spacy.util import load_config, registry

from spacy_memcoref.corpora.gap import read_gap
from spacy_memcoref.corpora.gender_swap import gender_swapped_doc, gender_swapped_example, swap_gender_words
from spacy_memcoref.doc_helpers.petra_gold import petra_sparse_target

SAMPLE = Path(__file__).parent / "data" / "gap_sample.tsv"


@pytest.fixture
def sample_docbin(tmp_path):
    """The GAP sample's Docs and a DocBin of them on disk."""
    docs = list(read_gap(SAMPLE, spacy.blank("en")))
    path = tmp_path / "gap.spacy"
    DocBin(docs=docs, store_user_data=True).to_disk(path)
    return docs, path


@pytest.mark.parametrize(
    "words,expected",
    [
        ("He told her that his dog was hers .", "She told him that her dog was his ."),
        ("She met her brother with her .", "He met his brother with him ."),
        ("HER own book , and his .", "HIS own book , and hers ."),
        ("He hurt himself ; she hurt herself", "She hurt herself ; he hurt himself"),
        ("Hershey and Shelby stay", "Hershey and Shelby stay"),
        ("the book is his", "the book is hers"),
    ],
)
def test_swap_words_by_hand(words, expected):
    assert " ".join(swap_gender_words(words.split())) == expected


def test_swapped_gap_docs_keep_spans_labels_and_gold():
    nlp = spacy.blank("en")
    docs = list(read_gap(SAMPLE, nlp))
    assert docs
    for doc in docs:
        new = gender_swapped_doc(doc)
        assert len(new) == len(doc)
        assert [t.whitespace_ for t in new] == [t.whitespace_ for t in doc]
        assert set(new.spans) == set(doc.spans)
        for key in doc.spans:
            assert [(s.start, s.end, s.label_) for s in new.spans[key]] == [
                (s.start, s.end, s.label_) for s in doc.spans[key]
            ]
        assert new.user_data == doc.user_data
        new.user_data["gap"]["id"] = "changed"
        assert doc.user_data["gap"]["id"] != "changed", "user_data must be a copy"
        pronoun = [s for s in doc.spans["gap"] if s.label_ == "PRONOUN"][0]
        new_pronoun = [s for s in new.spans["gap"] if s.label_ == "PRONOUN"][0]
        assert new_pronoun.text.lower() != pronoun.text.lower()
        # the swap of this pronoun, from the word list written out here
        expected = {
            "he": ("she",),
            "she": ("he",),
            "his": ("her", "hers"),
            "him": ("her",),
            "her": ("his", "him"),
            "hers": ("his",),
            "himself": ("herself",),
            "herself": ("himself",),
        }[pronoun.text.lower()]
        assert new_pronoun.text.lower() in expected
        # the PeTra gold (spans and link labels) does not change
        assert petra_sparse_target(Example(new, new), "coref_clusters") == petra_sparse_target(
            Example(doc, doc), "coref_clusters"
        )


def test_augmenter_from_config_through_corpus(sample_docbin):
    nlp = spacy.blank("en")
    docs, path = sample_docbin
    cfg = {
        "corpus": {
            "@readers": "spacy.Corpus.v1",
            "path": str(path),
            "gold_preproc": False,
            "augmenter": {"@augmenters": "spacy_memcoref.gender_swap.v1", "level": 1.0},
        }
    }
    corpus = registry.resolve(cfg)["corpus"]
    examples = list(corpus(nlp))
    assert len(examples) == len(docs)
    for example, doc in zip(examples, docs):
        assert example.reference.text != doc.text
        assert example.reference.text == gender_swapped_doc(doc).text
        assert example.predicted.text == example.reference.text
    keep = registry.augmenters.get("spacy_memcoref.gender_swap.v1")(level=0.0)
    example = Example(nlp.make_doc(docs[0].text), docs[0])
    assert list(keep(nlp, example)) == [example]


@pytest.mark.parametrize("level", [-0.1, 1.5, "half", True])
def test_bad_level_is_refused(level):
    with pytest.raises(ValueError, match="level must be a number in"):
        registry.augmenters.get("spacy_memcoref.gender_swap.v1")(level=level)


def test_convert_gap_gender_swap_keeps_ids_and_labels(tmp_path):
    from typer.testing import CliRunner

    from spacy_memcoref.cli import app

    nlp = spacy.blank("en")
    runner = CliRunner()
    plain, swapped = tmp_path / "plain.spacy", tmp_path / "swapped.spacy"
    for args in ([str(SAMPLE), str(plain)], [str(SAMPLE), str(swapped), "--gender-swap"]):
        result = runner.invoke(app, ["convert", "gap", *args])
        assert result.exit_code == 0, result.output
    docs = list(DocBin().from_disk(plain).get_docs(nlp.vocab))
    new = list(DocBin().from_disk(swapped).get_docs(nlp.vocab))
    assert [d.user_data["gap"] for d in new] == [d.user_data["gap"] for d in docs]
    assert [d.text for d in new] == [gender_swapped_doc(d).text for d in docs]
    assert all(a.text != b.text for a, b in zip(new, docs))


def test_petra_config_swaps_about_half_of_the_training_texts(sample_docbin):
    repo = Path(__file__).resolve().parent.parent
    config = load_config(
        repo / "configs" / "petra_gap.cfg", overrides={"paths.train": "x", "paths.dev": "x"}, interpolate=True
    )
    assert config["corpora"]["train"]["augmenter"] == {"@augmenters": "spacy_memcoref.gender_swap.v1", "level": 0.5}
    assert "augmenter" not in config["corpora"]["dev"] or config["corpora"]["dev"]["augmenter"] is None
    nlp = spacy.blank("en")
    docs, path = sample_docbin
    config["corpora"]["train"]["path"] = str(path)
    corpus = registry.resolve({"train": config["corpora"]["train"]})["train"]
    random.seed(0)
    swapped = [ex.reference.text != doc.text for ex, doc in zip(corpus(nlp), docs)]
    assert len(swapped) == len(docs) and 0 < sum(swapped) < len(docs)


def test_predicted_tokens_follow_the_reference_decisions():
    """The predicted Doc is tokenized differently from the reference, so on
    its own it would decide "her" the other way ("to" is a function word):
    it takes the reference's word, and the texts still align."""
    nlp = spacy.blank("en")
    reference = Doc(nlp.vocab, words=["She", "met", "her", "tomorrow", "."], spaces=[True, True, True, False, False])
    predicted = Doc(
        nlp.vocab, words=["She", "met", "her", "to", "morrow", "."], spaces=[True, True, True, False, False, False]
    )
    assert swap_gender_words([t.text for t in predicted])[2] == "him"
    swapped = gender_swapped_example(Example(predicted, reference))
    assert swapped.reference.text == "He met his tomorrow."
    assert swapped.predicted.text == swapped.reference.text
    assert len(swapped.predicted) == 6
    assert swapped.alignment.x2y.lengths.tolist() == [1, 1, 1, 1, 1, 1]


# ----- whole documents: gendered words and first names (s2e) ---------------


@pytest.mark.parametrize(
    "words,expected",
    [
        ("Mary thanked her father , Mr. Smith .", "James thanked his mother , Ms. Smith ."),
        ("The King and his sons", "The Queen and her daughters"),
        ("John Paul met Patricia at the WOMEN 's race", "Patricia Paul met John at the MEN 's race"),
        # not names: lower-case words, and the names kept out of the lists
        ("mark the will , Kelly and Alex", "mark the will , Kelly and Alex"),
    ],
)
def test_nouns_and_names_swap_by_hand(words, expected):
    assert " ".join(swap_gender_words(words.split(), nouns=True, names=True)) == expected
    # by default only the pronouns: GAP's candidates keep their names
    assert swap_gender_words("Mary met her father".split()) == "Mary met his father".split()


def test_the_word_lists_swap_one_token_for_one_and_back():
    from spacy_memcoref.gendered_words import NAMES, NOUN_PAIRS, NOUNS

    for table in (NOUNS, NAMES):
        for word, swapped in table.items():
            assert swapped and " " not in swapped and swapped != word, word
    # every pair but those that read two ways going back (lady, mr.) round-trips
    lossy = {"lady", "ladies", "mr.", "mr"}
    for masculine, feminine in NOUN_PAIRS:
        if masculine not in lossy and feminine not in lossy:
            assert NOUNS[NOUNS[masculine]] == masculine and NOUNS[masculine] == feminine


def test_a_swapped_document_keeps_its_clusters():
    nlp = spacy.blank("en")
    doc = nlp("Mary Curie taught her son. His father, Pierre, thanked her.")
    doc.spans["coref_clusters_1"] = [doc[0:2], doc[3:4], doc[12:13]]
    doc.spans["coref_clusters_2"] = [doc[3:5], doc[6:7]]
    example = gender_swapped_example(Example(nlp.make_doc(doc.text), doc), nouns=True, names=True)
    assert example.reference.text == "James Curie taught his daughter. Her mother, Marie, thanked him."
    assert example.predicted.text == example.reference.text
    assert [[s.text for s in example.reference.spans[k]] for k in sorted(doc.spans)] == [
        ["James Curie", "his", "him"],
        ["his daughter", "Her"],
    ]


def test_the_augmenter_takes_nouns_and_names_from_the_config():
    augmenter = registry.augmenters.get("spacy_memcoref.gender_swap.v1")(level=1.0, nouns=True, names=True)
    nlp = spacy.blank("en")
    doc = nlp("John met his mother.")
    (swapped,) = augmenter(nlp, Example(nlp.make_doc(doc.text), doc))
    assert swapped.reference.text == "Patricia met her father."
    with pytest.raises(ValueError, match="nouns must be true or false"):
        registry.augmenters.get("spacy_memcoref.gender_swap.v1")(level=0.5, nouns="yes")
