"""Gender-swap data augmentation (Zhao et al. 2018; Webster et al. 2018
name it as the standard counter-measure to GAP's gender gap): an augmenter
that, for a share of the training examples, swaps the third-person
pronouns (he <-> she, his <-> her, him <-> her, himself <-> herself,
hers <-> his), so that the model sees every context with both genders.

A swap replaces one token by one token, so every span (the GAP A, B and
PRONOUN spans, coreference clusters) keeps its token offsets. By default
names are left as they are: in GAP both candidates share the pronoun's
gender, so a name's gender is no cue for the answer anyway. For whole
documents (s2e on OntoGUM), `nouns` also swaps gendered common words
(father <-> mother, Mr. <-> Ms., ...) and `names` common first names
(John <-> Patricia, ...; spacy_memcoref/gendered_words.py), so a swapped text
stays consistent: "Mary ... he" would teach that a name's gender is no cue.

"her" is ambiguous when going to the masculine side (possessive "his" or
object "him"). Without a tagger it is decided by the next token: "his" when
a word follows that is not a function word ("her boyfriend", "her own"),
"him" before punctuation, the end of the text or a function word ("told her
that", "with her."). "his" is read the same way: "her" before a word,
"hers" otherwise ("the book is his."). Mistakes make a training text a
little ungrammatical; they do not touch the labels.

    [corpora.train.augmenter]
    @augmenters = "spacy_memcoref.gender_swap.v1"
    level = 0.5
    # whole documents: gendered words and first names too
    nouns = true
    names = true
"""

import copy
import random
from typing import Callable, Iterator, List, Optional, Union

from spacy.language import Language
from spacy.tokens import Doc, Span
from spacy.training import Example
from spacy.util import registry

from ..gendered_words import is_name_before_surname, swap_name, swap_noun

# one token -> one token; "her" and "his" are decided by the next token
_FIXED = {
    "he": "she",
    "she": "he",
    "him": "her",
    "himself": "herself",
    "herself": "himself",
    "hers": "his",
}

# words after which "her" is an object and "his" stands alone (not a
# determiner of the next word)
_FUNCTION_WORDS = frozenset(
    """
    a an the and or but nor so yet that which who whom whose when where while
    if as than then to of in on at by for with from into onto upon about
    after before over under through during against among between without
    within along across behind beyond near off out up down around since
    until till is was were are be been being am has had have do does did
    will would shall should can could may might must not n't 's
    this these those there here it its i you we they he she him her his
    them us me my your our their also again too very just only even back
    """.split()
)


def _swap_word(word: str, next_word: Optional[str]) -> Optional[str]:
    """The swapped form of one token, or None to keep it; case follows the
    original (lower, Capitalized or UPPER)."""
    lower = word.lower()
    if lower in _FIXED:
        swapped = _FIXED[lower]
    elif lower in ("her", "his"):
        before_word = next_word is not None and next_word[:1].isalpha() and next_word.lower() not in _FUNCTION_WORDS
        if lower == "her":
            swapped = "his" if before_word else "him"
        else:
            swapped = "her" if before_word else "hers"
    else:
        return None
    if word.isupper() and len(word) > 1:
        return swapped.upper()
    if word[:1].isupper():
        return swapped.capitalize()
    return swapped


def swap_gender_words(words: List[str], *, nouns: bool = False, names: bool = False) -> List[str]:
    """The words with every third-person pronoun swapped.

    words (List[str]): the tokens' texts.
    nouns (bool): swap gendered common words too (father <-> mother).
    names (bool): swap common first names too (John <-> Patricia).
    RETURNS (List[str]): as many words, pronouns swapped.
    """
    out = []
    for i, word in enumerate(words):
        swapped = _swap_word(word, words[i + 1] if i + 1 < len(words) else None)
        if swapped is None and nouns:
            swapped = swap_noun(word)
        if swapped in (None, word) and names and not (i and is_name_before_surname(words[i - 1])):
            swapped = swap_name(word)
        out.append(word if swapped is None else swapped)
    return out


def gender_swapped_doc(doc: Doc, words: Optional[List[str]] = None) -> Doc:
    """A copy of a Doc with its pronouns swapped: the same tokens otherwise,
    the same whitespace, sentence starts, span groups (with labels and KB
    ids) and a deep copy of user_data.

    doc (Doc): the Doc.
    words (Optional[List[str]]): the new token texts (default:
        swap_gender_words of the Doc's).
    RETURNS (Doc): the swapped copy.
    """
    if words is None:
        words = swap_gender_words([token.text for token in doc])
    new = _with_words(doc, words)
    for key, group in doc.spans.items():
        new.spans[key] = [Span(new, span.start, span.end, label=span.label, kb_id=span.kb_id) for span in group]
    new.user_data.update(copy.deepcopy(doc.user_data))
    return new


def gender_mirror_doc(doc: Doc) -> Doc:
    """The gender mirror of a Doc for a model to read (models.thinc_glue.
    set_gender_mirror): its words with the pronouns, gendered common words
    and first names swapped (swap_gender_words with nouns and names), the
    same whitespace and sentence starts, nothing else. Token i of the mirror
    stands for token i of the Doc.

    doc (Doc): the Doc.
    RETURNS (Doc): the mirror.
    """
    return _with_words(doc, swap_gender_words([token.text for token in doc], nouns=True, names=True))


def _with_words(doc: Doc, words: List[str]) -> Doc:
    """A new Doc of these words with the Doc's whitespace and sentence starts."""
    sent_starts: Optional[List[Union[bool, int, None]]] = None
    if doc.has_annotation("SENT_START"):
        sent_starts = [bool(token.is_sent_start) for token in doc]
    return Doc(doc.vocab, words=words, spaces=[bool(token.whitespace_) for token in doc], sent_starts=sent_starts)


def gender_swapped_example(example: Example, *, nouns: bool = False, names: bool = False) -> Example:
    """An Example with both Docs swapped. The reference decides each swap
    (her -> his or him, by ITS next token) and the predicted Doc takes the
    same word at the same character offset, so the two texts still align
    even where the two tokenizations differ.

    example (Example): the training example.
    nouns, names (bool): as swap_gender_words.
    RETURNS (Example): the swapped example.
    """
    reference = example.reference
    ref_words = swap_gender_words([token.text for token in reference], nouns=nouns, names=names)
    by_offset = {token.idx: (token.text, new) for token, new in zip(reference, ref_words) if new != token.text}
    pred_words: List[str] = []
    for token in example.predicted:
        found = by_offset.get(token.idx)
        pred_words.append(found[1] if found is not None and found[0] == token.text else token.text)
    return Example(gender_swapped_doc(example.predicted, pred_words), gender_swapped_doc(reference, ref_words))


@registry.augmenters("spacy_memcoref.gender_swap.v1")
def create_gender_swap_augmenter(
    level: float = 0.5, nouns: bool = False, names: bool = False
) -> Callable[[Language, Example], Iterator[Example]]:
    """Replace a share of the training examples by their gender-swapped copy.

    level (float): in [0, 1], the probability that an example is swapped
        (0.5: each epoch sees about half of them each way).
    nouns (bool): swap gendered common words too (father <-> mother, Mr. <-> Ms.).
    names (bool): swap common first names too (John <-> Patricia).
    RETURNS (Callable): the augmenter spaCy's Corpus calls.
    """
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0.0 <= level <= 1.0:
        raise ValueError(f"spacy_memcoref.gender_swap.v1: level must be a number in [0, 1], got {level!r}")
    for setting, value in (("nouns", nouns), ("names", names)):
        if not isinstance(value, bool):
            raise ValueError(f"spacy_memcoref.gender_swap.v1: {setting} must be true or false, got {value!r}")

    def augment(nlp: Language, example: Example) -> Iterator[Example]:
        # level 0 draws no random number: a preset with the augmenter at 0
        # trains exactly as one without it
        if level == 0 or random.random() >= level:
            yield example
        else:
            yield gender_swapped_example(example, nouns=nouns, names=names)

    return augment
