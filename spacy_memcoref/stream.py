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

The entity id of a mention the model finds in the new piece is decided by
these rules, first that applies; with s2e they follow the model's links
(each mention to its antecedent, decoders.s2e.S2EDecoder.mention_links),
mention by mention in text order:

1. a first-person singular pronoun (I, me, my, mine, myself) of a piece
   with a speaker is the speaker (the entity named as the speaker, else an
   entity of its own named after the speaker), whatever the model linked
   it to; a speaker's lone "I", which s2e leaves unclustered, is the
   speaker too;
2. a mention whose chain of antecedents reaches a mention that has an id
   (of an earlier piece, also when the window re-read it with other
   boundaries, or of this piece, decided before it) takes that id: the
   nearest one along the model's own links, so that links a
   re-reading of the window makes among earlier mentions alone join
   nothing (0.4 CoNLL F1 closer to the whole document on OntoGUM dev than
   taking the cluster's latest id: benchmarks/RESULTS.md, "Streams: the
   price in accuracy");
3. a chain whose cluster holds the new piece's speaker's "I" is the
   speaker;
4. a chain whose cluster's name (resolution's representative name) is the
   name of an entity in the table, starting with a capital letter, is that
   entity;
5. otherwise a new entity: the next id.

Mentions of earlier pieces never change id (a Doc once returned is never
rewritten); a mention of an earlier piece that had no entity and is now on
a new mention's chain gets the chain's id in the table, for the pieces to
come, and is listed on the new piece's Doc as doc.user_data["stream_joined"]
(`join_pieces` puts the pieces' Docs together as one document with them:
"Alice" of the first piece in the cluster of the third piece's "She").

The model is any pipeline with a memcoref component (s2e or PeTra); the
model re-reads the window at each piece, so the component needs no state
of its own. Speakers, where given, go to the model as
``doc.spans["speakers"]`` (the gold-data form the s2e models train on) and
on the returned Doc the same way.
"""

from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Tuple, cast

from .decoders.links import link_groups
from .doc_helpers.clusters import CLUSTER_PREFIX, cluster_key, numbered_clusters
from .doc_helpers.transcripts import SPEAKERS_KEY
from .resolution import is_tagged, representative_name, representative_of

if TYPE_CHECKING:  # pragma: no cover
    from spacy.language import Language

    from .decoders.predictions import S2EPrediction
    from .decoders.s2e import S2EDecoder
    from spacy.tokens import Doc, Span

STATE_VERSION = 1
# first-person singular forms: the speaker of the piece, by rule 1
FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself"})
# the piece's index on its Doc: doc.user_data[PIECE_KEY]
PIECE_KEY = "stream_piece"
# the earlier pieces' mentions that joined an entity with this piece:
# doc.user_data[JOINED_KEY], (piece index, start_char, end_char, entity id)
# each, the characters those of the earlier piece's own text
JOINED_KEY = "stream_joined"


class _KnownMentions:
    """The earlier pieces' mentions in a window by their characters, found
    again when a later window re-reads one with other boundaries ("the man"
    becomes "the man who called" once the next sentence is there), so that
    the re-reading is not recorded beside it as a new mention of the
    earlier piece. A re-reading is the known mention when both are of two
    or more words and share their start or their end (a one-word mention,
    "his", shares its start with "his mother", another entity); the known
    mention that overlaps it most, then the earliest, is the one; its
    entity id is the id a chain reaching the re-reading takes (rule 2).
    """

    def __init__(self, known: Dict[Tuple[int, int], int], text: str) -> None:
        self.known = known
        self._by_start: Dict[int, List[Tuple[int, int]]] = {}
        self._by_end: Dict[int, List[Tuple[int, int]]] = {}
        for a, b in known:
            if " " in text[a:b].strip():
                self._by_start.setdefault(a, []).append((a, b))
                self._by_end.setdefault(b, []).append((a, b))

    def find(self, span: "Span") -> Optional[int]:
        """The entity id of the known mention `span` is, or None."""
        a, b = span.start_char, span.end_char
        if (a, b) in self.known:
            return self.known[(a, b)]
        if len(span) < 2:
            return None
        candidates = self._by_start.get(a, []) + self._by_end.get(b, [])
        if not candidates:
            return None
        best = max(candidates, key=lambda k: (min(b, k[1]) - max(a, k[0]), -k[0]))
        return self.known[best]


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


@dataclass
class _Cell:
    """A PeTra memory cell's entity: its episode (decoders.petra), the
    entity id (0: none yet) and name (the first mention's, while the entity
    has only that one), and that first mention (pending: (piece index,
    start_char, end_char)) until a second one makes it an entity."""

    episode: int = -1
    entity: int = 0
    name: Optional[str] = None
    pending: Optional[Tuple[int, int, int]] = None


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
        from .pipeline.coref_component import coref_components, coref_kind

        found = coref_components(nlp)
        if not found:
            raise ValueError(f"Stream needs a pipeline with a memcoref component; this one has {nlp.pipe_names}")
        _check_positive("window_tokens", window_tokens)
        _check_positive("max_entities", max_entities)
        self.nlp = nlp
        self.window_tokens = window_tokens
        self.max_entities = max_entities
        self.prefix = prefix
        name, component = found[0]
        self._coref_name = name
        self._coref = component
        self._model_prefix = component.prefix
        # PeTra carries its memory from piece to piece; s2e re-reads the window
        self.carries_memory = coref_kind(component) == "petra"
        self.reset()

    def reset(self) -> None:
        """Forget everything: the next piece is the first."""
        self._pieces: List[_Piece] = []
        self._entities: "OrderedDict[int, StreamEntity]" = OrderedDict()
        self._next_id = 1
        self._n_pieces = 0
        # PeTra: the memory (models.petra.petra_stream.MemoryState), where
        # its log's decoding stands (decoders.petra.CellEpisodes) and each
        # cell's entity (_Cell), None before the first piece
        self._memory: Optional[Any] = None
        self._episodes: Optional[Any] = None
        self._cells: List[_Cell] = []
        # the earlier pieces' mentions that joined an entity in this add
        self._joined: List[Tuple[int, int, int, int]] = []

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
            doc.spans["speakers"] (one span, label the speaker),
            doc.user_data["stream_piece"], the piece's index from 0, and
            doc.user_data["stream_joined"], the mentions of earlier pieces
            that joined an entity with this piece: (piece index,
            start_char, end_char, entity id) each, in that piece's text
            (its Doc, returned already, is not changed; `join_pieces`).
        """
        if not isinstance(text, str):
            raise TypeError(f"Stream.add: text must be a str, got {type(text).__name__}")
        if speaker is not None and (not isinstance(speaker, str) or not speaker.strip()):
            raise ValueError(f"Stream.add: speaker must be a non-empty str or None, got {speaker!r}")
        index = self._n_pieces
        self._joined = []
        piece = _Piece(index, text, speaker, len(self.nlp.make_doc(text)))
        window = self._window_for(piece)
        if self.carries_memory:
            piece_doc = self._read_with_memory(window, piece)
        else:
            context, offsets, links = self._read_links(window + [piece])
            piece_doc = self._assign(context, offsets, window, piece, links)
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
                "settings": {
                    "window_tokens": self.window_tokens,
                    "max_entities": self.max_entities,
                    "prefix": self.prefix,
                },
                "next_id": self._next_id,
                "n_pieces": self._n_pieces,
                "pieces": [asdict(p) for p in self._pieces],
                "entities": [asdict(e) for e in self._entities.values()],
                "memory": self._memory_state(),
            }
        )

    def _memory_state(self) -> Optional[Dict[str, Any]]:
        if self._memory is None or self._episodes is None:
            return None
        m = self._memory
        return {
            "shape": list(m.memory.shape),
            "gru": m.gru.astype("float32").tobytes(),
            "memory": m.memory.astype("float32").tobytes(),
            "usage": m.usage.astype("float32").tobytes(),
            "episode": list(self._episodes.episode),
            "features": [sorted(f) for f in self._episodes.features],
            "cells": [asdict(c) for c in self._cells],
        }

    def _restore_memory(self, saved: Optional[Dict[str, Any]]) -> None:
        import numpy

        from .decoders.petra import CellEpisodes
        from .models.petra.petra_stream import MemoryState

        self._memory, self._episodes, self._cells = None, None, []
        if saved is None:
            return
        if not self.carries_memory:
            raise StreamStateError("Stream.from_bytes: the state holds a PeTra memory; this pipeline's model is s2e")
        n, d = saved["shape"]

        def array(key: str, shape: Tuple[int, ...]) -> "numpy.ndarray":
            return numpy.frombuffer(saved[key], dtype="float32").reshape(shape).copy()

        try:
            self._memory = MemoryState(
                gru=array("gru", (d,)), memory=array("memory", (n, d)), usage=array("usage", (n,))
            )
        except ValueError as err:
            raise StreamStateError(f"Stream.from_bytes: the saved memory does not have its shape ({err})") from err
        self._episodes = CellEpisodes(list(saved["episode"]), [set(f) for f in saved["features"]])
        self._cells = [
            _Cell(
                c["episode"],
                c["entity"],
                c["name"],
                (c["pending"][0], c["pending"][1], c["pending"][2]) if c["pending"] is not None else None,
            )
            for c in saved["cells"]
        ]

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
            raise StreamStateError(
                f"Stream.from_bytes: expected a stream state of version {STATE_VERSION}, got {found!r}"
            )
        try:
            settings = state["settings"]
            pieces = [
                _Piece(p["index"], p["text"], p["speaker"], p["n_tokens"], [(m[0], m[1], m[2]) for m in p["mentions"]])
                for p in state["pieces"]
            ]
            entities = [StreamEntity(**e) for e in state["entities"]]
            next_id, n_pieces = int(state["next_id"]), int(state["n_pieces"])
            window_tokens, max_entities, prefix = (
                settings["window_tokens"],
                settings["max_entities"],
                settings["prefix"],
            )
            self._restore_memory(state["memory"])
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
        return _latest_within(self._pieces, self.window_tokens - piece.n_tokens)

    def _read(self, pieces: List[_Piece]) -> Tuple["Doc", List[int]]:
        """Run the pipeline over the pieces joined by whitespace (a space
        where a piece does not end in whitespace already), so that each
        piece's tokens are those it has alone. RETURNS the Doc and each
        piece's character offset in it. Only the components before the
        coreference one run (s2e's is run by _read_links, PeTra's memory
        reads on from its state)."""
        offsets: List[int] = []
        parts: List[str] = []
        position = 0
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
        for name, proc in self.nlp.pipeline:
            if name == self._coref_name:
                break
            doc = proc(doc)
        return doc, offsets

    def _read_links(self, pieces: List[_Piece]) -> Tuple["Doc", List[int], List[Tuple[int, int, int]]]:
        """s2e: `_read`, and the links its clusters are made of
        (decoders.s2e.S2EDecoder.mention_links: each kept candidate as
        (start, end, antecedent index; -1: none), token indices in the
        window's Doc)."""
        doc, offsets = self._read(pieces)
        predictions = self._coref.predict([doc])
        names = self.nlp.pipe_names
        later = self.nlp.pipeline[names.index(self._coref_name) + 1 :]
        if later:  # what the components after it read; the stream itself reads the links alone
            self._coref.set_annotations([doc], predictions)
            for _, proc in later:
                doc = proc(doc)
        decoder = cast("S2EDecoder", self._coref.decoder)
        return doc, offsets, decoder.mention_links(cast("S2EPrediction", predictions[0]), doc)

    def _assign(
        self,
        context: "Doc",
        offsets: List[int],
        window: List[_Piece],
        piece: _Piece,
        links: List[Tuple[int, int, int]],
    ) -> "Doc":
        """s2e: each new mention takes the entity of the mention its
        antecedent chain reaches first that has one (an earlier piece's
        mention with an id, or a mention of this piece already given one):
        rule 2 along the model's own links, not over the whole cluster, so
        that links a re-reading makes among earlier mentions alone (the
        window is read again with every piece) join nothing. A chain that
        reaches no entity is a new one (rules 3-5, by the cluster's name);
        the earlier mentions on it that had none join it. Rule 1 ends a
        chain at a speaker's "I"."""
        start = offsets[-1]
        known: Dict[Tuple[int, int], int] = {}  # context (start_char, end_char) -> id
        for earlier, offset in zip(window, offsets):
            for s, e, entity_id in earlier.mentions:
                known[(offset + s, offset + e)] = entity_id
        match = _KnownMentions(known, context.text)
        tagged = is_tagged(context)
        spans = [context[a : b + 1] for a, b, _ in links]
        antecedent = [c for _, _, c in links]
        groups = link_groups(antecedent)  # the window's clusters, for a new entity's name
        linked_to = {c for c in antecedent if c >= 0}
        entity: Dict[int, int] = {}  # candidate -> entity id, as decided in this piece
        assigned: Dict[Tuple[int, int], int] = {}  # new piece's (local start, end) -> id

        def is_new(i: int) -> bool:
            return spans[i].start_char >= start

        def speakers_i(i: int) -> bool:
            return piece.speaker is not None and is_new(i) and _is_first_person(spans[i])

        for q in range(len(links)):
            if not is_new(q) or not len(spans[q]) or (antecedent[q] < 0 and q not in linked_to):
                continue
            chain, i, entity_id = [], q, 0
            while True:
                if i in entity:
                    entity_id = entity[i]
                    break
                if speakers_i(i):
                    entity_id = self._speaker_entity(cast(str, piece.speaker))
                    break
                if not is_new(i):
                    earlier_id = match.find(spans[i])
                    if earlier_id is not None and earlier_id in self._entities:
                        entity_id = earlier_id
                        break
                chain.append(i)
                if antecedent[i] < 0:
                    break
                i = antecedent[i]
            if not entity_id:
                group = [j for j in range(len(links)) if groups[j] == groups[q] and len(spans[j])]
                if piece.speaker is not None and any(speakers_i(j) for j in group):
                    entity_id = self._speaker_entity(piece.speaker)
                else:
                    members = sorted((spans[j] for j in group), key=lambda s: (s.start, -s.end))
                    representative = representative_of(members, tagged)
                    name = representative_name(representative, tagged) if representative is not None else None
                    entity_id = self._named_or_new(name)
            for j in chain:
                entity[j] = entity_id
                if is_new(j):
                    assigned[(spans[j].start_char - start, spans[j].end_char - start)] = entity_id
                elif match.find(spans[j]) is None:
                    self._record_earlier(window, offsets, spans[j], entity_id)
            if speakers_i(q):
                entity[q] = entity_id
                assigned[(spans[q].start_char - start, spans[q].end_char - start)] = entity_id
        span = context.char_span(start, start + len(piece.text), alignment_mode="expand") if piece.text else None
        if span is not None:
            self._speaker_pronouns(span, start, piece, assigned)
        self._count(piece, assigned)
        return self._write_mentions(self._piece_doc(context, start, piece), piece)

    def _speaker_pronouns(self, tokens: Any, start: int, piece: _Piece, assigned: Dict[Tuple[int, int], int]) -> None:
        """Rule 1 for the first-person pronouns no cluster holds."""
        if piece.speaker is None:
            return
        for token in tokens:
            if token.lower_ in FIRST_PERSON:
                key = (token.idx - start, token.idx + len(token) - start)
                assigned.setdefault(key, self._speaker_entity(piece.speaker))

    def _count(self, piece: _Piece, assigned: Dict[Tuple[int, int], int]) -> None:
        """The piece's mentions into the piece and the table."""
        for (s, e), entity_id in sorted(assigned.items()):
            piece.mentions.append((s, e, entity_id))
            entity = self._entities[entity_id]
            entity.mentions += 1
            entity.last_piece = piece.index
            self._entities.move_to_end(entity_id)

    def _read_with_memory(self, window: List[_Piece], piece: _Piece) -> "Doc":
        """PeTra: the encoder reads the window, the memory reads the piece
        on from where it stood; entities are the cells' episodes (a cell
        overwritten holds a new entity), by the rules at the top of this
        module (1, then the cell's entity, then 4 and 5)."""
        from .decoders.constraints import ALL_RULES, DocRules
        from .decoders.petra import CellEpisodes, decode_entities
        from .doc_helpers.memory_log import set_memory_log

        context, offsets = self._read(window + [piece])
        start = offsets[-1]
        first = next((t.i for t in context if t.idx >= start), len(context))
        reading = self._coref.read_on(context, first, self._memory)
        doc = self._piece_doc(context, start, piece)
        n_cells = reading.log["overwrite"].shape[1]
        if len(doc) != len(context) - first:  # the piece's own tokens differ from the window's (never seen)
            raise RuntimeError(
                f"Stream: piece {piece.index} has {len(doc)} tokens alone, {len(context) - first} in its window"
            )
        if self._episodes is None:
            self._episodes = CellEpisodes.empty(n_cells)
            self._cells = [_Cell() for _ in range(n_cells)]
        mentions, episodes = decode_entities(
            reading.log, threshold=reading.decoding.threshold, rules=DocRules(doc, ALL_RULES), state=self._episodes
        )
        self._memory, self._episodes = reading.state, episodes
        set_memory_log(doc, reading.log)
        tagged = is_tagged(doc)
        assigned: Dict[Tuple[int, int], int] = {}
        by_start = sorted(
            ((span, key) for key, spans in mentions.items() for span in spans), key=lambda x: (x[0][0], -x[0][1])
        )
        for (s, e), (cell_index, episode) in by_start:
            cell = self._cells[cell_index]
            if cell.episode != episode:  # the cell was overwritten: a new entity
                cell.episode, cell.entity, cell.name, cell.pending = episode, 0, None, None
            span = doc[s : e + 1]
            chars = (span.start_char, span.end_char)
            if piece.speaker is not None and _is_first_person(span):
                assigned[chars] = self._speaker_entity(piece.speaker)
                cell.entity = cell.entity or assigned[chars]
                continue
            if cell.entity and cell.entity not in self._entities:  # left the table, still in a cell
                self._entities[cell.entity] = StreamEntity(cell.entity, cell.name)
            if not cell.entity:
                if cell.pending is None and reading.decoding.min_mentions > 1:
                    cell.pending = (piece.index, chars[0], chars[1])
                    representative = representative_of([span], tagged)
                    cell.name = representative_name(representative, tagged) if representative is not None else None
                    continue
                spans = [doc[a : b + 1] for a, b in mentions[(cell_index, episode)]]
                representative = representative_of(spans, tagged)
                # the pending first mention's name (its piece may have left the window) before this piece's
                name = cell.name or (
                    representative_name(representative, tagged) if representative is not None else None
                )
                cell.entity = self._named_or_new(name)
                cell.name = self._entities[cell.entity].name
                if cell.pending is not None:
                    pending_piece, a, b = cell.pending
                    if pending_piece == piece.index:
                        assigned[(a, b)] = cell.entity
                    else:
                        self._record_in_piece(window, pending_piece, a, b, cell.entity)
                    cell.pending = None
            assigned[chars] = cell.entity
        self._speaker_pronouns(doc, 0, piece, assigned)
        self._count(piece, assigned)
        return self._write_mentions(doc, piece)

    def _named_or_new(self, name: Optional[str]) -> int:
        """Rules 4 and 5: the entity of this name (a capitalized one), else a new one."""
        if name and name[:1].isupper():
            for entity in reversed(self._entities.values()):
                if entity.name == name:
                    return entity.id
        return self._new_entity(name)

    def _speaker_entity(self, speaker: str) -> int:
        """The speaker's entity: the one that is the speaker, else the
        latest one named as the speaker (Ann's "Hi Ben" before Ben speaks),
        else a new one."""
        for entity in self._entities.values():
            if entity.speaker == speaker:
                return entity.id
        named = [e for e in self._entities.values() if e.speaker is None and e.name == speaker]
        entity_id = named[-1].id if named else self._new_entity(speaker)
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
                self._record_in_piece(
                    window, earlier.index, span.start_char - offset, span.end_char - offset, entity_id
                )
                return

    def _record_in_piece(self, window: List[_Piece], index: int, start: int, end: int, entity_id: int) -> None:
        """An earlier piece's mention joins an entity (for the pieces to come;
        its Doc, returned already, is not changed: the mention is in this
        piece's doc.user_data[JOINED_KEY])."""
        self._entities[entity_id].mentions += 1
        self._joined.append((index, start, end, entity_id))
        for earlier in window:
            if earlier.index == index:
                earlier.mentions.append((start, end, entity_id))

    def _piece_doc(self, context: "Doc", start: int, piece: _Piece) -> "Doc":
        """The new piece as a Doc of its own, with the context's annotations
        and the speaker; no mentions yet."""
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
                doc.from_array(cast(Any, attrs), cast(Any, sliced.to_array(cast(Any, attrs))))
        if doc is None or doc.text != piece.text:
            # no tokens, or (never seen) tokens across the join: the piece's
            # own tokens, without the pipeline's other annotations
            doc = self.nlp.make_doc(piece.text)
        doc.user_data[PIECE_KEY] = piece.index
        if piece.speaker is not None and len(doc):
            turn = doc.char_span(0, len(doc.text), label=piece.speaker, alignment_mode="expand")
            if turn is not None:
                doc.spans[SPEAKERS_KEY] = [turn]
        return doc

    def _write_mentions(self, doc: "Doc", piece: _Piece) -> "Doc":
        """The piece's mentions as doc.spans[f"{prefix}_{entity id}"]."""
        by_entity: Dict[int, List["Span"]] = {}
        for s, e, entity_id in piece.mentions:
            mention = doc.char_span(s, e, alignment_mode="expand")
            if mention is not None and len(mention):
                by_entity.setdefault(entity_id, []).append(mention)
        for entity_id in sorted(by_entity):
            doc.spans[cluster_key(entity_id, self.prefix)] = by_entity[entity_id]
        doc.user_data[JOINED_KEY] = list(self._joined)
        return doc

    def _prune(self) -> None:
        """Keep the window and the table within their bounds."""
        self._pieces = _latest_within(self._pieces, self.window_tokens)
        while len(self._entities) > self.max_entities:
            self._entities.popitem(last=False)


def join_pieces(docs: Iterable["Doc"], *, prefix: str = CLUSTER_PREFIX) -> "Doc":
    """The Docs a `Stream` returned, in order, as one document: the stream
    read to its end as if it were one text.

    The text is the pieces' texts joined as the stream joins its window (a
    space after a piece that does not end in whitespace), with the pieces'
    tokens and annotations; each entity is one cluster,
    doc.spans[f"{prefix}_{entity id}"], holding its mentions of every piece
    and the earlier pieces' mentions that joined it later (each piece's
    doc.user_data["stream_joined"]; a joined mention of a piece not among
    `docs` is left out); the speakers are doc.spans["speakers"], a span a
    piece. An entity mentioned once in the pieces given is a cluster of one
    mention (a speaker's lone "I").

    docs (Iterable[Doc]): the pieces' Docs, as `Stream.add` returned them,
        in the order read (the Stream's vocab: one pipeline's).
    prefix (str): the pieces' cluster prefix (the Stream's `prefix`).
    RETURNS (Doc): the document.
    RAISES ValueError: no Docs, or Docs out of the order they were read.
    """
    from spacy.tokens import Doc

    pieces = list(docs)
    if not pieces:
        raise ValueError("join_pieces: no Docs to join")
    indexes = [d.user_data.get(PIECE_KEY) for d in pieces]
    known = [i for i in indexes if isinstance(i, int)]
    if known != sorted(set(known)):
        raise ValueError(f"join_pieces: the Docs are not in the order the stream read them (pieces {known})")
    # (spaCy's stub of from_docs lacks its `exclude`)
    joined = Doc.from_docs(pieces, ensure_whitespace=True, exclude=["spans", "user_data", "tensor"])  # type: ignore[call-arg]
    offsets: List[int] = []
    position = 0
    for d in pieces:
        offsets.append(position)
        position += len(d.text)
        if len(d) and not d[-1].is_space and not d[-1].whitespace_:
            position += 1
    offset_of = {i: off for i, off in zip(indexes, offsets) if isinstance(i, int)}
    by_entity: Dict[int, Dict[Tuple[int, int], None]] = {}
    speakers = []
    for d, offset in zip(pieces, offsets):
        for entity_id, group in numbered_clusters(d, prefix):
            mentions = by_entity.setdefault(entity_id, {})
            for span in group:
                mentions[(offset + span.start_char, offset + span.end_char)] = None
        for index, start, end, entity_id in d.user_data.get(JOINED_KEY, ()):
            if index in offset_of:
                by_entity.setdefault(entity_id, {})[(offset_of[index] + start, offset_of[index] + end)] = None
        for turn in d.spans.get(SPEAKERS_KEY, ()):
            turn_span = joined.char_span(offset + turn.start_char, offset + turn.end_char, label=turn.label_)
            if turn_span is not None:
                speakers.append(turn_span)
    for entity_id in sorted(by_entity):
        found = [joined.char_span(s, e, alignment_mode="expand") for s, e in sorted(by_entity[entity_id])]
        cluster = [s for s in found if s is not None and len(s)]
        if cluster:
            joined.spans[cluster_key(entity_id, prefix)] = cluster
    if speakers:
        joined.spans[SPEAKERS_KEY] = speakers
    return joined


def _latest_within(pieces: List[_Piece], budget: int) -> List[_Piece]:
    """The latest whole pieces whose tokens fit in `budget`, in text order."""
    kept: List[_Piece] = []
    for piece in reversed(pieces):
        if piece.n_tokens > budget:
            break
        budget -= piece.n_tokens
        kept.append(piece)
    return kept[::-1]


def _is_first_person(span: "Span") -> bool:
    return len(span) == 1 and span[0].lower_ in FIRST_PERSON


def _annotated_attrs(doc: "Doc") -> List[str]:
    """The token attributes the pipeline set on this Doc (to copy them)."""
    attrs = []
    for name, attr_set in (
        ("TAG", ["TAG"]),
        ("POS", ["POS"]),
        ("MORPH", ["MORPH"]),
        ("LEMMA", ["LEMMA"]),
        ("DEP", ["DEP", "HEAD"]),
        ("SENT_START", ["SENT_START"]),
        ("ENT_IOB", ["ENT_IOB", "ENT_TYPE"]),
    ):
        if doc.has_annotation(name):
            attrs.extend(attr_set)
    if "DEP" in attrs and "SENT_START" in attrs:  # the parse sets the sentences
        attrs.remove("SENT_START")
    return attrs


def _check_positive(name: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"Stream: {name} must be a positive integer, got {value!r}")
