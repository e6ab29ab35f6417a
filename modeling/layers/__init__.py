"""Keras layers of the BERT encoder, each holding the variables of one Google scope."""

from modeling.layers.attention import SelfAttention
from modeling.layers.dropout import Dropout
from modeling.layers.embeddings import BertEmbeddings
from modeling.layers.normalization import build_sublayer, layer_norm, truncated_normal
from modeling.layers.transformer import TransformerLayer

__all__ = [
    "BertEmbeddings", "Dropout", "SelfAttention", "TransformerLayer", "build_sublayer", "layer_norm",
    "truncated_normal",
]
