"""TFLite export of a fine-tuned classifier that takes raw text (`export_tflite.py`).

- `text`: `LiteTokenizer`, BERT's tokenization and packing from ops a TFLite
  interpreter runs (TF Text's custom ops and builtins);
- `export`: `export_tflite` (conversion, float16 / int8 quantization and int8
  calibration on a task's training rows) and `load_interpreter`.
"""

from tflite.export import QUANTIZATIONS, SIGNATURES, export_tflite, load_interpreter
from tflite.text import LiteTokenizer

__all__ = ["QUANTIZATIONS", "SIGNATURES", "LiteTokenizer", "export_tflite", "load_interpreter"]
