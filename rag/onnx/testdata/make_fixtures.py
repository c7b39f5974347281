"""Compute the reference fixtures for rag/onnx tests with an independent implementation.

Run once (not at test time) after `go run ./deploy/models -model onnxruntime
-model bge_small_en_v1_5 -model bge_small_en_v1_5_q -model all_minilm_l6_v2` installed the models:

    python3 -m venv /tmp/refvenv
    /tmp/refvenv/bin/pip install onnxruntime==1.30.0 tokenizers==0.23.3 numpy==2.4.6 onnx==1.23.2
    /tmp/refvenv/bin/python rag/onnx/testdata/make_fixtures.py ~/.local/share/footnote/models

It writes, next to this script:
  reference.json     token ids from Hugging Face `tokenizers` (the Rust library), and
                     sentence vectors from onnxruntime's Python API with pooling and L2
                     normalisation done in numpy, one text per run (no padding).
  tiny_cross.onnx    a hand-built graph with the inputs of a BERT cross-encoder whose
                     logit is 0.1 * (segment-B tokens - segment-A tokens), counting only
                     attended positions: it checks the reranker's input plumbing (ids,
                     attention mask, token types, padding, sigmoid) without a real model.
"""

import json
import os
import sys

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
BGE_QUERY = "Represent this sentence for searching relevant passages: "

LONG = (
    "The Transformer follows this overall architecture using stacked self-attention and "
    "point-wise, fully connected layers for both the encoder and decoder. "
) * 40

TOKEN_TEXTS = [
    "What are the two sub-layers of a Transformer encoder layer?",
    "Café naïve résumé Zürich façade coöperate Ångström",
    "Les élèves étudient l'été à São Paulo; ¿qué tal? — «très bien»",
    "日本語のテキストと中文混合 text",
    "Symbols: $100 + 5% = <x> ^ `code` | ~tilde ~ a_b @home #tag & co.",
    "Emoji 🙂 and math ∑ x² ≤ 10 − 3, ½ ⅓",
    "Tabs\tand\nnewlines\r\nand\u00a0non-breaking\u2003spaces\u200b zero width",
    "Literal special tokens [SEP] and [CLS] inside text [MASK].",
    "supercalifragilisticexpialidocious " + "x" * 120 + " end",
    "BERT-base (Devlin et al., 2019) achieves 84.6% on MNLI-m; see Table 2.",
    "",
    LONG,
]

EMBED_TEXTS = [
    "The encoder is composed of a stack of N = 6 identical layers. Each layer has two "
    "sub-layers: a multi-head self-attention mechanism and a position-wise fully connected "
    "feed-forward network.",
    "We employ a residual connection around each of the two sub-layers, followed by layer "
    "normalization.",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "Café naïve résumé — accents should survive normalisation.",
    "short",
    LONG,
]

QUERIES = [
    "What are the two sub-layers of a Transformer encoder layer?",
    "how do plants make sugar",
]

MODELS = {
    "bge_small_en_v1_5": {"pooling": "cls", "max_length": 512, "query_prefix": BGE_QUERY},
    "all_minilm_l6_v2": {"pooling": "mean", "max_length": 256, "query_prefix": ""},
    "bge_small_en_v1_5_q": {"pooling": "cls", "max_length": 512, "query_prefix": BGE_QUERY},
}


def load_tokenizer(path, max_length):
    tok = Tokenizer.from_file(path)
    tok.no_padding()
    tok.enable_truncation(max_length=max_length)
    return tok


def embed(sess, tok, pooling, text):
    enc = tok.encode(text)
    ids = np.array([enc.ids], dtype=np.int64)
    mask = np.array([enc.attention_mask], dtype=np.int64)
    types = np.array([enc.type_ids], dtype=np.int64)
    (hidden,) = sess.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})
    if pooling == "cls":
        v = hidden[0, 0]
    else:
        m = mask[0].astype(np.float32)[:, None]
        v = (hidden[0] * m).sum(0) / max(m.sum(), 1e-9)
    v = v / max(np.linalg.norm(v), 1e-12)
    return [round(float(x), 7) for x in v]


def main(models_dir):
    out = {"tokenizer": {}, "embeddings": {}, "pairs": []}
    for name, cfg in MODELS.items():
        d = os.path.join(models_dir, name)
        tok_path = os.path.join(d, "tokenizer.json")

        raw = Tokenizer.from_file(tok_path)
        raw.no_padding()
        raw.no_truncation()
        cases = []
        for t in TOKEN_TEXTS:
            full = raw.encode(t).ids
            trunc = load_tokenizer(tok_path, cfg["max_length"]).encode(t).ids
            cases.append({"text": t, "ids": raw.encode(t, add_special_tokens=False).ids,
                          "with_special": full, "truncated": trunc, "max_length": cfg["max_length"]})
        out["tokenizer"][name] = cases

        tok = load_tokenizer(tok_path, cfg["max_length"])
        sess = ort.InferenceSession(os.path.join(d, "model.onnx"), providers=["CPUExecutionProvider"])
        docs = [{"text": t, "vector": embed(sess, tok, cfg["pooling"], t)} for t in EMBED_TEXTS]
        queries = [{"text": q, "vector": embed(sess, tok, cfg["pooling"], cfg["query_prefix"] + q)} for q in QUERIES]
        out["embeddings"][name] = {"documents": docs, "queries": queries}

    # Pair encodings with tokenizers' own pair template (no truncation needed: short pairs).
    raw = Tokenizer.from_file(os.path.join(models_dir, "bge_small_en_v1_5", "tokenizer.json"))
    raw.no_padding()
    raw.no_truncation()
    for a, b in [("What is attention?", "Attention maps a query and key-value pairs to an output."),
                 ("Zürich café?", "Überraschung: naïve façade.")]:
        e = raw.encode(a, b)
        out["pairs"].append({"a": a, "b": b, "ids": e.ids, "types": e.type_ids})

    with open(os.path.join(HERE, "reference.json"), "w") as f:
        json.dump(out, f, ensure_ascii=False, indent=0)
    make_tiny_cross(os.path.join(HERE, "tiny_cross.onnx"))


def make_tiny_cross(path):
    import onnx
    from onnx import TensorProto, helper

    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "seq"])
              for n in ("input_ids", "attention_mask", "token_type_ids")]
    out = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])
    two = helper.make_tensor("two", TensorProto.INT64, [], [2])
    one = helper.make_tensor("one", TensorProto.INT64, [], [1])
    tenth = helper.make_tensor("tenth", TensorProto.FLOAT, [], [0.1])
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [1])
    nodes = [
        helper.make_node("Mul", ["token_type_ids", "two"], ["tt2"]),
        helper.make_node("Sub", ["tt2", "one"], ["sign"]),  # +1 for segment B, -1 for A
        helper.make_node("Mul", ["sign", "attention_mask"], ["masked"]),
        helper.make_node("ReduceSum", ["masked", "axes"], ["sum"], keepdims=1),
        helper.make_node("Cast", ["sum"], ["sumf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["sumf", "tenth"], ["logits"]),
    ]
    graph = helper.make_graph(nodes, "tiny_cross", inputs, [out], initializer=[two, one, tenth, axes])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)

    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    ids = np.array([[101, 5, 102, 7, 8, 102, 0]], dtype=np.int64)
    mask = np.array([[1, 1, 1, 1, 1, 1, 0]], dtype=np.int64)
    types = np.array([[0, 0, 0, 1, 1, 1, 0]], dtype=np.int64)
    (logits,) = s.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})
    assert abs(float(logits[0, 0]) - 0.0) < 1e-6, logits


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser("~/.local/share/footnote/models"))
