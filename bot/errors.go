package bot

import (
	"context"
	"crypto/rand"
	"errors"
	"net"
	"syscall"

	"github.com/footnote-dev/footnote/rag"
)

// ErrUnknownCorpus reports a Route naming a corpus that Config.Corpora does not hold.
var ErrUnknownCorpus = errors.New("unknown corpus")

// explain turns an error into the sentence a user reads and a short reason for metrics and
// logs. Only known errors get specific wording; the rest are generic. Never err.Error():
// it can hold paths, addresses and prompt text.
func explain(err error) (text, reason string) {
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "That took too long, so I stopped. Please try again, perhaps with a more specific question.", "timeout"
	case errors.Is(err, context.Canceled):
		return "The question was cancelled before I could answer it.", "cancelled"
	case errors.Is(err, rag.ErrModelMissing):
		return "A model I need is not installed on the server yet. An admin can install it with `footnote models pull`.", "model_missing"
	case errors.Is(err, ErrUnknownCorpus):
		return "This channel is set up for a document collection I can't find. Please tell an admin.", "unknown_corpus"
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EHOSTUNREACH), errors.As(err, &netErr):
		return "I can't reach the document store or language model right now. Please try again in a few minutes.", "unavailable"
	}
	return "Something went wrong while answering.", "internal"
}

// idAlphabet is lowercase base32 without the look-alikes 0/o, 1/l/i: ids are read aloud and
// typed from logs.
const idAlphabet = "abcdefghjkmnpqrstuvwxyz23456789"

// newID returns prefix followed by n random characters.
func newID(prefix string, n int) string {
	b := make([]byte, n)
	rand.Read(b)
	for i := range b {
		b[i] = idAlphabet[int(b[i])%len(idAlphabet)]
	}
	return prefix + string(b)
}
