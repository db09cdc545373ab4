"""Objects and arrays as graphs over member and item positions.

A state says what has been written (position, count, member groups' states, values
kept distinct), so optional members and capped counts share the rest of the value
instead of copying it; :class:`GraphBuilder` writes each separator once per state."""

from __future__ import annotations

from functools import partial

from ...automata.byte_dfa import build_byte_dfa
from ...automata.dfa_ops import difference, intersect
from ..regex import Automaton, Graph, RegexNode
from .layout import Layout
from .member_groups import Dependency, Presence, ValueClasses, groups_stepped, holds_past
from .trees import EMPTY, NOTHING, lit, seq


class _GraphBuilder:
    """States named by keys; member edges go through a shared "after the separator" state.

    Writing ``[,] member`` as two edges (separator into a mid state keyed by the
    member and where it leads, then the member) lets the first member and the
    following ones share one copy of the member's language: nested objects and
    arrays would otherwise double their automaton at every level.  The key must
    name the member: two members into one target must not share a mid state,
    or each source could take the other's member.

    A source writes its separator once, into its own "separated" state, from which
    every member it may write (and, after a member was written, every member a skip
    reaches) goes on without a byte.  With a separator per member and skips between
    the sources themselves, every later member's separator (its whitespace loops and
    comma) was in the determinised state after each value: 60 optional integer
    members made sets of 23 NFA states on average and took 11 ms to determinise,
    3.8 ms now (flexible whitespace; the DFA is the same size).
    """

    def __init__(self, separator: RegexNode) -> None:
        self.separator = separator
        self.index: dict[tuple, int] = {}
        self.edges: list[tuple[int, RegexNode, int]] = []
        self.member_edges: set[tuple[int, int, int]] = set()
        #: The skips after a member: target keys by source key (finals are found through them).
        self.skips: dict[tuple, list[tuple]] = {}

    def state(self, key: tuple) -> int:
        if key not in self.index:
            self.index[key] = len(self.index)
        return self.index[key]

    def _separated(self, source: tuple) -> int:
        """The state after ``source``'s separator (made, with its separator edge, on first use)."""
        key = ("sep",) + source
        if key not in self.index:
            self.edges.append((self.state(source), self.separator, self.state(key)))
        return self.index[key]

    def member(self, source: tuple, first: bool, target: tuple, node: RegexNode, node_id: int) -> None:
        # The mid state belongs to one member language: keyed by the target alone, two
        # members reaching the same target (capped counts) would take each other's edges.
        mid = self.state(("mid", node_id) + target)
        link = (self.state(source) if first else self._separated(source), -1, mid)
        if link not in self.member_edges:
            self.member_edges.add(link)
            self.edges.append((link[0], EMPTY, mid))
        edge = (mid, node_id, self.state(target))
        if edge not in self.member_edges:
            self.member_edges.add(edge)
            self.edges.append((mid, node, self.state(target)))

    def explore(self, start: tuple, moves, is_empty) -> None:
        """Every state reachable from ``start``, with its member edges.

        ``moves(key)`` yields ``(target, node, node_id)`` for each member that can be
        written at state ``key`` (none where a bound stops the count).  ``is_empty(key)``
        says whether nothing was written yet there: that member takes no separator.
        """
        self.state(start)
        seen = {start}
        queue = [start]
        while queue:
            key = queue.pop()
            for target, node, node_id in moves(key):
                self.member(key, is_empty(key), target, node, node_id)
                if target not in seen:
                    seen.add(target)
                    queue.append(target)

    def skip(self, source: tuple, first: bool, target: tuple) -> None:
        """Pass over a member from ``source`` to ``target`` writing nothing.  Before any
        member (``first``) the states themselves are joined; after one, the states after
        their separators, and the source ends the object wherever the target may."""
        if first:
            self.edges.append((self.state(source), EMPTY, self.state(target)))
            return
        self.edges.append((self._separated(source), EMPTY, self._separated(target)))
        self.skips.setdefault(source, []).append(target)

    def graph(self, start: tuple, is_final) -> RegexNode:
        final = {key: is_final(key) for key in self.index if key[0] not in ("mid", "sep")}
        # Skips are made position by position and lead one position on: their sources from
        # the last back, each target is settled before its source (no recursion: objects
        # of thousands of optional members).
        for source in reversed(list(self.skips)):
            final[source] = final[source] or any(final[target] for target in self.skips[source])
        finals = tuple(sorted(i for key, i in self.index.items() if final.get(key)))
        if not finals:
            return NOTHING
        return Graph(len(self.index), self.index[start], finals, tuple(self.edges))


def members_graph(members, extras, min_props: int, max_props: int | None, layout: Layout,
                   groups: list["Presence | Dependency"] = (),
                   variants: dict[int, "ValueClasses"] | None = None) -> RegexNode:
    """Object members in schema order, then extra members; counts tracked for min/maxProperties.

    States are (position in the member list, members written so far, where each
    presence group stands), the count capped where it no longer matters, so optional
    members never duplicate the rest of the object (a tree would, once per optional
    member).  ``variants`` splits a member's value into classes, each with the
    branches of each group it rules out (:meth:`SchemaEmitter._member_variants`).
    """
    variants = variants or {}
    cap = max(1, min_props, (max_props + 1) if max_props is not None else 0)
    n = len(members)
    builder = _GraphBuilder(layout.comma())
    start_status = tuple(group.start() for group in groups)
    if None in start_status:  # a group no object meets (its branches need names it cannot have)
        return NOTHING
    frontier = {(0, start_status)}
    builder.state(("at", 0, 0, start_status))
    for position, (key_text, value, required) in enumerate(members):
        nxt = set()
        nodes: dict[tuple, RegexNode] = {}  # one member node per class (their edges share it)
        for count, status in sorted(frontier):
            source = ("at", position, count, status)
            if max_props is None or count < max_props:
                target = min(count + 1, cap)
                classes_key, options = variants[position].options(status, partial(
                    holds_past, groups, status, position)) if position in variants else ((), None)
                if options is None:  # no constraint on the member is relevant here
                    options = [(value, None)]
                for index, (tree, ruled_out) in enumerate(options):
                    written = groups_stepped(groups, status, position, True, ruled_out)
                    if written is not None:
                        node_id = (position, classes_key, index)
                        if node_id not in nodes:
                            nodes[node_id] = seq(lit(key_text), layout.colon(), tree)
                        builder.member(source, count == 0, ("at", position + 1, target, written), nodes[node_id], node_id)
                        nxt.add((target, written))
            skipped = groups_stepped(groups, status, position, False)
            if not required and skipped is not None:
                builder.skip(source, count == 0, ("at", position + 1, count, skipped))
                nxt.add((count, skipped))
        frontier = nxt
    pending = sorted(frontier)
    done = set()
    while pending:
        count, status = pending.pop()
        if (count, status) in done:
            continue
        done.add((count, status))
        builder.state(("at", n, count, status))
        if max_props is not None and count >= max_props:
            continue
        target = min(count + 1, cap)
        for k, (keys, value) in enumerate(extras):
            builder.member(("at", n, count, status), count == 0, ("at", n, target, status),
                           seq(keys, layout.colon(), value), n + k)
        if extras and (target, status) not in done:
            pending.append((target, status))
    return builder.graph(("at", 0, 0, start_status),
                         lambda key: key[1] == n and key[2] >= min_props and (max_props is None or key[2] <= max_props)
                         and all(group.met(at) for group, at in zip(groups, key[3])))


def any_order_graph(members, extras, min_props: int, max_props: int | None, layout: Layout,
                     groups: list["Presence | Dependency"] = ()) -> RegexNode:
    """Members in any order, each at most once, required ones all present.

    A state is (set of listed members written, count of all members, capped):
    exact, and exponential in the number of listed members, hence the cap
    :data:`MAX_GRAPH_ORDER_MEMBERS`.
    """
    cap = max(1, min_props, (max_props + 1) if max_props is not None else 0)
    required = frozenset(i for i, member in enumerate(members) if member[2])
    builder = _GraphBuilder(layout.comma())
    start = ("at", frozenset(), 0)

    def moves(key):
        _, used, count = key
        if max_props is not None and count >= max_props:
            return
        target_count = min(count + 1, cap)
        for i in range(len(members)):
            if i not in used:
                yield ("at", used | {i}, target_count), seq(lit(members[i][0]), layout.colon(), members[i][1]), i
        for k, (keys, value) in enumerate(extras):
            yield ("at", used, target_count), seq(keys, layout.colon(), value), len(members) + k

    def groups_met(used: frozenset[int]) -> bool:
        return all(rule.satisfied_by(used) for rule in groups)

    builder.explore(start, moves, lambda key: key[2] == 0)
    return builder.graph(start, lambda key: required <= key[1] and key[2] >= min_props
                         and (max_props is None or key[2] <= max_props) and groups_met(key[1]))


def keys_by_value(members: list[tuple[str, RegexNode, bool]], extras: list[tuple[RegexNode, RegexNode]]
              ) -> list[tuple[RegexNode, list[RegexNode]]]:
    """A member loop's keys (listed names, extra name classes) grouped by equal value
    languages, in first-mention order.  The loop's matcher tells members apart by the
    names written, so the automaton need not: one copy of ``{"type": "string"}``
    after every key that takes it, not one per key."""
    groups: dict[RegexNode, list[RegexNode]] = {}
    for key, value, _ in members:
        groups.setdefault(value, []).append(lit(key))
    for names, value in extras:
        groups.setdefault(value, []).append(names)
    return list(groups.items())


def distinct_items_graph(positions: list[dict[str, RegexNode]], min_items: int, max_items: int | None,
                          layout: Layout) -> RegexNode:
    """Items each of a different value.  ``positions[i]`` spells, by value key, the
    values item i may take (the last entry: every later item).  A state is the set of
    values written, whose size is also the item count, hence the position."""
    builder = _GraphBuilder(layout.comma())
    node_ids: dict[tuple[int, str], int] = {}
    start = ("at", frozenset())

    def moves(key):
        used = key[1]
        if max_items is not None and len(used) >= max_items:
            return
        slot = min(len(used), len(positions) - 1)
        for value_key, value in positions[slot].items():
            if value_key not in used:
                yield ("at", used | {value_key}), value, node_ids.setdefault((slot, value_key), len(node_ids))

    builder.explore(start, moves, lambda key: not key[1])
    return builder.graph(start, lambda key: min_items <= len(key[1]) and (max_items is None or len(key[1]) <= max_items))


def items_graph(prefix, rest, min_items: int, max_items: int | None, contains, layout: Layout,
                separator: RegexNode | None = None) -> RegexNode:
    """Array items: position-specific schemas, then the rest; optional ``contains`` counting,
    given as (the language an item counted meets, the language an item not counted misses,
    low, high): the two differ where the context's depth cuts do (see ``_contained_items``).
    ``separator``: the comma to write (the layout's by default)."""
    hit_dfa, miss_dfa, low_c, high_c = contains if contains is not None else (None, None, 0, None)
    c_cap = max(low_c, (high_c + 1) if high_c is not None else 0)
    positions = len(prefix)
    cap = max(positions, min_items, (max_items + 1) if max_items is not None else 0) + 1
    builder = _GraphBuilder(layout.comma() if separator is None else separator)
    pieces_memo: dict[int, list] = {}

    def pieces(count: int):
        """(piece, contains increment) alternatives for the item at this position."""
        slot = min(count, positions)
        if slot not in pieces_memo:
            item = prefix[count] if count < positions else rest
            if item is NOTHING:
                pieces_memo[slot] = []
            elif contains is None or (hit_dfa is None and miss_dfa is None):
                pieces_memo[slot] = [(item, 0)]
            else:
                dfa = item.dfa if isinstance(item, Automaton) else build_byte_dfa(item)
                hit = None if hit_dfa is None else intersect(dfa, hit_dfa)
                miss = dfa if miss_dfa is None else difference(dfa, miss_dfa)
                pieces_memo[slot] = [(Automaton(d), inc) for d, inc in ((hit, 1), (miss, 0)) if d is not None]
        return pieces_memo[slot]

    def moves(key):
        _, count, matched = key
        if max_items is not None and count >= max_items:
            return
        for k, (piece, inc) in enumerate(pieces(count)):
            yield ("at", min(count + 1, cap), min(matched + inc, c_cap)), piece, min(count, positions) * 2 + k

    builder.explore(("at", 0, 0), moves, lambda key: key[1] == 0)
    return builder.graph(("at", 0, 0), lambda key: key[1] >= min_items and (max_items is None or key[1] <= max_items)
                         and key[2] >= low_c and (high_c is None or key[2] <= high_c))


def with_separators(items: list[RegexNode], separator: RegexNode) -> list[RegexNode]:
    out: list[RegexNode] = []
    for k, item in enumerate(items):
        if k:
            out.append(separator)
        out.append(item)
    return out
