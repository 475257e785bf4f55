"""Resolved text: a Doc's text with pronouns replaced by the entity they
refer to, and a map from every character of it back to `doc.text`.

It reads the clusters from the Doc's `coref_clusters_*` span groups, so it
works on the output of either model, on Docs from a DocBin and on clusters
set by hand. spaCy only (no torch). The rules, in order:

1. A cluster's representative is its first proper-noun mention, else its
   first non-pronoun mention; only a mention whose name (rule 2) holds a
   word character can be one (not whitespace or punctuation only), and a
   one-word mention only when that word can name something alone
   (`_names_alone`: a noun, not an event's verb such as "swore"); a
   cluster without such a mention is left alone.
2. A cluster's name is its representative's text, whitespace runs made one
   space, WITHOUT a final possessive marker: "Mary's", "Mary 's" (OntoGUM's
   tokens), "Mary’s" and "the kids'" are named "Mary" and "the kids"; and
   without an aside: a relative clause after a comma or a ", 42" where its
   head part ends, or a final parenthesis ("Jason , who is our editor" ->
   "Jason"; `_before_aside`). A description around a proper name, after a
   possessive or before an apposition, is named by the name ("his sister
   Anna" -> "Anna", "her father , Władysław ," -> "Władysław";
   `_named_part`); a name that still holds a possessive determiner ("her
   mother") replaces pronouns of its own sentence only.
3. Personal pronouns (subject and object) become the name; the
   representative and the other nominal mentions stay as they are.
4. Possessives become the name's possessive, with exactly one marker: "'s",
   or a bare apostrophe after a final "s" ("Alice's", "James'", "the kids'");
   standalone "hers", "theirs", ... likewise. "her" is possessive when the
   tagger says so (tag PRP$ or Poss=Yes); without a tagger when the next
   token is a word that can start a noun phrase (not punctuation, not a
   function word, not the end of the text).
5. A subject pronoun before a verb clitic ('m 're 's 've 'd 'll, with a
   straight or curly apostrophe, or "m" "re" ... glued to it as in "Im")
   is replaced together with the clitic, which is written out in full and
   agrees with the name: "I'm" -> "Alice is", "they're" -> "the kids are",
   "you've" -> "Bob has". The number is the pronoun's (I he she it:
   singular, we: plural); for "you" and "they" it is the name's (see
   `_is_plural`). "'s" is "has" before "been"/"got", "is" before anything
   that cannot be a past participle, and ambiguous before one ("he's
   gone"); "'d" is "had" before "been"/"had"/"got"/"better" or a past
   participle and "would" before a base verb. When the clitic is ambiguous,
   or follows an object or possessive form ("her's"), the pronoun is left
   alone: the text never reads "Alice'm". ("n't" never follows a pronoun.)
   A subject "I", "you" or "they" replaced by a singular name also has its
   verb made to agree (`_agreeing_verb`): be, have and do ("I am" -> "Alice
   is", "you don't" -> "Bob doesn't"), and any present-tense verb ("I say"
   -> "Alice says"): with a tagger one tagged VBP; without one, a word
   after "I" or "they", or after "you" where a clause starts ("if you",
   "the countries you"), that reads as one by its spelling
   (`_reads_as_present_verb`); not after an auxiliary ("why don't you
   have") or a causative ("let you have"), in a coordinated subject ("Bob
   and I are"), or for the subjunctive "I were". A name that "they" stands
   for is plural when its head ends in s, capitalized too unless the name
   looks like a person's ("Senators", "the Saudis"; not "Sam Evans").
6. Reflexives ("herself") are kept, and so is a mention inside its own
   cluster's representative ({"Her mother", "Her", "she"}: "Her" stays).
7. Case follows position: a replacement that starts a sentence, or that
   replaces a capitalized pronoun (other than "I"), is capitalized; a
   representative that began with a capitalized common word ("The
   president") is lower-cased mid-sentence, but not the first word of a
   name ("Dutch cough drops", when the Doc has tags and entities; not a
   number or a date: "two men").
8. Nothing is replaced twice: an edit overlapping one already made (a token
   in two clusters, a mention inside another replaced one) is skipped.
9. First- and second-person pronouns inside quotation marks are kept (they
   refer to the speaker and the listener).

Proper nouns: with a tagger, a mention holding a PROPN token; without one, a
mention holding a title-case word that is not a pronoun or a function word.
"US", "IT" and "WHO" in capitals are names unless a tagger tags them PRON
or the words beside them are in capitals too.
Sentence starts: the Doc's sentence boundaries when it has them, else the
first token and the tokens after ". ! ?" (and an opening quote or a
whitespace token such as "\\n\\n" after them).

The modules, lowest first: `words` (the word lists), `offsets` (`Edit`,
`Resolved`, `to_source`), `naming` (the representative and its name, rules
1 and 2), `agreement` (clitics, verb agreement and a name's number, rule 5)
and `rewrite` (`resolve` and the rest of the rules). This package module
re-exports their public names.
"""

from .naming import is_tagged, representative_name, representative_of
from .offsets import Edit, Resolved, edits_as_records
from .rewrite import register_extension, resolve, resolved_text
from .words import *  # noqa: F401,F403 (the word lists: CLITICS, PRONOUNS, ...)
