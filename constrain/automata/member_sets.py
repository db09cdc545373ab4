"""Objects whose members come in any order, kept exact by the matcher.

``property_order="any"`` lets a text write an object's members in any order, each
at most once, the required ones all present.  As a regular language that is the
subset construction over the members (``2**k`` copies of the values for ``k``
members), which the emitter builds only for a few members.  Here the language is
the plain loop ``{ member (, member)* }`` instead (any listed member, or an extra
one the schema allows, as often as the text likes), one callee per kind of object
(:class:`~.pushdown.PushdownDFA` keeps which block each configuration is in), and
the matcher keeps what the loop forgets, as it keeps a unique array's items
(:mod:`.unique_items`):

* *The keys written are textual.*  "The keys written directly in the innermost open
  object" is a function of the text alone, so one record of the text
  (:class:`_Text`: a stack of the open containers, each object's keys) serves every
  configuration.  A configuration in such a callee applies it only at its own
  object's level (:func:`member_roles` labels the callee's states with where they
  are: between members, or inside a member's key), not inside the values.
* *Few bytes can fail.*  A key is *blocked* when its object holds it already or when
  no way to end is left after it (:meth:`MemberRule.feasible`: required names,
  ``minProperties``, ``maxProperties``, member groups over names).  Where
  ``maxProperties`` leaves room only for names the rule needs, every other key is
  blocked too, and the keys left are a few listed names (:meth:`MemberSetAutomaton.only`).
  A configuration there dies on the quote that closes a blocked key; on a comma when
  no key is left to write; inside a key, once every way to finish it is blocked; and
  on the closing brace unless its :class:`MemberRule` holds.  The emitter uses the
  loop only outside products, where nothing else can fail, so every configuration
  that survives those checks can finish.
* *Masks are the pushdown automaton's rows* (memoised by configuration) less the
  tokens whose simulation kills every configuration; only tokens that could fail
  are simulated: by their quotes (:func:`~.unique_items.written_suspects`), and by
  the commas and closing braces they hold outside strings (:class:`_MemberIndex`).
  Inside a key that may only be one of a few names nearly every token fails, so
  there the mask is the other way round: only the tokens that may spell one of them
  are simulated, and only the survivors kept (:class:`_Kept`).
"""

from __future__ import annotations

import itertools
from typing import Any, Mapping, NamedTuple

import numpy as np

from .memo import BoundedMemo
from .pushdown import ByteReader, PushdownDFA, ReaderTokenPDA, cleared_bits, without_bits
from .json_strings import (GOES_ON, NO_TOKENS, StringEnds, all_token_ids, allowed_tokens, plain_tokens, quote_index,
                           token_ids, written_suspects)
from .unique_items import NO_ITEMS, ItemSuspects, ItemValues, UniqueItemsAutomaton

__all__ = ["MemberRule", "member_roles", "MemberSetAutomaton", "MemberSetTokenPDA"]

#: The matcher states whose failing tokens are remembered (a state's text holds what a
#: document wrote, so states repeat across documents only where their structure does).
MAX_REMEMBERED_STATES = 100_000

_QUOTE, _BACKSLASH, _COMMA, _COLON = ord('"'), ord("\\"), ord(","), ord(":")
_OPEN_OBJECT, _OPEN_ARRAY, _CLOSE_OBJECT, _CLOSE_ARRAY = ord("{"), ord("["), ord("}"), ord("]")
_WHITESPACE = tuple(b" \t\n\r")

#: :func:`member_roles`: a state between its object's members (reading ``,`` or ``}`` there
#: is the object's own), inside one of its keys, inside one just after a backslash, or
#: inside a string value of one of its members.
LEVEL, KEY, KEY_ESCAPED, VALUE = 1, 2, 3, 4


class MemberRule(NamedTuple):
    """What an object whose members come in any order must meet beyond its loop: the keys
    it requires (raw, as written between the quotes), ``minProperties``, how many keys it
    may hold at all (:data:`~.unique_items.GOES_ON`: unboundedly many), its member
    groups over key names: ``("anyOf" | "oneOf" | "if", branches)`` whose branches are
    pairs (the names each requires, the names it excludes), None where it requires one
    the object cannot have (for ``"if"``: the condition, ``then``, ``else``), or
    ``("dependency", (key, needed))`` (``{key}``, and the names it needs, None when one
    cannot be written); and ``maxProperties`` where it is below :attr:`keys`
    (:data:`~.unique_items.GOES_ON` where it binds nothing)."""

    required: frozenset[bytes]
    min_properties: int
    keys: int
    groups: tuple = ()
    max_properties: int = GOES_ON

    def closes(self, written: frozenset[bytes]) -> bool:
        """Whether an object holding the keys ``written`` may end."""
        return (len(written) >= self.min_properties and self.required <= written
                and (self.max_properties == GOES_ON or len(written) <= self.max_properties)
                and all(_group_holds(kind, branches, written) for kind, branches in self.groups))

    @property
    def relevant(self) -> frozenset[bytes]:
        """The names whose presence :meth:`closes` reads beyond the count."""
        names = set(self.required)
        for kind, branches in self.groups:
            for branch in branches:
                if branch is not None:
                    names |= branch if kind == "dependency" else branch[0] | branch[1]
        return frozenset(names)

    @property
    def searched(self) -> frozenset[bytes]:
        """The names :meth:`feasible` searches over: those the groups mention that are not
        required (every object that ends holds the required ones)."""
        return self.relevant - self.required

    def feasible(self, written: frozenset[bytes]) -> bool:
        """Whether some object holding ``written`` and more keys may end: the required
        names and a subset of the :attr:`searched` ones not written, then other names
        (they only add to the count) while ``maxProperties`` leaves room."""
        relevant, most = self.relevant, self.max_properties
        free = sorted(self.searched - written)
        spare = None if self.keys == GOES_ON else self.keys - len(relevant | written)  # other keys left
        for size in range(len(free) + 1):
            for more in itertools.combinations(free, size):
                held = written.union(self.required, more)
                if most != GOES_ON:
                    if len(held) > most:
                        continue
                    spare_here = most - len(held) if spare is None else min(spare, most - len(held))
                else:
                    spare_here = spare
                if ((spare_here is None or len(held) + spare_here >= self.min_properties)
                        and all(_group_holds(kind, branches, held) for kind, branches in self.groups)):
                    return True
        return False

    def open_to_others(self, written: frozenset[bytes]) -> bool:
        """Whether, after ``written``, a key :attr:`relevant` does not name may come next
        (only ``maxProperties`` can rule them all out: they count and nothing else)."""
        return self.max_properties == GOES_ON or self.feasible(written | {OTHER_KEY})

    def to_json(self) -> list:
        return [_names(self.required), self.min_properties, self.keys,
                [[kind, [_branch_json(kind, b) for b in branches]] for kind, branches in self.groups],
                self.max_properties]

    @classmethod
    def from_json(cls, data: list) -> "MemberRule":
        required, min_properties, keys, groups, max_properties = data
        return cls(_raw(required), int(min_properties), int(keys),
                   tuple((kind, tuple(_branch_from_json(kind, b) for b in branches)) for kind, branches in groups),
                   int(max_properties))


#: A key no text writes (JSON strings escape control bytes): :meth:`MemberRule.feasible`
#: reads it as one more name that no rule mentions.
OTHER_KEY = b"\x00"


def _branch_json(kind: str, branch: Any) -> Any:
    if branch is None:
        return None
    return _names(branch) if kind == "dependency" else [_names(branch[0]), _names(branch[1])]


def _branch_from_json(kind: str, data: Any) -> Any:
    if data is None:
        return None
    return _raw(data) if kind == "dependency" else (_raw(data[0]), _raw(data[1]))


def _names(keys: frozenset[bytes]) -> list[str]:
    return sorted(key.decode("utf-8", "surrogateescape") for key in keys)


def _raw(names: list[str]) -> frozenset[bytes]:
    return frozenset(name.encode("utf-8", "surrogateescape") for name in names)


def _group_holds(kind: str, branches: tuple, written: frozenset[bytes]) -> bool:
    """Whether the keys ``written`` meet one member group (see :class:`MemberRule`)."""
    if kind == "dependency":
        key, needed = branches
        return not key <= written or (needed is not None and needed <= written)
    met = [branch is not None and branch[0] <= written and not branch[1] & written for branch in branches]
    if kind == "if":
        return (met[0] and met[1]) or (not met[0] and met[2])
    return sum(met) == 1 if kind == "oneOf" else any(met)


# -- where a callee's states are ------------------------------------------------------
_OUT, _IN, _ESC = 0, 1, 2


def member_roles(pda: PushdownDFA, symbol: int) -> np.ndarray:
    """Per state of the callee ``symbol`` (an object read whole): :data:`LEVEL`, :data:`KEY`,
    :data:`KEY_ESCAPED`, :data:`VALUE`, or 0 (before or after the object, or deeper).

    A search from the callee's start that lexes JSON along the moves (calls read a
    whole value and keep the place: :func:`~._dfa_kernels.json_places`, compiled, as
    a callee holds its members' values inline, thousands of states inside strings).
    A JSON language's state has one place, since the brackets and quotes still to
    come fix it; a state reached at two places is an internal error.
    """
    from ._dfa_kernels import json_places

    lo, hi = pda.blocks[symbol]
    places, conflict = json_places(pda.trans[lo:hi], pda.call_ret[lo:hi], lo, pda.recursive[symbol].start)
    if conflict >= 0:
        raise ValueError(f"internal error: state {conflict + lo} of an any-order object is at two places "
                         "(please report the schema)")
    mode, key, depth = places & 3, (places >> 2) & 1, places >> 3
    level = (places >= 0) & (depth == 1)
    roles = np.where(mode == _OUT, LEVEL, np.where(key == 1, np.where(mode == _IN, KEY, KEY_ESCAPED), VALUE))
    return np.where(level, roles, 0).astype(np.int8)


# -- the text's record ------------------------------------------------------------------
class _Text(NamedTuple):
    """What the text says about objects: the open containers, innermost last (an object's
    keys written so far, or None for an array), whether the innermost object's next
    string is a key, and the string being read (None outside one), whether its last
    byte was an escaping backslash, and whether it is a key.  Where the document has
    unique arrays too, ``items`` is their record (:class:`~.unique_items.ItemTrack`)."""

    containers: tuple = ()
    expecting_key: bool = False
    string: bytes | None = None
    escaped: bool = False
    key: bool = False
    items: tuple | None = None

    @property
    def keys(self) -> frozenset[bytes] | None:
        """The keys of the innermost container when it is an object (None otherwise)."""
        return self.containers[-1] if self.containers else None


_START = _Text()


def _lexed(text: _Text, byte: int, items: tuple | None) -> _Text:
    """The record after one more byte of a JSON text, ``items`` its unique arrays' record.

    Records are built whole (a byte of a member's text is one tuple, not a
    ``_replace`` per changed field): simulating suspect tokens steps thousands of
    bytes per mask inside any-order objects, and ``_replace`` was a third of it."""
    containers, expecting_key, string, escaped, key, _ = text
    if string is not None:
        if escaped or byte != _QUOTE:
            # Only keys are kept (a unique array's items are in ``items``): a value's text
            # stays b"", so records inside values are equal whatever they hold, and
            # their steps are shared (:meth:`MemberSetAutomaton.step`).
            if key:
                string += bytes((byte,))
            return _Text(containers, expecting_key, string, byte == _BACKSLASH and not escaped, key, items)
        if key:
            containers = containers[:-1] + (containers[-1] | {string},)
        return _Text(containers, False, None, False, False, items)
    if byte == _QUOTE:
        return _Text(containers, expecting_key, b"", escaped, expecting_key, items)
    if byte == _OPEN_OBJECT:
        return _Text(containers + (frozenset(),), True, None, False, False, items)
    if byte == _OPEN_ARRAY:
        return _Text(containers + (None,), False, None, False, False, items)
    if byte in (_CLOSE_OBJECT, _CLOSE_ARRAY):
        return _Text(containers[:-1], False, None, False, False, items)
    if byte == _COMMA:
        expecting_key = bool(containers) and containers[-1] is not None
    elif items is text.items:
        return text
    return _Text(containers, expecting_key, string, escaped, key, items)


_UNKNOWN = object()  # a step not taken yet (None is a step that leaves the language)


class MemberSetAutomaton(ByteReader):
    """A :class:`PushdownDFA` whose callees ``rules`` names are objects whose members come in
    any order, each once, their :class:`MemberRule` met; and those ``values`` names (if
    any) arrays of distinct items (:class:`~.unique_items.UniqueItemsAutomaton`).

    A state is ``(configurations, text)``: the pushdown automaton's state and the
    :class:`_Text` record.  Configurations in those callees are dropped where their
    object would repeat a key, could go on only by repeating one, or ends unmet (see
    the module's docstring), or where their array would repeat an item; the others
    read on.  The two kinds of callees are disjoint blocks, so the two filters are
    applied one after the other.
    """

    def __init__(self, pda: PushdownDFA, rules: Mapping[int, MemberRule],
                 values: Mapping[int, ItemValues] | None = None) -> None:
        self.pda = pda
        #: The unique arrays' reader (None: the document has none).
        self.unique = UniqueItemsAutomaton(pda, values) if values else None
        self.rules = list(rules.values())
        rule_of = np.full(pda.stride, -1, dtype=np.int64)
        roles = np.zeros(pda.stride, dtype=np.int8)
        for index, symbol in enumerate(rules):
            lo, hi = pda.blocks[symbol]
            rule_of[lo:hi] = index
            roles[lo:hi] = member_roles(pda, symbol)
        self._rule_of, self._roles = rule_of.tolist(), roles.tolist()
        self.ends = StringEnds(pda.trans)
        self._ahead = BoundedMemo(100_000)  # (state, rule, written) -> bool
        self._blocked = BoundedMemo(100_000)  # (rule, written) -> keys not next
        self._only = BoundedMemo(100_000)  # (rule, written) -> the only keys next, or None
        self._steps = BoundedMemo(100_000)  # (state, byte) -> state or None
        self._exhausted = BoundedMemo(100_000)  # (rules, written, slack) -> bool
        #: Whether some rule has member groups or ``maxProperties`` (keys may be refused
        #: before they are written).
        self.grouped = any(rule.groups or rule.max_properties != GOES_ON for rule in self.rules)
        #: Whether some rule refuses a name before any is written (an object opening may fail).
        self.blocked_at_start = any(self.blocked(rule, frozenset()) or self.only(rule, frozenset()) is not None
                                    for rule in range(len(self.rules)))

    @property
    def start(self) -> tuple:
        return (self.pda.start, _START if self.unique is None else _START._replace(items=NO_ITEMS))

    def rules_in(self, configs: tuple, top: bool = False) -> frozenset[int]:
        """The rules of the any-order objects some frame of ``configs`` is in (``top``: per
        configuration closed, only the topmost frame at its own object's level: the object
        a closing brace may end, or one around it)."""
        rule_of, roles, stride = self._rule_of, self._roles, self.pda.stride
        if not top:
            return frozenset(rule_of[s % stride] for config in configs for s in config) - {-1}
        found = set()
        for config in self.pda.closure(configs):
            for state in reversed(config):
                if roles[state % stride]:
                    found.add(rule_of[state % stride])
                    break
        return frozenset(found)

    def exhausted(self, rules: frozenset[int], written: frozenset[bytes], slack: int) -> bool:
        """Whether some of ``rules`` that could hold ``written`` has at most ``slack`` keys
        left to write after it, or may write only a few names next (:meth:`only`: whether
        the table can still spell one is left to the simulation).

        Memoised: a mask's suspects ask it three times and once per object around the
        text, and it was a third of their time (every rule's :meth:`keys_left`)."""
        key = (rules, written, slack)
        found = self._exhausted.get(key)
        if found is None:
            found = self._exhausted.remember(key, self._exhausted_now(rules, written, slack))
        return found

    def _exhausted_now(self, rules: frozenset[int], written: frozenset[bytes], slack: int) -> bool:
        """:meth:`exhausted`, computed."""
        for rule in rules:
            if self._may_hold(self.rules[rule], written) and self.only(rule, written) is not None:
                return True
            left = self.keys_left(rule, written)
            if left is not None and left <= slack:
                return True
        return False

    def keys_left(self, rule: int, written: frozenset[bytes]) -> int | None:
        """How many more keys an object of rule ``rule`` holding ``written`` may write at
        most (None: unboundedly many, or ``written`` is too many for such an object)."""
        met = self.rules[rule]
        if not self._may_hold(met, written):
            return None
        only = self.only(rule, written)
        if only is not None:
            left = len(only)
        else:
            left = None if met.keys == GOES_ON else met.keys - len(self.blocked(rule, written))
        if met.max_properties != GOES_ON:
            room = met.max_properties - len(written)
            left = room if left is None else min(left, room)
        return left

    @staticmethod
    def _may_hold(met: MemberRule, written: frozenset[bytes]) -> bool:
        """Whether an object of ``met`` may hold as many keys as ``written``."""
        return all(most == GOES_ON or len(written) <= most for most in (met.keys, met.max_properties))

    def step(self, state: tuple, byte: int) -> tuple | None:
        """The state after one byte, or None when the text left the language.

        Memoised: a mask reads its suspect tokens from one state, and many of them go on
        alike (``","`` after ``.``, ``)`` or a space inside a value)."""
        key = (state, byte)
        found = self._steps.get(key, _UNKNOWN)
        if found is _UNKNOWN:
            found = self._steps.remember(key, self._step(state, byte))
        return found

    def _step(self, state: tuple, byte: int) -> tuple | None:
        """:meth:`step`, computed."""
        configs, text = state
        written = text.keys
        closed = self.pda.closure(configs)
        if written is not None and text.string is None and byte == _CLOSE_OBJECT:
            closed = self._kept(closed, lambda rule, role: role != LEVEL or self.rules[rule].closes(written))
        elif text.key and not text.escaped and byte == _QUOTE and (self.grouped or text.string in written):
            closed = self._kept(closed, lambda rule, role: role != KEY or self.may_write(rule, written, text.string))
        unique = self.unique
        items = text.items
        if unique is not None:
            items, repeated = unique.track(items, byte)
            closed = unique.before(closed, items, byte, repeated)
        after = _lexed(text, byte, items)
        moved = self.pda.move(closed, byte)
        keys = after.keys
        if moved and keys is not None and (keys or self.grouped):
            if text.string is None and byte == _COMMA:
                moved = self._moved_kept(moved, LEVEL, lambda rule, state: self._key_ahead(state, rule, keys))
            elif after.key and after.string is not None:
                moved = self._moved_kept(moved, KEY_ESCAPED if after.escaped else KEY, lambda rule, state: self._key_open(
                    rule, state, after.string, after.escaped, keys))
        if unique is not None:
            moved = unique.after(moved, items)
            recorded = unique.recorded(moved, items)
            if recorded is not items:
                after = after._replace(items=recorded)
        return (moved, after) if moved else None

    def blocked(self, rule: int, written: frozenset[bytes]) -> frozenset[bytes]:
        """The keys an object of rule ``rule`` holding ``written`` may not write next: those
        written, and those after which no way to end is left (:meth:`MemberRule.feasible`)."""
        found = self._blocked.get((rule, written))
        if found is None:
            met = self.rules[rule]
            if not met.groups and met.max_properties == GOES_ON:  # required keys and minProperties can be met later
                return written
            found = written | {name for name in met.relevant - written if not met.feasible(written | {name})}
            self._blocked.remember((rule, written), found)
        return found

    def only(self, rule: int, written: frozenset[bytes]) -> frozenset[bytes] | None:
        """The keys an object of rule ``rule`` holding ``written`` may write next when they
        are few (``maxProperties`` leaves room for the names its rule needs and no other:
        a subset of :attr:`MemberRule.relevant`), or None: any key but the
        :meth:`blocked` ones."""
        key = (rule, written)
        found = self._only.get(key, _UNKNOWN)
        if found is _UNKNOWN:
            met = self.rules[rule]
            found = None if met.open_to_others(written) else met.relevant - self.blocked(rule, written)
            self._only.remember(key, found)
        return found

    def may_write(self, rule: int, written: frozenset[bytes], name: bytes) -> bool:
        """Whether an object of rule ``rule`` holding ``written`` may write the key ``name`` next."""
        only = self.only(rule, written)
        return name not in self.blocked(rule, written) if only is None else name in only

    def restricted(self, configs: tuple, written: frozenset[bytes]) -> bool:
        """Whether some configuration of ``configs`` whose topmost frame in an any-order
        object is at that object's level (between members, in a key or a value: a call
        into a free value may be above it) is in an object holding ``written`` that may
        write only a few names next (:meth:`only`).  A superset where the free value
        opened an object of its own (``written`` is then its keys)."""
        rule_of, roles, stride = self._rule_of, self._roles, self.pda.stride
        for config in self.pda.closure(configs):
            for state in reversed(config):
                state %= stride
                if roles[state]:
                    if self.only(rule_of[state], written) is not None:
                        return True
                    break
        return False

    def split_by_names(self, configs: tuple, written: frozenset[bytes]) -> tuple[tuple, frozenset[bytes], tuple]:
        """``configs`` parted into those inside a key of an object holding ``written`` that
        may write only a few names next (:meth:`only`), every one of their closed
        configurations, and the others; and the names the first may write."""
        rule_of = self._rule_of
        narrowed, others, names = [], [], set()
        for config in configs:
            found = [None if state is None else self.only(rule_of[state], written)
                     for state in self._key_states((config,))]
            if found and all(only is not None for only in found):
                narrowed.append(config)
                names.update(*found)
            else:
                others.append(config)
        return tuple(narrowed), frozenset(names), tuple(others)

    def keys_go_on(self, configs: tuple, escaped: bool) -> bool:
        """Whether every configuration of ``configs`` in an any-order object's key is where
        that key can go on forever wherever it goes (:meth:`StringEnds.always_goes_on`:
        an object open to additional names).  Bytes that stay inside such a key are then
        never refused where only :meth:`blocked` names are refused (:meth:`_key_open`)."""
        ends = self.ends
        return all(state is None or ends.always_goes_on(state, escaped) for state in self._key_states(configs))

    def _key_states(self, configs: tuple):
        """Per closed configuration of ``configs``: its table state where it is in an
        any-order object's key, else None."""
        roles, stride = self._roles, self.pda.stride
        for config in self.pda.closure(configs):
            state = config[-1] % stride
            yield state if roles[state] in (KEY, KEY_ESCAPED) else None

    def blocked_by(self, rules, written: frozenset[bytes]) -> frozenset[bytes]:
        """The keys some of ``rules`` blocks after ``written`` (see :meth:`blocked`)."""
        return frozenset().union(written, *(self.blocked(rule, written) for rule in rules))

    def _kept(self, closed: list, keep) -> list:
        """The closed configurations ``closed`` less those in an any-order object for whose
        rule index and role ``keep`` says no."""
        rule_of, roles, stride = self._rule_of, self._roles, self.pda.stride
        kept = []
        for config in closed:
            state = config[-1] % stride
            rule = rule_of[state]
            if rule < 0 or keep(rule, roles[state]):
                kept.append(config)
        return kept

    def _moved_kept(self, configs: tuple, role: int, keep) -> tuple:
        """``configs`` less those now at ``role`` in an any-order object where ``keep`` says no
        of their rule index and table state."""
        rule_of, roles, stride = self._rule_of, self._roles, self.pda.stride
        return tuple(c for c in configs
                     if roles[c[-1] % stride] != role or keep(rule_of[c[-1] % stride], c[-1] % stride))

    def _key_open(self, rule: int, state: int, string: bytes, escaped: bool, written: frozenset[bytes]) -> bool:
        """Whether from ``state`` inside a key of an object of rule ``rule`` holding
        ``written`` (``string`` read so far, ``escaped`` after its backslash) the key
        can close as one that object may write (:meth:`may_write`)."""
        only = self.only(rule, written)
        if only is None:
            return self.ends.fresh(state, string, escaped, self.blocked(rule, written))
        return any(name.startswith(string) and self._spells(state, name[len(string):] + b'"') for name in only)

    def _spells(self, state: int, data: bytes) -> bool:
        """Whether the table reads ``data`` from ``state`` (inside one callee's key)."""
        trans = self.pda.trans
        for byte in data:
            state = int(trans[state, byte])
            if state < 0:
                return False
        return True

    def _key_ahead(self, state: int, rule: int, written: frozenset[bytes]) -> bool:
        """Whether from ``state`` (just after a comma between members) an object of rule
        ``rule`` holding ``written`` can write a key: through whitespace to a quote,
        then a key it may write (:meth:`_key_open`)."""
        found = self._ahead.get((state, rule, written))
        if found is None:
            trans, found = self.pda.trans, False
            todo, seen = [state], {state}
            while todo and not found:
                row = trans[todo.pop()]
                found = row[_QUOTE] >= 0 and self._key_open(rule, int(row[_QUOTE]), b"", False, written)
                for byte in _WHITESPACE:
                    nxt = int(row[byte])
                    if nxt >= 0 and nxt not in seen:
                        seen.add(nxt)
                        todo.append(nxt)
            self._ahead.remember((state, rule, written), found)
        return found

    def is_accepting(self, state: tuple) -> bool:
        return self.pda.is_accepting(state[0])


# -- token masks ------------------------------------------------------------------------
#: Kinds of tokens by what they do outside strings (bits of :class:`_MemberIndex`'s ``kinds``).
#: ``_CLOSING``: one closing bracket, a brace (it ends the innermost object; what follows is
#: a pop's); ``_CLOSING_MORE``: a closing brace among others; ``_COMMAS``: a comma in the
#: innermost container and no key closed after it (it fails only where no key is left);
#: ``_COMMAS_KEYED``: a comma and a key closed after it; ``_POPS``: a closing bracket
#: followed by a comma or a quote, no string closed and none left open with anything in
#: it after the bracket (it fails only where the object around is out of keys);
#: ``_POPS_KEYED``: the other closing brackets followed by a comma or a quote; ``_OPENS``:
#: an opening brace followed by a comma or by a key closed (the object it opens may fail
#: inside the token); ``_OPENS_TAIL``: an opening brace and a key begun (it fails only
#: where a rule blocks names before any is written).
_CLOSING, _CLOSING_MORE, _COMMAS, _COMMAS_KEYED, _POPS, _POPS_KEYED, _OPENS, _OPENS_TAIL = (1 << k for k in range(8))


class _MemberIndex(NamedTuple):
    """A vocabulary's tokens of some kind (``ids``) and their kinds (``kinds``, by token),
    read from outside a string (``[0]`` of each pair) or from inside one (``[1]``)."""

    ids: tuple[np.ndarray, np.ndarray]
    kinds: tuple[dict[int, int], dict[int, int]]
    #: The ids of some kind of ``wanted``, by ``(inside, wanted)`` (filled as asked: a mask
    #: filters a thousand tokens by kind in numpy, not one by one in Python).
    of_kinds: dict[tuple[int, int], np.ndarray]

    def wanted(self, inside: int, wanted: int) -> np.ndarray:
        """The ids of the tokens with some kind of ``wanted``, read from ``inside``."""
        found = self.of_kinds.get((inside, wanted))
        if found is None:
            kinds = self.kinds[inside]
            found = self.of_kinds[(inside, wanted)] = token_ids(
                [token for token in self.ids[inside].tolist() if kinds[token] & wanted])
        return found


_MEMBER_INDEXES: dict[str, _MemberIndex] = {}


def _member_index(info) -> _MemberIndex:
    """The :class:`_MemberIndex` of ``info``'s vocabulary (built once per vocabulary)."""
    found = _MEMBER_INDEXES.get(info.hash)
    if found is None:
        kinds: tuple[dict[int, int], dict[int, int]] = ({}, {})
        for token, data in enumerate(info.token_bytes):
            if any(b in data for b in b'"{},]'):
                for inside in (0, 1):
                    bits = _structure(data, bool(inside))
                    if bits:
                        kinds[inside][token] = bits
        found = _MemberIndex((token_ids(sorted(kinds[0])), token_ids(sorted(kinds[1]))), kinds, {})
        _MEMBER_INDEXES[info.hash] = found
    return found


def _structure(data: bytes, inside: bool) -> int:
    """The kinds (bits) of ``data``, read from inside a string or outside one.  Brackets the
    token opens and closes itself are its own (``{}`` is no closing brace of the object
    around it)."""
    closers: list[int] = []  # the closing brackets of containers open before the token
    opened: list[int] = []  # the containers the token opens and has not closed
    after_closer = after_comma = after_open = 0  # quotes after the first of each
    comma = opens = acts_after_closer = False
    escaped = False
    tail = None  # the open string's bytes after the last quote (None: not in a string)
    for byte in data:
        if inside:
            if escaped:
                escaped = False
            elif byte == _BACKSLASH:
                escaped = True
            elif byte == _QUOTE:
                inside, tail = False, None
                after_closer, after_comma = after_closer + bool(closers), after_comma + comma
                continue
            if tail is not None:
                tail += 1
            continue
        if byte == _QUOTE:
            inside, tail = True, 0
            after_closer, after_comma = after_closer + bool(closers), after_comma + comma
            after_open += _OPEN_OBJECT in opened
            acts_after_closer |= bool(closers)
        elif byte in (_OPEN_OBJECT, _OPEN_ARRAY):
            opened.append(byte)
        elif byte in (_CLOSE_OBJECT, _CLOSE_ARRAY):
            if opened:
                opens |= opened.pop() == _OPEN_OBJECT and after_open >= 2  # an object of its own, with a key
            else:
                closers.append(byte)
        elif byte == _COMMA:
            if opened:
                opens |= _OPEN_OBJECT in opened
            else:
                acts_after_closer |= bool(closers)
                comma = comma or not closers
    bits = 0
    if _CLOSE_OBJECT in closers:
        bits |= _CLOSING if closers == [_CLOSE_OBJECT] else _CLOSING_MORE
    if comma:
        bits |= _COMMAS_KEYED if after_comma >= 2 else _COMMAS
    if acts_after_closer:
        bits |= _POPS_KEYED if after_closer >= 2 or (tail or 0) > 0 else _POPS
    if opens or after_open >= 2:
        bits |= _OPENS
    elif after_open == 1 and _OPEN_OBJECT in opened and tail is not None:  # {" fails where no key may come
        bits |= _OPENS_TAIL
    return bits


class _Kept(NamedTuple):
    """A mask inside a key that may only be one of a few names: the tokens kept there, as
    the packed words they touch (``where``) and their bits in each (``bits``), and the
    configurations masked on their own (``others``: their keys are free)."""

    where: np.ndarray
    bits: np.ndarray
    others: tuple


class MemberSetTokenPDA(ReaderTokenPDA):
    """Token masks of a :class:`MemberSetAutomaton`: the pushdown automaton's rows, less the
    tokens whose simulation kills every configuration (only suspects are simulated)."""

    def __init__(self, automaton: PushdownDFA, info, disk=None, rules: Mapping[int, MemberRule] | None = None,
                 values: Mapping[int, ItemValues] | None = None) -> None:
        super().__init__(automaton, info, disk)
        self.members = self.reader = MemberSetAutomaton(automaton, rules or {}, values)
        self._quotes = quote_index(info)
        self._plain = plain_tokens(info)
        self._index = _member_index(info)
        unique = self.members.unique
        self._item_suspects = None if unique is None else ItemSuspects(unique, info, self.trie.max_depth)
        self._rules: dict[tuple, frozenset[int]] = {}
        # By matcher state: the suspects that fail (cleared_bits).  A value's text is not
        # in the state (:func:`_lexed`), so a long value's tokens share one entry.
        self._killed = BoundedMemo(MAX_REMEMBERED_STATES)  # state -> kept keys or killed tokens

    def _cut_mask(self, state: tuple) -> np.ndarray:
        """The row of ``state``'s configurations less the tokens that fail there (remembered
        by state as :func:`cleared_bits`, or as :class:`_Kept` inside a key that may only be
        one of a few names: more states than whole masks)."""
        words = self.configurations_mask(state[0])
        killed = self._killed.get(state)
        if killed is None:
            killed = self._kept_in_key(state)
            if killed is None:
                killed = self.killed(state, self._suspects(state[0], state[1], words))
            self._killed.remember(state, killed)
        if isinstance(killed, _Kept):
            return self._with_kept(words, killed, state[1])
        return without_bits(words, killed)

    def _with_kept(self, words: np.ndarray, kept: "_Kept", text: _Text) -> np.ndarray:
        """``words`` less every token but ``kept``'s, joined with the mask of its other
        configurations (memoised on their own)."""
        out = np.zeros_like(words)
        out[kept.where] = kept.bits
        out &= words
        if kept.others:
            out |= self.mask_words((kept.others, text))
        return out

    def _kept_in_key(self, state: tuple) -> "_Kept | None":
        """Inside a key that may only be one of a few names (:meth:`MemberSetAutomaton.only`):
        the tokens kept (:class:`_Kept`), or None elsewhere.

        Nearly every token is refused there, too many to simulate (a free key allows
        most of the vocabulary), so the simulated ones are those that may survive: the
        tokens with a quote, and the tokens without one that spell a beginning of what
        is left of some allowed name.  Configurations whose key is free are masked on
        their own (a token is kept when some configuration reads it)."""
        configs, text = state
        if not text.key or text.string is None:
            return None
        narrowed, names, others = self.members.split_by_names(configs, text.keys)
        if not narrowed:
            return None
        where, bits = self._kept_among_names((narrowed, text), self.configurations_mask(narrowed), names)
        return _Kept(where, bits, others)

    def _kept_among_names(self, state: tuple, words: np.ndarray, names: frozenset[bytes]) -> tuple:
        """:meth:`_kept_in_key` where every configuration's key is one of ``names``: the
        tokens that may close the key as one of them or leave it on a beginning of one
        (:func:`~.json_strings.written_suspects` of the names, the lookup by what each
        still needs that finds a unique array's repeats), simulated against ``words``
        (those configurations' rows).  The survivors as the packed words they touch and
        their bits there."""
        text = state[1]
        candidates = written_suspects(self._quotes, self._plain, words, names, text.string, text.escaped, True,
                                      self.trie.max_depth)
        kept = sorted(set(candidates))
        if not kept:
            return NO_TOKENS, np.zeros(0, dtype=np.uint32)
        where, cleared = cleared_bits(kept)
        bits = ~cleared
        refused = self.killed(state, kept)
        if refused:
            refused_where, keep = refused
            bits[np.searchsorted(where, refused_where)] &= keep
        return where, bits

    def _suspects(self, configs: tuple, text: _Text, words: np.ndarray) -> list[int]:
        """The allowed tokens that may kill a configuration (a superset: the simulation
        decides): by quotes where keys are blocked, and by kind (:data:`_CLOSING`...)
        where a rule could fail."""
        inside = int(text.string is not None)
        members = self.members
        wanted = _OPENS | (_OPENS_TAIL if members.blocked_at_start else 0)
        suspects: list[int] = []
        rules = self._rules_of(configs)
        objects = [keys for keys in text.containers if keys is not None]
        if rules and objects:
            wanted |= _COMMAS_KEYED | _POPS_KEYED
            top = text.keys
            if top is not None:
                blocked = members.blocked_by(rules, top)
                quotes = self._quotes
                # Where a key may begin or is being read, a token may write that key before
                # its comma or brace (the fuzzer's seed 19: '":"",\n' in the last key): one
                # key more, which may also break a member group that held.
                one_more = text.key or text.expecting_key
                restricted = members.restricted(configs, top)
                if restricted:  # a few names only: a comma may lead to a key begun wrong (',"x')
                    wanted |= _COMMAS
                if restricted and one_more:  # every token a key may begin or go on in
                    suspects = allowed_tokens(words, all_token_ids(len(words)) if text.key else quotes.any_quote)
                elif blocked:
                    first = text.key or text.string is None  # inside a value, the first quote closes it
                    open_rest = text.key and members.keys_go_on(configs, text.escaped)
                    suspects = written_suspects(quotes, self._plain, words, blocked, text.string, text.escaped, True,
                                                self.trie.max_depth, members.exhausted(rules, top, quotes.most_closed),
                                                first, open_rest)
                else:
                    suspects = allowed_tokens(words, (quotes.inside if inside else quotes.outside).several_ids)
                if members.exhausted(rules, top, int(one_more)):
                    wanted |= _COMMAS
                top_rules = self._rules_of(configs, top=True)
                if one_more and any(members.rules[rule].groups for rule in top_rules):
                    wanted |= _CLOSING | _CLOSING_MORE
                if not all(members.rules[rule].closes(top) for rule in top_rules):
                    wanted |= _CLOSING
            around = objects[:-1] if top is not None else objects  # the objects a closing bracket returns to
            if any(members.exhausted(rules, keys, 0) for keys in around):
                wanted |= _POPS
            if not all(members.rules[rule].closes(keys) for rule in rules for keys in objects):
                wanted |= _CLOSING_MORE
        suspects += allowed_tokens(words, self._index.wanted(inside, wanted))
        if self._item_suspects is not None:
            suspects += self._item_suspects(words, text.items)
        return suspects

    def _rules_of(self, configs: tuple, top: bool = False) -> frozenset[int]:
        """:meth:`MemberSetAutomaton.rules_in`, memoised by configurations."""
        key = (configs, top)
        found = self._rules.get(key)
        if found is None:
            found = self._rules.setdefault(key, self.members.rules_in(configs, top))
        return found
