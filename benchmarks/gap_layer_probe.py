"""Which hidden layers of a frozen encoder carry GAP's coreference signal?

A linear probe, not PeTra: one encoder pass over GAP development and
validation (every hidden state kept, but only at the pronoun and the two
names), then a logistic regression per layer set on [p; c; p * c] (p the
pronoun's vector, c a candidate name's mean vector) that predicts "c is the
pronoun's antecedent", trained on development and scored on validation
(candidate-level F1 at 0.5, the GAP scorer's unit). It ranks layer sets
cheaply (minutes after the encoder pass) before a PeTra run spends ~40 min
on one; it does not predict PeTra's score.

    python benchmarks/gap_layer_probe.py ENCODER ../shared/data/gap/gap-development.tsv \
        ../shared/data/gap/gap-validation.tsv --sets "9-12,5-8,7-10,3-12:3,1-12"

A set "a-b" is layers a..b concatenated; "a-b:s" every s-th of them
(0 is the embedding layer, 12 the top of a 12-layer encoder).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import List, Sequence, Tuple

import numpy
import torch

from spacy_memcoref.corpora.gap import GapRow, read_gap_rows


def _pieces(offsets: Sequence[Tuple[int, int]], start: int, end: int) -> List[int]:
    found = [i for i, (a, b) in enumerate(offsets) if b > a and a < end and b > start]
    if not found:
        raise ValueError(f"no word piece covers characters {start}-{end}")
    return found


@torch.no_grad()
def encode_rows(model, tokenizer, rows: List[GapRow], batch: int) -> numpy.ndarray:
    """[rows, 3 (pronoun, A, B), layers, width] float32."""
    out = []
    for i in range(0, len(rows), batch):
        chunk = rows[i : i + batch]
        enc = tokenizer(
            [r.text for r in chunk],
            return_offsets_mapping=True,
            truncation=True,
            max_length=512,
            padding=True,
            return_tensors="pt",
        )
        offsets = enc.pop("offset_mapping").tolist()
        hidden = torch.stack(model(**enc, output_hidden_states=True).hidden_states, dim=1)  # [B, L, T, W]
        for b, row in enumerate(chunk):
            spans = [
                (row.pronoun_offset, row.pronoun_offset + len(row.pronoun)),
                (row.a_offset, row.a_offset + len(row.a)),
                (row.b_offset, row.b_offset + len(row.b)),
            ]
            vecs = [hidden[b][:, _pieces(offsets[b], s, e)].mean(dim=1) for s, e in spans]
            out.append(torch.stack(vecs).numpy())
        print(f"  encoded {min(i + batch, len(rows))}/{len(rows)}", file=sys.stderr, flush=True)
    return numpy.stack(out).astype(numpy.float32)


def pairs(feats: numpy.ndarray, rows: List[GapRow], layers: List[int]) -> Tuple[torch.Tensor, torch.Tensor]:
    x = torch.from_numpy(feats[:, :, layers].reshape(len(rows), 3, -1))
    p = x[:, 0]
    xs, ys = [], []
    for slot, linked in ((1, [r.a_coref for r in rows]), (2, [r.b_coref for r in rows])):
        c = x[:, slot]
        xs.append(torch.cat([p, c, p * c], dim=1))
        ys.append(torch.tensor(linked, dtype=torch.float32))
    return torch.cat(xs), torch.cat(ys)


def probe(train_x, train_y, dev_x, dev_y, l2: float, seed: int) -> float:
    torch.manual_seed(seed)
    mean, std = train_x.mean(0), train_x.std(0) + 1e-6
    train_x, dev_x = (train_x - mean) / std, (dev_x - mean) / std
    w = torch.zeros(train_x.shape[1], requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], max_iter=300, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(train_x @ w + b, train_y) + l2 * (w * w).sum()
        loss.backward()
        return loss

    opt.step(closure)
    with torch.no_grad():
        pred = (dev_x @ w + b) > 0
    gold = dev_y > 0.5
    tp = float((pred & gold).sum())
    precision = tp / max(float(pred.sum()), 1.0)
    recall = tp / max(float(gold.sum()), 1.0)
    return 0.0 if tp == 0 else 100 * 2 * precision * recall / (precision + recall)


def parse_set(text: str) -> List[int]:
    span, _, step = text.partition(":")
    a, _, b = span.partition("-")
    return list(range(int(a), int(b or a) + 1, int(step or 1)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("encoder")
    parser.add_argument("train_tsv", type=Path)
    parser.add_argument("dev_tsv", type=Path)
    parser.add_argument("--sets", default="9-12,5-8,7-10,3-12:3,1-12", help="comma-separated layer sets")
    parser.add_argument("--l2", type=float, default=1e-3, help="L2 weight of the probe (standardised features)")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--cache", type=Path, default=None, help="an .npz to keep the encoded pronoun/name vectors in")
    args = parser.parse_args()

    train_rows, dev_rows = list(read_gap_rows(args.train_tsv)), list(read_gap_rows(args.dev_tsv))
    if args.cache is not None and args.cache.exists():
        data = numpy.load(args.cache)
        train_f, dev_f = data["train"], data["dev"]
    else:
        from transformers import AutoModel, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(args.encoder)
        model = AutoModel.from_pretrained(args.encoder).eval()
        start = time.time()
        train_f = encode_rows(model, tokenizer, train_rows, args.batch)
        dev_f = encode_rows(model, tokenizer, dev_rows, args.batch)
        print(f"encoded {len(train_rows) + len(dev_rows)} texts in {time.time() - start:.0f} s", file=sys.stderr)
        if args.cache is not None:
            numpy.savez(args.cache, train=train_f, dev=dev_f)
    n_layers = train_f.shape[2]
    print(
        f"{n_layers} hidden states (0 = embeddings); probe F1 on {args.dev_tsv.name}, trained on {args.train_tsv.name}"
    )
    print("| layers | F1 |\n| --- | --: |")
    for text in args.sets.split(","):
        layers = parse_set(text)
        if max(layers) >= n_layers:
            raise SystemExit(f"set {text!r} asks for layer {max(layers)}; the encoder has 0..{n_layers - 1}")
        tx, ty = pairs(train_f, train_rows, layers)
        dx, dy = pairs(dev_f, dev_rows, layers)
        print(f"| {text} | {probe(tx, ty, dx, dy, args.l2, 0):.1f} |", flush=True)


if __name__ == "__main__":
    main()
