"""Helpers shared by several test modules: event builders, made-up histories, fakes, recorded data, a loopback sshd,
a screen reader's audit, each in a module named for what it holds. Tests import them from here (or from
tests/helpers.py), never from another test module: a test module is what pytest runs, not a library, and one that
imports another ties the two together (a helper moved or renamed there breaks tests here). Nothing here is a test
module (no test_*.py), so pytest collects nothing from this package; fixtures live in the conftest.py files."""
