"""export_tflite.py: a classifier output_dir as a .tflite that takes raw text.

A tiny model trained on sample_data/sentiment (SST-2's format; it learns the task in
seconds, which a tiny random-init model on a slice of SST-2 does not): the float32 .tflite
gives the SavedModel's probabilities (<= 1e-5) on GLUE SST-2 dev rows (serve_text) and MRPC
dev pairs (serve_text_pair), and on ids (serving_default, plus logits); int8, calibrated on
training rows, agrees with float32 on the label of the sentiment dev rows in a process that
imports only tensorflow and tensorflow_text, and keeps its float scope float in every signature;
float16 and dynamic int8 stay close.
The tokenizer's ids against FullTokenizer on fixture texts and the corpora; errors (the
script's one-line errors: test_cli_error_table.py).
"""

import os
import re
import unicodedata

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.lite.python import schema_py_generated as schema

from classification import run
import cli
from tests.classifier_jobs import classifier_options
from tests.paths import SAMPLE
from tests.processes import run_python
import tflite
from tflite.text import tokenizer_model
from tokenization import FullTokenizer
from tokenization.chars import is_control
from tokenization.in_graph import differing_code_points

SEQ = 32
# int8's label against float32's on the 150 sentiment dev rows and the first 64 GLUE SST-2 dev
# rows, one row per call and in batches of 32 (padded to the batch's longest row).
INT8_AGREEMENT = 0.95  # measured: 1.000 / 0.993 (batch 1 / 32), float32 accuracy 0.993
INT8_AGREEMENT_GLUE = 0.9  # measured: 0.969 / 0.953 (62 and 61 of 64)


def read_glue(shared_dir, folder, columns, rows):
  """The first `rows` dev rows of a GLUE folder: [tuple of the columns' texts]."""
  with open(shared_dir / "data" / "glue" / folder / "dev.tsv", encoding="utf-8") as f:
    lines = f.read().splitlines()[1:rows + 1]
  return [tuple(line.split("\t")[c] for c in columns) for line in lines]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
  """A tiny model (L=2, H=64) trained on sample_data/sentiment, and its SavedModel."""
  tmp = tmp_path_factory.mktemp("tflite")
  options = classifier_options(tmp, max_seq_length=SEQ, train_batch_size=16,
                               num_train_epochs=2, learning_rate=1e-3, seed=1,
                               export_dir=str(tmp / "export"))
  run.run_classifier(options)
  return dict(tmp=tmp, output_dir=options.output_dir, vocab=options.vocab_file,
              export_dir=options.export_dir, data_dir=options.data_dir)


@pytest.fixture(scope="module")
def tflite_file(trained):
  """tflite_file(quantize): the .tflite at that quantization, converted once."""
  files = {}

  def get(quantize):
    if quantize not in files:
      files[quantize] = tflite.export_tflite(
          trained["output_dir"], trained["vocab"], True, SEQ,
          str(trained["tmp"] / f"model_{quantize}.tflite"), quantize, task_name="SST-2",
          data_dir=trained["data_dir"], num_calibration_rows=100)
    return files[quantize]
  return get


def strings(texts):
  return np.array([t.encode("utf-8") for t in texts], dtype=object)


@pytest.mark.slow
def test_float32_equals_the_saved_model(trained, tflite_file, shared_dir):
  interpreter = tflite.load_interpreter(tflite_file("none"))
  assert interpreter.get_signature_list() == {
      "serve_text": {"inputs": ["text_a"], "outputs": ["label", "probabilities"]},
      "serve_text_pair": {"inputs": ["text_a", "text_b"], "outputs": ["label", "probabilities"]},
      "serving_default": {"inputs": ["input_ids", "input_mask", "segment_ids"],
                          "outputs": ["label", "logits", "probabilities"]}}
  saved = tf.saved_model.load(trained["export_dir"]).signatures
  sst2 = [a for a, in read_glue(shared_dir, "SST-2", [0], 64)]
  mrpc = read_glue(shared_dir, "MRPC", [3, 4], 32) + [("An empty second text.", "")]
  cases = [("serve_text", {"text_a": sst2}),
           ("serve_text_pair", {"text_a": [a for a, _ in mrpc], "text_b": [b for _, b in mrpc]})]
  for name, inputs in cases:
    ours = interpreter.get_signature_runner(name)(**{k: strings(v) for k, v in inputs.items()})
    expected = saved[name](**{k: tf.constant(v) for k, v in inputs.items()})
    np.testing.assert_allclose(ours["probabilities"], expected["probabilities"], atol=1e-5)
    assert ours["label"].tolist() == expected["label"].numpy().tolist()
  # Labels in label-list order; a batch of one, as an app sends.
  one = interpreter.get_signature_runner("serve_text")(text_a=strings(sst2[:1]))
  np.testing.assert_allclose(one["probabilities"],
                             saved["serve_text"](text_a=tf.constant(sst2[:1]))["probabilities"],
                             atol=1e-5)
  assert set(one["label"].tolist()) <= {b"0", b"1"}
  # Ids padded to max_seq_length, as Google's features.
  tokenizer = FullTokenizer(trained["vocab"], do_lower_case=True)
  ids = np.zeros([3, SEQ], np.int32)
  for i, text in enumerate(sst2[:3]):
    tokens = ["[CLS]"] + tokenizer.tokenize(text)[:SEQ - 2] + ["[SEP]"]
    ids[i, :len(tokens)] = tokenizer.convert_tokens_to_ids(tokens)
  features = {"input_ids": ids, "input_mask": (ids > 0).astype(np.int32),
              "segment_ids": np.zeros_like(ids)}
  ours = interpreter.get_signature_runner("serving_default")(**features)
  expected = saved["serving_default"](**{k: tf.constant(v) for k, v in features.items()})
  np.testing.assert_allclose(ours["probabilities"], expected["probabilities"], atol=1e-5)
  np.testing.assert_allclose(tf.nn.softmax(ours["logits"]), ours["probabilities"], atol=1e-6)


@pytest.mark.slow
@pytest.mark.multiprocess
def test_int8_agrees_with_float32_in_a_fresh_process(tflite_file, shared_dir):
  """Loaded as the README shows, with only tensorflow and tensorflow_text imported."""
  with open(SAMPLE / "sentiment" / "dev.tsv", encoding="utf-8") as f:
    rows = [tuple(line.split("\t")) for line in f.read().splitlines()[1:]]
  texts = [a for a, _ in rows]
  glue = [a for a, in read_glue(shared_dir, "SST-2", [0], 64)]
  out = run_python(f"""
import sys
import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text
from tensorflow.lite.python.interpreter import InterpreterWithCustomOps

def labels(path, texts, batch):
  interpreter = InterpreterWithCustomOps(
      model_path=path, custom_op_registerers=tf_text.tflite_registrar.SELECT_TFTEXT_OPS)
  serve = interpreter.get_signature_runner("serve_text")
  return [label for i in range(0, len(texts), batch) for label in serve(
      text_a=np.array([t.encode() for t in texts[i:i + batch]], dtype=object))["label"]]

def agree(texts, batch):
  a, b = labels({tflite_file("none")!r}, texts, batch), labels({tflite_file("int8")!r}, texts, batch)
  return np.mean([x == y for x, y in zip(a, b)]), a

ours = [m for m in sys.modules if m.split(".")[0] in ("tflite", "classification", "modeling",
                                                      "tokenization", "cli", "fileio")]
assert not ours, ours
agreement, fp32 = agree({texts!r}, 1)
print("AGREE", agreement, *(agree(t, b)[0] for t in ({texts!r}, {glue!r}) for b in (1, 32)))
print("FP32", " ".join(label.decode() for label in fp32))
""")
  agreement, *rates = map(float, out.split("AGREE ")[1].split("\n")[0].split())
  fp32 = out.split("FP32 ")[1].split()
  # A model that tells the classes apart, so that agreeing labels mean something.
  accuracy = np.mean([label == gold for label, (_, gold) in zip(fp32, rows)])
  print(f"float32 accuracy {accuracy:.3f}")
  assert accuracy > 0.6 and min(fp32.count("0"), fp32.count("1")) > len(rows) // 5
  print(f"int8 vs float32 labels: {agreement:.3f} of {len(rows)} sentiment dev rows; "
        "batch 1 / batches of 32: sentiment {:.3f} / {:.3f}, GLUE SST-2 {:.3f} / {:.3f}".format(
            *rates))
  assert agreement >= INT8_AGREEMENT and min(rates[:2]) >= INT8_AGREEMENT
  assert min(rates[2:]) >= INT8_AGREEMENT_GLUE
  # The tokenizer's tables (vocabulary) are most of this tiny model's file.
  assert os.path.getsize(tflite_file("int8")) < 0.85 * os.path.getsize(tflite_file("none"))


@pytest.mark.slow
@pytest.mark.parametrize("quantize,atol,size", [("float16", 0.03, 0.85),
                                                ("dynamic_int8", 0.15, 0.85)])
def test_float16_and_dynamic_int8_stay_close(tflite_file, shared_dir, quantize, atol, size):
  texts = strings([a for a, in read_glue(shared_dir, "SST-2", [0], 32)])
  fp32 = tflite.load_interpreter(tflite_file("none")).get_signature_runner("serve_text")
  quantized = tflite.load_interpreter(tflite_file(quantize)).get_signature_runner("serve_text")
  # Measured on this model's 32 rows: float16 0.016, dynamic int8 0.072 at most.
  ours, reference = quantized(text_a=texts), fp32(text_a=texts)
  np.testing.assert_allclose(ours["probabilities"], reference["probabilities"], atol=atol)
  assert ours["label"].tolist() == reference["label"].tolist()
  assert os.path.getsize(tflite_file(quantize)) < size * os.path.getsize(tflite_file("none"))


@pytest.mark.slow
def test_int8_float_scope_holds_in_every_signature(tflite_file):
  """The float scope's ops are float32 in every signature's subgraph (whose tensor names carry
  the subgraph's index), the rest of the encoder int8; a scope that matches nothing in a
  signature fails."""
  with open(tflite_file("int8"), "rb") as f:
    content = f.read()
  model = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(content, 0))
  types = {(g.name.decode(), t.name.decode()): t.type for g in model.subgraphs for t in g.tensors}
  names = tflite.export.tensor_names(content)
  assert set(names) == {"serve_text", "serve_text_pair", "serving_default"}
  for graph, ops in names.items():
    kinds = {}
    for tensor, op in ops.items():
      for kind, pattern in (("float", tflite.export.INT8_FLOAT_SCOPE),
                            ("int8", r"/layer_\d+/(attention/query|intermediate)/BiasAdd$")):
        if re.search(pattern, op):
          kinds.setdefault(kind, set()).add(types[graph, tensor])
    assert kinds == {"float": {schema.TensorType.FLOAT32}, "int8": {schema.TensorType.INT8}}, graph
  with pytest.raises(RuntimeError, match="no tensor of serve_text, serving_default matches"):
    tflite.export.scope_tensors(content, r"^serve_text_pair_text_b:0$")


@pytest.mark.slow
def test_int8_feed_forward_output_projections_are_hybrid(tflite_file):
  """In every signature, each layer's feed-forward output projection is a hybrid fully
  connected op: float32 input and output, int8 weights with one scale per output channel
  (zero points 0), its input quantized per row at run time."""
  with open(tflite_file("int8"), "rb") as f:
    content = f.read()
  model = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(content, 0))
  names = tflite.export.tensor_names(content)
  fully_connected = {i for i, c in enumerate(model.operatorCodes)
                     if c.builtinCode == schema.BuiltinOperator.FULLY_CONNECTED}
  for graph in model.subgraphs:
    ops = names[graph.name.decode()]
    hybrid = [op for op in graph.operators if op.opcodeIndex in fully_connected and re.search(
        tflite.export.INT8_HYBRID_SCOPE, ops[graph.tensors[op.outputs[0]].name.decode()])]
    assert len(hybrid) == 2, graph.name  # one per layer of the tiny model
    for op in hybrid:
      x, w, y = (graph.tensors[i] for i in (op.inputs[0], op.inputs[1], op.outputs[0]))
      assert (x.type, w.type, y.type) == (schema.TensorType.FLOAT32, schema.TensorType.INT8,
                                          schema.TensorType.FLOAT32)
      assert len(w.quantization.scale) == w.shape[0] > 1
      assert list(w.quantization.zeroPoint) == [0] * w.shape[0]
      assert w.quantization.quantizedDimension == 0
      assert op.builtinOptions.asymmetricQuantizeInputs


# --- the tokenizer's ids against FullTokenizer ------------------------------------------------

def lite_ids(model, texts):
  """[ids of each text] through a `tokenizer_model` .tflite."""
  out = tflite.load_interpreter(model_content=model).get_signature_runner()(texts=strings(texts))
  splits = out["row_splits"]
  return [out["ids"][splits[i]:splits[i + 1]].tolist() for i in range(len(texts))]


def explained(text, do_lower_case):
  """Whether `text` has a character at which the README says the ids may differ."""
  def differs(ch):
    if ord(ch) in differing_code_points(do_lower_case) or is_control(ch) or ch in "\x00\ufffd":
      return True
    if unicodedata.category(ch) == "Cn":  # unassigned in Python's Unicode version
      return True
    return do_lower_case and (unicodedata.normalize("NFKD", ch) != unicodedata.normalize("NFD", ch)
                              or ch.casefold() != ch.lower())
  return any(map(differs, text))


@pytest.fixture(scope="module", params=[True, False], ids=["uncased", "cased"])
def tokenizers(request, google_vocab):
  return (FullTokenizer(google_vocab, do_lower_case=request.param),
          tokenizer_model(google_vocab, request.param), request.param)


def test_tokenizer_ids_on_fixture_texts(tokenizers):
  google, model, lower = tokenizers
  texts = ["Hello, World! It's 3.5 km.", "Überraschend gut!", "日本語のテキスト", "", "  ",
           "naïve café", "co\u00adoperate", "4½ per cent…", "Straße ΣΊΣΥΦΟΣ",
           "a" * 150]
  got = lite_ids(model, texts)
  expected = [google.convert_tokens_to_ids(google.tokenize(t)) for t in texts]
  differ = [t for t, g, e in zip(texts, got, expected) if g != e]
  # Documented: uncased, NFKD's "½" -> "1⁄2", "…" -> "..." and case folding's "ß" -> "ss",
  # "ς" -> "σ"; cased, a soft hyphen splits the word (uncased deletes it, as Google does).
  assert differ == (["4½ per cent…", "Straße ΣΊΣΥΦΟΣ"] if lower else ["co\u00adoperate"])


def test_tokenizer_long_words_and_invalid_utf8_as_documented(google_vocab):
  """Google: a word over 200 characters is [UNK], invalid bytes are dropped. Here: only words
  over 800 bytes are [UNK]; an invalid byte is an [UNK]."""
  google = FullTokenizer(google_vocab, do_lower_case=True)
  model = tokenizer_model(google_vocab, True)
  out = tflite.load_interpreter(model_content=model).get_signature_runner()(
      texts=np.array([b"a" * 250, b"a" * 801, b"good \xff day"], dtype=object))
  ids = np.split(out["ids"], out["row_splits"][1:-1])
  unk, good, day = google.convert_tokens_to_ids(["[UNK]", "good", "day"])
  assert len(ids[0]) > 1 and ids[1].tolist() == [unk]
  assert ids[2].tolist() == [good, unk, day]


@pytest.mark.slow
def test_tokenizer_ids_on_the_corpora(tokenizers, shared_dir):
  google, model, lower = tokenizers
  lines = []
  for name in ("gutenberg_train.txt", "gutenberg_heldout.txt", "wikitext2_valid.txt",
               "wikitext-2-raw/wiki.valid.raw"):
    with open(shared_dir / "data" / "corpus" / name, encoding="utf-8") as f:
      lines.extend(line.rstrip("\n") for line in f)
  got = []
  for i in range(0, len(lines), 4096):
    got.extend(lite_ids(model, lines[i:i + 4096]))
  differ = [line for line, ids in zip(lines, got)
            if ids != google.convert_tokens_to_ids(google.tokenize(line))]
  print(f"{len(differ)} of {len(lines)} corpus lines differ")
  assert len(differ) == (123 if lower else 0)
  assert all(explained(line, lower) for line in differ), differ[:3]


# --- packing and errors -----------------------------------------------------------------------

def test_pairs_are_truncated_as_google(google_vocab):
  """A long pair: Google's _truncate_seq_pair keeps ceil/floor halves of the budget."""
  tokenizer = tflite.LiteTokenizer(google_vocab, True)
  a, b = tf.constant(["one two three four five six seven"]), tf.constant(["eight nine ten"])
  packed = tokenizer.pack(tokenizer.tokenize(a), tokenizer.tokenize(b), 9)
  google = FullTokenizer(google_vocab, do_lower_case=True)
  ids = google.convert_tokens_to_ids(["[CLS]", "one", "two", "three", "[SEP]", "eight", "nine",
                                      "ten", "[SEP]"])
  assert packed["input_ids"].numpy().tolist() == [ids]
  assert packed["segment_ids"].numpy().tolist() == [[0] * 5 + [1] * 4]


@pytest.mark.slow
def test_errors_are_user_errors(trained, tmp_path):
  vocab, model_dir = trained["vocab"], trained["output_dir"]
  existing = tmp_path / "existing.tflite"
  existing.write_bytes(b"the user's file")
  with pytest.raises(cli.UserError, match="output file exists.*--overwrite"):
    tflite.export_tflite(model_dir, vocab, True, SEQ, str(existing))
  assert existing.read_bytes() == b"the user's file"
  out = str(tmp_path / "m.tflite")
  with pytest.raises(cli.UserError, match="has no checkpoint"):
    tflite.export_tflite(str(tmp_path), vocab, True, SEQ, out)
  no_labels = tmp_path / "no_labels"
  no_labels.mkdir()
  for name in os.listdir(model_dir):
    if name != "label_list.json" and os.path.isfile(os.path.join(model_dir, name)):
      os.symlink(os.path.join(model_dir, name), no_labels / name)
  with pytest.raises(cli.UserError, match="has no label_list.json"):
    tflite.export_tflite(str(no_labels), vocab, True, SEQ, out)
  with pytest.raises(cli.UserError, match="--quantize must be one of"):
    tflite.export_tflite(model_dir, vocab, True, SEQ, out, "int4")
  with pytest.raises(cli.UserError, match="int8 calibrates.*--task_name"):
    tflite.export_tflite(model_dir, vocab, True, SEQ, out, "int8")
  with pytest.raises(cli.UserError, match="Cannot use sequence length 1000"):
    tflite.export_tflite(model_dir, vocab, True, 1000, out)
  assert not os.path.exists(out)
