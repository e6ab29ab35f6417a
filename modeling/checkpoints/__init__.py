"""Reading and writing BERT weights: Google TF1, HuggingFace safetensors, our TF2.

All formats are translated to Google's variable names (`names.py`), the
canonical names of our weights.
"""
