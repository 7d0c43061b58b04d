"""Test helpers: :mod:`tessel.testing.fuzz` draws random valid graphs and checks the CPU backend against numpy."""
