"""Build training sentences where meaning alone says who a pronoun is: two
people named by their role, one pronoun, and twin sentences that differ only
in the clause after the conjunction and point to the other person ("The
coach scolded the player because he was angry about the mess": the coach;
"... because he had broken the rules": the player). Written for this
project; not a public bias or challenge set's templates, and not those of
benchmarks/two_person.py, which evaluates: none of its verbs, clauses or
occupations is used here (test_meaning_pairs_stay_apart_from_the_evaluation
checks), so that what the two-person sentences measure stays a measurement.

Each sentence is one Doc with one gold cluster (the right person's noun
phrase and the pronoun); the roles are drawn from ROLES, two different ones
a sentence, and the pronoun's gender at random, so that no role goes with
one gender and neither does the answer's position (each twin points to the
other person). A DocBin for `spacy train`, beside OntoGUM's train file in
one folder (spacy.Corpus reads every .spacy file of a folder):

    python scripts/build_meaning_pairs.py corpus/meaning/pairs.spacy --per-template 25 --seed 0
"""

import argparse
import random
import sys
from pathlib import Path
from typing import Iterator, List, Tuple

# (the clause that points to the first person, the clause that points to the
# second), after "The {a} {verb} the {b} {conjunction} {p} ..."
TWINS: List[Tuple[str, str, str]] = [
    ("scolded the {b} because", "was angry about the mess", "had broken the rules"),
    ("congratulated the {b} because", "was proud of the result", "had won the prize"),
    ("rang the {b} because", "needed some advice", "knew the answer"),
    ("went to see the {b} because", "was passing through the town", "was ill in bed"),
    ("hired the {b} because", "needed help with the accounts", "had the best references"),
    ("warned the {b} because", "had seen the storm coming", "was about to walk onto the ice"),
    ("admired the {b} because", "had always wanted to sing", "sang so beautifully"),
    ("comforted the {b} because", "was a kind person", "was crying"),
    ("forgave the {b} because", "was a generous person", "had said sorry"),
    ("followed the {b} because", "did not know the way", "knew a shortcut"),
    ("lent the {b} some money because", "was rich", "was broke"),
    ("taught the {b} to swim because", "was a strong swimmer", "was afraid of the water"),
    ("interrupted the {b} because", "was in a hurry", "was talking too much"),
    ("dismissed the {b} because", "was cutting costs", "was always late"),
    ("praised the {b} because", "was impressed", "had worked so hard"),
    ("blamed the {b} because", "needed someone to blame", "had lost the keys"),
    ("envied the {b} because", "was jealous by nature", "had such a big house"),
    ("trusted the {b} because", "was a trusting person", "had never told a lie"),
    ("got help for the {b} because", "had seen the fall", "had fainted"),
    ("gave the {b} a lift because", "had a car", "had missed the bus"),
    ("complained to the {b} because", "was unhappy with the service", "was in charge"),
    ("avoided the {b} because", "was shy", "had been rude the day before"),
    ("woke the {b} because", "had heard a strange noise", "was late for work"),
    ("listened to the {b} because", "wanted to learn", "was a wise old friend"),
    ("carried the {b} home because", "was strong", "had hurt an ankle"),
    ("shouted at the {b} although", "was usually calm", "had done nothing wrong"),
    ("fed the {b} because", "had cooked too much", "was hungry"),
    ("protected the {b} because", "was brave", "was in danger"),
]
# roles a sentence names its two people by: none of two_person.py's
# occupations, and no role with a gender of its own
ROLES = """teacher student doctor patient lawyer client landlord tenant coach player driver passenger chef
waiter manager cashier editor writer banker customer officer guard painter singer baker tailor dentist
pharmacist journalist professor director designer accountant gardener scientist artist musician clerk judge
neighbour tourist guide athlete reporter visitor host guest owner worker trainer boss""".split()
PRONOUNS = ("he", "she")


def sentences(per_template: int, rng: random.Random) -> Iterator[Tuple[str, int, int, int]]:
    """(text, the right person's index (0: the first, 1: the second), the
    pronoun's token index) ... per_template of each twin's two sentences."""
    for verb, first, second in TWINS:
        for answer, clause in ((0, first), (1, second)):
            for _ in range(per_template):
                a, b = rng.sample(ROLES, 2)
                pronoun = rng.choice(PRONOUNS)
                text = f"The {a} {verb.format(b=b)} {pronoun} {clause} ."
                yield text, answer, len(f"The {a} {verb.format(b=b)}".split())


def build(per_template: int, seed: int):
    """A DocBin of the sentences, each with its one gold cluster."""
    import spacy
    from spacy.tokens import Doc, DocBin

    nlp = spacy.blank("en")
    rng = random.Random(seed)
    docs = DocBin(store_user_data=True)
    for k, (text, answer, p) in enumerate(sentences(per_template, rng)):
        words = text.split()
        doc = Doc(nlp.vocab, words=words, spaces=[True] * (len(words) - 1) + [False])
        for token in doc:
            token.is_sent_start = token.i == 0
        person = words.index("the", 1)  # "The {a}" at 0-1; "the {b}" after the verb
        right = doc[0:2] if answer == 0 else doc[person : person + 2]
        doc.spans["coref_clusters_1"] = [right, doc[p : p + 1]]
        doc.user_data["doc_id"] = f"meaning_pairs/{k}"
        docs.add(doc)
    return docs


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("output", type=Path, help="the .spacy file to write (not over an existing one)")
    parser.add_argument("--per-template", type=int, default=25, help="sentences of each of a twin's two clauses")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.output.exists():
        print(f"error: {args.output} exists; give a new path", file=sys.stderr)
        return 1
    if args.per_template < 1:
        print("error: --per-template must be at least 1", file=sys.stderr)
        return 1
    docs = build(args.per_template, args.seed)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    docs.to_disk(args.output)
    print(f"wrote {args.output}: {len(docs)} sentences ({len(TWINS)} twins x 2 x {args.per_template})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
