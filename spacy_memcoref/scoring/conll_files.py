"""Score a CoNLL-2012 response file against a key file, like `scorer.pl all`.

Documents are matched by (doc id, part) as the reference scorer matches them
by the NAME of `#begin document NAME`: every key document is scored (a key
document the response lacks counts as a response with no mentions); response
documents the key lacks are ignored. Counts are micro-averaged over documents
(see `coref_metrics`).
"""

from pathlib import Path
from typing import Dict, List, Tuple, Union

from ..errors import DataFormatError, quote
from .coref_metrics import CorefEvaluator


def _doc_label(key: Tuple[str, str]) -> str:
    doc_id, part = key
    return f"({doc_id}); part {part}" if part != "" else doc_id


def score_conll_files(
    key_path: Union[str, Path], response_path: Union[str, Path]
) -> Tuple[Dict[str, float], List[str]]:
    """MUC, B3, CEAFe, LEA and CoNLL F1 of a response file against a key file.

    key_path (Union[str, Path]): the gold CoNLL-2012 file.
    response_path (Union[str, Path]): the system CoNLL-2012 file.
    RETURNS (Tuple[Dict[str, float], List[str]]): the scores (keys
        `coref_{mentions,muc,b3,ceafe,lea}_{p,r,f}` and `coref_conll_f`,
        fractions in [0, 1]) and the rows of a readable table (recall,
        precision and F1 in percent).
    RAISES DataFormatError: when a file is malformed, or a response document
        has a different number of tokens than its key document.
    """
    from ..corpora.conll import read_conll_clusters

    key_docs = read_conll_clusters(Path(key_path))
    response_docs = read_conll_clusters(Path(response_path))
    evaluator = CorefEvaluator()
    missing = 0
    for doc_key, (n_tokens, key_clusters) in key_docs.items():
        if doc_key in response_docs:
            n_response_tokens, response_clusters = response_docs[doc_key]
            if n_response_tokens != n_tokens:
                raise DataFormatError(
                    response_path,
                    None,
                    f"document {quote(_doc_label(doc_key))} has {n_response_tokens} tokens, "
                    f"but {n_tokens} in the key {key_path}; the token lines must match one to one",
                )
        else:
            response_clusters = []
            missing += 1
        evaluator.add_document(key_clusters, response_clusters)
    extra = sum(1 for doc_key in response_docs if doc_key not in key_docs)
    rows = evaluator.table()
    rows.append(f"documents: {len(key_docs)} in the key, {len(key_docs) - missing} of them in the response")
    if missing:
        rows.append(f"warning: {missing} key document(s) missing from the response (scored as empty)")
    if extra:
        rows.append(f"warning: {extra} response document(s) not in the key (ignored)")
    if evaluator.repeated_response_mentions:
        rows.append(
            f"warning: {evaluator.repeated_response_mentions} repeated response mention(s) of key mentions "
            "dropped (scorer.pl refuses to score more than 10)"
        )
    return evaluator.scores(), rows
