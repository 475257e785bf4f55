"""Finding the spacy-transformers TransformerModel inside a tok2vec, without
importing spacy_transformers (the frozen and partly frozen encoders and the
builders' option checks all ask)."""
from typing import Optional

from thinc.api import Model


def find_transformer(tok2vec: Model) -> Optional[Model]:
    """The spacy-transformers TransformerModel node inside a tok2vec (found
    by its name and attrs, so spacy_transformers need not be imported)."""
    for node in tok2vec.walk():
        if node.name == "transformer" and "get_spans" in node.attrs and "set_transformer" in node.attrs:
            return node
    return None
