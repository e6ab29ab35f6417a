"""TF Hub interchange: our BERT as TF Hub's encoder and preprocessing SavedModels.

Public API:
  export_saved_model(export_type, export_path, vocab_file, ...)  -- export_tfhub.py
  EXPORT_TYPES                                     -- model, model_with_mlm, preprocessing
  build_hub_encoder(config, with_mlm)              -- the encoder under TF Hub's names
  Preprocessing(vocab_file, do_lower_case, default_seq_length)  -- the preprocessor
"""

from tfhub.encoder import build_hub_encoder
from tfhub.export import EXPORT_TYPES, export_saved_model
from tfhub.preprocessing import Preprocessing

__all__ = ["EXPORT_TYPES", "Preprocessing", "build_hub_encoder", "export_saved_model"]
