"""Build testdata/tiny_xlmr_cross.onnx: a hand-made graph with the interface of an XLM-RoBERTa
cross-encoder (inputs input_ids and attention_mask only, no token_type_ids; output logits
[batch, 1]) for the Unigram tokenizer in ../hftok/testdata/unigram.json.

Its logit is sum over attended positions of W[input_id], where W is 1 for the piece
"▁attention", 100 for <pad> (so padding that leaks past the attention mask shows at once)
and 0 otherwise: passages that say "attention" rank first, and the exact score checks the
tokenizer, the <s> A </s></s> B </s> layout, padding with id 1 and the mask.

Run once (not at test time), in the venv of ../hftok/testdata/make_fixtures.py with onnx:

    ~/.cache/footnote/tokvenv/bin/pip install onnx==1.23.2
    ~/.cache/footnote/tokvenv/bin/python rag/onnx/testdata/make_xlmr_cross.py
"""

import json
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))

with open(os.path.join(HERE, "..", "hftok", "testdata", "unigram.json"), encoding="utf-8") as f:
    tok = json.load(f)
vocab = [p for p, _ in tok["model"]["vocab"]]
w = np.zeros(len(vocab), dtype=np.float32)
w[vocab.index("▁attention")] = 1.0
w[vocab.index("<pad>")] = 100.0

nodes = [
    helper.make_node("Gather", ["W", "input_ids"], ["per_token"], axis=0),
    helper.make_node("Cast", ["attention_mask"], ["maskf"], to=TensorProto.FLOAT),
    helper.make_node("Mul", ["per_token", "maskf"], ["masked"]),
    helper.make_node("ReduceSum", ["masked", "axes"], ["logits"], keepdims=1),
]
graph = helper.make_graph(
    nodes, "tiny_xlmr_cross",
    [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
     helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"])],
    [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])],
    initializer=[numpy_helper.from_array(w, "W"), numpy_helper.from_array(np.array([1], dtype=np.int64), "axes")],
)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], producer_name="footnote make_xlmr_cross.py")
model.ir_version = 9
onnx.checker.check_model(model)
onnx.save(model, os.path.join(HERE, "tiny_xlmr_cross.onnx"))
