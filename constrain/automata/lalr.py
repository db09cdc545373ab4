"""LALR(1) parse tables as integer arrays, and an incremental parser over them.

The tables come from lark (see :mod:`constrain.grammar.lark_grammar`), which builds
them with readable symbols; here they become flat int32 arrays so that the parser
runs on integers (and, for the mask store's boundary checks, in numba).

Encoding of ``action[state, terminal]``: ``0`` error, ``s + 1`` shift to state
``s``, ``-(r + 1)`` reduce by rule ``r``.  Terminal id 0 is the end of input
(``$END``).  The parser accepts at ``$END`` once reductions leave ``end_state`` on
top of the stack (lark's convention).

The parser state is a persistent stack (:class:`Stack`, a linked list of frames),
so that feeding a terminal returns a new stack and the old one stays valid: fork
and rollback cost nothing.

LALR(1) tables may reduce on a lookahead that a later step rejects (lookaheads of
merged states), so "the action is not an error" is not "the terminal can be
shifted": :func:`feed` simulates the reductions and :func:`acceptable_terminals`
reports only terminals that really get shifted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

__all__ = ["ParseTables", "Stack", "END", "initial_stack", "feed", "accepts_end", "acceptable_terminals", "top_states"]

END = 0  # terminal id of the end of input


@dataclass(frozen=True, eq=False)
class ParseTables:
    """LALR(1) tables with integer symbols.

    Attributes
    ----------
    terminals, nonterminals:
        Names by id; ``terminals[0] == "$END"``.
    action:
        int32 ``[num_states, num_terminals]`` (see the module docstring).
    goto:
        int32 ``[num_states, num_nonterminals]``; -1 where undefined.
    rule_len, rule_lhs:
        Per rule: how many frames a reduction pops, and the nonterminal it pushes.
    start_state, end_state:
        Where parsing starts; the state that accepts at ``$END``.
    """

    terminals: tuple[str, ...]
    nonterminals: tuple[str, ...]
    action: np.ndarray
    goto: np.ndarray
    rule_len: np.ndarray
    rule_lhs: np.ndarray
    start_state: int
    end_state: int

    def terminal_id(self, name: str) -> int:
        return self._terminal_index()[name]

    def _terminal_index(self) -> dict[str, int]:
        index = self.__dict__.get("_index")
        if index is None:
            index = {name: i for i, name in enumerate(self.terminals)}
            self.__dict__["_index"] = index
        return index

    @classmethod
    def from_lark(cls, parse_table, start: str, terminal_names) -> "ParseTables":
        """Convert lark's ``IntParseTable`` (states of ``{symbol: (Shift|Reduce, arg)}``).

        ``terminal_names`` are all the grammar's terminals (ignored ones included, so
        that the lexer and the parser share one numbering); every other symbol in the
        table is a nonterminal.
        """
        terminals = ("$END", *sorted(set(terminal_names) - {"$END"}))
        t_index = {name: i for i, name in enumerate(terminals)}
        rules: dict[int, object] = {}
        nonterminal_names: set[str] = set()
        for actions in parse_table.states.values():
            for symbol, (kind, arg) in actions.items():
                if kind.name == "Reduce":
                    rules.setdefault(id(arg), arg)
                elif symbol not in t_index:
                    nonterminal_names.add(symbol)
        rule_list = sorted(rules.values(), key=lambda r: (r.origin.name, str(r)))
        nonterminal_names.update(rule.origin.name for rule in rule_list)
        nonterminals = tuple(sorted(nonterminal_names))
        n_index = {name: i for i, name in enumerate(nonterminals)}
        r_index = {id(rule): i for i, rule in enumerate(rule_list)}
        num_states = max(parse_table.states) + 1
        action = np.zeros((num_states, len(terminals)), dtype=np.int32)
        goto = np.full((num_states, len(nonterminals)), -1, dtype=np.int32)
        for state, actions in parse_table.states.items():
            for symbol, (kind, arg) in actions.items():
                if kind.name == "Reduce":
                    action[state, t_index[symbol]] = -(r_index[id(arg)] + 1)
                elif symbol in t_index:
                    action[state, t_index[symbol]] = arg + 1
                else:
                    goto[state, n_index[symbol]] = arg
        rule_len = np.array([len(r.expansion) for r in rule_list], dtype=np.int32)
        rule_lhs = np.array([n_index[r.origin.name] for r in rule_list], dtype=np.int32)
        return cls(terminals, nonterminals, action, goto, rule_len, rule_lhs,
                   int(parse_table.start_states[start]), int(parse_table.end_states[start]))


@dataclass(frozen=True, slots=True)
class Stack:
    """One frame of a persistent parser stack: a state and the frames below it."""

    state: int
    below: Optional["Stack"]
    depth: int


def initial_stack(tables: ParseTables) -> Stack:
    return Stack(tables.start_state, None, 1)


def _reduce(tables: ParseTables, stack: Stack, rule: int, watch: list[int] | None) -> Stack | None:
    """Pop the rule's right-hand side and push the goto state of its left-hand side."""
    for _ in range(int(tables.rule_len[rule])):
        stack = stack.below  # type: ignore[assignment]
    if watch is not None and stack.depth < watch[0]:
        watch[0] = stack.depth
    target = int(tables.goto[stack.state, tables.rule_lhs[rule]])
    if target < 0:
        return None
    return Stack(target, stack, stack.depth + 1)


def feed(tables: ParseTables, stack: Stack, terminal: int, watch: list[int] | None = None) -> Stack | None:
    """The stack after shifting ``terminal`` (after any reductions), or None if it is an error.

    ``terminal`` must not be :data:`END`; use :func:`accepts_end` for the end of input.
    ``watch``, when given, is a one-element list lowered to the smallest depth of any
    frame whose state was read: the result depends only on the frames above it, which
    is what makes masks cacheable by the top of the stack.
    """
    action = tables.action
    while True:
        code = int(action[stack.state, terminal])
        if code > 0:
            return Stack(code - 1, stack, stack.depth + 1)
        if code == 0:
            return None
        reduced = _reduce(tables, stack, -code - 1, watch)
        if reduced is None:
            return None
        stack = reduced


def accepts_end(tables: ParseTables, stack: Stack, watch: list[int] | None = None) -> bool:
    """True when the terminals fed so far form a complete sentence (``watch``: see :func:`feed`)."""
    action = tables.action
    while True:
        if stack.state == tables.end_state:
            return True
        code = int(action[stack.state, END])
        if code >= 0:
            return False
        reduced = _reduce(tables, stack, -code - 1, watch)
        if reduced is None:
            return False
        stack = reduced


def acceptable_terminals(tables: ParseTables, stack: Stack, watch: list[int] | None = None) -> list[int]:
    """Terminal ids (not END) that :func:`feed` would shift from ``stack``, in id order.

    ``watch``: see :func:`feed`.
    """
    candidates = np.nonzero(tables.action[stack.state, 1:])[0] + 1
    return [int(t) for t in candidates if feed(tables, stack, int(t), watch) is not None]


def top_states(stack: Stack, count: int) -> tuple[int, ...]:
    """The states of the top ``count`` frames (fewer if the stack is shallower)."""
    out = []
    while stack is not None and len(out) < count:
        out.append(stack.state)
        stack = stack.below  # type: ignore[assignment]
    return tuple(out)
