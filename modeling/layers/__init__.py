"""Keras layers of the BERT encoder, each holding the variables of one Google scope."""

from modeling.layers.attention import SelfAttention
from modeling.layers.dense import Dense, bias_add, sum_rows
from modeling.layers.dropout import Dropout
from modeling.layers.embeddings import BertEmbeddings
from modeling.layers.normalization import build_sublayer, layer_norm, truncated_normal
from modeling.layers.transformer import TransformerLayer

__all__ = [
    "BertEmbeddings", "Dense", "Dropout", "SelfAttention", "TransformerLayer", "bias_add",
    "build_sublayer", "layer_norm", "sum_rows", "truncated_normal",
]
