package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// startMain builds Main from env (not serving yet); err is newMain's error.
func startMain(t *testing.T, env map[string]string) (*Main, *app, error) {
	t.Helper()
	a := &app{out: io.Discard, errOut: io.Discard, getenv: func(k string) string { return env[k] }}
	root := a.rootCommand()
	var m *Main
	var merr error
	root.AddCommand(&cobra.Command{Use: "probe", RunE: func(cmd *cobra.Command, _ []string) error {
		m, merr = a.newMain(cmd.Context())
		return nil
	}})
	root.SetArgs([]string{"probe"})
	if err := root.ExecuteContext(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.close)
	return m, a, merr
}

// TestRoutesValidation: mistakes in routes: stop start-up with the line of the entry.
func TestRoutesValidation(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"routes:\n  - platform: slack\n    channel: C1\n  - platform: teams\n    channel: C2\n", "line 4): platform \"teams\""},
		{"routes:\n  - platform: slack\n    chanel: C1\n", "line 3: routes: unknown key \"chanel\""},
		{"top_k: 5\nroutes:\n  - platform: discord\n    generator: gpt\n", "line 3): generator \"gpt\""},
		{"routes:\n  - platform: slack\n    channel: C1\n  - platform: slack\n    channel: C1\n    private: true\n", "line 4): same platform, tenant and channel as the entry on line 2"},
		{"routes:\n  - channel: C1\n", "line 2): tenant and channel ids are per platform"},
		{"routes:\n  - platform: slack\n    method: \"dense:\"\n", "line 2): method \"dense:\""},
	} {
		env := bm25Env(t)
		file := filepath.Join(t.TempDir(), "config.yaml")
		os.WriteFile(file, []byte(tc.yaml), 0o600)
		env["FOOTNOTE_CONFIG"] = file
		env["FOOTNOTE_HTTP_ADDR"] = "127.0.0.1:0"
		var err error
		a := &app{out: io.Discard, errOut: io.Discard, getenv: func(k string) string { return env[k] }}
		root := a.rootCommand()
		root.AddCommand(&cobra.Command{Use: "probe", RunE: func(cmd *cobra.Command, _ []string) error {
			_, err = a.newMain(cmd.Context())
			return err
		}})
		root.SetArgs([]string{"probe"})
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		cerr := root.ExecuteContext(t.Context())
		a.close()
		if err == nil {
			err = cerr
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("config\n%s: err = %v, want it to name %q", tc.yaml, err, tc.want)
		}
	}
}

// TestRoutesPerChannelCorpora: the same question in two Slack channels is answered from
// each channel's own corpus, and in the private one only the asker sees the answer.
func TestRoutesPerChannelCorpora(t *testing.T) {
	env := bm25Env(t)
	if code, out, errOut := run(t, env, "index", docsFolder(t)); code != 0 {
		t.Fatalf("index default: %d\n%s%s", code, out, errOut)
	}
	lab := t.TempDir()
	os.WriteFile(filepath.Join(lab, "lab-model.md"), []byte("# Lab model\n\n## Encoder\n\nOur lab's encoder is a stack of four convolutional layers with gated residual units, trained on seismograph traces.\n"), 0o644)
	labEnv := map[string]string{}
	for k, v := range env {
		labEnv[k] = v
	}
	labEnv["FOOTNOTE_CORPUS"] = "lab"
	if code, out, errOut := run(t, labEnv, "index", lab); code != 0 {
		t.Fatalf("index lab: %d\n%s%s", code, out, errOut)
	}
	file := filepath.Join(t.TempDir(), "config.yaml")
	os.WriteFile(file, []byte("routes:\n  - platform: slack\n    channel: CLAB\n    corpus: lab\n    private: true\n  - platform: slack\n    channel: CPUB\n"), 0o600)
	sl := newFakeAPI(t, slackReply)
	for k, v := range map[string]string{"FOOTNOTE_CONFIG": file, "FOOTNOTE_HTTP_ADDR": "127.0.0.1:0", "FOOTNOTE_SLACK_BOT_TOKEN": "xoxb-test",
		"FOOTNOTE_SLACK_SIGNING_SECRET": "s", "FOOTNOTE_SLACK_API_URL": sl.srv.URL + "/api/"} {
		env[k] = v
	}
	m, _, err := startMain(t, env)
	if err != nil {
		t.Fatal(err)
	}
	go m.srv.Serve(m.ln)
	t.Cleanup(func() { m.srv.Close() })
	base := "http://" + m.Addr()
	for i, ch := range []string{"CPUB", "CLAB"} {
		ts := "1763000002.00010" + string(rune('0'+i))
		body, _ := json.Marshal(map[string]any{"type": "event_callback", "team_id": "T1", "event_id": "Ev" + ch, "event_time": time.Now().Unix(),
			"event": map[string]any{"type": "app_mention", "user": "U1", "channel": ch, "ts": ts, "event_ts": ts,
				"text": "<@UBOT> What is the encoder a stack of?"}})
		postSigned(t, base+"/slack/events", "s", string(body))
	}
	eph := sl.wait(t, "POST", "/chat.postEphemeral", 1)
	if eph[0].Form.Get("channel") != "CLAB" || !strings.Contains(eph[0].Form.Get("blocks"), "four convolutional layers") {
		t.Errorf("lab channel answer %v, want an ephemeral answer from the lab corpus", eph[0].Form)
	}
	var pub string
	deadline := time.Now().Add(30 * time.Second)
	for pub == "" && time.Now().Before(deadline) {
		for _, c := range sl.find("POST", "/chat.update") {
			if c.Form.Get("channel") == "CPUB" && strings.Contains(c.Form.Get("blocks"), "*Sources*") {
				pub = c.Form.Get("blocks")
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(pub, "six identical layers") || strings.Contains(pub, "convolutional") {
		t.Errorf("public channel answer %s, want the default corpus only", pub)
	}
	for _, c := range sl.find("POST", "/chat.update") {
		if c.Form.Get("channel") == "CLAB" && strings.Contains(c.Form.Get("blocks"), "convolutional") {
			t.Error("the private channel's answer was posted for everyone")
		}
	}
}

// TestRouteFunc: the most specific entry wins, unset require_mention keeps mentions
// required, and mention_follow_ups reaches the route the Slack adapter reads.
func TestRouteFunc(t *testing.T) {
	f := false
	route := routeFunc([]RouteConfig{
		{Platform: "slack", Tenant: "T1", Method: "bm25", MentionFollowUps: true},
		{Platform: "slack", Tenant: "T1", Channel: "C9", Corpus: "lab", Private: true, RequireMention: &f},
		{Platform: "discord", Generator: "ollama"},
		{Platform: "slack", Channel: "C5", Corpus: "default"},
	}, "default")
	for _, tc := range []struct {
		platform, tenant, channel string
		want                      string
	}{
		{"slack", "T1", "C1", "{Corpus: Private:false Method:bm25 RequireMention:true MentionFollowUps:true}"},
		{"slack", "T1", "C9", "{Corpus:lab+ Private:true Method: RequireMention:false MentionFollowUps:false}"},
		{"slack", "T2", "C1", "{Corpus: Private:false Method: RequireMention:true MentionFollowUps:false}"},
		{"discord", "G1", "C1", "{Corpus:+ollama Private:false Method: RequireMention:true MentionFollowUps:false}"},
		{"slack", "T2", "C5", "{Corpus: Private:false Method: RequireMention:true MentionFollowUps:false}"},
	} {
		if got := fmt.Sprintf("%+v", route(tc.platform, tc.tenant, tc.channel)); got != tc.want {
			t.Errorf("%s/%s/%s: %s, want %s", tc.platform, tc.tenant, tc.channel, got, tc.want)
		}
	}
}

// TestReadmeRoutesExamples keeps the routes: examples of the READMEs valid.
func TestReadmeRoutesExamples(t *testing.T) {
	for _, f := range []string{"../../README.md", "../../adapters/slack/README.md"} {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		examples := regexp.MustCompile("(?s)```yaml\n(routes:.*?)```").FindAllStringSubmatch(string(raw), -1)
		if len(examples) == 0 {
			t.Fatalf("%s has no routes: example", f)
		}
		for _, ex := range examples {
			p := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(p, []byte(ex[1]), 0o600); err != nil {
				t.Fatal(err)
			}
			c := Defaults()
			if err := c.LoadFile(p, true); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if err := validateRoutes(c.Routes); err != nil || len(c.Routes) == 0 {
				t.Errorf("%s: %d routes, %v", f, len(c.Routes), err)
			}
		}
	}
}
