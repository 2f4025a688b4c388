"""A scripted fake model server for running real agent CLIs offline (see ``script`` for the markers)."""

from tests.fakellm.server import ROUTES, FakeLLM

__all__ = ["ROUTES", "FakeLLM"]
