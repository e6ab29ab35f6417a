"""File helpers shared by the scripts: atomic output files and input file patterns."""

from fileio.atomic import atomic_output, atomic_write_text
from fileio.patterns import InputError, resolve_input_files

__all__ = ["InputError", "atomic_output", "atomic_write_text", "resolve_input_files"]
