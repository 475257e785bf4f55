"""GUM's own entity layer (spacy_memcoref.corpora.gum_entities): the reader
of the conllu `Entity=` brackets, the aligner onto OntoGUM Docs, and, on the
shared data, agreement with OntoGUM for all 148 train + dev documents."""

import collections
import re
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from spacy_memcoref.corpora.gum_entities import (
    INFSTAT_KEY,
    MENTIONS_KEY,
    GumDoc,
    add_gum_mentions,
    attach_gum_entities,
    attach_gum_entities_docbin,
    iter_gum_docs,
    read_gum_entities,
)
from spacy_memcoref.errors import DataFormatError

HEADER = "# global.Entity = GRP-etype-infstat-salience-centering-minspan-link-identity"


def _line(tid, form, head, deprel, misc="_"):
    return "\t".join([str(tid), form, form.lower(), "X", "X", "_", str(head), deprel, "_", misc])


# GUM's real format: nested openings glued together, one-token mentions
# "(...)", a one-token mention then a closing on one token, an identity that
# holds "-", the same entity nested in itself, a multiword token (7-8) inside
# a mention and an empty node (5.1), neither of which is a document token.
SNIPPET_LINES = [
    "# newdoc id = GUM_snippet_doc",
    HEADER,
    "# sent_id = GUM_snippet_doc-1",
    "# text = Kim's friend, Jean-Luc, didn't see it.",
    _line(1, "Kim", 3, "nmod:poss", "Entity=(1-person-new-sssss-cf1-3-coref(2-person-new-nnnnn-cf2-1-ana-Kim_Smith)"),
    _line(2, "'s", 1, "case"),
    _line(3, "friend", 9, "nsubj", "Entity=1)"),
    _line(4, ",", 5, "punct"),
    _line(5, "Jean-Luc", 3, "appos", "Entity=(1-person-giv:act-sssss-cf1-1-appos-Jean-Luc_Picard)"),
    _line(6, ",", 5, "punct"),
    "7-8\tdidn't\t_\t_\t_\t_\t_\t_\t_\t_",
    _line(7, "did", 9, "aux", "Entity=(6-event-new-nnnnn-cf4-1-disc"),
    _line(8, "n't", 9, "advmod"),
    _line(9, "see", 0, "root"),
    _line(10, "it", 9, "obj", "Entity=(3-object-acc:com-nnnnn-cf3-1-sgl)6)"),
    _line(11, ".", 9, "punct", "SpaceAfter=No"),
    "",
    "# sent_id = GUM_snippet_doc-2",
    _line(1, "The", 3, "det", "Entity=(4-object-new-nnnnn-cf1-4-coref(5-object-new-nnnnn-cf2-3-coref"),
    _line(2, "old", 3, "amod"),
    _line(3, "house", 5, "nmod:poss", "Entity=5)"),
    _line(4, "'s", 3, "case"),
    _line(5, "door", 9, "nsubj", "Entity=4)"),
    "5.1\twas\tbe\tAUX\t_\t_\t_\t_\t5:cop\t_",
    _line(6, ",", 5, "punct"),
    _line(7, "it", 9, "nsubj", "Entity=(4-object-giv:act-nnnnn-cf1-1-ana)"),
    _line(8, "was", 9, "cop"),
    _line(9, "red", 0, "root"),
    _line(10, ".", 9, "punct"),
    "",
    "# sent_id = GUM_snippet_doc-3",
    _line(1, "Kim", 3, "nsubj", "Entity=(1-person-giv:inact-sssss-cf1-1-coref(1-person-giv:inact-sssss-cf2-1-coref)"),
    _line(2, "herself", 1, "appos", "Entity=(1-person-giv:act-sssss-cf3-1-ana)1)"),
    _line(3, "left", 0, "root"),
    _line(4, ".", 3, "punct"),
    "",
]
SNIPPET = "\n".join(SNIPPET_LINES) + "\n"
SNIPPET_WORDS = (
    "Kim 's friend , Jean-Luc , did n't see it . The old house 's door , it was red . Kim herself left ."
).split()
# (start, end EXCLUSIVE, entity, etype, infstat, link, identity), in the reader's order
SNIPPET_MENTIONS = [
    (0, 3, "1", "person", "new", "coref", ""),
    (0, 1, "2", "person", "new", "ana", "Kim_Smith"),
    (4, 5, "1", "person", "giv:act", "appos", "Jean-Luc_Picard"),
    (6, 10, "6", "event", "new", "disc", ""),
    (9, 10, "3", "object", "acc:com", "sgl", ""),
    (11, 16, "4", "object", "new", "coref", ""),
    (11, 14, "5", "object", "new", "coref", ""),
    (17, 18, "4", "object", "giv:act", "ana", ""),
    (21, 23, "1", "person", "giv:inact", "coref", ""),
    (21, 22, "1", "person", "giv:inact", "coref", ""),
    (22, 23, "1", "person", "giv:act", "ana", ""),
]


def _tuples(doc: GumDoc):
    return [(m.start, m.end, m.entity, m.etype, m.infstat, m.link, m.identity) for m in doc.mentions]


def _write(tmp_path: Path, text: str, name: str = "GUM_snippet_doc.conllu") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf8")
    return path


def _blank_doc(words, doc_id="GUM_snippet_doc"):
    from spacy.tokens import Doc
    from spacy.vocab import Vocab

    doc = Doc(Vocab(), words=words)
    doc.user_data["doc_id"] = doc_id
    return doc


# --------------------------------------------------------------------------- #
# The reader on a hand-written snippet
# --------------------------------------------------------------------------- #


def test_snippet_parses_to_the_exact_spans(tmp_path):
    docs = read_gum_entities(_write(tmp_path, SNIPPET))
    assert list(docs) == ["GUM_snippet_doc"]
    doc = docs["GUM_snippet_doc"]
    assert doc.words == SNIPPET_WORDS  # no "didn't" range, no empty node
    assert _tuples(doc) == SNIPPET_MENTIONS
    assert [i for i, s in enumerate(doc.sent_starts) if s] == [0, 11, 21]
    # document-level heads: "friend" -> "see", the roots -1
    assert doc.heads[2] == 8 and doc.heads[8] == -1 and doc.heads[13] == 15 and doc.deprels[18] == "cop"
    first = doc.mentions[0]
    assert first.get("salience") == "sssss" and first.get("centering") == "cf1" and first.get("minspan") == "3"
    assert first.line == 5  # the line it opens on
    assert sorted(m.entity for m in doc.singletons()) == ["2", "3", "5", "6"]


def test_the_field_order_comes_from_the_header(tmp_path):
    text = SNIPPET.replace(HEADER, "# global.Entity = GRP-infstat-etype-link")
    text = text.replace("(3-object-acc:com-nnnnn-cf3-1-sgl)", "(3-acc:com-object-sgl)")
    doc = read_gum_entities(_write(tmp_path, text))["GUM_snippet_doc"]
    (it,) = [m for m in doc.mentions if m.entity == "3"]
    assert (it.etype, it.infstat, it.link) == ("object", "acc:com", "sgl")


def test_span_groups_on_a_doc_survive_a_docbin(tmp_path):
    from spacy.tokens import DocBin
    from spacy.vocab import Vocab

    gum = read_gum_entities(_write(tmp_path, SNIPPET))["GUM_snippet_doc"]
    doc = add_gum_mentions(_blank_doc(SNIPPET_WORDS), gum)
    docbin = DocBin(store_user_data=True, docs=[doc])
    (back,) = DocBin(store_user_data=True).from_bytes(docbin.to_bytes()).get_docs(Vocab())
    mentions, infstat = back.spans[MENTIONS_KEY], back.spans[INFSTAT_KEY]
    assert [(s.start, s.end, s.id_, s.label_, i.label_, s.kb_id_) for s, i in zip(mentions, infstat)] == [
        (s, e, ent, etype, inf, ident) for s, e, ent, etype, inf, _, ident in SNIPPET_MENTIONS
    ]
    assert [(s.start, s.end) for s in infstat] == [(s.start, s.end) for s in mentions]
    assert mentions[1].text == "Kim" and mentions[5].text == "The old house 's door"


@pytest.mark.parametrize(
    "old,new,line,reason",
    [
        # an unbalanced closing bracket: "7)" closes nothing
        ("Entity=5)", "Entity=5)7)", 21, "closing bracket '7)' with no open mention of entity 7"),
        # an opening never closed: named at the line it opens on
        ("Entity=1)", "_", 5, "a mention of entity 1 opened here is never closed"),
        ("Entity=4)", "Entity=4)(9-object", 23, "without etype or infstat"),
        ("Entity=(4-object-giv:act-nnnnn-cf1-1-ana)", "Entity=(4-object-giv:act))", 26, "bad Entity value"),
        ("Entity=5)", "Entity=5", 21, "bad Entity value"),
        (
            "7-8\tdidn't\t_\t_\t_\t_\t_\t_\t_\t_",
            "7-8\tdidn't\t_\t_\t_\t_\t_\t_\t_\tEntity=(7-abstract-new)",
            11,
            "an Entity annotation on a multiword-token range",
        ),
        (HEADER, "# global.Entity = GRP-etype", 2, "lacks infstat"),
    ],
)
def test_bad_input_names_file_line_and_reason(tmp_path, old, new, line, reason):
    assert SNIPPET.count(old) == 1
    path = _write(tmp_path, SNIPPET.replace(old, new))
    with pytest.raises(DataFormatError) as err:
        read_gum_entities(path)
    assert err.value.path == str(path) and err.value.line == line, str(err.value)
    assert reason in err.value.reason
    if line != 2:  # the header's error is not tied to a document
        assert "document 'GUM_snippet_doc'" in err.value.reason
    assert str(err.value).startswith(f"{path}:{line}: ")


def test_entity_before_the_header_and_token_before_newdoc(tmp_path):
    with pytest.raises(DataFormatError, match=r":5: .*before any '# global.Entity"):
        read_gum_entities(_write(tmp_path, SNIPPET.replace(HEADER + "\n", "# no header\n")))
    with pytest.raises(DataFormatError, match=r":1: a token line before any '# newdoc id"):
        read_gum_entities(_write(tmp_path, "\n".join(SNIPPET_LINES[4:]) + "\n"))
    with pytest.raises(DataFormatError, match="the file is empty"):
        read_gum_entities(_write(tmp_path, "\n"))


def test_the_aligner_refuses_other_tokens(tmp_path):
    path = _write(tmp_path, SNIPPET)
    gum = read_gum_entities(path)
    words = list(SNIPPET_WORDS)
    words[13] = "home"
    with pytest.raises(DataFormatError) as err:
        add_gum_mentions(_blank_doc(words), gum["GUM_snippet_doc"])
    assert err.value.path == str(path) and err.value.line == 21
    assert "'GUM_snippet_doc': token 13 is 'house' here but 'home' in the Doc" in err.value.reason
    with pytest.raises(DataFormatError, match=r":34: document 'GUM_snippet_doc' has 25 tokens, the Doc 23"):
        add_gum_mentions(_blank_doc(SNIPPET_WORDS[:23]), gum["GUM_snippet_doc"])
    with pytest.raises(DataFormatError, match="is not the Doc's document 'GUM_other'"):
        add_gum_mentions(_blank_doc(SNIPPET_WORDS, "GUM_other"), gum["GUM_snippet_doc"])
    # attach: by doc_id; a Doc with no GUM document is an error, or skipped on request
    other = _blank_doc(["x"], "GUM_other")
    with pytest.raises(DataFormatError, match="Doc 1 \\('GUM_other'\\) has no GUM document"):
        attach_gum_entities([_blank_doc(SNIPPET_WORDS), other], tmp_path)
    done = attach_gum_entities([_blank_doc(SNIPPET_WORDS), other], gum, missing="skip")
    assert len(done[0].spans[MENTIONS_KEY]) == len(SNIPPET_MENTIONS) and MENTIONS_KEY not in done[1].spans


def test_attach_to_a_docbin(tmp_path):
    from spacy.tokens import DocBin

    from spacy_memcoref.corpora.docbin import read_docbin

    _write(tmp_path, SNIPPET)
    source = tmp_path / "in.spacy"
    DocBin(store_user_data=True, docs=[_blank_doc(SNIPPET_WORDS)]).to_disk(source)
    assert attach_gum_entities_docbin(source, tmp_path / "out.spacy", tmp_path) == 1
    (doc,) = read_docbin(tmp_path / "out.spacy")
    assert len(doc.spans[MENTIONS_KEY]) == len(SNIPPET_MENTIONS) and doc.spans[INFSTAT_KEY][0].label_ == "new"
    with pytest.raises(DataFormatError):
        attach_gum_entities_docbin(source, source, tmp_path)


# --------------------------------------------------------------------------- #
# The shared data: GUM V11.1.0 dep/ against OntoGUM train + dev
# --------------------------------------------------------------------------- #

N_DOCS = 148
N_TOKENS = 148_237
N_GUM_MENTIONS = 41_922
N_GUM_SINGLETONS = 15_836  # mentions whose entity id occurs once in the document
N_ONTOGUM_MENTIONS = 19_214
N_SAME_SPAN = 18_466  # OntoGUM mentions that are GUM mentions, the same span
# The other 748, by OntoGUM's conversion rules (Zhu et al. 2021: OntoNotes
# spans), each checked on the dependency tree of the conllu (a span's heads:
# its tokens whose HEAD lies outside it, punctuation aside):
N_EXPANDED = 338  # a wider span with the same heads as a GUM mention inside it
#   (an apposition merged into its anchor "Kim , the lawyer", a relative or
#   participial clause "Harrow , where he ...", a "( SUT )" abbreviation)
N_REDUCED_TO_HEAD = 273  # one token, a head of a GUM mention around it (an event
#   or clause mention marked by its verb only, as OntoNotes marks verbs)
N_REDUCED_TO_COP_AUX = 113  # one token, the copula or auxiliary of such a head
# The 24 left, listed with their reason (start, end EXCLUSIVE):
KNOWN_DIFFERENCES: Dict[str, List[Tuple[str, int, int]]] = {
    # a fronted participial or adjectival clause (deprel acl: "Born in England ,",
    # "Opened in 2005 ,") put in the subject's cluster; GUM has no mention there
    "fronted clause": [
        ("GUM_bio_chao", 2, 13),
        ("GUM_bio_emperor", 62, 66),
        ("GUM_bio_holt", 172, 190),
        ("GUM_bio_moreau", 290, 296),
        ("GUM_textbook_alamo", 94, 113),
        ("GUM_voyage_chatham", 82, 88),
        ("GUM_voyage_chatham", 945, 949),
        ("GUM_voyage_chatham", 960, 972),
    ],
    # one token, the verb or copula of a clause nested inside a GUM mention (a
    # relative or complement clause), not of the mention's own head
    "verb of a nested clause": [
        ("GUM_academic_huh", 654, 655),
        ("GUM_bio_theodorus", 497, 498),
        ("GUM_conversation_scientist", 862, 863),
        ("GUM_conversation_zero", 675, 676),
        ("GUM_court_carpet", 447, 448),
        ("GUM_interview_gaming", 333, 334),
        ("GUM_interview_stardust", 823, 824),
        ("GUM_vlog_hiking", 102, 103),
        ("GUM_voyage_phoenix", 369, 370),
        ("GUM_voyage_tulsa", 1161, 1162),
    ],
    # a wider span whose heads are no GUM mention's: coordinated or listed
    # phrases joined into one mention, a clause after a footnote marker
    "wider span, other heads": [
        ("GUM_bio_byron", 475, 496),
        ("GUM_bio_higuchi", 634, 670),
        ("GUM_court_equality", 757, 779),
        ("GUM_interview_brotherhood", 113, 122),
        ("GUM_interview_onion", 103, 129),
        ("GUM_voyage_sydfynske", 2, 43),
    ],
}

_RAW_ENTITY_RE = re.compile(r"(?:^|\|)Entity=([^|]*)")
_RAW_OPENING_RE = re.compile(r"\((\d+)-([a-z]+)-([a-z:]+)-")


@pytest.fixture(scope="module")
def gum_dir(shared_data) -> Path:
    path = shared_data / "gum_dep"
    if not path.exists():
        pytest.skip(f"GUM's dep/ files not found at {path}")
    return path


@pytest.fixture(scope="module")
def gum_docs(gum_dir) -> Dict[str, GumDoc]:
    return read_gum_entities(gum_dir)


@pytest.fixture(scope="module")
def ontogum_docs(shared_data, gum_docs):
    from spacy.vocab import Vocab

    from spacy_memcoref.corpora.conll import read_conll_docs

    vocab = Vocab()
    docs = []
    for split in ("train", "dev"):
        docs.extend(read_conll_docs(shared_data / "ontogum" / split, vocab))
    return attach_gum_entities(docs, gum_docs)  # refuses any document whose tokens differ


def test_all_documents_align_token_for_token(gum_docs, ontogum_docs):
    assert len(gum_docs) == len(ontogum_docs) == N_DOCS
    assert {doc.user_data["doc_id"] for doc in ontogum_docs} == set(gum_docs)
    for doc in ontogum_docs:
        assert [t.text for t in doc] == gum_docs[doc.user_data["doc_id"]].words
    assert sum(len(doc) for doc in ontogum_docs) == N_TOKENS
    assert sum(len(doc.spans[MENTIONS_KEY]) for doc in ontogum_docs) == N_GUM_MENTIONS


def test_counts_agree_with_the_raw_entity_text(gum_dir, gum_docs):
    """Mentions, singletons, types and information statuses per document,
    from the reader and straight from the files' Entity= text."""
    total_singletons = 0
    for path in sorted(gum_dir.glob("*.conllu")):
        openings = []
        doc_id = None
        for line in path.read_text(encoding="utf8").splitlines():
            if line.startswith("# newdoc id = "):
                doc_id = line.split("=", 1)[1].strip()
            elif line and not line.startswith("#"):
                for value in _RAW_ENTITY_RE.findall(line.split("\t")[9]):
                    openings.extend(_RAW_OPENING_RE.findall(value))
                    assert value.count("(") == len(_RAW_OPENING_RE.findall(value))
        doc = gum_docs[doc_id]
        ids = collections.Counter(i for i, _, _ in openings)
        assert len(doc.mentions) == len(openings), doc_id
        assert collections.Counter(m.entity for m in doc.mentions) == ids, doc_id
        assert len(doc.singletons()) == sum(1 for n in ids.values() if n == 1), doc_id
        assert collections.Counter(m.etype for m in doc.mentions) == collections.Counter(t for _, t, _ in openings)
        assert collections.Counter(m.infstat for m in doc.mentions) == collections.Counter(s for _, _, s in openings)
        total_singletons += len(doc.singletons())
    assert total_singletons == N_GUM_SINGLETONS


def _heads(gum: GumDoc, start: int, end: int) -> List[int]:
    return [t for t in range(start, end) if not start <= gum.heads[t] < end and gum.deprels[t] != "punct"]


def test_every_ontogum_mention_is_a_gum_mention_or_explained(gum_docs, ontogum_docs):
    from spacy_memcoref.doc_helpers.clusters import numbered_clusters

    counts = collections.Counter()
    unexplained = []
    for doc in ontogum_docs:
        gum = gum_docs[doc.user_data["doc_id"]]
        spans = {(m.start, m.end) for m in gum.mentions}
        heads = {m: _heads(gum, m.start, m.end) for m in gum.mentions}
        for _, cluster in numbered_clusters(doc):
            for span in cluster:
                start, end = span.start, span.end
                counts["all"] += 1
                if (start, end) in spans:
                    counts["same span"] += 1
                    continue
                around = [m for m in gum.mentions if m.start < end and m.end > start]
                own = _heads(gum, start, end)
                if any(heads[m] == own and start <= m.start and m.end <= end for m in around):
                    counts["expanded"] += 1
                elif end - start == 1 and any(m.start <= start and end <= m.end and start in heads[m] for m in around):
                    counts["reduced to head"] += 1
                elif end - start == 1 and any(
                    m.start <= start < m.end
                    and gum.heads[start] in heads[m]
                    and gum.deprels[start].split(":")[0] in ("cop", "aux")
                    for m in around
                ):
                    counts["reduced to cop/aux"] += 1
                else:
                    unexplained.append((gum.doc_id, start, end))
    known = sorted(x for group in KNOWN_DIFFERENCES.values() for x in group)
    assert sorted(unexplained) == known
    assert counts == {
        "all": N_ONTOGUM_MENTIONS,
        "same span": N_SAME_SPAN,
        "expanded": N_EXPANDED,
        "reduced to head": N_REDUCED_TO_HEAD,
        "reduced to cop/aux": N_REDUCED_TO_COP_AUX,
    }
    assert N_SAME_SPAN + N_EXPANDED + N_REDUCED_TO_HEAD + N_REDUCED_TO_COP_AUX + len(known) == N_ONTOGUM_MENTIONS


# ----- the converters' --gum-entities ------------------------------------------------


def test_convert_with_gum_entities_puts_the_layer_on_every_doc(shared_data, gum_docs, tmp_path):
    import spacy
    from spacy.tokens import DocBin
    from typer.testing import CliRunner

    from spacy_memcoref.cli import app

    out = tmp_path / "train.spacy"
    args = ["convert", "conll", str(shared_data / "ontogum" / "dev"), str(out)]
    result = CliRunner().invoke(app, [*args, "--gum-entities", str(shared_data / "gum_dep")])
    assert result.exit_code == 0, result.output
    assert "added GUM's entity layer" in result.output
    docs = list(DocBin().from_disk(out).get_docs(spacy.blank("en").vocab))
    assert docs and not list(tmp_path.glob("*.tmp"))
    for doc in docs:
        gum = gum_docs[doc.user_data["doc_id"]]
        assert [(s.start, s.end, s.label_) for s in doc.spans[MENTIONS_KEY]] == [
            (m.start, m.end, m.etype) for m in gum.mentions
        ]
        assert [s.label_ for s in doc.spans[INFSTAT_KEY]] == [m.infstat for m in gum.mentions]


def test_convert_with_a_wrong_gum_folder_fails_and_leaves_no_docbin(shared_data, tmp_path):
    from typer.testing import CliRunner

    from spacy_memcoref.cli import app

    out = tmp_path / "dev.spacy"
    args = ["convert", "conll", str(shared_data / "ontogum" / "dev"), str(out)]
    result = CliRunner().invoke(app, [*args, "--gum-entities", str(tmp_path / "nowhere")])
    assert result.exit_code == 1 and "not a folder of GUM's dep/*.conllu files" in result.output
    assert not out.exists()
    # a folder without the documents: named, and no half-done DocBin
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "GUM_other_doc.conllu").write_text(
        "# newdoc id = GUM_other_doc\n# global.Entity = GRP-etype-infstat-salience-centering-minspan-link-identity\n"
        "1\tHi\thi\tINTJ\tUH\t_\t0\troot\t_\t_\n\n",
        encoding="utf8",
    )
    result = CliRunner().invoke(app, [*args, "--gum-entities", str(tmp_path / "empty")])
    assert result.exit_code == 1 and "has no GUM document" in result.output, result.output
    assert not out.exists() and not list(tmp_path.glob("*.tmp"))
