"""The Keras BERT model: config, layers, encoder, heads and checkpoint conversion."""
