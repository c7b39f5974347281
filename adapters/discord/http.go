package discord

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/bwmarrin/discordgo"
)

const (
	// maxBody bounds a request body; interaction payloads are a few kilobytes.
	maxBody = 1 << 20
	// maxSkew is how far X-Signature-Timestamp may be from now. Discord's signature covers
	// the timestamp but nothing checks its age unless we do: an old signed request could be
	// replayed.
	maxSkew = 5 * time.Minute
)

// Handler serves Discord's HTTP interactions at POST /discord/interactions (set it as the
// Interactions Endpoint URL in the Developer Portal). Every request is verified with the
// application's public key; PING gets PONG, commands and clicks get their deferred response
// as the HTTP reply and are answered afterwards through the REST API. Mount it at
// "/discord/" of footnote serve's mux.
func (a *Adapter) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /discord/interactions", a.serveInteractions)
	return mux
}

var errSignature = errors.New("invalid discord signature")

// checkSignature verifies X-Signature-Ed25519 = Ed25519(public key, X-Signature-Timestamp +
// raw body), with the timestamp (Unix seconds) no more than five minutes from now.
func checkSignature(key ed25519.PublicKey, h http.Header, body []byte, now time.Time) error {
	if len(key) != ed25519.PublicKeySize {
		return fmt.Errorf("%w: no public key configured", errSignature)
	}
	tsHeader := h.Get("X-Signature-Timestamp")
	ts, err := strconv.ParseInt(tsHeader, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: bad timestamp %q", errSignature, tsHeader)
	}
	if skew := now.Sub(time.Unix(ts, 0)).Abs(); skew > maxSkew {
		return fmt.Errorf("%w: timestamp %s off", errSignature, skew.Round(time.Second))
	}
	sig, err := hex.DecodeString(h.Get("X-Signature-Ed25519"))
	if err != nil || len(sig) != ed25519.SignatureSize {
		return fmt.Errorf("%w: malformed signature", errSignature)
	}
	msg := make([]byte, 0, len(tsHeader)+len(body))
	msg = append(append(msg, tsHeader...), body...)
	if !ed25519.Verify(key, msg, sig) {
		return fmt.Errorf("%w: mismatch", errSignature)
	}
	return nil
}

// Sign returns the X-Signature-Ed25519 header value Discord would send for a request: hex
// Ed25519 over timestamp + body. Tests and local tools use it.
func Sign(key ed25519.PrivateKey, timestamp string, body []byte) string {
	return hex.EncodeToString(ed25519.Sign(key, append([]byte(timestamp), body...)))
}

func (a *Adapter) serveInteractions(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		return
	}
	if err := checkSignature(a.publicKey, r.Header, body, a.now()); err != nil {
		// Discord sends deliberately bad signatures to check that we refuse them.
		a.log.Warn("rejected discord request", logErr, err)
		http.Error(w, "invalid request signature", http.StatusUnauthorized)
		return
	}
	in, err := parseInteraction(body)
	if err != nil {
		a.log.Warn("unparsable interaction", logErr, err)
		http.Error(w, "bad interaction", http.StatusBadRequest)
		return
	}
	// The response is written inside interaction and flushed, so Discord holds the deferred
	// response before footnote edits it.
	a.interaction(context.WithoutCancel(r.Context()), in, body, time.Now(), func(resp *discordgo.InteractionResponse) {
		if resp == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		raw, err := json.Marshal(resp)
		if err != nil {
			a.log.Error("encode interaction response", logErr, err)
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(raw)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	})
}
