"""Keras layers of the BERT encoder, each holding the variables of one Google scope."""

from modeling.layers.attention import SelfAttention
from modeling.layers.dense import MatmulDense, add_bias, dense_layer
from modeling.layers.dropout import Dropout, dropout_layer
from modeling.layers.embeddings import BertEmbeddings
from modeling.layers.normalization import build_sublayer, layer_norm, truncated_normal
from modeling.layers.packing import PackTokens
from modeling.layers.transformer import TransformerLayer

__all__ = [
    "BertEmbeddings", "Dropout", "MatmulDense", "PackTokens", "SelfAttention", "TransformerLayer",
    "add_bias", "build_sublayer", "dense_layer", "dropout_layer", "layer_norm", "truncated_normal",
]
