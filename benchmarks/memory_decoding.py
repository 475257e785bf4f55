"""Shipped s2e pipelines read through the bounded entity memory
(`memory_cells`, `memory_mentions`: decoders/memory.py) against their own
unbounded decoding, side by side: dev CoNLL F1 by nlp.evaluate on raw text
(the component's own tokens and sentences, every decoding rule on), the
mentions held at most, and seconds of the pass.

    python benchmarks/memory_decoding.py --models s2e-ontogum,s2e-ontogum-base \\
        --dev corpus/ontogum/dev.spacy --sizes 0x8,20x8,40x4,40x8,80x8
"""

import argparse
import time

from spacy.tokens import DocBin
from spacy.training import Example

from _common import machine_line, quiet, set_threads, table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="s2e-ontogum", help="shipped model names or pipeline folders, commas")
    parser.add_argument("--dev", required=True, help="a gold DocBin")
    parser.add_argument("--sizes", default="0x8,20x8,40x4,40x8,80x8", help="CELLSxMENTIONS, commas (0: unbounded)")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    threads = set_threads(args.threads)
    quiet()
    import spacy

    import spacy_memcoref
    from spacy_memcoref.pipeline.coref_component import coref_components

    print(machine_line(threads))
    sizes = [tuple(int(x) for x in size.split("x")) for size in args.sizes.split(",")]
    rows = []
    for model in args.models.split(","):
        nlp = spacy.load(model) if "/" in model else spacy_memcoref.load(model)
        gold = list(DocBin().from_disk(args.dev).get_docs(nlp.vocab))
        name, component = coref_components(nlp, "s2e")[0]
        baseline = None
        for cells, mentions in sizes:
            component.decoder.set_memory(cells, mentions)
            started = time.perf_counter()
            scores = nlp.evaluate([Example(nlp.make_doc(doc.text), doc) for doc in gold])
            seconds = time.perf_counter() - started
            f1 = 100 * scores["coref_conll_f"]
            baseline = f1 if baseline is None else baseline
            rows.append(
                [
                    model,
                    "unbounded" if cells == 0 else f"{cells} x {mentions} ({cells * mentions} held at most)",
                    f"{f1:.2f}",
                    f"{f1 - baseline:+.2f}",
                    f"{seconds:.0f}",
                ]
            )
            print(rows[-1], flush=True)
    print(table(["model", "memory", "dev CoNLL F1", "against the first size", "s"], rows))


if __name__ == "__main__":
    main()
