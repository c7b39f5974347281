package discord

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/footnote-dev/footnote/bot"
)

// RFC 8032 section 7.1 TEST 1: the published Ed25519 key pair and its signature of the empty
// message. The Discord-style vector below is that key signing timestamp + body.
const (
	rfcSeed      = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"
	rfcPublic    = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
	rfcEmptySig  = "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
	vectorTS     = "1700000000"
	vectorBody   = `{"type":1}`
	vectorSigHex = "1695961a47c91a1ec033b819b7e87e3dbc583dd0cee6d1fd0216f58ac87b6228ae531ddbf91fb7bc28d7edf7f08604da16f54624f38a6bc0614e4dc13cd47f0f"
)

func TestRFC8032Vector(t *testing.T) {
	pub, _ := hex.DecodeString(rfcPublic)
	sig, _ := hex.DecodeString(rfcEmptySig)
	if !ed25519.Verify(pub, nil, sig) {
		t.Fatal("RFC 8032 TEST 1 does not verify: the fixed vector's key is wrong")
	}
	seed, _ := hex.DecodeString(rfcSeed)
	if got := Sign(ed25519.NewKeyFromSeed(seed), vectorTS, []byte(vectorBody)); got != vectorSigHex {
		t.Errorf("Sign = %s, want the fixed vector %s", got, vectorSigHex)
	}
}

// signedRequest builds a POST /discord/interactions as Discord sends it.
func signedRequest(key ed25519.PrivateKey, ts string, body []byte) *http.Request {
	r := httptest.NewRequest("POST", "/discord/interactions", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("X-Signature-Timestamp", ts)
	r.Header.Set("X-Signature-Ed25519", Sign(key, ts, body))
	return r
}

func TestHTTPSignature(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	_, otherPriv, _ := ed25519.GenerateKey(rand.Reader)
	seed, _ := hex.DecodeString(rfcSeed)
	rfcPriv := ed25519.NewKeyFromSeed(seed)
	now := time.Unix(1_763_000_000, 0)
	ts := strconv.FormatInt(now.Unix(), 10)
	ping := []byte(`{"id":"1500000000000000004","application_id":"1300000000000000001","type":1,"token":"dG9r","version":1}`)

	tests := []struct {
		name   string
		key    string // the adapter's public key
		now    time.Time
		req    func() *http.Request
		status int
		sigOK  bool // whether the signature matches timestamp + body, freshness aside
	}{
		{"valid PING", hex.EncodeToString(pub), now, func() *http.Request { return signedRequest(priv, ts, ping) }, 200, true},
		{"fixed vector", rfcPublic, time.Unix(1_700_000_100, 0), func() *http.Request {
			r := httptest.NewRequest("POST", "/discord/interactions", strings.NewReader(vectorBody))
			r.Header.Set("X-Signature-Timestamp", vectorTS)
			r.Header.Set("X-Signature-Ed25519", vectorSigHex)
			return r
		}, 200, true},
		{"fixed vector, wrong timestamp", rfcPublic, time.Unix(1_700_000_100, 0), func() *http.Request {
			r := signedRequest(rfcPriv, vectorTS, []byte(vectorBody))
			r.Header.Set("X-Signature-Timestamp", "1700000001")
			return r
		}, 401, false},
		{"tampered body", hex.EncodeToString(pub), now, func() *http.Request {
			r := signedRequest(priv, ts, ping)
			r.Body = io.NopCloser(bytes.NewReader(bytes.Replace(ping, []byte(`"type":1`), []byte(`"type":2`), 1)))
			return r
		}, 401, false},
		{"wrong key", hex.EncodeToString(pub), now, func() *http.Request { return signedRequest(otherPriv, ts, ping) }, 401, false},
		{"stale timestamp", hex.EncodeToString(pub), now.Add(5*time.Minute + time.Second), func() *http.Request { return signedRequest(priv, ts, ping) }, 401, true},
		{"future timestamp", hex.EncodeToString(pub), now.Add(-6 * time.Minute), func() *http.Request { return signedRequest(priv, ts, ping) }, 401, true},
		{"within five minutes", hex.EncodeToString(pub), now.Add(4 * time.Minute), func() *http.Request { return signedRequest(priv, ts, ping) }, 200, true},
		{"no signature", hex.EncodeToString(pub), now, func() *http.Request {
			r := signedRequest(priv, ts, ping)
			r.Header.Del("X-Signature-Ed25519")
			return r
		}, 401, false},
		{"malformed signature", hex.EncodeToString(pub), now, func() *http.Request {
			r := signedRequest(priv, ts, ping)
			r.Header.Set("X-Signature-Ed25519", "zz")
			return r
		}, 401, false},
		{"no public key configured", "", now, func() *http.Request { return signedRequest(priv, ts, ping) }, 401, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) {
				c.PublicKey = tt.key
				c.Now = func() time.Time { return tt.now }
			})
			req := tt.req()
			// discordgo's own check (signature only, no freshness) must agree on the signature.
			raw, _ := io.ReadAll(req.Body)
			req.Body = io.NopCloser(bytes.NewReader(raw))
			if k, err := hex.DecodeString(tt.key); err == nil && len(k) == ed25519.PublicKeySize {
				probe := httptest.NewRequest("POST", "/discord/interactions", bytes.NewReader(raw))
				probe.Header = req.Header.Clone()
				if got := discordgo.VerifyInteraction(probe, k); got != tt.sigOK {
					t.Errorf("discordgo.VerifyInteraction = %v, want %v", got, tt.sigOK)
				}
			}
			w := httptest.NewRecorder()
			h.a.Handler().ServeHTTP(w, req)
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d (%s)", w.Code, tt.status, w.Body.String())
			}
			if tt.status == 200 {
				if got := strings.TrimSpace(w.Body.String()); got != `{"type":1}` {
					t.Errorf("PING answered %s, want PONG {\"type\":1}", got)
				}
				if w.Header().Get("Content-Type") != "application/json" {
					t.Errorf("content type %q", w.Header().Get("Content-Type"))
				}
			}
		})
	}
}

// httpHarness is an adapter serving HTTP interactions with a fresh key pair.
func httpHarness(t *testing.T) (*harness, func(body []byte) *httptest.ResponseRecorder) {
	t.Helper()
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	h := newHarness(t, func(c *Config) { c.PublicKey = hex.EncodeToString(pub) })
	return h, func(body []byte) *httptest.ResponseRecorder {
		t.Helper()
		w := httptest.NewRecorder()
		h.a.Handler().ServeHTTP(w, signedRequest(priv, strconv.FormatInt(time.Now().Unix(), 10), body))
		return w
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestHTTPAsk(t *testing.T) {
	h, post := httpHarness(t)
	w := post(mustJSON(t, fixture(t, "interaction_ask", nil)))
	if w.Code != 200 {
		t.Fatalf("status %d: %s", w.Code, w.Body.String())
	}
	var resp map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil {
		t.Fatal(err)
	}
	if num(resp["type"]) != 5 {
		t.Fatalf("HTTP reply %s, want the deferred response (type 5)", w.Body.String())
	}
	waitFor(t, "thread", func() bool { return len(h.dc.callsOf("POST", "/channels/"+channelID+"/messages/*/threads")) == 1 })
	h.settle(t)
	if cb := h.dc.callsOf("POST", "/interactions/*/*/callback"); len(cb) != 0 {
		t.Errorf("got %d REST callbacks; in HTTP mode the HTTP reply is the callback", len(cb))
	}
	edits := h.dc.callsOf("PATCH", "/webhooks/"+appID+"/*/messages/@original")
	if len(edits) != 2 || !strings.Contains(visibleText(t, edits[1]), "**two sub-layers** [1]") {
		t.Errorf("edits %+v, want placeholder and answer", edits)
	}

	// A private channel: ephemeral deferral, ephemeral answer with Share, no thread.
	h2, post2 := httpHarness(t)
	h2.a.cfg.Policy = func(guild, channel string) Policy { return Policy{Private: true, RequireMention: true} }
	w = post2(mustJSON(t, fixture(t, "interaction_ask", nil)))
	_ = json.Unmarshal(w.Body.Bytes(), &resp)
	if d, _ := resp["data"].(map[string]any); num(resp["type"]) != 5 || d == nil || num(d["flags"]) != 1<<6 {
		t.Fatalf("HTTP reply %s, want an ephemeral deferred response", w.Body.String())
	}
	waitFor(t, "answer", func() bool { return len(h2.dc.callsOf("PATCH", "/webhooks/"+appID+"/*/messages/@original")) == 1 })
	h2.settle(t)
	edit := h2.dc.callsOf("PATCH", "/webhooks/"+appID+"/*/messages/@original")[0]
	if !strings.Contains(string(edit.Raw), "fn1:share:ans_01") {
		t.Errorf("private answer lacks Share in channel: %s", edit.Raw)
	}
	if len(h2.dc.callsOf("POST", "/channels/*/messages/*/threads")) != 0 {
		t.Error("a thread was started from an ephemeral answer")
	}
	if r := h2.core.requests(); len(r) != 1 || !r[0].Private || r[0].Thread != "" {
		t.Errorf("request %+v, want a private one-off", r)
	}
}

func TestHTTPFeedbackModal(t *testing.T) {
	h, post := httpHarness(t)
	w := post(mustJSON(t, fixture(t, "interaction_button", map[string]any{"data.custom_id": "fn1:down:ans_01"})))
	var resp struct {
		Type int `json:"type"`
		Data struct {
			CustomID   string `json:"custom_id"`
			Title      string `json:"title"`
			Components []struct {
				Components []struct {
					Type      int    `json:"type"`
					CustomID  string `json:"custom_id"`
					Label     string `json:"label"`
					MaxLength int    `json:"max_length"`
				} `json:"components"`
			} `json:"components"`
		} `json:"data"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Type != 9 || resp.Data.CustomID != "fn1:down:ans_01" || len(resp.Data.Components) != 1 {
		t.Fatalf("👎 reply %s, want a modal carrying the action", w.Body.String())
	}
	in := resp.Data.Components[0].Components[0]
	if in.Type != 4 || in.CustomID != "comment" || len([]rune(in.Label)) > 45 || len([]rune(resp.Data.Title)) > 45 || in.MaxLength != 4000 {
		t.Errorf("modal input %+v title %q", in, resp.Data.Title)
	}
	w = post(mustJSON(t, fixture(t, "interaction_modal", nil)))
	if !strings.Contains(w.Body.String(), `"type":5`) || !strings.Contains(w.Body.String(), `"flags":64`) {
		t.Fatalf("modal submit reply %s, want deferred ephemeral", w.Body.String())
	}
	waitFor(t, "feedback notice", func() bool { return len(h.dc.callsOf("PATCH", "/webhooks/"+appID+"/*/messages/@original")) == 1 })
	h.settle(t)
	clicks := h.core.clickList()
	if len(clicks) != 1 || clicks[0].Action.Kind != bot.ActFeedbackDown || clicks[0].Comment != "Should mention residual connections." {
		t.Errorf("clicks %+v, want one 👎 with the comment", clicks)
	}
	if got := h.dc.callsOf("PATCH", "/webhooks/"+appID+"/*/messages/@original")[0].Body["content"]; got != "Thanks for the feedback." {
		t.Errorf("notice %q", got)
	}

	// A button that is not footnote's gets a polite ephemeral reply, and no work.
	w = post(mustJSON(t, fixture(t, "interaction_button", map[string]any{"id": "1500000000000000099", "data.custom_id": "someone-elses-button"})))
	if !strings.Contains(w.Body.String(), `"type":4`) || !strings.Contains(w.Body.String(), `"flags":64`) {
		t.Errorf("foreign button reply %s", w.Body.String())
	}
}
