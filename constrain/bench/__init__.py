"""Benchmarks of constrain against its peers: ``constrain bench jsonschemabench`` / ``test-suite``.

* :mod:`~constrain.bench.engines`: one adapter per engine (constrain, xgrammar,
  llguidance, outlines-core), used by ``constrain bench`` and ``benchmarks/*.py``;
* :mod:`~constrain.bench.data`: the JSONSchemaBench and JSON Schema Test Suite loaders;
* :mod:`~constrain.bench.maskbench`: the forcing harness (MaskBench method), each
  engine in a worker process with per-schema timeouts;
* :mod:`~constrain.bench.report`: statistics, markdown tables and the JSON report.

Nothing here is imported by ``import constrain``; the peers are optional (the
``bench`` extra) and reported as skipped when absent.
"""
