"""Test helpers: :mod:`tessel.testing.fuzz` draws random valid graphs and checks the CPU backend against numpy;
:mod:`tessel.testing.workers` runs generated cases in a long-lived subprocess that is restarted after a crash."""
