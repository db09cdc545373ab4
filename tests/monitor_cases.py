"""Prompts over the fixture project and an oracle for "is this a real member", shared by the
monitor tests and ``benchmarks/bench_monitors.py``.

The oracle is independent of jedi and of the library: it imports the fixture project,
builds the very object each prompt's expression evaluates to, and takes ``dir()`` of it.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

PROJECT_DIR = Path(__file__).resolve().parent / "fixtures" / "monitor_project"

_HEADER = (
    "from shop.inventory import Warehouse\n"
    "from shop.models import Customer, Größe, Product\n"
    "from shop.orders import Order\n\n"
    'warehouse = Warehouse("berlin")\n'
    'warehouse.restock(Product("A-1", "Desk lamp", 19.5), 3)\n'
    'order = Order(Customer("Ada", "ada@example.com"), warehouse)\n'
)


@dataclass(frozen=True)
class MemberCase:
    """A prompt that stops right after ``expr.``, and how to build the object ``expr`` denotes."""

    name: str
    prompt: str
    build: Callable[[Any], Any]  # receives the imported ``shop`` package modules as a dict


CASES = (
    # find_product's return type is declared in inventory.py, the class in models.py.
    MemberCase("product", _HEADER + 'item = warehouse.find_product("A-1")\nprice = item.',
               lambda m: m["models"].Product("A-1", "Desk lamp", 19.5)),
    # add_line returns an OrderLine (orders.py) built from a Product (models.py).
    MemberCase("order_line", _HEADER + 'line = order.add_line("A-1", 2)\nvalue = line.',
               lambda m: m["orders"].OrderLine(m["models"].Product("A-1", "Desk lamp", 19.5), 2)),
    # An attribute set in Order.__init__ whose class lives in models.py.
    MemberCase("customer", _HEADER + "who = order.customer.",
               lambda m: m["models"].Customer("Ada", "ada@example.com")),
    # Non-ASCII class and member names.
    MemberCase("unicode", _HEADER + "g = Größe()\narea = g.", lambda m: m["models"].Größe()),
)


def fixture_modules() -> dict[str, Any]:
    """The fixture project's modules, imported for real (the oracle's ground truth)."""
    if str(PROJECT_DIR) not in sys.path:
        sys.path.insert(0, str(PROJECT_DIR))
    return {name: importlib.import_module(f"shop.{name}") for name in ("models", "inventory", "orders")}


def real_members(case: MemberCase) -> frozenset[str]:
    """``dir()`` of the object the prompt's last expression evaluates to."""
    return frozenset(dir(case.build(fixture_modules())))


def leading_identifier(text: str) -> tuple[str, bool]:
    """The identifier ``text`` starts with, and whether it is complete (a non-identifier char follows)."""
    end = 0
    while end < len(text) and text[: end + 1].isidentifier():
        end += 1
    return text[:end], end < len(text)


def member_rate(outputs: list[str], members: frozenset[str], finished: list[bool]) -> tuple[int, int]:
    """(outputs whose leading identifier is complete and a real member, outputs)."""
    hits = 0
    for text, done in zip(outputs, finished):
        ident, complete = leading_identifier(text)
        hits += bool(ident) and (complete or done) and ident in members
    return hits, len(outputs)
