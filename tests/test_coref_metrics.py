"""Coreference metrics: hand-worked examples, the CoNLL-2012 reference scorer
(`scorer.pl`) on seeded random perturbations, the spaCy scorer and the CLI."""

import json
import random
import re
import subprocess
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

import pytest

from spacy_memcoref.errors import DataFormatError
from spacy_memcoref.scoring.coref_metrics import CorefEvaluator, document_counts, prf

Mention = Tuple[int, int]
Clusters = List[List[Mention]]

ALL_KEYS = {f"coref_{metric}_{x}" for metric in ("muc", "b3", "ceafe", "lea") for x in "prf"} | {"coref_conll_f"}
# our name -> scorer.pl metric name
PERL_METRICS = {"muc": "muc", "b3": "bcub", "ceafe": "ceafe"}


# --------------------------------------------------------------------------- #
# Hand-worked examples
# --------------------------------------------------------------------------- #


def _clusters(spec: str) -> List[List[str]]:
    """'{a} {bc} {def}' -> [['a'], ['b', 'c'], ['d', 'e', 'f']]; a mention is one character."""
    return [list(group) for group in re.findall(r"\{([^}]*)\}", spec)]


# (name, key, response, {metric: (recall, precision)}).
# The TC-* cases are those of the reference scorer's test suite as documented
# in coval's tests/TestCases.README (Pradhan et al. 2014; Moosavi & Strube
# 2016); capital letters are distinct mentions except in A7-A9, where "b" is
# repeated (a duplicate the scorer removes).
HAND_CASES = [
    ("A1", "{a} {bc} {def}", "{a} {bc} {def}", {"muc": (1, 1), "b3": (1, 1), "ceafe": (1, 1), "lea": (1, 1)}),
    (
        "A2",
        "{a} {bc} {def}",
        "{a} {de}",
        {"muc": (1 / 3, 1), "b3": (7 / 18, 1), "ceafe": (0.6, 0.9), "lea": ((1 + 3 * (1 / 3)) / 6, 1)},
    ),
    (
        "A3",
        "{a} {bc} {def}",
        "{a} {bcx} {defy} {z}",
        {
            "muc": (1, 3 / 5),
            "b3": (1, (4 + 7 / 12) / 9),
            "ceafe": ((1 + 4 / 5 + 6 / 7) / 3, (1 + 4 / 5 + 6 / 7) / 4),
            "lea": (1, (1 + 3 * (1 / 3) + 4 * (3 / 6)) / 9),
        },
    ),
    (
        "A4",
        "{a} {bc} {def}",
        "{a} {bcx} {dy} {z}",
        {
            "muc": (1 / 3, 1 / 3),
            "b3": ((3 + 1 / 3) / 6, (1 + 4 / 3 + 1 / 2) / 7),
            "ceafe": (2.2 / 3, 2.2 / 4),
            "lea": ((1 + 2 + 0) / 6, (1 + 3 * (1 / 3)) / 7),
        },
    ),
    (
        "A5",
        "{a} {bc} {def}",
        "{a} {bcxB} {dy} {z}",
        {
            "muc": (1 / 3, 1 / 4),
            "b3": ((3 + 1 / 3) / 6, 2.5 / 8),
            "ceafe": ((1 + 4 / 6 + 2 / 5) / 3, (1 + 4 / 6 + 2 / 5) / 4),
            "lea": (3 / 6, (1 + 4 * (1 / 6)) / 8),
        },
    ),
    (
        "A6",
        "{a} {bc} {def}",
        "{a} {bcx} {dy} {Bz}",
        {
            "muc": (1 / 3, 1 / 4),
            "b3": ((10 / 3) / 6, (1 + 4 / 3 + 1 / 2) / 8),
            "ceafe": (2.2 / 3, 2.2 / 4),
            "lea": (3 / 6, (1 + 3 / 3) / 8),
        },
    ),
    (
        "A7",
        "{a} {bc} {def}",
        "{a} {bcxb} {dy} {z}",
        {
            "muc": (1 / 3, 1 / 3),
            "b3": ((10 / 3) / 6, (1 + 4 / 3 + 1 / 2) / 7),
            "ceafe": (2.2 / 3, 2.2 / 4),
            "lea": (3 / 6, (1 + 3 / 3) / 7),
        },
    ),
    (
        "A8",
        "{a} {bc} {def}",
        "{a} {bcx} {dy} {bz}",
        {
            "muc": (1 / 3, 1 / 3),
            "b3": ((10 / 3) / 6, (1 + 4 / 3 + 1 / 2) / 7),
            "ceafe": (2.2 / 3, 2.2 / 4),
            "lea": (3 / 6, (1 + 3 * (1 / 3)) / 7),
        },
    ),
    (
        "A9",
        "{a} {bc} {def}",
        "{a} {bcx} {dy} {bbbbbbbbbbz}",
        {
            "muc": (1 / 3, 1 / 3),
            "b3": ((10 / 3) / 6, (1 + 4 / 3 + 1 / 2) / 7),
            "ceafe": (2.2 / 3, 2.2 / 4),
            "lea": (3 / 6, (1 + 3 / 3) / 7),
        },
    ),
    (
        "A10",
        "{a} {bc} {def}",
        "{a} {b} {c} {d} {e} {f}",
        {
            "muc": (0, 0),
            "b3": (3 / 6, 1),
            "ceafe": ((1 + 2 / 3 + 2 / 4) / 3, (1 + 2 / 3 + 2 / 4) / 6),
            "lea": (1 / 6, 1 / 6),
        },
    ),
    (
        "A11",
        "{a} {bc} {def}",
        "{abcdef}",
        {
            "muc": (1, 3 / 5),
            "b3": (1, (1 / 6 + 2 * 2 / 6 + 3 * 3 / 6) / 6),
            "ceafe": ((6 / 9) / 3, 6 / 9),
            "lea": ((0 + 2 + 3) / 6, 4 / 15),
        },
    ),
    (
        "A12",
        "{a} {bc} {def}",
        "{a} {x} {y} {c} {d} {e} {z}",
        {"muc": (0, 0), "b3": ((1 + 1 / 2 + 2 / 3) / 6, 4 / 7), "lea": (1 / 6, 1 / 7)},
    ),
    (
        "A13",
        "{a} {bc} {def}",
        "{axycdez}",
        {
            "muc": (1 / 3, 1 / 6),
            "b3": ((1 + 1 / 2 + 2 * 2 / 3) / 6, (1 / 7 + 1 / 7 + 2 * 2 / 7) / 7),
            "lea": (1 / 6, 1 / 21),
        },
    ),
    ("B1", "{ab} {cde}", "{bcx} {de}", {"lea": ((2 * 0 + 3 / 3) / 5, (3 * 0 + 2) / 5)}),
    ("C1", "{ab} {cde} {fg}", "{bcx} {de} {fg}", {"lea": ((2 * 0 + 3 / 3 + 2) / 7, (3 * 0 + 2 + 2) / 7)}),
    # B-cubed paper (Bagga & Baldwin 1998)
    (
        "D1",
        "{12345} {67} {89ABC}",
        "{12345} {6789ABC}",
        {"muc": (1, 9 / 10), "b3": (1, 16 / 21), "lea": (1, (5 + 7 * (11 / 21)) / 12)},
    ),
    (
        "E1",
        "{12345} {67} {89ABC}",
        "{1234589ABC} {67}",
        {"muc": (1, 9 / 10), "b3": (1, 7 / 12), "lea": (1, (10 * (20 / 45) + 2) / 12)},
    ),
    # MUC paper (Vilain et al. 1995)
    ("F1", "{ABCD}", "{AB} {CD}", {"muc": (2 / 3, 1), "lea": (4 * (2 / 6) / 4, 1)}),
    ("G1", "{AB} {CD}", "{ABCD}", {"muc": (1, 2 / 3), "lea": (1, (4 * 2 / 6) / 4)}),
    ("H1", "{ABCD}", "{ABCD}", {"muc": (1, 1), "lea": (1, 1)}),
    ("J1", "{ABC}", "{AC}", {"muc": (1 / 2, 1), "lea": ((3 * 1 / 3) / 3, 1)}),
    ("K1", "{BCDEGHJ}", "{ABC} {DEF} {GHI}", {"muc": (3 / 6, 3 / 6), "lea": ((7 * 3 / 21) / 7, 3 / 9)}),
    # LEA paper (Moosavi & Strube 2016), coval's TC-L: R = (3*1/3 + 4*1/6)/7, P = (2*1 + 2*0 + 3*1/3)/7
    ("L1", "{ABC} {DEFG}", "{AB} {CD} {FGH}", {"muc": (2 / 5, 2 / 4), "lea": ((3 * 1 / 3 + 4 * 1 / 6) / 7, 3 / 7)}),
    # Pradhan et al. 2014, "Scoring coreference partitions of predicted mentions"
    (
        "pradhan2014",
        "{abc} {defg}",
        "{ab} {cd} {fghi}",
        {
            "muc": (2 / 5, 2 / 5),
            "b3": ((4 / 3 + 1 / 3 + 1 / 4 + 4 / 4) / 7, (4 / 2 + 1 / 2 + 1 / 2 + 4 / 4) / 8),
            "ceafe": ((4 / 5 + 4 / 8) / 2, (4 / 5 + 4 / 8) / 3),
            "lea": ((3 * 1 / 3 + 4 * 1 / 6) / 7, (2 + 0 + 4 * 1 / 6) / 8),
        },
    ),
    ("M1", "{abcdef}", "{abcdef}", {"muc": (1, 1), "b3": (1, 1), "ceafe": (1, 1), "lea": (1, 1)}),
    ("M2", "{abcdef}", "{a} {b} {c} {d} {e} {f}", {"muc": (0, 0), "lea": (0, 0)}),
    ("M3", "{abcdef}", "{ab} {cde} {f}", {"lea": (6 * (4 / 15) / 6, (2 + 3 + 0) / 6)}),
    ("M4", "{abcdef}", "{abcxyz}", {"lea": (6 * (3 / 15) / 6, 6 * (3 / 15) / 6)}),
    ("M5", "{abcdef}", "{a} {b} {c} {x} {y} {z}", {"muc": (0, 0), "lea": (0, 0)}),
    ("M6", "{abcdef}", "{ab} {cxy} {z}", {"lea": (6 * (1 / 15) / 6, (2 + 3 * 0 + 1 * 0) / 6)}),
    (
        "N1",
        "{a} {b} {c} {d} {e} {f}",
        "{a} {b} {c} {d} {e} {f}",
        {"muc": (0, 0), "b3": (1, 1), "ceafe": (1, 1), "lea": (1, 1)},
    ),
    ("N2", "{a} {b} {c} {d} {e} {f}", "{abcdef}", {"muc": (0, 0), "lea": (0, 0)}),
    ("N3", "{a} {b} {c} {d} {e} {f}", "{ab} {cde} {f}", {"lea": (1 / 6, 1 / 6)}),
    ("N4", "{a} {b} {c} {d} {e} {f}", "{a} {b} {c} {x} {y} {z}", {"muc": (0, 0), "lea": (3 / 6, 3 / 6)}),
    ("N5", "{a} {b} {c} {d} {e} {f}", "{abcxyz}", {"lea": (0, 0)}),
    ("N6", "{a} {b} {c} {d} {e} {f}", "{ab} {cxy} {z}", {"lea": (0, 0)}),
    ("empty-response", "{ab} {c}", "", {"muc": (0, 0), "b3": (0, 0), "ceafe": (0, 0), "lea": (0, 0)}),
    ("empty-key", "", "{ab} {c}", {"muc": (0, 0), "b3": (0, 0), "ceafe": (0, 0), "lea": (0, 0)}),
    ("both-empty", "", "", {"muc": (0, 0), "b3": (0, 0), "ceafe": (0, 0), "lea": (0, 0)}),
]


@pytest.mark.parametrize("name,key,response,expected", HAND_CASES, ids=[c[0] for c in HAND_CASES])
def test_hand_worked(name, key, response, expected):
    ev = CorefEvaluator()
    ev.add_document(_clusters(key), _clusters(response))
    scores = ev.scores()
    for metric, (recall, precision) in expected.items():
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        assert scores[f"coref_{metric}_r"] == pytest.approx(recall, abs=1e-12), metric
        assert scores[f"coref_{metric}_p"] == pytest.approx(precision, abs=1e-12), metric
        assert scores[f"coref_{metric}_f"] == pytest.approx(f1, abs=1e-12), metric
    assert scores["coref_conll_f"] == pytest.approx(
        (scores["coref_muc_f"] + scores["coref_b3_f"] + scores["coref_ceafe_f"]) / 3
    )


def test_lea_paper_example():
    # Moosavi & Strube 2016 (coval TC-L): LEA recall 0.24, precision 0.43, F1 0.31.
    ev = CorefEvaluator()
    ev.add_document(_clusters("{abc} {defg}"), _clusters("{ab} {cd} {fgh}"))
    scores = ev.scores()
    assert round(scores["coref_lea_r"], 2) == 0.24
    assert round(scores["coref_lea_p"], 2) == 0.43
    assert round(scores["coref_lea_f"], 2) == 0.31


def test_micro_average_sums_counts():
    """Scores over two documents come from summed counts, not averaged scores."""
    docs = [(_clusters("{abc} {defg}"), _clusters("{ab} {cd} {fghi}")), (_clusters("{ab}"), _clusters("{ab}"))]
    ev = CorefEvaluator()
    for key, response in docs:
        ev.add_document(key, response)
    for metric in ("muc", "b3", "ceafe", "lea"):
        per_doc = [document_counts(k, r).counts[metric] for k, r in docs]
        summed = tuple(sum(c[i] for c in per_doc) for i in range(4))
        p, r, f = prf(summed)
        assert ev.scores()[f"coref_{metric}_p"] == pytest.approx(p)
        assert ev.scores()[f"coref_{metric}_r"] == pytest.approx(r)
    # MUC: (2 + 1) / (5 + 1) recall, (2 + 1) / (5 + 1) precision
    assert ev.scores()["coref_muc_r"] == pytest.approx(3 / 6)


def test_duplicates_and_shared_mentions():
    # A key mention repeated in the response: the later occurrence is dropped.
    a = document_counts([["a", "b"]], [["a", "b"], ["a", "c"]])
    assert a.repeated_response_mentions == 1
    assert a.counts["mentions"] == (2, 2, 2, 3)
    assert a.counts["muc"] == (1, 1, 1, 1)
    # A twinless mention repeated in the response is kept (as scorer.pl does).
    b = document_counts([["a", "b"]], [["a", "b"], ["x", "x"]])
    assert b.repeated_response_mentions == 0
    assert b.counts["b3"][3] == 4 and b.counts["muc"][3] == 2
    # Empty clusters are ignored.
    c = document_counts([["a", "b"], []], [[], ["a", "b"]])
    assert c.counts["ceafe"] == (1.0, 1, 1.0, 1)


# --------------------------------------------------------------------------- #
# CoNLL files (a small writer for tests) and the reference scorer
# --------------------------------------------------------------------------- #


def _doc_name(name: str) -> str:
    return f"({name}); part 000"


def write_conll_file(path: Path, docs: Dict[str, Tuple[int, Clusters]]) -> Dict[str, Clusters]:
    """Write documents as CoNLL-2012 (12 tab-separated columns, coreference
    last). Cluster i is written with id i + 1; at each token the cell lists
    one-token mentions, then openings, then closings.

    RETURNS (Dict[str, Clusters]): for each document, its clusters in the order
        the reference scorer reads them (entities by first appearance).
    """
    lines = []
    order = {}
    for name, (n_tokens, clusters) in docs.items():
        singles = [[] for _ in range(n_tokens)]
        opens = [[] for _ in range(n_tokens)]
        closes = [[] for _ in range(n_tokens)]
        for cid, cluster in enumerate(clusters):
            for start, end in cluster:
                if start == end:
                    singles[start].append(cid)
                else:
                    opens[start].append(cid)
                    closes[end].append(cid)
        first_seen = []
        lines.append(f"#begin document {_doc_name(name)}")
        for i in range(n_tokens):
            if i and i % 17 == 0:
                lines.append("")  # a sentence break now and then
            for cid in singles[i] + opens[i]:
                if cid not in first_seen:
                    first_seen.append(cid)
            items = (
                [f"({c + 1})" for c in singles[i]] + [f"({c + 1}" for c in opens[i]] + [f"{c + 1})" for c in closes[i]]
            )
            cell = "|".join(items) or "-"
            lines.append("\t".join([name, "0", str(i), f"w{i}", "NN", "*", "-", "-", "-", "-", "*", cell]))
        lines.append("")
        lines.append("#end document")
        order[name] = [clusters[c] for c in first_seen]
    path.write_text("\n".join(lines) + "\n", encoding="utf8")
    return order


_RPF_RE = re.compile(r"Recall: \((\S+) / (\S+)\) .*Precision: \((\S+) / (\S+)\)")


def run_perl(scorer: Path, metric: str, key: Path, response: Path, names: Sequence[str]):
    """Run scorer.pl on all documents (verbose) and parse its counts.

    RETURNS (per_doc, mentions_total, total, repeats): per_doc maps each key
        document to its (recall num, recall den, precision num, precision den);
        the totals are the "Identification of Mentions" and "Coreference"
        lines; repeats counts the "Repeated mention in the response" lines.
    """
    out = subprocess.run(
        ["perl", str(scorer), metric, str(key), str(response)],
        capture_output=True,
        text=True,
        check=True,
        cwd=str(scorer.parent),
        timeout=120,
    ).stdout
    wanted = {_doc_name(n): n for n in names}
    per_doc = {}
    current = None
    mentions_total = total = None
    for line in out.splitlines():
        if line.endswith(":") and line[:-1] in wanted:
            current = wanted[line[:-1]]
        elif line.startswith("Recall: ("):
            assert current is not None and current not in per_doc, line
            per_doc[current] = tuple(float(x) for x in _RPF_RE.search(line).groups())
            current = None
        elif line.startswith("Identification of Mentions: "):
            mentions_total = tuple(float(x) for x in _RPF_RE.search(line).groups())
        elif line.startswith("Coreference: "):
            total = tuple(float(x) for x in _RPF_RE.search(line).groups())
    assert total is not None, out[-2000:]
    repeats = out.count("Repeated mention in the response")
    return per_doc, mentions_total, total, repeats


def _crosses(a: Mention, b: Mention) -> bool:
    """Two multi-token mentions that overlap without nesting: CoNLL brackets of
    one cluster cannot express them."""
    if a[0] == a[1] or b[0] == b[1]:
        return False
    (s1, e1), (s2, e2) = sorted([a, b])
    return s2 <= e1 and e2 > e1


def _sanitize(clusters: Clusters, n_tokens: int, dedupe: bool = True) -> Clusters:
    """Keep mentions inside the document, drop the second of two crossing
    mentions of one cluster and (with dedupe) any repeated mention."""
    seen = set()
    out = []
    for cluster in clusters:
        kept = []
        for s, e in cluster:
            s, e = max(0, s), min(n_tokens - 1, e)
            if s > e or (dedupe and (s, e) in seen) or any(_crosses((s, e), m) for m in kept):
                continue
            seen.add((s, e))
            kept.append((s, e))
        if kept:
            out.append(kept)
    return out


def _random_mention(rng: random.Random, n_tokens: int) -> Mention:
    start = rng.randrange(n_tokens)
    return (start, min(n_tokens - 1, start + rng.choice([0, 0, 0, 1, 1, 2, 3, 5])))


def random_key(rng: random.Random, n_tokens: int, n_clusters: int, singletons: bool) -> Clusters:
    clusters = []
    for _ in range(n_clusters):
        size = 1 if singletons and rng.random() < 0.35 else rng.randint(2, 6)
        clusters.append([_random_mention(rng, n_tokens) for _ in range(size)])
    return _sanitize(clusters, n_tokens)


def add_singletons(rng: random.Random, clusters: Clusters, n_tokens: int, n: int) -> Clusters:
    return _sanitize(clusters + [[_random_mention(rng, n_tokens)] for _ in range(n)], n_tokens)


def perturb(rng: random.Random, key: Clusters, n_tokens: int, how: str) -> Clusters:
    """A response made from a key by one kind of error (or a mix of all)."""
    resp = [list(c) for c in key]
    kinds = ["drop", "shift", "spurious", "split", "merge"] if how == "mix" else [how]
    for kind in kinds:
        if kind == "drop":
            resp = [[m for m in c if rng.random() > 0.25] for c in resp]
        elif kind == "shift":
            resp = [
                [
                    (s + rng.choice([-1, 0, 1]), e + rng.choice([-1, 0, 1])) if rng.random() < 0.3 else (s, e)
                    for s, e in c
                ]
                for c in resp
            ]
        elif kind == "spurious":
            for _ in range(max(1, n_tokens // 25)):
                m = _random_mention(rng, n_tokens)
                r = rng.random()
                if resp and r < 0.5:
                    rng.choice(resp).append(m)
                elif r < 0.75:
                    resp.append([m])
                else:
                    resp.append([m, _random_mention(rng, n_tokens)])
        elif kind == "split":
            new = []
            for c in resp:
                if len(c) > 1 and rng.random() < 0.5:
                    c = c[:]
                    rng.shuffle(c)
                    cut = rng.randint(1, len(c) - 1)
                    new.extend([c[:cut], c[cut:]])
                else:
                    new.append(c)
            resp = new
        elif kind == "merge":
            rng.shuffle(resp)
            new = []
            while resp:
                c = resp.pop()
                if resp and rng.random() < 0.4:
                    c = c + resp.pop()
                new.append(c)
            resp = new
        elif kind == "nosingletons":
            resp = [c for c in resp if len(c) > 1]
    rng.shuffle(resp)
    return _sanitize(resp, n_tokens)


PERTURBATIONS = ["drop", "shift", "spurious", "split", "merge", "mix", "nosingletons"]


def edge_documents() -> Dict[str, Tuple[int, Clusters, Clusters]]:
    """Hand-made documents for the corner cases; None as response: the
    response file lacks the document. At most 10 repeated key mentions in all
    (scorer.pl refuses to score more)."""
    return {
        "edge_perfect": (10, [[(0, 0), (2, 3)], [(5, 5)]], [[(0, 0), (2, 3)], [(5, 5)]]),
        "edge_empty_response": (8, [[(0, 0), (2, 3)], [(5, 5)]], []),
        "edge_missing_response": (8, [[(0, 0), (2, 3)], [(5, 5)]], None),
        "edge_empty_key": (8, [], [[(0, 0), (2, 3)], [(5, 5)]]),
        "edge_both_empty": (5, [], []),
        "edge_only_singletons": (10, [[(0, 0)], [(2, 3)], [(5, 7)]], [[(0, 0)], [(2, 3)], [(4, 7)], [(9, 9)]]),
        "edge_twinless_only": (10, [[(0, 0), (2, 3)]], [[(1, 1), (4, 5)], [(6, 6)]]),
        # a key mention twice in one response cluster, and in two response clusters
        "edge_repeat_same_cluster": (10, [[(0, 0), (2, 3), (5, 5)]], [[(0, 0), (2, 3), (0, 0)], [(5, 5), (7, 8)]]),
        "edge_repeat_two_clusters": (
            12,
            [[(0, 0), (2, 3)], [(5, 5), (7, 8)]],
            [[(5, 5), (9, 9)], [(0, 0), (2, 3), (5, 5)], [(7, 8), (5, 5)]],
        ),
        "edge_repeat_becomes_empty": (10, [[(0, 0), (2, 3)]], [[(0, 0), (2, 3)], [(2, 3)], [(0, 0)]]),
        # a twinless mention repeated (kept by the scorer)
        "edge_twinless_repeat": (10, [[(0, 0), (2, 3)]], [[(0, 0), (6, 6), (6, 6)], [(6, 6), (2, 3)]]),
        # a key mention in two key clusters, and twice in one key cluster
        "edge_key_shared": (
            12,
            [[(0, 0), (2, 3), (5, 5)], [(5, 5), (7, 8)], [(9, 9), (9, 9), (10, 10)]],
            [[(0, 0), (5, 5)], [(2, 3), (7, 8)], [(9, 9), (10, 10)]],
        ),
        # nested mentions of one cluster, same start / same end
        "edge_nested": (
            12,
            [[(0, 5), (0, 2), (3, 5), (4, 4)], [(1, 2), (7, 9)]],
            [[(0, 5), (0, 2)], [(3, 5), (4, 4), (1, 2)], [(7, 9)]],
        ),
    }


def build_perl_suite(tmp_path: Path, shared_data: Path):
    """Key and response files with many documents; returns the paths, the key
    and response clusters per document (in the scorer's reading order)."""
    rng = random.Random(20240501)
    key_docs: Dict[str, Tuple[int, Clusters]] = {}
    resp_docs: Dict[str, Tuple[int, Clusters]] = {}
    from spacy_memcoref.corpora.conll import read_conll_clusters

    dev = shared_data / "ontogum" / "dev"
    names = ["GUM_academic_librarians", "GUM_bio_byron", "GUM_court_loan"]
    for name in names:
        ((n_tokens, gold),) = read_conll_clusters(dev / f"{name}.v4_gold_conll").values()
        for singletons in (False, True):
            key = add_singletons(rng, gold, n_tokens, n_tokens // 20) if singletons else gold
            for how in PERTURBATIONS:
                doc = f"{name}_{how}_{'s' if singletons else 'n'}"
                key_docs[doc] = (n_tokens, key)
                resp_docs[doc] = (n_tokens, perturb(rng, key, n_tokens, how))
    for i in range(40):
        n_tokens = rng.randint(5, 150)
        singletons = i % 2 == 0
        key = random_key(rng, n_tokens, rng.randint(0, max(1, n_tokens // 8)), singletons)
        how = PERTURBATIONS[i % len(PERTURBATIONS)]
        doc = f"synthetic_{i}_{how}"
        key_docs[doc] = (n_tokens, key)
        resp_docs[doc] = (n_tokens, perturb(rng, key, n_tokens, how))
    for doc, (n_tokens, key, response) in edge_documents().items():
        key_docs[doc] = (n_tokens, key)
        if response is not None:
            resp_docs[doc] = (n_tokens, response)
    resp_docs["edge_not_in_key"] = (6, [[(0, 0), (1, 1)]])
    # the response lists documents in another order than the key
    resp_items = list(resp_docs.items())
    rng.shuffle(resp_items)
    key_path, resp_path = tmp_path / "key.conll", tmp_path / "response.conll"
    key_order = write_conll_file(key_path, key_docs)
    resp_order = write_conll_file(resp_path, dict(resp_items))
    return key_path, resp_path, key_order, resp_order


@pytest.fixture(scope="module")
def perl_suite(tmp_path_factory, shared_data, conll_scorer):
    tmp_path = tmp_path_factory.mktemp("perl_suite")
    key_path, resp_path, key_order, resp_order = build_perl_suite(tmp_path, shared_data)
    perl = {}
    for ours, theirs in PERL_METRICS.items():
        perl[ours] = run_perl(conll_scorer, theirs, key_path, resp_path, list(key_order))
    return key_path, resp_path, key_order, resp_order, perl


def _assert_counts_equal(ours, theirs, what):
    for a, b in zip(ours, theirs):
        assert abs(a - b) <= 1e-9 * max(1.0, abs(b)), f"{what}: ours {ours} != scorer.pl {theirs}"


@pytest.mark.shared_data
def test_against_perl_per_document(perl_suite):
    """Every document's counts equal scorer.pl's (MUC, B3, CEAFe, mentions)."""
    _, _, key_order, resp_order, perl = perl_suite
    ev = CorefEvaluator()
    for doc, key in key_order.items():
        counts = ev.add_document(key, resp_order.get(doc, []))
        for metric, (per_doc, _, _, _) in perl.items():
            _assert_counts_equal(counts.counts[metric], per_doc[doc], f"{doc} {metric}")
    assert ev.repeated_response_mentions == 5
    for metric, (_, _, _, repeats) in perl.items():
        assert repeats == 5, metric
    for metric, (_, mentions_total, total, _) in perl.items():
        _assert_counts_equal(ev.counts(metric), total, f"total {metric}")
        _assert_counts_equal(ev.counts("mentions"), mentions_total, "total mentions")


@pytest.mark.shared_data
def test_score_conll_files_against_perl(perl_suite):
    """score_conll_files (reading with corpora.conll) gives scorer.pl's totals."""
    from spacy_memcoref.scoring.conll_files import score_conll_files

    key_path, resp_path, _, _, perl = perl_suite
    scores, rows = score_conll_files(key_path, resp_path)
    assert ALL_KEYS <= set(scores)
    max_diff = 0.0
    for metric, (_, mentions_total, total, _) in perl.items():
        p, r, f = prf(total)
        for x, value in zip("prf", (p, r, f)):
            max_diff = max(max_diff, abs(scores[f"coref_{metric}_{x}"] - value))
        # the table shows scorer.pl's percentages (it truncates to 2 decimals, we round)
        row = next(row for row in rows if row.split()[0] == {"muc": "MUC", "b3": "B3", "ceafe": "CEAFe"}[metric])
        assert [float(x) for x in row.split()[1:]] == pytest.approx([100 * r, 100 * p, 100 * f], abs=0.006)
    p, r, f = prf(mentions_total)
    assert (scores["coref_mentions_p"], scores["coref_mentions_r"]) == pytest.approx((p, r), abs=1e-12)
    assert max_diff < 1e-12
    conll = sum(prf(perl[m][2])[2] for m in PERL_METRICS) / 3
    assert scores["coref_conll_f"] == pytest.approx(conll, abs=1e-12)
    assert any("missing from the response" in row for row in rows)
    assert any("not in the key" in row for row in rows)


def test_score_conll_files_token_mismatch(tmp_path):
    from spacy_memcoref.scoring.conll_files import score_conll_files

    write_conll_file(tmp_path / "key.conll", {"d1": (5, [[(0, 0), (2, 3)]])})
    write_conll_file(tmp_path / "resp.conll", {"d1": (6, [[(0, 0), (2, 3)]])})
    with pytest.raises(DataFormatError) as err:
        score_conll_files(tmp_path / "key.conll", tmp_path / "resp.conll")
    assert "resp.conll" in str(err.value) and "6 tokens" in str(err.value)


def test_score_conll_files_small(tmp_path):
    from spacy_memcoref.scoring.conll_files import score_conll_files

    write_conll_file(tmp_path / "key.conll", {"d1": (8, [[(0, 0), (1, 2), (4, 4)], [(3, 3), (5, 6)]])})
    write_conll_file(tmp_path / "resp.conll", {"d1": (8, [[(0, 0), (1, 2)], [(4, 4), (3, 3), (5, 6)]])})
    scores, rows = score_conll_files(tmp_path / "key.conll", tmp_path / "resp.conll")
    # MUC: key links 2 + 1 = 3, response links 1 + 2 = 3, correct 1 + 1 = 2
    assert scores["coref_muc_r"] == pytest.approx(2 / 3) and scores["coref_muc_p"] == pytest.approx(2 / 3)
    assert rows[0].split() == ["metric", "recall", "precision", "F1"]


# --------------------------------------------------------------------------- #
# spaCy scorer
# --------------------------------------------------------------------------- #


def _set_clusters(doc, clusters: Clusters, prefix: str = "coref_clusters") -> None:
    for i, cluster in enumerate(clusters, 1):
        doc.spans[f"{prefix}_{i}"] = [doc[s : e + 1] for s, e in cluster]


def _examples_and_files(tmp_path: Path, split_predicted: bool, prefix: str = "coref_clusters"):
    """Examples whose Docs hold the clusters of random key/response pairs, and
    the same pairs as CoNLL files."""
    import spacy
    from spacy.tokens import Doc
    from spacy.training import Example

    nlp = spacy.blank("en")
    rng = random.Random(7)
    key_docs, resp_docs, examples = {}, {}, []
    for i in range(12):
        n_tokens = rng.randint(5, 80)
        key = random_key(rng, n_tokens, rng.randint(0, n_tokens // 6 + 1), singletons=i % 2 == 0)
        resp = perturb(rng, key, n_tokens, PERTURBATIONS[i % len(PERTURBATIONS)])
        key_docs[f"d{i}"] = (n_tokens, key)
        resp_docs[f"d{i}"] = (n_tokens, resp)
        words = [f"w{j}-x{j}" if j % 3 == 0 else f"w{j}" for j in range(n_tokens)]
        reference = Doc(nlp.vocab, words=words)
        _set_clusters(reference, key, prefix)
        if split_predicted:
            # "w0-x0" -> "w0", "-", "x0": same text, other token indices
            pieces, first, last = [], [], []
            for j, word in enumerate(words):
                parts = word.replace("-", " - ").split() if "-" in word else [word]
                first.append(len(pieces))
                pieces.extend(parts)
                last.append(len(pieces) - 1)
            spaces = []
            for j, word in enumerate(words):
                n = last[j] - first[j] + 1
                spaces.extend([False] * (n - 1) + [True])
            predicted = Doc(nlp.vocab, words=pieces, spaces=spaces)
            assert predicted.text == reference.text and len(predicted) != len(reference)
            mapped = [[(first[s], last[e]) for s, e in c] for c in resp]
        else:
            predicted = Doc(nlp.vocab, words=words)
            mapped = resp
        _set_clusters(predicted, mapped, prefix)
        examples.append(Example(predicted, reference))
    # a spurious span group that is not a cluster
    examples[0].predicted.spans["coref_clusters_extra"] = [examples[0].predicted[0:1]]
    write_conll_file(tmp_path / "key.conll", key_docs)
    write_conll_file(tmp_path / "resp.conll", resp_docs)
    return examples


@pytest.mark.parametrize("split_predicted", [False, True], ids=["same-tokens", "other-tokens"])
def test_spacy_scorer_matches_conll_files(tmp_path, split_predicted):
    import spacy

    from spacy_memcoref.scoring.conll_files import score_conll_files

    examples = _examples_and_files(tmp_path, split_predicted)
    expected, _ = score_conll_files(tmp_path / "key.conll", tmp_path / "resp.conll")
    scorer = spacy.registry.scorers.get("spacy_memcoref.coref_scorer.v1")()
    scores = scorer(examples)
    assert ALL_KEYS <= set(scores)
    assert 0 < scores["coref_conll_f"] < 1
    for key, value in expected.items():
        assert scores[key] == pytest.approx(value, abs=1e-12), key


def test_spacy_scorer_prefix(tmp_path):
    from spacy_memcoref.scoring.spacy_scorer import make_coref_scorer

    examples = _examples_and_files(tmp_path, split_predicted=True, prefix="mycoref")
    by_default = make_coref_scorer(span_cluster_prefix="mycoref")(examples)
    by_kwarg = make_coref_scorer()(examples, span_cluster_prefix="mycoref", nlp=None)
    assert by_default == by_kwarg and 0 < by_default["coref_conll_f"] < 1
    nothing = make_coref_scorer()(examples)
    assert nothing["coref_conll_f"] == 0.0


def test_spacy_scorer_in_config(tmp_path):
    import spacy
    from thinc.api import Config

    from spacy_memcoref.scoring.spacy_scorer import make_coref_scorer

    cfg = Config().from_str('[scorer]\n@scorers = "spacy_memcoref.coref_scorer.v1"\nspan_cluster_prefix = "x"\n')
    scorer = spacy.util.registry.resolve(cfg)["scorer"]
    # the config's prefix reaches the scorer: it reads the "x_N" span groups
    examples = _examples_and_files(tmp_path, split_predicted=False, prefix="x")
    scores = scorer(examples)
    assert scores == make_coref_scorer(span_cluster_prefix="x")(examples) and 0 < scores["coref_conll_f"] < 1


# --------------------------------------------------------------------------- #
# CLI
# --------------------------------------------------------------------------- #


def test_cli_score_conll(tmp_path):
    from typer.testing import CliRunner

    from spacy_memcoref.cli import app

    write_conll_file(tmp_path / "key.conll", {"d1": (8, [[(0, 0), (1, 2), (4, 4)], [(3, 3), (5, 6)]])})
    write_conll_file(tmp_path / "resp.conll", {"d1": (8, [[(0, 0), (1, 2)], [(4, 4), (3, 3), (5, 6)]])})
    runner = CliRunner()
    result = runner.invoke(app, ["score", "conll", str(tmp_path / "key.conll"), str(tmp_path / "resp.conll")])
    assert result.exit_code == 0, result.output
    scores = json.loads(result.stdout.strip().splitlines()[-1])
    assert ALL_KEYS <= set(scores)
    assert scores["coref_muc_f"] == pytest.approx(2 / 3)

    write_conll_file(tmp_path / "bad.conll", {"d1": (9, [])})
    result = runner.invoke(app, ["score", "conll", str(tmp_path / "key.conll"), str(tmp_path / "bad.conll")])
    assert result.exit_code == 1


@pytest.mark.shared_data
def test_score_conll_files_gold_against_itself(shared_data):
    from spacy_memcoref.scoring.conll_files import score_conll_files

    path = shared_data / "ontogum" / "dev" / "GUM_bio_byron.v4_gold_conll"
    scores, _ = score_conll_files(path, path)
    assert all(value == 1.0 for value in scores.values()), scores
