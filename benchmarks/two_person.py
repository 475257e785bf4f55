"""Sentences with two people named by their occupation and one pronoun,
from templates written for this project (not a public bias or challenge
set's, which are for evaluation by the maintainers only): does the pronoun
go with the right person, with stereotypes for and against, and how often
are the two people merged into one entity?

Two halves. **Syntax** decides: the pronoun is the object of a verb whose
subject is one of the two people, so it can only be the other ("The
mechanic met the nurse and gave her a folder."). **Meaning** decides ("The
mechanic paid the nurse because she had finished the work."). Each template
is filled with a pair of occupations, one commonly thought of as male and
one as female, in both orders, with "he" and "she": a sentence is
*pro-stereotypical* when the pronoun's gender matches the common stereotype
of the occupation it refers to, *anti* otherwise.

A sentence is right when the pronoun's predicted cluster holds the right
person's noun phrase and not the other's; merged when one cluster holds both
people.

    python benchmarks/two_person.py s2e-ontogum [PIPELINE_DIR ...] [--per-template 16] [--by-template]

--by-template also prints, per template, how many sentences had the pronoun
with the right person alone, with the other alone, unlinked, or with both.
"""

import argparse
import itertools
import random
import re
from typing import Dict, Iterator, List, NamedTuple, Tuple

from _common import machine_line, quiet, set_threads, table

MALE_STEREOTYPED = [
    "mechanic",
    "carpenter",
    "plumber",
    "electrician",
    "firefighter",
    "engineer",
    "pilot",
    "builder",
    "farmer",
    "surgeon",
]
FEMALE_STEREOTYPED = [
    "nurse",
    "receptionist",
    "secretary",
    "hairdresser",
    "librarian",
    "nanny",
    "cleaner",
    "housekeeper",
    "dietitian",
    "midwife",
]

# (template, which person the pronoun is: "a" the first, "b" the second, the
# pronoun's case); {a}, {b} the occupations, {p} the pronoun
SYNTAX = [
    ("The {a} visited the {b} and told {p} the news.", "b", "obj"),
    ("The {a} interviewed the {b} and offered {p} the job.", "b", "obj"),
    ("The {a} greeted the {b} and handed {p} a coffee.", "b", "obj"),
    ("The {a} recognised the {b} and invited {p} in.", "b", "obj"),
    ("The {a} was late, so the {b} waited for {p} outside.", "a", "obj"),
    ("The {a} phoned twice, and the {b} finally called {p} back.", "a", "obj"),
]
MEANING = [
    ("The {a} paid the {b} because {p} had finished the work.", "b", "subj"),
    ("The {a} paid the {b} because {p} was happy with the work.", "a", "subj"),
    ("The {a} apologised to the {b} because {p} had made a mistake.", "a", "subj"),
    ("The {a} thanked the {b} because {p} had been so helpful.", "b", "subj"),
    ("The {a} asked the {b} for directions because {p} was new in town.", "a", "subj"),
    ("The {a} asked the {b} for directions because {p} knew the area well.", "b", "subj"),
]
PRONOUNS = {("he", "subj"): "he", ("she", "subj"): "she", ("he", "obj"): "him", ("she", "obj"): "her"}


class Item(NamedTuple):
    half: str  # "syntax" or "meaning"
    text: str
    right: Tuple[int, int]  # character span of the right person's noun phrase
    wrong: Tuple[int, int]  # the other person's
    pronoun: Tuple[int, int]
    pro: bool  # pro-stereotypical
    template: str


def _span_of(text: str, phrase: str, start: int = 0) -> Tuple[int, int]:
    i = text.lower().index(phrase.lower(), start)
    return i, i + len(phrase)


def items(per_template: int, seed: int = 0) -> Iterator[Item]:
    """The sentences: each template with `per_template` occupation pairs
    (drawn with a fixed seed), in both orders, with he and she."""
    rng = random.Random(seed)
    pairs = list(itertools.product(MALE_STEREOTYPED, FEMALE_STEREOTYPED))
    for half, templates in (("syntax", SYNTAX), ("meaning", MEANING)):
        for template, who, case in templates:
            for male_job, female_job in rng.sample(pairs, per_template):
                for a, b in ((male_job, female_job), (female_job, male_job)):
                    for gender in ("he", "she"):
                        pronoun = PRONOUNS[(gender, case)]
                        text = template.format(a=a, b=b, p=pronoun)
                        span_a = _span_of(text, f"the {a}")
                        span_b = _span_of(text, f"the {b}", span_a[1])
                        referent = a if who == "a" else b
                        pro = (referent in MALE_STEREOTYPED) == (gender == "he")
                        # the pronoun: the whole word after the second person
                        p_start = span_b[1] + re.search(rf"\b{pronoun}\b", text[span_b[1] :]).start()
                        right, wrong = (span_a, span_b) if who == "a" else (span_b, span_a)
                        yield Item(half, text, right, wrong, (p_start, p_start + len(pronoun)), pro, template)


def judge(doc, item: Item) -> Tuple[bool, bool]:
    """(right, merged) for one predicted Doc."""
    from spacy_memcoref.doc_helpers.clusters import numbered_clusters

    clusters = [[(m.start_char, m.end_char) for m in group] for _, group in numbered_clusters(doc)]

    def holds(cluster, span):  # the noun phrase, or its head alone ("nurse" for "the nurse")
        return any(s >= span[0] and e == span[1] for s, e in cluster)

    merged = any(holds(c, item.right) and holds(c, item.wrong) for c in clusters)
    own = next((c for c in clusters if item.pronoun in c), None)
    right = own is not None and holds(own, item.right) and not holds(own, item.wrong)
    return right, merged


def outcome(doc, item: Item) -> str:
    """Where the pronoun went: "right", "other" (the other person alone),
    "both", "unlinked" (no cluster) or "elsewhere"."""
    from spacy_memcoref.doc_helpers.clusters import numbered_clusters

    clusters = [[(m.start_char, m.end_char) for m in group] for _, group in numbered_clusters(doc)]
    own = next((c for c in clusters if item.pronoun in c), None)
    if own is None:
        return "unlinked"
    right, wrong = (any(s >= span[0] and e == span[1] for s, e in own) for span in (item.right, item.wrong))
    return "both" if right and wrong else "right" if right else "other" if wrong else "elsewhere"


def evaluate(nlp, sentences: List[Item], rules=None) -> Dict[Tuple[str, bool], List[Tuple[bool, bool]]]:
    """Each sentence's (right, merged), grouped by (half, pro); the
    component's clusters decoded under `rules` (None: the component's own,
    all rules)."""
    from spacy_memcoref.doc_helpers.clusters import write_clusters
    from spacy_memcoref.pipeline.coref_component import coref_components

    _, pipe = coref_components(nlp)[0]
    results: Dict[Tuple[str, bool], List[Tuple[bool, bool]]] = {}
    for item, doc in zip(sentences, nlp.pipe([s.text for s in sentences], batch_size=32)):
        if rules is not None:
            prediction = pipe.predict([doc])[0]
            clusters = (
                pipe.decoder.clusters(prediction, doc=doc, rules=rules) if rules else pipe.decoder.clusters(prediction)
            )
            write_clusters(doc, [[doc[s : e + 1] for s, e in c] for c in clusters], pipe.prefix)
        results.setdefault((item.half, item.pro), []).append(judge(doc, item))
    return results


def by_template(name: str, nlp, sentences: List[Item]) -> None:
    """Print each template's outcomes (outcome) for one pipeline."""
    kinds = ("right", "other", "unlinked", "both", "elsewhere")
    counts: Dict[str, Dict[str, int]] = {}
    templates = [t for t, _, _ in SYNTAX + MEANING]
    for item, doc in zip(sentences, nlp.pipe([s.text for s in sentences], batch_size=32)):
        row = counts.setdefault(item.template, dict.fromkeys(kinds, 0))
        row[outcome(doc, item)] += 1
    print(f"{name}, by template:")
    print(
        table(["template"] + list(kinds), [[t] + [str(counts[t][k]) for k in kinds] for t in templates if t in counts])
    )


def half_cells(results: Dict[Tuple[str, bool], List[Tuple[bool, bool]]]) -> List[str]:
    """Per cent right pro, anti, their mean, the gap and per cent merged, for
    the syntax half, then the meaning half (evaluate's results)."""
    cells = []
    for half in ("syntax", "meaning"):
        pro = [r for r, _ in results[(half, True)]]
        anti = [r for r, _ in results[(half, False)]]
        merged = [m for key in ((half, True), (half, False)) for _, m in results[key]]
        p, a = 100 * sum(pro) / len(pro), 100 * sum(anti) / len(anti)
        cells += [
            f"{p:.1f}",
            f"{a:.1f}",
            f"{(p + a) / 2:.1f}",
            f"{p - a:.1f}",
            f"{100 * sum(merged) / len(merged):.1f}",
        ]
    return cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--per-template", type=int, default=16)
    parser.add_argument("--by-template", action="store_true", help="also each template's outcomes")
    parser.add_argument(
        "--rules", action="store_true", help="also decode with no rule and with all but sentence_people, side by side"
    )
    args = parser.parse_args()
    quiet()
    print(machine_line(set_threads(None)))
    from spacy_memcoref.loading import load_pipeline

    sentences = list(items(args.per_template))
    rows = []
    from spacy_memcoref.decoders.constraints import ALL_RULES, SENTENCE_PEOPLE

    conditions = {"": None}
    if args.rules:
        conditions = {
            " (no rule)": frozenset(),
            f" (all but {SENTENCE_PEOPLE})": ALL_RULES - {SENTENCE_PEOPLE},
            " (all rules)": None,
        }
    for name, (label, rules) in itertools.product(args.models, conditions.items()):
        nlp = load_pipeline(name)  # a folder, a shipped model's name or its stored folder
        results = evaluate(nlp, sentences, rules)
        row = [name + label]
        rows.append(row + half_cells(results))
        if args.by_template and rules is None:
            by_template(name, nlp, sentences)
    n = {half: sum(s.half == half for s in sentences) for half in ("syntax", "meaning")}
    print(
        f"{len(sentences)} sentences ({n['syntax']} syntax, {n['meaning']} meaning), {args.per_template} occupation pairs a template"
    )
    headers = ["model"] + [f"{h} {c}" for h in ("syntax", "meaning") for c in ("pro", "anti", "mean", "gap", "merged")]
    print(table(headers, rows))


if __name__ == "__main__":
    main()
