"""File handling shared by the scripts: input patterns and text, the output checks, atomic
outputs, TFRecord framing, the --export_dir rules.

Every function takes local paths and TensorFlow's file-system URLs (gs://,
ram://, ...). Importing `fileio`, or using it on local paths only, does not
import TensorFlow (`fileio.filesystem`).
"""

from fileio.atomic import (AtomicFile, atomic_directory, atomic_output, atomic_write_text,
                           staging_directory)
from fileio.export_dir import check_export_dir
from fileio.filesystem import (exists, file_size, isdir, isfile, missing_file, open_file,
                               read_json)
from fileio.outputs import OutputError, check_outputs
from fileio.patterns import InputError, resolve_input_files, utf8_lines
from fileio.tfrecord import count_records, example_record, frame_record

__all__ = [
    "AtomicFile", "InputError", "OutputError", "atomic_directory", "atomic_output",
    "atomic_write_text", "check_export_dir", "check_outputs", "count_records", "example_record",
    "exists", "file_size", "frame_record", "isdir", "isfile", "missing_file", "open_file",
    "read_json", "resolve_input_files", "staging_directory", "utf8_lines",
]
