"""Reading and writing BERT weights: Google TF1, HuggingFace safetensors, our TF2."""
