"""A small CNN tok2vec config that stands in for the transformer in fast tests."""


def cnn_tok2vec(*, width: int, depth: int, rows, maxout_pieces: int) -> dict:
    return {
        "@architectures": "spacy.Tok2Vec.v2",
        "embed": {
            "@architectures": "spacy.MultiHashEmbed.v2",
            "width": width,
            "attrs": ["NORM", "PREFIX", "SUFFIX", "SHAPE"],
            "rows": list(rows),
            "include_static_vectors": False,
        },
        "encode": {
            "@architectures": "spacy.MaxoutWindowEncoder.v2",
            "width": width,
            "depth": depth,
            "window_size": 1,
            "maxout_pieces": maxout_pieces,
        },
    }
