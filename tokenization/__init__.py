"""WordPiece tokenization with the observable behaviour of Google's BERT release.

`from tokenization import FullTokenizer` works as it did with Google's
`tokenization.py`. This package imports no TensorFlow; the in-graph
(tensorflow-text) tokenizer lives in `tokenization.in_graph`.
"""

from tokenization.basic import BasicTokenizer, convert_to_unicode
from tokenization.full import (FullTokenizer, resolve_do_lower_case,
                                validate_case_matches_checkpoint)
from tokenization.vocab import (MASK_TOKEN, SPECIAL_TOKENS, VocabError, check_special_tokens,
                                load_vocab)
from tokenization.wordpiece import WordpieceTokenizer

__all__ = [
    "BasicTokenizer", "FullTokenizer", "MASK_TOKEN", "SPECIAL_TOKENS", "VocabError",
    "WordpieceTokenizer", "check_special_tokens", "convert_to_unicode", "load_vocab",
    "resolve_do_lower_case", "validate_case_matches_checkpoint",
]
