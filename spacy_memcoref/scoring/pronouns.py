"""Pronoun accuracy: the share of gold pronouns whose predicted cluster holds
their true antecedent and nothing of another entity.

CoNLL F1 averages over every mention of long documents, most of whose links
are easy repetitions of a name; a reader judges a system by its pronouns.
For each gold pronoun mention (a one-word personal, possessive or reflexive
pronoun in a gold cluster of two or more mentions) the predicted cluster
that holds the same span must hold another mention of the pronoun's gold
cluster (exact span) and no mention of any other gold cluster. A pronoun
the system left out of every cluster, or put with another entity, is wrong.
"""

from dataclasses import dataclass, field
from typing import Dict, Iterable, Iterator, List, Tuple

from spacy.training import Example

from ..decoders.constraints import (
    FEMININE,
    FIRST_PLURAL,
    FIRST_SINGULAR,
    INANIMATE,
    MASCULINE,
    SECOND,
    THIRD_PLURAL,
)
from ..doc_helpers.clusters import CLUSTER_PREFIX, numbered_clusters

PRONOUNS = MASCULINE | FEMININE | FIRST_SINGULAR | FIRST_PLURAL | SECOND | INANIMATE | THIRD_PLURAL

Span = Tuple[int, int]  # (start, end) token offsets, end exclusive


@dataclass
class PronounScore:
    """Counts over the gold pronouns.

    total (int): gold pronouns scored.
    correct (int): with their antecedent and nothing of another entity.
    missed (int): in no predicted cluster, or in one without their antecedent.
    mixed (int): in a predicted cluster with a mention of another entity.
    by_word (Dict[str, Tuple[int, int]]): lower-cased pronoun -> (correct, total).
    """

    total: int = 0
    correct: int = 0
    missed: int = 0
    mixed: int = 0
    by_word: Dict[str, List[int]] = field(default_factory=dict)

    @property
    def accuracy(self) -> float:
        return self.correct / self.total if self.total else 0.0

    def add(self, other: "PronounScore") -> None:
        self.total += other.total
        self.correct += other.correct
        self.missed += other.missed
        self.mixed += other.mixed
        for word, (c, t) in other.by_word.items():
            counts = self.by_word.setdefault(word, [0, 0])
            counts[0] += c
            counts[1] += t


def _clusters(doc, prefix: str) -> List[List[Span]]:
    return [[(span.start, span.end) for span in spans] for _, spans in numbered_clusters(doc, prefix)]


@dataclass(frozen=True)
class PronounOutcome:
    """One gold pronoun and what the system did with it.

    example (Example): its document (reference and prediction).
    span (Span): the pronoun's token offsets.
    outcome (str): "correct", "missed" or "mixed" (as PronounScore counts them).
    gold (List[Span]): the other mentions of its gold cluster.
    predicted (List[Span]): the other mentions of its predicted cluster ([] if in none).
    """

    example: Example
    span: Span
    outcome: str
    gold: List[Span]
    predicted: List[Span]


def pronoun_outcomes(examples: Iterable[Example], prefix: str = CLUSTER_PREFIX) -> Iterator[PronounOutcome]:
    """Each gold pronoun of the examples with its outcome, in document order
    of the gold clusters (score_pronouns counts these).

    RAISES ValueError: a predicted Doc whose tokens differ from its reference's.
    """
    for eg in examples:
        if [t.text for t in eg.predicted] != [t.text for t in eg.reference]:
            raise ValueError("score_pronouns needs predicted Docs on the reference's tokens")
        gold = _clusters(eg.reference, prefix)
        predicted = _clusters(eg.predicted, prefix)
        gold_of = {span: i for i, cluster in enumerate(gold) for span in cluster}
        predicted_of = {span: i for i, cluster in enumerate(predicted) for span in cluster}
        doc = eg.reference
        for i, cluster in enumerate(gold):
            if len(cluster) < 2:
                continue
            for span in cluster:
                start, end = span
                if end - start != 1 or doc[start].text.lower() not in PRONOUNS:
                    continue
                j = predicted_of.get(span)
                members = [m for m in predicted[j] if m != span] if j is not None else []
                own = any(gold_of.get(m) == i for m in members)
                other = any(gold_of.get(m, i) != i for m in members)
                outcome = "mixed" if other else "missed" if not own else "correct"
                yield PronounOutcome(eg, span, outcome, [m for m in cluster if m != span], members)


def score_pronouns(examples: Iterable[Example], prefix: str = CLUSTER_PREFIX) -> PronounScore:
    """Pronoun accuracy of the predicted Docs against the reference Docs (the
    same tokens; spaCy's Example alignment is not needed for gold-token input).

    RAISES ValueError: a predicted Doc whose tokens differ from its reference's.
    """
    total = PronounScore()
    for found in pronoun_outcomes(examples, prefix):
        word = found.example.reference[found.span[0]].text.lower()
        counts = total.by_word.setdefault(word, [0, 0])
        total.total += 1
        counts[1] += 1
        if found.outcome == "mixed":
            total.mixed += 1
        elif found.outcome == "missed":
            total.missed += 1
        else:
            total.correct += 1
            counts[0] += 1
    return total
