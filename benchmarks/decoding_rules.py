"""What each decoding rule (spacy_memcoref/decoders/constraints.py) does,
alone and together: one pipeline predicts each gold Doc once (gold tokens and
speakers, as `tune-link-threshold` scores), and its prediction is decoded
with no rule, each rule alone and all rules, side by side: CoNLL F1 at the
component's own decision, pronoun accuracy (scoring/pronouns.py), and the
rule breaks left in the clusters.

    python benchmarks/decoding_rules.py MODEL GOLD.spacy [GOLD2.spacy ...] [--conditions "no rule;all rules (shipped)"]
    python benchmarks/decoding_rules.py MODEL GOLD.spacy --conditions "all but couple;all rules (shipped)" --show-changes
"""

import argparse
import time

import spacy
from spacy.training import Example

from _common import quiet, table
from spacy_memcoref.corpora.docbin import read_docbin
from spacy_memcoref.loading import load_pipeline
from spacy_memcoref.decoders.constraints import (
    ALL_RULES,
    CLAUSE,
    CONJUNCT_NAMES,
    COUPLE,
    COUPLE_THEY,
    COORDINATION,
    GENDERED_NOUNS,
    OBJECT,
    CHAT_NAMES,
    TURN_LABEL,
    PHRASE_CLAUSE,
    POSSESSOR,
    PRONOUNS,
    PUNCT_EDGE,
    QUOTE_SPEAKER,
    SENTENCE_PEOPLE,
    SPEAKER_NAMES,
    SPEAKERS,
    SYMBOL_TWINS,
    THEY,
    TURN_VOICE,
    VOICE,
    WORD,
    violations,
)
from spacy_memcoref.doc_helpers.clusters import clear_clusters, write_clusters
from spacy_memcoref.pipeline.coref_component import coref_components
from spacy_memcoref.scoring.pronouns import score_pronouns
from spacy_memcoref.scoring.spacy_scorer import score_coref_examples

CONDITIONS = {
    "no rule": None,
    f"{WORD} alone": frozenset({WORD}),
    f"{PRONOUNS} alone": frozenset({PRONOUNS}),
    f"{SPEAKERS} alone": frozenset({SPEAKERS}),
    f"{VOICE} alone": frozenset({VOICE}),
    f"all but {VOICE}": ALL_RULES - {VOICE},
    # the two rules that refine the speakers rule, also beside it
    f"{SPEAKER_NAMES} alone": frozenset({SPEAKER_NAMES}),
    f"{SPEAKERS} + {SPEAKER_NAMES}": frozenset({SPEAKERS, SPEAKER_NAMES}),
    f"all but {SPEAKER_NAMES}": ALL_RULES - {SPEAKER_NAMES},
    f"{TURN_VOICE} alone": frozenset({TURN_VOICE}),
    f"{SPEAKERS} + {TURN_VOICE}": frozenset({SPEAKERS, TURN_VOICE}),
    f"all but {TURN_VOICE}": ALL_RULES - {TURN_VOICE},
    f"all but {SPEAKER_NAMES}, {TURN_VOICE}": ALL_RULES - {SPEAKER_NAMES, TURN_VOICE},
    f"{SYMBOL_TWINS} alone": frozenset({SYMBOL_TWINS}),
    f"{SENTENCE_PEOPLE} alone": frozenset({SENTENCE_PEOPLE}),
    f"{CLAUSE} alone": frozenset({CLAUSE}),
    f"all but {CLAUSE}": ALL_RULES - {CLAUSE},
    f"{COORDINATION} alone": frozenset({COORDINATION}),
    f"all but {COORDINATION}": ALL_RULES - {COORDINATION},
    f"all but {SENTENCE_PEOPLE}": ALL_RULES - {SENTENCE_PEOPLE},
    f"{CONJUNCT_NAMES} alone": frozenset({CONJUNCT_NAMES}),
    f"all but {CONJUNCT_NAMES}": ALL_RULES - {CONJUNCT_NAMES},
    f"{THEY} alone": frozenset({THEY}),
    f"all but {THEY}": ALL_RULES - {THEY},
    f"all but {CONJUNCT_NAMES}, {THEY}": ALL_RULES - {CONJUNCT_NAMES, THEY},
    f"{QUOTE_SPEAKER} alone": frozenset({QUOTE_SPEAKER}),
    f"all but {QUOTE_SPEAKER}": ALL_RULES - {QUOTE_SPEAKER},
    f"{PHRASE_CLAUSE} alone": frozenset({PHRASE_CLAUSE}),
    f"{PUNCT_EDGE} alone": frozenset({PUNCT_EDGE}),
    f"all but {PHRASE_CLAUSE}": ALL_RULES - {PHRASE_CLAUSE},
    f"all but {PUNCT_EDGE}": ALL_RULES - {PUNCT_EDGE},
    f"all but {PHRASE_CLAUSE}, {PUNCT_EDGE}": ALL_RULES - {PHRASE_CLAUSE, PUNCT_EDGE},
    f"{POSSESSOR} alone": frozenset({POSSESSOR}),
    f"all but {POSSESSOR}": ALL_RULES - {POSSESSOR},
    f"{GENDERED_NOUNS} alone": frozenset({GENDERED_NOUNS}),
    f"all but {GENDERED_NOUNS}": ALL_RULES - {GENDERED_NOUNS},
    f"{OBJECT} alone": frozenset({OBJECT}),
    f"all but {OBJECT}": ALL_RULES - {OBJECT},
    f"all but {CHAT_NAMES}": ALL_RULES - {CHAT_NAMES},
    f"all but {TURN_LABEL}": ALL_RULES - {TURN_LABEL},
    f"all but {COUPLE}, {COUPLE_THEY}": ALL_RULES - {COUPLE, COUPLE_THEY},
    "all rules (shipped)": ALL_RULES,
}
# every rule left out alone, the rules added since the list above among them
for _rule in sorted(ALL_RULES):
    CONDITIONS.setdefault(f"all but {_rule}", ALL_RULES - {_rule})


def decode(pipe, prediction, doc, rules):
    if rules is None:
        return pipe.decoder.clusters(prediction)  # the head's own decoding, no Doc
    return pipe.decoder.clusters(prediction, doc=doc, rules=rules)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("gold", nargs="+")
    parser.add_argument(
        "--conditions",
        help="semicolon-separated decodings to run (their labels in the table); default: all",
        default="",
    )
    parser.add_argument(
        "--show-changes",
        action="store_true",
        help="with two conditions: print each document whose clusters differ between them, both ways",
    )
    args = parser.parse_args()
    wanted = [c.strip() for c in args.conditions.split(";") if c.strip()]
    unknown = [c for c in wanted if c not in CONDITIONS]
    if unknown:
        parser.error(f"unknown conditions {unknown}; known: {list(CONDITIONS)}")
    if args.show_changes and len(wanted) != 2:
        parser.error("--show-changes compares two conditions: name two in --conditions")
    quiet()
    nlp = load_pipeline(args.model)  # a folder, a shipped model by name or stored folder
    _, pipe = coref_components(nlp)[0]
    for path in args.gold:
        refs = read_docbin(path, nlp.vocab)
        examples = []
        for ref in refs:
            doc = ref.copy()
            clear_clusters(doc, pipe.prefix)
            examples.append(Example(doc, ref))
        started = time.perf_counter()
        predictions = [pipe.predict([eg.predicted])[0] for eg in examples]
        predict_s = time.perf_counter() - started
        rows = []
        decoded = {}  # condition -> each document's clusters as texts (--show-changes)
        for label, rules in CONDITIONS.items():
            if wanted and label not in wanted:
                continue
            broken = {"non_word": 0, "clause": 0, "pronoun_conflict": 0, "symbol_twins": 0, "sentence_people": 0}
            started = time.perf_counter()
            for eg, prediction in zip(examples, predictions):
                doc = eg.predicted
                clusters = decode(pipe, prediction, doc, rules)
                write_clusters(doc, [[doc[s : e + 1] for s, e in c] for c in clusters], pipe.prefix)
                decoded.setdefault(label, []).append([[doc[s : e + 1].text for s, e in c] for c in clusters])
                for key, n in violations(doc, clusters).items():
                    broken[key] += n
            decode_s = time.perf_counter() - started
            scores = score_coref_examples(examples, span_cluster_prefix=pipe.prefix)
            pronouns = score_pronouns(examples, pipe.prefix)
            rows.append(
                [
                    label,
                    f"{100 * scores['coref_conll_f']:.2f}",
                    f"{100 * pronouns.accuracy:.1f}",
                    f"{100 * scores['coref_mentions_p']:.1f}",
                    broken["non_word"],
                    broken["clause"],
                    broken["pronoun_conflict"],
                    broken["symbol_twins"],
                    broken["sentence_people"],
                    f"{decode_s:.2f}",
                ]
            )
        print(
            f"{args.model} on {path}: {len(refs)} docs, {sum(len(r) for r in refs)} tokens, prediction {predict_s:.1f} s"
        )
        if args.show_changes:
            first, second = wanted
            for ref, a, b in zip(refs, decoded[first], decoded[second]):
                if a != b:
                    print(f"  {ref.user_data.get('doc_id', '?')}: {ref.text[:200]!r}")
                    print(f"    {first}: {[c for c in a if c not in b]}")
                    print(f"    {second}: {[c for c in b if c not in a]}")
        print(
            table(
                [
                    "decoding",
                    "CoNLL F1",
                    "pronoun accuracy",
                    "mention P",
                    "non-word mentions",
                    "clause mentions",
                    "clusters w/ pronoun conflict",
                    "clusters w/ symbol twins",
                    "clusters w/ two people of a sentence",
                    "decode s",
                ],
                rows,
            )
        )


if __name__ == "__main__":
    main()
