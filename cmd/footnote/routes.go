package main

import (
	"errors"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/footnote-dev/footnote/bot"
)

// RouteConfig is one entry of the routes: section of config.yaml: how questions from one
// workspace/guild and channel are answered. Empty platform, tenant or channel match any;
// the most specific matching entry wins (channel over tenant over platform), the first one
// on a tie.
//
//	routes:
//	  - platform: slack
//	    channel: C0123456789      # #lab-private
//	    corpus: lab-notes         # an index built with FOOTNOTE_CORPUS=lab-notes
//	    private: true             # answers only the asker sees
//	  - platform: discord
//	    tenant: "1300000000000000100"
//	    method: bm25
//	    generator: extractive
//	    require_mention: false    # every message in its channels is a question
type RouteConfig struct {
	Platform         string `yaml:"platform"`
	Tenant           string `yaml:"tenant"`
	Channel          string `yaml:"channel"`
	Corpus           string `yaml:"corpus"`
	Private          bool   `yaml:"private"`
	Method           string `yaml:"method"`
	Generator        string `yaml:"generator"`
	RequireMention   *bool  `yaml:"require_mention"`
	MentionFollowUps bool   `yaml:"mention_follow_ups"`

	Line int `yaml:"-"` // where the entry starts in the config file, for errors
}

var routeKeys = map[string]bool{"platform": true, "tenant": true, "channel": true, "corpus": true, "private": true,
	"method": true, "generator": true, "require_mention": true, "mention_follow_ups": true}

// UnmarshalYAML keeps the entry's line and rejects unknown keys (a node's Decode does not
// inherit the file decoder's KnownFields).
func (r *RouteConfig) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: a route is a mapping such as {platform: slack, channel: C123, private: true}", n.Line)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; !routeKeys[k.Value] {
			return fmt.Errorf("line %d: routes: unknown key %q (want platform, tenant, channel, corpus, private, method, generator, require_mention, mention_follow_ups)", k.Line, k.Value)
		}
	}
	type plain RouteConfig
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*r = RouteConfig(p)
	r.Line = n.Line
	return nil
}

// validateRoutes checks the routes: section; every error names the entry's line.
func validateRoutes(routes []RouteConfig) error {
	var errs []error
	seen := map[string]int{}
	for _, r := range routes {
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("config routes (line %d): %s", r.Line, fmt.Sprintf(format, args...)))
		}
		switch r.Platform {
		case "", "slack", "discord":
		default:
			bad("platform %q: want slack or discord", r.Platform)
		}
		if r.Platform == "" && (r.Tenant != "" || r.Channel != "") {
			bad("tenant and channel ids are per platform: set platform too")
		}
		switch {
		case r.Method == "", r.Method == "hybrid", r.Method == "bm25", strings.HasPrefix(r.Method, "dense:") && len(r.Method) > len("dense:"):
		default:
			bad("method %q: want hybrid, bm25 or dense:<model>", r.Method)
		}
		switch r.Generator {
		case "", "extractive", "ollama", "openai":
		default:
			bad("generator %q: want extractive, ollama or openai", r.Generator)
		}
		if strings.ContainsAny(r.Corpus, "/\\ ") {
			bad("corpus %q: a corpus name has no slashes or spaces", r.Corpus)
		}
		key := r.Platform + "\x00" + r.Tenant + "\x00" + r.Channel
		if prev, dup := seen[key]; dup {
			bad("same platform, tenant and channel as the entry on line %d", prev)
		} else {
			seen[key] = r.Line
		}
	}
	return errors.Join(errs...)
}

// askerKey names the pipeline a route needs in bot.Config.Corpora: "" is the default one.
func (r RouteConfig) askerKey(defaultCorpus string) string {
	corpus := r.Corpus
	if corpus == defaultCorpus {
		corpus = ""
	}
	if corpus == "" && r.Generator == "" {
		return ""
	}
	return corpus + "+" + r.Generator
}

// routeFunc turns the routes into bot.Config.Route.
func routeFunc(routes []RouteConfig, defaultCorpus string) func(platform, tenant, channel string) bot.Route {
	return func(platform, tenant, channel string) bot.Route {
		best, bestScore := -1, -1
		for i, r := range routes {
			if r.Platform != "" && r.Platform != platform || r.Tenant != "" && r.Tenant != tenant || r.Channel != "" && r.Channel != channel {
				continue
			}
			score := 0
			if r.Channel != "" {
				score += 4
			}
			if r.Tenant != "" {
				score += 2
			}
			if r.Platform != "" {
				score++
			}
			if score > bestScore {
				best, bestScore = i, score
			}
		}
		if best < 0 {
			return bot.DefaultRoute
		}
		r := routes[best]
		out := bot.Route{Corpus: r.askerKey(defaultCorpus), Private: r.Private, Method: r.Method,
			RequireMention: true, MentionFollowUps: r.MentionFollowUps}
		if r.RequireMention != nil {
			out.RequireMention = *r.RequireMention
		}
		return out
	}
}
