"""Targets that turn a graph module into something that runs."""
