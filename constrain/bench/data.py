"""The benchmark data: JSONSchemaBench and the official JSON Schema Test Suite.

Both are turned into :class:`Case` objects (one schema, its instances each with a
``valid`` label), the unit of work of :mod:`constrain.bench.maskbench`:

* JSONSchemaBench: one JSONL file per subset (``<data>/jsonschemabench/*.jsonl``,
  format in ``<data>/README.md``); a case per schema, grouped by subset.  When no
  local copy exists, :func:`load_jsonschemabench_hub` reads the public
  ``epfl-dlab/JSONSchemaBench`` through ``datasets`` (schemas only: that copy has no
  instances, so only compilation is measured);
* the test suite: ``<data>/json-schema-test-suite/tests/<draft>/**/*.json``; a case
  per test case (schema + tests), grouped by file (``draft7/optional/format/date``).

The data folder is ``--data``, else ``$CONSTRAIN_DATA_DIR``, else ``../shared/data``
next to the repository (or the working directory).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConstrainError

__all__ = [
    "DATA_DIR_ENV",
    "KEY_ORDERS",
    "Instance",
    "Case",
    "default_data_dir",
    "jsonschemabench_dir",
    "test_suite_dir",
    "load_jsonschemabench",
    "load_jsonschemabench_hub",
    "load_test_suite",
    "load_remotes",
    "WithResources",
    "even_sample",
    "TEST_SUITE_DRAFTS",
    "DRAFT_URIS",
]

DATA_DIR_ENV = "CONSTRAIN_DATA_DIR"
#: Drafts of the test suite run by default.
TEST_SUITE_DRAFTS = ("draft2020-12", "draft7")
#: ``$schema`` put on test-suite schemas that have none: the suite's folder says the draft.
DRAFT_URIS = {
    "draft2020-12": "https://json-schema.org/draft/2020-12/schema",
    "draft2019-09": "https://json-schema.org/draft/2019-09/schema",
    "draft7": "http://json-schema.org/draft-07/schema#",
    "draft6": "http://json-schema.org/draft-06/schema#",
    "draft4": "http://json-schema.org/draft-04/schema#",
}
#: Where the suite expects ``remotes/`` to be served.
REMOTE_PREFIX = "http://localhost:1234/"
HUB_DATASET = "epfl-dlab/JSONSchemaBench"


#: How the harness writes instances: as given (MaskBench, the default), or valid ones
#: with members in the order constrain's compiled language writes them.
KEY_ORDERS = ("instance", "schema")


@dataclass
class Instance:
    """One JSON value to force through a compiled schema, with its label."""

    data: Any
    valid: bool
    description: str = ""


@dataclass
class Case:
    """One schema and its instances: the unit a worker compiles and forces."""

    id: str
    group: str  # the subset (JSONSchemaBench) or the file (test suite)
    schema: Any
    instances: list[Instance] = field(default_factory=list)
    #: test suite: the schema refers to ``http://localhost:1234/`` (the suite's remotes)
    remote_ref: bool = False


def default_data_dir() -> Path:
    """``$CONSTRAIN_DATA_DIR``, else the first existing ``../shared/data`` (repository, cwd)."""
    configured = os.environ.get(DATA_DIR_ENV)
    if configured:
        return Path(configured).expanduser()
    candidates = [Path(__file__).resolve().parents[2].parent / "shared" / "data", Path.cwd().parent / "shared" / "data"]
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    return candidates[0]


def _find(data: str | os.PathLike[str] | None, folder: str, marker: str) -> Path:
    """``data`` itself when it holds ``marker``, else ``data/folder``; a clear error otherwise."""
    base = Path(data).expanduser() if data is not None else default_data_dir()
    for path in (base, base / folder):
        if any(path.glob(marker)):
            return path
    where = "--data" if data is not None else f"${DATA_DIR_ENV} / default"
    raise ConstrainError(f"data folder not found: no {folder} data ({marker}) in {base} ({where})")


def jsonschemabench_dir(data: str | os.PathLike[str] | None = None) -> Path:
    """The folder holding ``<Subset>.jsonl`` files."""
    return _find(data, "jsonschemabench", "*.jsonl")


def test_suite_dir(data: str | os.PathLike[str] | None = None) -> Path:
    """The test suite's root (holding ``tests/``)."""
    return _find(data, "json-schema-test-suite", "tests/draft*")


def _select(names: Iterable[str], wanted: Sequence[str] | None, what: str) -> list[str]:
    names = sorted(names)
    if not wanted:
        return names
    by_lower = {n.lower(): n for n in names}
    unknown = [w for w in wanted if w.lower() not in by_lower]
    if unknown:
        raise ConstrainError(f"unknown {what} {', '.join(unknown)}; choose from {', '.join(names)}")
    return [by_lower[w.lower()] for w in wanted]


def load_jsonschemabench(
    data: str | os.PathLike[str] | None = None, subsets: Sequence[str] | None = None
) -> list[Case]:
    """Every schema of the chosen subsets (all by default), in file then line order."""
    folder = jsonschemabench_dir(data)
    files = {p.stem: p for p in folder.glob("*.jsonl")}
    cases: list[Case] = []
    for subset in _select(files, subsets, "subset(s)"):
        with open(files[subset], encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as err:
                    raise ConstrainError(f"{files[subset]}:{number}: not JSON: {err.msg}") from err
                instances = [
                    Instance(i["data"], bool(i["valid"]), i.get("description", ""))
                    for i in row.get("instances") or []
                ]
                cases.append(Case(row["id"], subset, row["schema"], instances))
    return cases


def load_jsonschemabench_hub(subsets: Sequence[str] | None = None) -> list[Case]:
    """JSONSchemaBench from the Hugging Face hub (needs ``datasets`` and network).

    The hub copy has schemas only, so the cases have no instances: a run measures
    compilation alone.
    """
    try:
        import datasets
    except ImportError as err:
        raise ConstrainError(
            "no local JSONSchemaBench and `datasets` is not installed; pass --data or pip install datasets"
        ) from err
    configs = datasets.get_dataset_config_names(HUB_DATASET)
    cases: list[Case] = []
    for subset in _select([c for c in configs if c != "default"], subsets, "subset(s)"):
        loaded = datasets.load_dataset(HUB_DATASET, subset)
        for split in loaded:
            for row in loaded[split]:
                cases.append(Case(f"{subset}---{row['unique_id']}", subset, json.loads(row["json_schema"])))
    return cases


def _with_draft(schema: Any, draft: str) -> Any:
    """The schema with the folder's ``$schema`` when it declares none (booleans as they are)."""
    if isinstance(schema, dict) and "$schema" not in schema and draft in DRAFT_URIS:
        return {"$schema": DRAFT_URIS[draft], **schema}
    return schema


def load_test_suite(
    data: str | os.PathLike[str] | None = None,
    drafts: Sequence[str] = TEST_SUITE_DRAFTS,
    optional: bool = True,
) -> list[Case]:
    """Every test case of the chosen drafts, grouped by file (``draft7/optional/format/date``)."""
    root = test_suite_dir(data) / "tests"
    remotes = load_remotes(data)
    available = [p.name for p in root.iterdir() if p.is_dir()]
    cases: list[Case] = []
    for draft in _select(available, drafts, "draft(s)"):
        for path in sorted((root / draft).rglob("*.json")):
            relative = path.relative_to(root).with_suffix("").as_posix()
            if not optional and "/optional/" in f"/{relative}/":
                continue
            with open(path, encoding="utf-8") as handle:
                entries = json.load(handle)
            for index, entry in enumerate(entries):
                schema = _with_draft(entry["schema"], draft)
                instances = [Instance(t["data"], bool(t["valid"]), t.get("description", "")) for t in entry["tests"]]
                remote = REMOTE_PREFIX in json.dumps(schema)
                cases.append(Case(f"{relative}#{index} {entry.get('description', '')}".strip(), relative,
                                  WithResources(schema, remotes) if remote and remotes else schema,
                                  instances, remote_ref=remote))
    return cases


@dataclass
class WithResources:
    """A schema together with the other documents its references may point into (by URI)."""

    schema: Any
    resources: dict[str, Any]


def load_remotes(data: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The suite's ``remotes/`` folder as ``{"http://localhost:1234/<path>": schema}``."""
    folder = test_suite_dir(data) / "remotes"
    out: dict[str, Any] = {}
    if folder.is_dir():
        for path in sorted(folder.rglob("*.json")):
            with open(path, encoding="utf-8") as handle:
                out[REMOTE_PREFIX + path.relative_to(folder).as_posix()] = json.load(handle)
    return out


def even_sample(items: Sequence[Any], count: int | None) -> list[Any]:
    """``count`` items spread evenly over ``items`` (item ``floor(i * n / count)``), deterministic."""
    total = len(items)
    if count is None or count >= total:
        return list(items)
    return [items[(i * total) // count] for i in range(max(count, 0))]
