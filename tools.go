//go:build tools

// Package footnote pins the modules the packages below are being built against, so that
// parallel work on separate packages shares one go.mod. Removed once every import is real.
package footnote

import (
	_ "github.com/bwmarrin/discordgo"
	_ "github.com/clipperhouse/uax29/v2/words"
	_ "github.com/gen2brain/go-fitz"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/gorilla/websocket"
	_ "github.com/kljensen/snowball/english"
	_ "github.com/milvus-io/milvus-sdk-go/v2/client"
	_ "github.com/ollama/ollama/api"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/sashabaranov/go-openai"
	_ "github.com/schollz/progressbar/v3"
	_ "github.com/slack-go/slack"
	_ "github.com/slack-go/slack/slacktest"
	_ "github.com/slack-go/slack/socketmode"
	_ "github.com/slack-go/slack/slackevents"
	_ "github.com/spf13/cobra"
	_ "github.com/sugarme/tokenizer"
	_ "github.com/sugarme/tokenizer/pretrained"
	_ "github.com/tiktoken-go/tokenizer"
	_ "github.com/yalue/onnxruntime_go"
	_ "golang.org/x/sync/errgroup"
	_ "golang.org/x/term"
	_ "golang.org/x/time/rate"
	_ "gopkg.in/yaml.v3"
	_ "modernc.org/sqlite"
)
