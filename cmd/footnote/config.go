package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Secret holds a token or key. It never prints: the effective configuration is logged at
// start-up, and tokens must not reach logs.
type Secret string

// LogValue implements slog.LogValuer.
func (s Secret) LogValue() slog.Value {
	if s == "" {
		return slog.StringValue("")
	}
	return slog.StringValue("[redacted]")
}

// String keeps secrets out of fmt output too.
func (s Secret) String() string { return s.LogValue().String() }

// Config is footnote's whole configuration. Precedence: flags > FOOTNOTE_* environment >
// config file > defaults. Each field names its environment variable in the env tag; the
// names in ../shared/DESIGN.md's configuration contract are fixed.
type Config struct {
	DataDir   string `yaml:"data_dir" env:"FOOTNOTE_DATA_DIR"`
	ModelsDir string `yaml:"models_dir" env:"FOOTNOTE_MODELS_DIR"`
	Corpus    string `yaml:"corpus" env:"FOOTNOTE_CORPUS"`
	HTTPAddr  string `yaml:"http_addr" env:"FOOTNOTE_HTTP_ADDR"`
	LogLevel  string `yaml:"log_level" env:"FOOTNOTE_LOG_LEVEL"`
	LogFormat string `yaml:"log_format" env:"FOOTNOTE_LOG_FORMAT"` // "text", "json"; empty picks by terminal

	// Dense embedders, comma separated: "onnx" (the local model), "openai[:model]",
	// "ollama[:model]"; "none" for BM25 only. Empty: "onnx" when the models are installed.
	Embedders string `yaml:"embedders" env:"FOOTNOTE_EMBEDDERS"`
	Reranker  string `yaml:"reranker" env:"FOOTNOTE_RERANKER"` // "onnx" (default when installed) or "none"
	Method    string `yaml:"method" env:"FOOTNOTE_METHOD"`     // default retrieval method

	Candidates int     `yaml:"candidates" env:"FOOTNOTE_CANDIDATES"`
	RerankTop  int     `yaml:"rerank_top" env:"FOOTNOTE_RERANK_TOP"`
	TopK       int     `yaml:"top_k" env:"FOOTNOTE_TOP_K"`
	MinScore   float64 `yaml:"min_score" env:"FOOTNOTE_MIN_SCORE"`
	MaxGap     float64 `yaml:"max_gap" env:"FOOTNOTE_MAX_GAP"`
	RRFK       int     `yaml:"rrf_k" env:"FOOTNOTE_RRF_K"`
	DocWeight  float64 `yaml:"doc_weight" env:"FOOTNOTE_DOC_WEIGHT"`
	// Fusion combines BM25 and the dense retrievers: "weighted" (min-max normalised scores,
	// equal weights; the default) or "rrf" (reciprocal rank, FOOTNOTE_RRF_K).
	Fusion string `yaml:"fusion" env:"FOOTNOTE_FUSION"`
	// FusedWeight blends the fused retrieval score into the reranked order (rag.Config.
	// FusedWeight) when reranking by similarity; 0 orders by the reranker alone. Fitted
	// with weighted fusion and the similarity scorer; a cross-encoder ignores it.
	FusedWeight float64 `yaml:"fused_weight" env:"FOOTNOTE_FUSED_WEIGHT"`
	BM25K1      float64 `yaml:"bm25_k1" env:"FOOTNOTE_BM25_K1"` // k1 and b are index-time: recorded with the corpus (rag/bm25.Params)
	BM25B       float64 `yaml:"bm25_b" env:"FOOTNOTE_BM25_B"`

	MilvusAddr     string `yaml:"milvus_addr" env:"FOOTNOTE_MILVUS_ADDR"`
	MilvusToken    Secret `yaml:"-" env:"FOOTNOTE_MILVUS_TOKEN"`
	MilvusDB       string `yaml:"milvus_db" env:"FOOTNOTE_MILVUS_DB"`
	MilvusUser     string `yaml:"milvus_user" env:"FOOTNOTE_MILVUS_USER"`
	MilvusPassword Secret `yaml:"-" env:"FOOTNOTE_MILVUS_PASSWORD"`
	MilvusTLS      bool   `yaml:"milvus_tls" env:"FOOTNOTE_MILVUS_TLS"`

	LLM        string        `yaml:"llm" env:"FOOTNOTE_LLM"` // extractive, ollama, openai
	LLMModel   string        `yaml:"llm_model" env:"FOOTNOTE_LLM_MODEL"`
	LLMTimeout time.Duration `yaml:"llm_timeout" env:"FOOTNOTE_LLM_TIMEOUT"` // total, first byte to last
	// Progress limits: a small local model may read a long prompt for a minute and then
	// stream steadily; a stuck server streams nothing. Zero means rag/generate's defaults
	// (90 s to the first token, 30 s between tokens); likewise zero FirstTokenTarget (15 s)
	// and MaxTokens (1024; 256 for a model with a window up to 8k) mean rag's.
	LLMFirstTokenTimeout time.Duration `yaml:"llm_first_token_timeout" env:"FOOTNOTE_LLM_FIRST_TOKEN_TIMEOUT"`
	LLMIdleTimeout       time.Duration `yaml:"llm_idle_timeout" env:"FOOTNOTE_LLM_IDLE_TIMEOUT"`
	LLMFirstTokenTarget  time.Duration `yaml:"llm_first_token_target" env:"FOOTNOTE_LLM_FIRST_TOKEN_TARGET"` // prompt sized to be read within it
	LLMContext           int           `yaml:"llm_context" env:"FOOTNOTE_LLM_CONTEXT"`                       // context window; 0 asks the server
	LLMMaxTokens         int           `yaml:"llm_max_tokens" env:"FOOTNOTE_LLM_MAX_TOKENS"`                 // answer length cap
	OllamaHost           string        `yaml:"ollama_host" env:"OLLAMA_HOST"`
	OpenAIKey            Secret        `yaml:"-" env:"OPENAI_API_KEY"`
	OpenAIBaseURL        string        `yaml:"openai_base_url" env:"OPENAI_BASE_URL"`

	SlackBotToken      Secret `yaml:"-" env:"FOOTNOTE_SLACK_BOT_TOKEN"`
	SlackAppToken      Secret `yaml:"-" env:"FOOTNOTE_SLACK_APP_TOKEN"`
	SlackSigningSecret Secret `yaml:"-" env:"FOOTNOTE_SLACK_SIGNING_SECRET"`
	SlackAPIURL        string `yaml:"slack_api_url" env:"FOOTNOTE_SLACK_API_URL"`

	DiscordToken     Secret `yaml:"-" env:"FOOTNOTE_DISCORD_TOKEN"`
	DiscordAppID     string `yaml:"discord_app_id" env:"FOOTNOTE_DISCORD_APP_ID"`
	DiscordPublicKey string `yaml:"discord_public_key" env:"FOOTNOTE_DISCORD_PUBLIC_KEY"`
	DiscordGuildID   string `yaml:"discord_guild_id" env:"FOOTNOTE_DISCORD_GUILD_ID"`
	DiscordAPIURL    string `yaml:"discord_api_url" env:"FOOTNOTE_DISCORD_API_URL"`
	DiscordFollow    bool   `yaml:"discord_follow_threads" env:"FOOTNOTE_DISCORD_FOLLOW_THREADS"` // needs the privileged message-content intent

	RequestTimeout time.Duration `yaml:"request_timeout" env:"FOOTNOTE_REQUEST_TIMEOUT"`
	MaxConcurrent  int           `yaml:"max_concurrent" env:"FOOTNOTE_MAX_CONCURRENT"`
	QueueSize      int           `yaml:"queue_size" env:"FOOTNOTE_QUEUE_SIZE"`
	UserRate       float64       `yaml:"user_rate_per_minute" env:"FOOTNOTE_USER_RATE"`

	// Chat-native features (issue #14; routes.go, native.go).
	PublicURL   string        `yaml:"public_url" env:"FOOTNOTE_PUBLIC_URL"`       // base URL for page-picture links under sources
	PageCacheMB int           `yaml:"page_cache_mb" env:"FOOTNOTE_PAGE_CACHE_MB"` // disk cap of rendered page pictures; 0 means 256
	Routes      []RouteConfig `yaml:"routes" env:"-"`                             // per workspace/guild/channel corpus, privacy, method, generator

	// Delivery and operation of `footnote serve`.
	APIToken          Secret        `yaml:"-" env:"FOOTNOTE_API_TOKEN"`                             // bearer token for the JSON API; required off loopback
	MetricsAddr       string        `yaml:"metrics_addr" env:"FOOTNOTE_METRICS_ADDR"`               // serve /metrics here instead of on FOOTNOTE_HTTP_ADDR
	ResumeMaxAge      time.Duration `yaml:"resume_max_age" env:"FOOTNOTE_RESUME_MAX_AGE"`           // oldest unfinished question answered after a restart
	QueryLogRetention time.Duration `yaml:"query_log_retention" env:"FOOTNOTE_QUERY_LOG_RETENTION"` // how long the query log is kept
}

// Defaults run fully offline: embedded store, local models when installed, extractive answers.
func Defaults() Config {
	data := ""
	if d, err := os.UserHomeDir(); err == nil {
		data = filepath.Join(d, ".local", "share", "footnote")
	}
	if x := os.Getenv("XDG_DATA_HOME"); x != "" {
		data = filepath.Join(x, "footnote")
	}
	return Config{
		DataDir:    data,
		Corpus:     "default",
		HTTPAddr:   "127.0.0.1:8080",
		LLM:        "extractive",
		Method:     "hybrid",
		Candidates: 20,
		RerankTop:  10,
		TopK:       5,
		MinScore:   0.2,
		MaxGap:     0.35,
		RRFK:       60,
		DocWeight:  0.8,
		// Chosen on the tuning half of rag/eval/testdata with the similarity scorer
		// (internal/retrievalbench TestTuneDefaults): against rrf without the fused prior,
		// page MRR 0.59 → 0.66, source MRR 0.88 → 0.94, with the same refusals. The fused
		// weight rose from 0.3 to 0.7 on every spent set (TestTuneDevSet, 2,020 turns):
		// the similarity scorer is the model that also retrieved, and at 0.3 it still
		// out-voted BM25's exact matches of names and numbers. On the 1,904 turns both
		// versions were tuned on, trust errors 123 at 0.5, 112 at 0.7, 114 at 0.85 and 116
		// at 1, with expected pages 1,025 … 1,028.
		Fusion:         "weighted",
		FusedWeight:    0.7,
		BM25K1:         1.5,
		BM25B:          0.75,
		OllamaHost:     "http://127.0.0.1:11434",
		LLMTimeout:     5 * time.Minute,
		RequestTimeout: 90 * time.Second,
		MaxConcurrent:  4,
		QueueSize:      32,
		UserRate:       10,

		ResumeMaxAge:      15 * time.Minute,
		QueryLogRetention: 90 * 24 * time.Hour,
	}
}

// LoadFile merges a YAML config file over c. A missing file at the default location is not
// an error; a missing file named explicitly is.
func (c *Config) LoadFile(path string, explicit bool) error {
	b, err := os.ReadFile(path)
	if err != nil {
		if !explicit && errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("config file: %w", err)
	}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	return nil
}

// LoadEnv merges the environment over c. A variable named *_FILE (for secrets) is read from
// that file, so secrets can come from mounted files instead of the environment.
func (c *Config) LoadEnv(getenv func(string) string) error {
	v := reflect.ValueOf(c).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		name := t.Field(i).Tag.Get("env")
		if name == "" || name == "-" {
			continue
		}
		val := getenv(name)
		if f := getenv(name + "_FILE"); val == "" && f != "" && t.Field(i).Type == reflect.TypeFor[Secret]() {
			b, err := os.ReadFile(f)
			if err != nil {
				return fmt.Errorf("%s_FILE: %w", name, err)
			}
			val = strings.TrimSpace(string(b))
		}
		if val == "" {
			continue
		}
		if err := setField(v.Field(i), val); err != nil {
			return fmt.Errorf("%s=%q: %w", name, redactFor(t.Field(i).Type, val), err)
		}
	}
	return nil
}

func redactFor(t reflect.Type, val string) string {
	if t == reflect.TypeFor[Secret]() {
		return "[redacted]"
	}
	return val
}

func setField(f reflect.Value, val string) error {
	switch f.Kind() {
	case reflect.String:
		f.SetString(val)
	case reflect.Bool:
		b, err := strconv.ParseBool(val)
		if err != nil {
			return errors.New("want true or false")
		}
		f.SetBool(b)
	case reflect.Int:
		n, err := strconv.Atoi(val)
		if err != nil {
			return errors.New("want a whole number")
		}
		f.SetInt(int64(n))
	case reflect.Int64: // time.Duration
		d, err := time.ParseDuration(val)
		if err != nil {
			return errors.New("want a duration such as 30s or 2m")
		}
		f.SetInt(int64(d))
	case reflect.Float64:
		x, err := strconv.ParseFloat(val, 64)
		if err != nil {
			return errors.New("want a number")
		}
		f.SetFloat(x)
	default:
		return fmt.Errorf("unsupported kind %s", f.Kind())
	}
	return nil
}

// Validate reports the first misconfiguration, naming the variable and what is wrong.
func (c *Config) Validate() error {
	var errs []error
	switch c.LLM {
	case "extractive", "ollama", "openai":
	default:
		errs = append(errs, fmt.Errorf("FOOTNOTE_LLM=%q: want extractive, ollama or openai", c.LLM))
	}
	if c.LLM == "openai" && c.OpenAIKey == "" && c.OpenAIBaseURL == "" {
		errs = append(errs, errors.New("FOOTNOTE_LLM=openai needs OPENAI_API_KEY (or OPENAI_BASE_URL for a local OpenAI-compatible server)"))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"FOOTNOTE_LLM_TIMEOUT", c.LLMTimeout}, {"FOOTNOTE_LLM_FIRST_TOKEN_TIMEOUT", c.LLMFirstTokenTimeout}, {"FOOTNOTE_LLM_IDLE_TIMEOUT", c.LLMIdleTimeout}, {"FOOTNOTE_LLM_FIRST_TOKEN_TARGET", c.LLMFirstTokenTarget}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s=%s: want a positive duration", d.name, d.v))
		}
	}
	if c.LLMContext < 0 || c.LLMMaxTokens < 0 {
		errs = append(errs, fmt.Errorf("FOOTNOTE_LLM_CONTEXT=%d, FOOTNOTE_LLM_MAX_TOKENS=%d: want 0 (default) or more", c.LLMContext, c.LLMMaxTokens))
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("FOOTNOTE_DATA_DIR is empty and no home directory was found"))
	}
	if c.TopK < 1 || c.TopK > 50 {
		errs = append(errs, fmt.Errorf("FOOTNOTE_TOP_K=%d: want 1 to 50", c.TopK))
	}
	if c.MinScore < 0 || c.MinScore > 1 {
		errs = append(errs, fmt.Errorf("FOOTNOTE_MIN_SCORE=%g: want 0 to 1", c.MinScore))
	}
	if c.Fusion != "rrf" && c.Fusion != "weighted" {
		errs = append(errs, fmt.Errorf("FOOTNOTE_FUSION=%q: want weighted or rrf", c.Fusion))
	}
	if c.FusedWeight < 0 || c.FusedWeight > 1 {
		errs = append(errs, fmt.Errorf("FOOTNOTE_FUSED_WEIGHT=%g: want 0 to 1", c.FusedWeight))
	}
	if c.DocWeight < 0 || c.DocWeight > 1 {
		errs = append(errs, fmt.Errorf("FOOTNOTE_DOC_WEIGHT=%g: want 0 to 1", c.DocWeight))
	}
	if c.SlackAppToken != "" && !strings.HasPrefix(string(c.SlackAppToken), "xapp-") {
		errs = append(errs, errors.New("FOOTNOTE_SLACK_APP_TOKEN: want an app-level token starting with xapp-"))
	}
	if c.SlackBotToken != "" && !strings.HasPrefix(string(c.SlackBotToken), "xoxb-") {
		errs = append(errs, errors.New("FOOTNOTE_SLACK_BOT_TOKEN: want a bot token starting with xoxb-"))
	}
	if c.SlackBotToken != "" && c.SlackAppToken == "" && c.SlackSigningSecret == "" {
		errs = append(errs, errors.New("FOOTNOTE_SLACK_BOT_TOKEN is set but neither FOOTNOTE_SLACK_APP_TOKEN (Socket Mode) nor FOOTNOTE_SLACK_SIGNING_SECRET (HTTP mode) is"))
	}
	if c.ResumeMaxAge <= 0 {
		errs = append(errs, fmt.Errorf("FOOTNOTE_RESUME_MAX_AGE=%s: want a positive duration such as 15m", c.ResumeMaxAge))
	}
	if c.QueryLogRetention <= 0 {
		errs = append(errs, fmt.Errorf("FOOTNOTE_QUERY_LOG_RETENTION=%s: want a positive duration such as 2160h (90 days)", c.QueryLogRetention))
	}
	if c.DiscordToken != "" && c.DiscordAppID == "" {
		errs = append(errs, errors.New("FOOTNOTE_DISCORD_TOKEN is set but FOOTNOTE_DISCORD_APP_ID is not (needed to register /ask)"))
	}
	return errors.Join(errs...)
}

// ModelsPath is where `footnote models pull` installs models unless told otherwise.
func (c *Config) ModelsPath() string {
	if c.ModelsDir != "" {
		return c.ModelsDir
	}
	return filepath.Join(c.DataDir, "models")
}

// LogAttrs lists the effective configuration for the start-up log; secrets print redacted.
func (c *Config) LogAttrs() []any {
	v := reflect.ValueOf(c).Elem()
	t := v.Type()
	var out []any
	for i := 0; i < t.NumField(); i++ {
		f := v.Field(i)
		if f.IsZero() {
			continue
		}
		v := f.Interface()
		if d, ok := v.(time.Duration); ok {
			v = d.String() // JSON logs would print nanoseconds
		}
		key := t.Field(i).Tag.Get("env")
		if key == "-" {
			key = t.Field(i).Tag.Get("yaml")
		}
		out = append(out, slog.Any(key, v))
	}
	return out
}
