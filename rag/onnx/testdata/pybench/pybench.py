"""Compare footnote's ONNX paths with Python onnxruntime on the same model file, the same token
id runs (footnote's own batching, sent over by the Go half, main.go) and the same session
settings (intra-op threads, one inter-op thread, no spinning), interleaved in one run: each
round times footnote once and Python once, alternating which goes first.

    go build -o /tmp/pybench ./rag/onnx/testdata/pybench
    python3 -m venv ~/.cache/footnote/tokvenv
    ~/.cache/footnote/tokvenv/bin/pip install onnxruntime==1.30.0 numpy onnx==1.23.2
    ~/.cache/footnote/tokvenv/bin/python rag/onnx/testdata/pybench/pybench.py \
        --bin /tmp/pybench --models ~/.local/share/footnote/models --papers ../shared/corpus/papers

footnote's time includes tokenizing (package hftok), padding, the run and pooling; Python's
only the run and pooling of the pre-tokenized ids, so the ratio is footnote's whole cost
against raw ONNX Runtime. The cross-encoder is all-MiniLM-L6-v2 (the architecture of
ms-marco-MiniLM-L6-v2: 6 layers, 384 wide) with a linear head on [CLS] added here, because
no cross-encoder weights are reachable; speed does not depend on the weights.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper


def chunks(papers, n, words):
    import glob
    out = []
    for pdf in sorted(glob.glob(os.path.join(papers, "*.pdf"))):
        txt = subprocess.run(["pdftotext", "-enc", "UTF-8", pdf, "-"], capture_output=True, check=True).stdout.decode()
        w = txt.split()
        for i in range(0, len(w) - words, words):
            out.append(" ".join(w[i:i + words]))
            if len(out) == n:
                return out
    return out


def session(path, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def pad(run, value):
    n = max(len(s) for s in run)
    ids = np.full((len(run), n), value, dtype=np.int64)
    mask = np.zeros((len(run), n), dtype=np.int64)
    for i, s in enumerate(run):
        ids[i, :len(s)] = s
        mask[i, :len(s)] = 1
    return ids, mask


def py_embed(sess, plan):
    names = [i.name for i in sess.get_inputs()]
    out = []
    for run in plan["ids"]:
        ids, mask = pad(run, plan["pad"])
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in names:
            feed["token_type_ids"] = np.zeros_like(ids)
        h = sess.run(["last_hidden_state"], feed)[0][:, 0, :]
        out.extend(h / np.linalg.norm(h, axis=1, keepdims=True))
    return out


def py_score(sess, plan):
    names = [i.name for i in sess.get_inputs()]
    out = []
    for run, types in zip(plan["ids"], plan["types"]):
        ids, mask = pad(run, plan["pad"])
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in names:
            t = np.zeros_like(ids)
            for i, ty in enumerate(types):
                t[i, :len(ty)] = ty
            feed["token_type_ids"] = t
        logits = sess.run(["logits"], feed)[0][:, 0]
        out.extend(1 / (1 + np.exp(-logits)))
    return out


def cross_graph(minilm, path):
    m = onnx.load(minilm)
    g = m.graph
    rng = np.random.default_rng(0)
    g.initializer.extend([
        numpy_helper.from_array(np.array(0, dtype=np.int64), "cls_index"),
        numpy_helper.from_array(rng.normal(0, 0.05, (384, 1)).astype(np.float32), "head_w"),
        numpy_helper.from_array(np.zeros(1, dtype=np.float32), "head_b"),
    ])
    g.node.extend([
        helper.make_node("Gather", ["last_hidden_state", "cls_index"], ["cls"], axis=1),
        helper.make_node("MatMul", ["cls", "head_w"], ["head"]),
        helper.make_node("Add", ["head", "head_b"], ["logits"]),
    ])
    del g.output[:]
    g.output.append(helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1]))
    onnx.save(m, path)


def compare(name, args, model_dir, kind, payload, pyfn, model_file):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(payload, f)
    go = subprocess.Popen([args.bin, "-models", args.models, "-dir", model_dir, "-kind", kind, "-threads", str(args.threads), "-texts", f.name],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    plan = json.loads(go.stdout.readline())
    sess = session(model_file, args.threads)

    if args.control:
        # Calibration: a second Python session stands in for footnote, so the ratios show
        # the harness's own bias and noise.
        sess2 = session(model_file, args.threads)

        def go_once():
            c, t = time.process_time(), time.perf_counter()
            o = pyfn(sess2, plan)
            return time.perf_counter() - t, time.process_time() - c, o
    else:
        def go_once():
            return go_run()

    def go_run():
        go.stdin.write(kind + "\n")
        go.stdin.flush()
        r = json.loads(go.stdout.readline())
        return r["seconds"], r["cpu"], r["out"]

    def py_once():
        c, t = time.process_time(), time.perf_counter()
        o = pyfn(sess, plan)
        return time.perf_counter() - t, time.process_time() - c, o

    _, _, gout = go_once()  # warm-up both
    _, _, pout = py_once()
    if kind == "embed":
        g = np.array(gout)
        worst = min(float(np.max(g @ v)) for v in pout)
        check = f"min cosine go/py {worst:.6f}"
    else:
        check = f"max |Δscore| {max(abs(a - b) for a, b in zip(sorted(gout), sorted(pout))):.2e}"
    gs, ps, ratios, cratios = [], [], [], []
    for r in range(args.rounds):
        if r % 2 == 0:
            g, gc, _ = go_once()
            p, pc, _ = py_once()
        else:
            p, pc, _ = py_once()
            g, gc, _ = go_once()
        gs.append(g)
        ps.append(p)
        ratios.append(p / g)  # footnote speed relative to Python
        cratios.append(pc / gc)
    go.stdin.close()
    go.wait()
    n = sum(len(r) for r in plan["ids"])
    unit = "chunks/s" if kind == "embed" else "pairs/s"
    print(f"{name}: footnote {n / statistics.median(gs):.2f} {unit}, python onnxruntime {n / statistics.median(ps):.2f} {unit}, "
          f"speed ratio footnote/python median {statistics.median(ratios):.3f} (rounds {min(ratios):.3f}-{max(ratios):.3f}), "
          f"CPU-cost ratio python/footnote median {statistics.median(cratios):.3f} "
          f"(quartiles {statistics.quantiles(cratios, n=4)[0]:.3f}-{statistics.quantiles(cratios, n=4)[2]:.3f}), "
          f"{len(plan['ids'])} runs of {n} inputs, {check}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--papers", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--only", default="")
    ap.add_argument("--control", action="store_true", help="time Python against Python")
    args = ap.parse_args()
    # Small workloads and many rounds: on a shared machine the load changes from second to
    # second, and only short alternating rounds see the same conditions.
    docs = chunks(args.papers, 4, 150)
    sentences = [s for d in chunks(args.papers, 16, 150) for s in d.split(". ")][:32]
    work = {
        "bge fp32, 4 chunks": ("bge_small_en_v1_5", docs),
        "bge int8, 4 chunks": ("bge_small_en_v1_5_q", docs),
        "bge int8, 32 sentences": ("bge_small_en_v1_5_q", sentences),
    }
    for name, (model, payload) in work.items():
        if args.only and args.only not in name:
            continue
        d = os.path.join(args.models, model)
        compare(name, args, d, "embed", payload, py_embed, os.path.join(d, "model.onnx"))
    if not args.only or "cross" in args.only:
        tmp = tempfile.mkdtemp()
        cross = os.path.join(tmp, "cross")
        os.mkdir(cross)
        model = os.path.join(cross, "model.onnx")
        cross_graph(os.path.join(args.models, "all_minilm_l6_v2", "model.onnx"), model)
        tok = os.path.join(args.models, "all_minilm_l6_v2", "tokenizer.json")
        import hashlib, shutil
        shutil.copy(tok, os.path.join(cross, "tokenizer.json"))
        files = {}
        for fn in ("model.onnx", "tokenizer.json"):
            b = open(os.path.join(cross, fn), "rb").read()
            files[fn] = {"sha256": hashlib.sha256(b).hexdigest(), "size": len(b)}
        json.dump({"name": "cross", "kind": "cross-encoder", "max_length": 512, "output": "logits",
                   "inputs": ["input_ids", "attention_mask", "token_type_ids"], "files": files, "source": {"registry": "local"}},
                  open(os.path.join(cross, "manifest.json"), "w"))
        payload = {"query": "How does multi-head attention differ from single-head attention?", "passages": docs}
        compare("cross-encoder (MiniLM-L6 + head), 4 pairs", args, cross, "score", payload, py_score, model)


if __name__ == "__main__":
    main()
