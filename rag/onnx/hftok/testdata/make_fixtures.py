"""Build the small Unigram and byte-level BPE tokenizer.json files and the reference ids for
rag/onnx/hftok's parity tests, with Hugging Face `tokenizers` (the Rust library) as the oracle.

No registry package reachable from CI ships a real XLM-RoBERTa (Unigram) or byte-level BPE
tokenizer.json small enough to commit, so two are trained here on corpus text, laid out like
the real ones:
  unigram.json  XLM-RoBERTa style: SentencePiece unigram model (trained by `sentencepiece`,
                ids <s>=0 <pad>=1 </s>=2 <unk>=3 as in XLM-R), converted the way transformers
                converts XLM-R: Sequence[Precompiled(charsmap), Replace(" {2,}" -> " ")],
                Metaspace("▁", prepend always), RobertaProcessing(<s> A </s></s> B </s>).
  bpe.json      RoBERTa/GPT-2 style: ByteLevel pre-tokenizer (no prefix space), BPE with
                merges, RobertaProcessing.
The WordPiece reference is the installed bge-small-en-v1.5 tokenizer.json (not copied: the
test reads it from $FOOTNOTE_MODELS_DIR and checks its sha256).

Run once (not at test time):

    python3 -m venv ~/.cache/footnote/tokvenv
    ~/.cache/footnote/tokvenv/bin/pip install tokenizers==0.23.3 sentencepiece==0.2.3 protobuf==7.36.2
    ~/.cache/footnote/tokvenv/bin/python rag/onnx/hftok/testdata/make_fixtures.py \
        /work/shared/corpus/papers ~/.local/share/footnote/models/bge_small_en_v1_5/tokenizer.json

The training text is the corpus PDFs' text (pdftotext) plus the fixture texts themselves, so
that accents, CJK and emoji are in the small vocabularies instead of all being <unk>.
It writes reference.json: per family, per text, the ids (and type ids for pairs) that
`tokenizers` produces with special tokens, untruncated and truncated (longest_first).
"""

import glob
import json
import os
import subprocess
import sys
import tempfile

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as sp_pb2
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

HERE = os.path.dirname(os.path.abspath(__file__))

LONG = (
    "The Transformer follows this overall architecture using stacked self-attention and "
    "point-wise, fully connected layers for both the encoder and decoder. "
) * 12

TEXTS = [
    "What are the two sub-layers of a Transformer encoder layer?",
    "Café naïve résumé Zürich façade coöperate Ångström",
    "Les élèves étudient l'été à São Paulo; ¿qué tal? — «très bien»",
    "日本語のテキストと中文混合 text",
    "Symbols: $100 + 5% = <x> ^ `code` | ~tilde ~ a_b @home #tag & co.",
    "Emoji 🙂 and math ∑ x² ≤ 10 − 3, ½ ⅓ 👩‍🔬",
    "Tabs\tand\nnewlines\r\nand\u00a0non-breaking\u2003spaces\u200b zero width",
    "  leading and   repeated   spaces  ",
    "Full-width ＡＢＣ１２３ and ligature ﬁne ﬂow",
    "supercalifragilisticexpialidocious " + "x" * 120 + " end",
    "BERT-base (Devlin et al., 2019) achieves 84.6% on MNLI-m; see Table 2.",
    "",
    LONG,
]

PAIRS = [
    ("What is multi-head attention?", LONG),
    (LONG, "short passage about attention"),
    ("Qu'est-ce que l'attention? 注意力", "Café naïve résumé " * 30),
    (LONG, LONG[:300]),
]

SINGLE_MAX = [None, 16]
PAIR_MAX = [24, 64, 512]


def corpus_text(papers):
    out = []
    for pdf in sorted(glob.glob(os.path.join(papers, "*.pdf"))):
        txt = subprocess.run(["pdftotext", "-enc", "UTF-8", pdf, "-"], capture_output=True, check=True).stdout
        out.append(txt.decode("utf-8", "replace"))
    out.extend(TEXTS * 20)
    out.extend([a + "\n" + b for a, b in PAIRS] * 5)
    return "\n".join(out)


def train_unigram(text, tmp):
    path = os.path.join(tmp, "train.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    prefix = os.path.join(tmp, "spm")
    spm.SentencePieceTrainer.train(
        input=path, model_prefix=prefix, vocab_size=3000, model_type="unigram",
        character_coverage=1.0, bos_id=0, pad_id=1, eos_id=2, unk_id=3,
        max_sentence_length=100000, normalization_rule_name="nmt_nfkc", input_sentence_size=200000,
        shuffle_input_sentence=False, num_threads=1, seed_sentencepiece_size=200000,
    )
    m = sp_pb2.ModelProto()
    with open(prefix + ".model", "rb") as f:
        m.ParseFromString(f.read())
    vocab = [(p.piece, p.score) for p in m.pieces]
    unk = [i for i, p in enumerate(m.pieces) if p.type == 2][0]
    tok = Tokenizer(models.Unigram(vocab, unk_id=unk, byte_fallback=False))
    tok.normalizer = normalizers.Sequence([
        normalizers.Precompiled(m.normalizer_spec.precompiled_charsmap),
        normalizers.Replace(Regex(" {2,}"), " "),
    ])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    tok.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    tok.add_special_tokens(["<s>", "<pad>", "</s>", "<unk>"])
    return tok


def train_bpe(text, tmp):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=3000, special_tokens=["<s>", "<pad>", "</s>", "<unk>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(text.split("\n"), trainer)
    tok.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0), trim_offsets=True, add_prefix_space=False)
    return tok


def reference(tok):
    out = {"single": [], "pair": []}
    for t in TEXTS:
        for mx in SINGLE_MAX:
            tok.no_truncation()
            if mx:
                tok.enable_truncation(max_length=mx, strategy="longest_first")
            e = tok.encode(t)
            out["single"].append({"text": t, "max_length": mx or 0, "ids": e.ids})
    for a, b in PAIRS:
        for mx in PAIR_MAX:
            tok.enable_truncation(max_length=mx, strategy="longest_first")
            e = tok.encode(a, b)
            out["pair"].append({"a": a, "b": b, "max_length": mx, "ids": e.ids, "type_ids": e.type_ids})
    tok.no_truncation()
    return out


def main():
    papers, wordpiece = sys.argv[1], sys.argv[2]
    text = corpus_text(papers)
    with tempfile.TemporaryDirectory() as tmp:
        uni = train_unigram(text, tmp)
    bpe = train_bpe(text, tmp)
    uni.save(os.path.join(HERE, "unigram.json"))
    bpe.save(os.path.join(HERE, "bpe.json"))
    # Reload from disk so the reference is what the saved files produce.
    ref = {
        "tokenizers_version": __import__("tokenizers").__version__,
        "wordpiece": reference(Tokenizer.from_file(wordpiece)),
        "unigram": reference(Tokenizer.from_file(os.path.join(HERE, "unigram.json"))),
        "bpe": reference(Tokenizer.from_file(os.path.join(HERE, "bpe.json"))),
    }
    with open(os.path.join(HERE, "reference.json"), "w", encoding="utf-8") as f:
        json.dump(ref, f, ensure_ascii=False, indent=0)
        f.write("\n")


if __name__ == "__main__":
    main()
