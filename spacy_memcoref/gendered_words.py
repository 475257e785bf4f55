"""The gendered words and first names that gender-swap augmentation swaps
besides the pronouns (corpora/gender_swap.py), one token for one token; the
names also give a name mention its gender in decoding
(decoders/constraints.py, NAME_GENDER), with more names that decoding
alone reads (MORE_NAME_PAIRS).

Written for the project (Zhao et al. 2018 describe the method: swap
gendered words, and names so that a text stays consistent). Each list is
pairs (masculine, feminine); a word that reads two ways going back
("lady": gentleman or lord) maps back to one of them. Left out on purpose:

- words with a second, ungendered sense ("miss", "master", "madam" as a
  title of a house, "fellow");
- first names that are also common words or surnames ("Will", "May",
  "Rose", "Mark", "Bill", "Grace", "Hope", "Frank", "Guy") and names given
  to both genders ("Alex", "Sam", "Chris", "Taylor", "Jordan", "Robin").

A name swaps only when it is capitalized, and not after a first name or a
title ("John Paul", "Mr. Paul": a surname); a common noun keeps the case of
the word it replaces.
"""

from typing import Dict, List, Tuple

NOUN_PAIRS: List[Tuple[str, str]] = [
    ("man", "woman"),
    ("men", "women"),
    ("boy", "girl"),
    ("boys", "girls"),
    ("father", "mother"),
    ("fathers", "mothers"),
    ("dad", "mom"),
    ("dads", "moms"),
    ("daddy", "mommy"),
    ("papa", "mama"),
    ("grandpa", "grandma"),
    ("son", "daughter"),
    ("sons", "daughters"),
    ("brother", "sister"),
    ("brothers", "sisters"),
    ("husband", "wife"),
    ("husbands", "wives"),
    ("boyfriend", "girlfriend"),
    ("boyfriends", "girlfriends"),
    ("fiance", "fiancee"),
    ("groom", "bride"),
    ("widower", "widow"),
    ("uncle", "aunt"),
    ("uncles", "aunts"),
    ("nephew", "niece"),
    ("nephews", "nieces"),
    ("grandfather", "grandmother"),
    ("grandfathers", "grandmothers"),
    ("grandson", "granddaughter"),
    ("grandsons", "granddaughters"),
    ("stepfather", "stepmother"),
    ("stepson", "stepdaughter"),
    ("king", "queen"),
    ("kings", "queens"),
    ("prince", "princess"),
    ("princes", "princesses"),
    ("emperor", "empress"),
    ("duke", "duchess"),
    ("lord", "lady"),
    ("lords", "ladies"),
    ("gentleman", "lady"),
    ("gentlemen", "ladies"),
    ("sir", "ma'am"),
    ("actor", "actress"),
    ("actors", "actresses"),
    ("waiter", "waitress"),
    ("waiters", "waitresses"),
    ("hero", "heroine"),
    ("heroes", "heroines"),
    ("god", "goddess"),
    ("gods", "goddesses"),
    ("monk", "nun"),
    ("monks", "nuns"),
    ("priest", "priestess"),
    ("male", "female"),
    ("males", "females"),
    ("masculine", "feminine"),
    ("mr.", "ms."),
    ("mr", "ms"),
    ("mrs.", "mr."),
    ("mrs", "mr"),
    ("manhood", "womanhood"),
    ("fatherhood", "motherhood"),
    ("brotherhood", "sisterhood"),
    ("paternal", "maternal"),
    ("fraternal", "sororal"),
]

NAME_PAIRS: List[Tuple[str, str]] = [
    ("James", "Mary"),
    ("John", "Patricia"),
    ("Robert", "Jennifer"),
    ("Michael", "Linda"),
    ("David", "Elizabeth"),
    ("Richard", "Barbara"),
    ("Joseph", "Susan"),
    ("Thomas", "Jessica"),
    ("Charles", "Sarah"),
    ("Christopher", "Karen"),
    ("Daniel", "Nancy"),
    ("Matthew", "Lisa"),
    ("Anthony", "Betty"),
    ("Donald", "Margaret"),
    ("Steven", "Sandra"),
    ("Paul", "Ashley"),
    ("Andrew", "Kimberly"),
    ("Joshua", "Emily"),
    ("Kenneth", "Donna"),
    ("Kevin", "Michelle"),
    ("Brian", "Dorothy"),
    ("George", "Carol"),
    ("Edward", "Amanda"),
    ("Ronald", "Melissa"),
    ("Timothy", "Deborah"),
    ("Jason", "Stephanie"),
    ("Jeffrey", "Rebecca"),
    ("Ryan", "Sharon"),
    ("Jacob", "Laura"),
    ("Gary", "Cynthia"),
    ("Nicholas", "Kathleen"),
    ("Eric", "Amy"),
    ("Jonathan", "Shirley"),
    ("Stephen", "Angela"),
    ("Larry", "Helen"),
    ("Justin", "Anna"),
    ("Scott", "Brenda"),
    ("Brandon", "Pamela"),
    ("Benjamin", "Nicole"),
    ("Samuel", "Emma"),
    ("Gregory", "Samantha"),
    ("Alexander", "Katherine"),
    ("Patrick", "Christine"),
    ("Raymond", "Debra"),
    ("Jack", "Rachel"),
    ("Dennis", "Carolyn"),
    ("Jerry", "Janet"),
    ("Tyler", "Catherine"),
    ("Aaron", "Maria"),
    ("Henry", "Heather"),
    ("Peter", "Diane"),
    ("Adam", "Julie"),
    ("Nathan", "Olivia"),
    ("Zachary", "Joyce"),
    ("Walter", "Virginia"),
    ("Kyle", "Victoria"),
    ("Harold", "Kelly"),
    ("Carl", "Lauren"),
    ("Arthur", "Christina"),
    ("Lawrence", "Joan"),
    ("Albert", "Evelyn"),
    ("Louis", "Judith"),
    ("Philip", "Megan"),
    ("Roger", "Cheryl"),
    ("Ralph", "Andrea"),
    ("Bobby", "Hannah"),
    ("Eugene", "Martha"),
    ("Wayne", "Jacqueline"),
    ("Billy", "Gloria"),
    ("Bruce", "Teresa"),
    ("Willie", "Ann"),
    ("Jordan", "Sara"),
    ("Dylan", "Madison"),
    ("Alan", "Kathryn"),
    ("Juan", "Janice"),
    ("Logan", "Jean"),
    ("Pierre", "Marie"),
    ("Hans", "Greta"),
    ("Ivan", "Olga"),
    ("Carlos", "Sofia"),
    ("Luis", "Lucia"),
    ("Ahmed", "Fatima"),
    ("Hiroshi", "Yuki"),
    ("Wei", "Mei"),
    ("Oliver", "Charlotte"),
    ("Harry", "Amelia"),
    ("Noah", "Ava"),
    ("Liam", "Isabella"),
    ("Ethan", "Mia"),
    ("Lucas", "Harper"),
    ("Mason", "Abigail"),
    ("Leo", "Chloe"),
]
# common first names of one gender from more languages (South Asian, Arabic,
# Akan, Igbo, Japanese, Russian, Nordic, Iberian, Italian, Polish, German,
# Turkish, Greek), which give a name its gender in decoding only: swapped by
# the gender mirror too they cost the offline s2e 1.8 points of everyday
# pronouns (benchmarks/RESULTS.md, "Session 39")
MORE_NAME_PAIRS: List[Tuple[str, str]] = [
    ("Raj", "Priya"),
    ("Arjun", "Ananya"),
    ("Rahul", "Pooja"),
    ("Vikram", "Deepa"),
    ("Sanjay", "Anjali"),
    ("Omar", "Aisha"),
    ("Hassan", "Layla"),
    ("Mustafa", "Yasmin"),
    ("Kofi", "Abena"),
    ("Kwame", "Ama"),
    ("Chinedu", "Ngozi"),
    ("Emeka", "Chioma"),
    ("Takeshi", "Keiko"),
    ("Kenji", "Yumiko"),
    ("Sergei", "Svetlana"),
    ("Dmitri", "Natasha"),
    ("Lars", "Ingrid"),
    ("Sven", "Astrid"),
    ("Tomás", "Inês"),
    ("João", "Beatriz"),
    ("Diego", "Carmen"),
    ("Javier", "Elena"),
    ("Giuseppe", "Giulia"),
    ("Matteo", "Chiara"),
    ("Piotr", "Agnieszka"),
    ("Jakub", "Zofia"),
    ("Klaus", "Ursula"),
    ("Jürgen", "Heike"),
    ("Mehmet", "Ayşe"),
    ("Giorgos", "Eleni"),
]
# Kelly, Jordan and Jean are given to both genders and Wei is a surname: kept
# out of the pairs below
_BOTH = {"Kelly", "Jordan", "Jean", "Wei"}


def _one_way(pairs: List[Tuple[str, str]]) -> Dict[str, str]:
    """word -> its swap, both directions; the first pair a word is in wins."""
    swap: Dict[str, str] = {}
    for masculine, feminine in pairs:
        swap.setdefault(masculine, feminine)
        swap.setdefault(feminine, masculine)
    return swap


NOUNS: Dict[str, str] = _one_way(NOUN_PAIRS)
NAMES: Dict[str, str] = _one_way([(m, f) for m, f in NAME_PAIRS if m not in _BOTH and f not in _BOTH])


def swap_noun(word: str) -> str:
    """The swapped form of a gendered common word (case kept), or the word."""
    swapped = NOUNS.get(word.lower())
    if swapped is None:
        return word
    if word.isupper() and len(word) > 1:
        return swapped.upper()
    if word[:1].isupper():
        return swapped[:1].upper() + swapped[1:]
    return swapped


def swap_name(word: str) -> str:
    """The swapped form of a first name written capitalized, or the word."""
    return NAMES.get(word, word)


TITLES = frozenset("mr mr. mrs mrs. ms ms. miss dr dr. prof prof. sir lady lord saint st. st".split())


def is_name_before_surname(word: str) -> bool:
    """A first name of the lists or a title: the capitalized word after it is
    a surname, which keeps its form."""
    return word in NAMES or word.lower() in TITLES


# first names of one gender (the pairs above, less those given to both)
MASCULINE_NAMES = frozenset(m for m, _ in NAME_PAIRS + MORE_NAME_PAIRS if m not in _BOTH)
FEMININE_NAMES = frozenset(f for _, f in NAME_PAIRS + MORE_NAME_PAIRS if f not in _BOTH)
