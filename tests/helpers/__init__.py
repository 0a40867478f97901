"""Helpers shared by test modules of different folders. Test modules import helpers from here or from a
conftest.py, never from another test module."""
