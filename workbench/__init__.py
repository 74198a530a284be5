"""Workbench: a desktop training workbench for PyTorch."""
