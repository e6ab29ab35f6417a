"""Feature extraction: per-token activations of chosen encoder layers as JSON lines.

The library behind `extract_features.py` (Google's input and output formats);
see `feature_extraction.extract`.
"""
