"""Coreference over text that arrives in pieces: chat turns, transcript
lines, chapters. One `Stream` a conversation; `add` a piece, get it back as
a Doc whose clusters are numbered by entity ids that stay the same across
pieces, so "Alice" in the first turn and "She" in the third are both in
``doc.spans["coref_clusters_1"]`` of their own piece's Doc.

How it stays bounded (the design's contract: per-piece cost and state do
not grow with the history):

- the model reads a window: the new piece and as many of the latest pieces
  before it as fit in `window_tokens` (whole pieces, never a cut one); older
  pieces leave the state;
- the entity table holds at most `max_entities` entities, the ones
  mentioned least recently leave first (their ids are never reused);
- the table remembers each entity's mentions only inside the window (and a
  count); an entity that left the window is found again by its name (a
  cluster whose name is an entity's name, a proper noun, joins it) or, for
  a speaker, by the speaker's first-person pronouns.

The entity id of a cluster the model finds in the window, for its mentions
in the new piece, is decided by these rules, first that applies:

1. a first-person singular pronoun (I, me, my, mine, myself) of a piece
   with a speaker is the speaker (an entity of its own, named after the
   speaker), whatever the model clustered it with; a speaker's lone "I",
   which s2e leaves unclustered, is the speaker too;
2. a cluster with mentions in earlier pieces that already have an id takes
   the id of the latest of them (the nearest antecedent's entity);
3. a cluster holding the new piece's speaker's "I" is the speaker;
4. a cluster whose name (resolution's representative name) is the name of
   an entity in the table, starting with a capital letter, is that entity;
5. otherwise a new entity: the next id.

Mentions of earlier pieces never change id (a Doc once returned is never
rewritten); a mention of an earlier piece that had no entity and is now in
a cluster gets the cluster's id in the table, for the pieces to come.

The model is any pipeline with a memcoref component (s2e or PeTra); the
model re-reads the window at each piece, so the component needs no state
of its own. Speakers, where given, go to the model as
``doc.spans["speakers"]`` (the gold-data form the s2e models train on) and
on the returned Doc the same way.
"""
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

from .doc_helpers.clusters import CLUSTER_PREFIX, cluster_key, numbered_clusters
from .resolution import is_tagged, representative_name, representative_of

if TYPE_CHECKING:  # pragma: no cover
    from spacy.language import Language
    from spacy.tokens import Doc, Span

STATE_VERSION = 1
SPEAKERS_KEY = "speakers"
# first-person singular forms: the speaker of the piece, by rule 1
FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself"})
# the piece's index on its Doc: doc.user_data[PIECE_KEY]
PIECE_KEY = "stream_piece"


@dataclass
class StreamEntity:
    """One entity of a stream's table.

    id (int): its id; its mentions in a piece's Doc are in
        doc.spans[f"{prefix}_{id}"]. Ids count from 1 and are never reused.
    name (Optional[str]): its name (the representative name of the first
        cluster that had one, or the speaker's name); None while only
        pronouns mention it.
    speaker (Optional[str]): the speaker it is, for a speaker's entity.
    mentions (int): how many mentions it has had in the pieces so far.
    last_piece (int): the index of the last piece that mentioned it.
    """

    id: int
    name: Optional[str]
    speaker: Optional[str] = None
    mentions: int = 0
    last_piece: int = -1


@dataclass
class _Piece:
    """A piece still in the window: its text and its mentions with ids,
    (start_char, end_char, entity id) in the piece's own text."""

    index: int
    text: str
    speaker: Optional[str]
    n_tokens: int
    mentions: List[Tuple[int, int, int]] = field(default_factory=list)


class StreamStateError(ValueError):
    """Bytes that are not a stream's saved state."""


class Stream:
    """Coreference over pieces of text, with entity ids stable across them.

    nlp (Language): a pipeline with a memcoref component
        (`spacy_memcoref.load()` or one of your own).
    window_tokens (int): how many tokens of the latest pieces (whole pieces)
        the model re-reads with each new piece: the reach of a pronoun into
        the history. Bounds the time and memory of a piece.
    max_entities (int): how many entities the table keeps (the least
        recently mentioned leave first).
    prefix (str): the cluster prefix of the returned Docs.
    """

    def __init__(
        self,
        nlp: "Language",
        *,
        window_tokens: int = 512,
        max_entities: int = 64,
        prefix: str = CLUSTER_PREFIX,
    ) -> None:
        from .pipeline.coref_component import coref_components

        if not coref_components(nlp):
            raise ValueError(f"Stream needs a pipeline with a memcoref component; this one has {nlp.pipe_names}")
        _check_positive("window_tokens", window_tokens)
        _check_positive("max_entities", max_entities)
        self.nlp = nlp
        self.window_tokens = window_tokens
        self.max_entities = max_entities
        self.prefix = prefix
        self._model_prefix = coref_components(nlp)[0][1].prefix
        self.reset()

    def reset(self) -> None:
        """Forget everything: the next piece is the first."""
        self._pieces: List[_Piece] = []
        self._entities: "OrderedDict[int, StreamEntity]" = OrderedDict()
        self._next_id = 1
        self._n_pieces = 0

    # -- reading ---------------------------------------------------------

    @property
    def entities(self) -> List[StreamEntity]:
        """The entity table, least recently mentioned first."""
        return list(self._entities.values())

    def entity(self, entity_id: int) -> Optional[StreamEntity]:
        """RETURNS (Optional[StreamEntity]): the entity with this id, None
        when it was never made or has left the table."""
        return self._entities.get(entity_id)

    @property
    def pieces_read(self) -> int:
        """How many pieces the stream has read."""
        return self._n_pieces

    def add(self, text: str, *, speaker: Optional[str] = None) -> "Doc":
        """Read the next piece.

        text (str): the piece, as it arrived (not changed; may be empty).
        speaker (Optional[str]): who said it, where known.
        RETURNS (Doc): the piece's own Doc: its tokens (with the pipeline's
            annotations), its mentions in doc.spans[f"{prefix}_{id}"] by
            entity id (a cluster here may hold a single mention: an entity
            mentioned once in this piece), the speaker as
            doc.spans["speakers"] (one span, label the speaker), and
            doc.user_data["stream_piece"], the piece's index from 0.
        """
        if not isinstance(text, str):
            raise TypeError(f"Stream.add: text must be a str, got {type(text).__name__}")
        if speaker is not None and (not isinstance(speaker, str) or not speaker.strip()):
            raise ValueError(f"Stream.add: speaker must be a non-empty str or None, got {speaker!r}")
        index = self._n_pieces
        piece = _Piece(index, text, speaker, len(self.nlp.make_doc(text)))
        window = self._window_for(piece)
        context, offsets = self._read(window + [piece])
        piece_doc = self._assign(context, offsets, window, piece)
        self._n_pieces += 1
        self._pieces = window + [piece]
        self._prune()
        return piece_doc

    # -- state -------------------------------------------------------------

    def to_bytes(self) -> bytes:
        """RETURNS (bytes): the state (settings, window, entity table), for
        `from_bytes`; its size is bounded by the settings, not the history."""
        import srsly

        return srsly.msgpack_dumps(
            {
                "version": STATE_VERSION,
                "settings": {"window_tokens": self.window_tokens, "max_entities": self.max_entities, "prefix": self.prefix},
                "next_id": self._next_id,
                "n_pieces": self._n_pieces,
                "pieces": [asdict(p) for p in self._pieces],
                "entities": [asdict(e) for e in self._entities.values()],
            }
        )

    def from_bytes(self, data: bytes) -> "Stream":
        """Restore a state saved by `to_bytes` (its settings too).

        RETURNS (Stream): self, to continue the stream it saved.
        """
        import srsly

        try:
            state = srsly.msgpack_loads(data)
        except Exception as err:  # msgpack raises several types
            raise StreamStateError(f"Stream.from_bytes: not a saved stream state ({err})") from err
        if not isinstance(state, dict) or state.get("version") != STATE_VERSION:
            found = state.get("version") if isinstance(state, dict) else type(state).__name__
            raise StreamStateError(f"Stream.from_bytes: expected a stream state of version {STATE_VERSION}, got {found!r}")
        try:
            settings = state["settings"]
            pieces = [
                _Piece(p["index"], p["text"], p["speaker"], p["n_tokens"], [tuple(m) for m in p["mentions"]])  # type: ignore[misc]
                for p in state["pieces"]
            ]
            entities = [StreamEntity(**e) for e in state["entities"]]
            next_id, n_pieces = int(state["next_id"]), int(state["n_pieces"])
            window_tokens, max_entities, prefix = settings["window_tokens"], settings["max_entities"], settings["prefix"]
        except (KeyError, TypeError) as err:
            raise StreamStateError(f"Stream.from_bytes: the state is incomplete ({err!r})") from err
        _check_positive("window_tokens", window_tokens)
        _check_positive("max_entities", max_entities)
        self.window_tokens, self.max_entities, self.prefix = window_tokens, max_entities, prefix
        self._pieces = pieces
        self._entities = OrderedDict((e.id, e) for e in sorted(entities, key=lambda e: e.last_piece))
        self._next_id, self._n_pieces = next_id, n_pieces
        return self

    # -- the work ----------------------------------------------------------

    def _window_for(self, piece: _Piece) -> List[_Piece]:
        """The latest earlier pieces that fit in window_tokens beside the new one."""
        budget = self.window_tokens - piece.n_tokens
        window: List[_Piece] = []
        for earlier in reversed(self._pieces):
            if earlier.n_tokens > budget:
                break
            budget -= earlier.n_tokens
            window.append(earlier)
        return window[::-1]

    def _read(self, pieces: List[_Piece]) -> Tuple["Doc", List[int]]:
        """Run the pipeline over the pieces joined by whitespace (a space
        where a piece does not end in whitespace already), so that each
        piece's tokens are those it has alone. RETURNS the Doc and each
        piece's character offset in it."""
        offsets, parts, position = [], [], 0
        for p in pieces:
            if parts and parts[-1] and not parts[-1][-1].isspace():
                parts.append(" ")
                position += 1
            offsets.append(position)
            parts.append(p.text)
            position += len(p.text)
        doc = self.nlp.make_doc("".join(parts))
        speakers = []
        for p, offset in zip(pieces, offsets):
            if p.speaker is not None and p.text:
                span = doc.char_span(offset, offset + len(p.text), label=p.speaker, alignment_mode="expand")
                if span is not None and len(span):
                    speakers.append(span)
        if speakers:
            doc.spans[SPEAKERS_KEY] = speakers
        return self.nlp(doc), offsets

    def _assign(self, context: "Doc", offsets: List[int], window: List[_Piece], piece: _Piece) -> "Doc":
        """Give the new piece's mentions their entity ids (the rules at the
        top of this module) and build its Doc."""
        start = offsets[-1]
        known: Dict[Tuple[int, int], int] = {}  # context (start_char, end_char) -> id
        first_person_speaker: Dict[Tuple[int, int], str] = {}
        for earlier, offset in zip(window, offsets):
            for s, e, entity_id in earlier.mentions:
                known[(offset + s, offset + e)] = entity_id
        assigned: Dict[Tuple[int, int], int] = {}  # new piece's (local start, end) -> id
        tagged = is_tagged(context)
        for _, group in numbered_clusters(context, self._model_prefix):
            spans = sorted((s for s in group if len(s)), key=lambda s: (s.start, -s.end))
            new = [s for s in spans if s.start_char >= start]
            if not new:
                continue
            old = [s for s in spans if s.start_char < start]
            entity_id = self._cluster_entity(spans, old, new, known, piece, tagged)
            for s in new:
                own = self._speaker_entity(piece.speaker) if _is_first_person(s) and piece.speaker else entity_id
                assigned[(s.start_char - start, s.end_char - start)] = own
            # earlier mentions that had no entity join this one, for later pieces
            for s in old:
                if (s.start_char, s.end_char) not in known:
                    self._record_earlier(window, offsets, s, entity_id)
        if piece.speaker is not None:
            for token in context.char_span(start, start + len(piece.text), alignment_mode="expand") or []:
                if token.lower_ in FIRST_PERSON:
                    key = (token.idx - start, token.idx + len(token) - start)
                    assigned.setdefault(key, self._speaker_entity(piece.speaker))
        for (s, e), entity_id in sorted(assigned.items()):
            piece.mentions.append((s, e, entity_id))
            entity = self._entities[entity_id]
            entity.mentions += 1
            entity.last_piece = piece.index
            self._entities.move_to_end(entity_id)
        return self._piece_doc(context, start, piece)

    def _cluster_entity(
        self,
        spans: List["Span"],
        old: List["Span"],
        new: List["Span"],
        known: Dict[Tuple[int, int], int],
        piece: _Piece,
        tagged: bool,
    ) -> int:
        """The entity of a cluster with mentions in the new piece: rules 2-5."""
        earlier_ids = [known[(s.start_char, s.end_char)] for s in old if (s.start_char, s.end_char) in known]
        earlier_ids = [i for i in earlier_ids if i in self._entities]
        if earlier_ids:
            return earlier_ids[-1]
        if piece.speaker is not None and any(_is_first_person(s) for s in new):
            return self._speaker_entity(piece.speaker)
        representative = representative_of(spans, tagged)
        name = representative_name(representative, tagged) if representative is not None else None
        if name and name[:1].isupper():
            for entity in reversed(self._entities.values()):
                if entity.name == name:
                    return entity.id
        return self._new_entity(name)

    def _speaker_entity(self, speaker: str) -> int:
        for entity in self._entities.values():
            if entity.speaker == speaker:
                return entity.id
        entity_id = self._new_entity(speaker)
        self._entities[entity_id].speaker = speaker
        return entity_id

    def _new_entity(self, name: Optional[str]) -> int:
        entity_id = self._next_id
        self._next_id += 1
        self._entities[entity_id] = StreamEntity(entity_id, name, last_piece=self._n_pieces)
        return entity_id

    def _record_earlier(self, window: List[_Piece], offsets: List[int], span: "Span", entity_id: int) -> None:
        for earlier, offset in zip(window, offsets):
            if offset <= span.start_char < offset + len(earlier.text):
                earlier.mentions.append((span.start_char - offset, span.end_char - offset, entity_id))
                self._entities[entity_id].mentions += 1
                return

    def _piece_doc(self, context: "Doc", start: int, piece: _Piece) -> "Doc":
        """The new piece as a Doc of its own, with the context's annotations."""
        from spacy.tokens import Doc

        end = start + len(piece.text)
        span = context.char_span(start, end, alignment_mode="expand") if piece.text else None
        doc = None
        if span is not None and len(span):
            sliced = span.as_doc()
            words = [t.text for t in sliced]
            spaces = [bool(t.whitespace_) for t in sliced]
            # the last token's space is the piece's only when it is inside the piece
            spaces[-1] = spaces[-1] and span[-1].idx + len(span[-1]) < end
            doc = Doc(self.nlp.vocab, words=words, spaces=spaces)
            attrs = _annotated_attrs(sliced)
            if attrs:
                doc.from_array(attrs, sliced.to_array(attrs))
        if doc is None or doc.text != piece.text:
            # no tokens, or (never seen) tokens across the join: the piece's
            # own tokens, without the pipeline's other annotations
            doc = self.nlp.make_doc(piece.text)
        doc.user_data[PIECE_KEY] = piece.index
        if piece.speaker is not None and len(doc):
            doc.spans[SPEAKERS_KEY] = [doc.char_span(0, len(doc.text), label=piece.speaker, alignment_mode="expand")]
        by_entity: Dict[int, List["Span"]] = {}
        for s, e, entity_id in piece.mentions:
            mention = doc.char_span(s, e, alignment_mode="expand")
            if mention is not None and len(mention):
                by_entity.setdefault(entity_id, []).append(mention)
        for entity_id in sorted(by_entity):
            doc.spans[cluster_key(entity_id, self.prefix)] = by_entity[entity_id]
        return doc

    def _prune(self) -> None:
        """Keep the window and the table within their bounds."""
        kept, budget = [], self.window_tokens
        for p in reversed(self._pieces):
            if p.n_tokens > budget:
                break
            budget -= p.n_tokens
            kept.append(p)
        self._pieces = kept[::-1]
        while len(self._entities) > self.max_entities:
            self._entities.popitem(last=False)


def _is_first_person(span: "Span") -> bool:
    return len(span) == 1 and span[0].lower_ in FIRST_PERSON


def _annotated_attrs(doc: "Doc") -> List[str]:
    """The token attributes the pipeline set on this Doc (to copy them)."""
    attrs = []
    for name, attr_set in (("TAG", ["TAG"]), ("POS", ["POS"]), ("MORPH", ["MORPH"]), ("LEMMA", ["LEMMA"]), ("DEP", ["DEP", "HEAD"]), ("SENT_START", ["SENT_START"]), ("ENT_IOB", ["ENT_IOB", "ENT_TYPE"])):
        if doc.has_annotation(name):
            attrs.extend(attr_set)
    if "DEP" in attrs and "SENT_START" in attrs:  # the parse sets the sentences
        attrs.remove("SENT_START")
    return attrs


def _check_positive(name: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"Stream: {name} must be a positive integer, got {value!r}")
