"""Samplers: the ``LogitsProcessor`` drop-in (``processor``) and grammar-aligned sampling (``asap``)."""
