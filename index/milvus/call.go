package milvus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/milvus-io/milvus-sdk-go/v2/client"
	"github.com/milvus-io/milvus-sdk-go/v2/merr"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"
)

// errKind sorts SDK errors by what do should do about them.
type errKind int

const (
	kindOther     errKind = iota
	kindTransient         // Milvus restarting or overloaded: retry with backoff
	kindNotLoaded         // collection released (e.g. after a Milvus restart): load, retry
	kindTimeout           // the per-call time limit ran out
)

func classify(err error) errKind {
	if errors.Is(err, context.DeadlineExceeded) {
		return kindTimeout
	}
	if st, ok := status.FromError(err); ok {
		switch st.Code() {
		case codes.Unavailable, codes.ResourceExhausted, codes.Aborted:
			return kindTransient
		case codes.DeadlineExceeded:
			return kindTimeout
		}
	}
	switch merr.Code(err) {
	case merr.Code(merr.ErrServiceUnavailable), merr.Code(merr.ErrServiceNotReady),
		merr.Code(merr.ErrCollectionNotFullyLoaded), merr.Code(merr.ErrServiceRequestLimitExceeded):
		return kindTransient
	case merr.Code(merr.ErrCollectionNotLoaded):
		return kindNotLoaded
	}
	msg := strings.ToLower(err.Error())
	switch {
	// Milvus: "collection not loaded"; Milvus Lite: "… is in state 'released'; call load() …".
	case strings.Contains(msg, "not loaded"), strings.Contains(msg, "in state 'released'"):
		return kindNotLoaded
	case strings.Contains(msg, "code = unavailable"), strings.Contains(msg, "connection refused"),
		strings.Contains(msg, "service unavailable"), strings.Contains(msg, "not ready"):
		return kindTransient
	}
	return kindOther
}

// retries and backoff for transient errors, on top of the SDK's own gRPC retries (six tries
// on Unavailable within one call's time limit).
const (
	maxAttempts = 4
	baseBackoff = 200 * time.Millisecond
)

// do runs one Milvus call with the per-call time limit, retrying transient failures with
// backoff and loading the collections once when Milvus reports them not loaded (as after
// a restart), and translates the error so no SDK type escapes.
func (s *Store) do(ctx context.Context, what string, fn func(ctx context.Context) error) error {
	reloaded := false
	backoff := baseBackoff
	for attempt := 1; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, s.timeout)
		start := time.Now()
		err := fn(cctx)
		cancel()
		s.log.Debug("milvus call", "op", what, "took", time.Since(start), "err", err)
		if err == nil || errors.Is(err, io.EOF) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		switch classify(err) {
		case kindNotLoaded:
			if !reloaded {
				reloaded = true
				s.log.Warn("collection not loaded; loading", "op", what)
				if lerr := s.loadAll(ctx); lerr != nil {
					return fmt.Errorf("%s: collection not loaded, and loading it failed: %w", what, lerr)
				}
				continue
			}
			return fmt.Errorf("%s: collection %s is not loaded in Milvus at %s: %s", what, s.coll, s.addr, plain(err))
		case kindTransient:
			if attempt < maxAttempts {
				s.log.Warn("milvus call failed; retrying", "op", what, "attempt", attempt, "err", plain(err))
				select {
				case <-time.After(backoff):
				case <-ctx.Done():
					return ctx.Err()
				}
				backoff *= 2
				continue
			}
			return fmt.Errorf("%w: %s at %s after %d attempts: %s", ErrUnavailable, what, s.addr, attempt, plain(err))
		case kindTimeout:
			return fmt.Errorf("%w: %s: no answer from %s within %s%s", ErrUnavailable, what, s.addr, s.timeout, s.connState())
		}
		return fmt.Errorf("%s: %s", what, plain(err))
	}
}

func (s *Store) loadAll(ctx context.Context) error {
	for _, name := range []string{s.coll, s.docs, s.df} {
		cctx, cancel := context.WithTimeout(ctx, s.timeout)
		err := s.c.LoadCollection(cctx, name, false)
		cancel()
		if err != nil {
			return fmt.Errorf("load %s: %s", name, plain(err))
		}
	}
	return nil
}

// connState explains a time-out by the gRPC connection's state when it is telling.
func (s *Store) connState() string {
	gc, ok := s.c.(*client.GrpcClient)
	if !ok || gc.Conn == nil {
		return ""
	}
	switch st := gc.Conn.GetState(); st {
	case connectivity.TransientFailure, connectivity.Connecting, connectivity.Idle:
		return fmt.Sprintf(" (connection %s: Milvus is down or unreachable)", strings.ToLower(st.String()))
	}
	return ""
}

// plain is an SDK error's message without its types (cockroachdb/errors, gRPC status).
func plain(err error) string {
	if err == nil {
		return ""
	}
	if st, ok := status.FromError(err); ok {
		return fmt.Sprintf("%s: %s", st.Code(), st.Message())
	}
	return err.Error()
}

// query is client.Query for results that may be empty. Milvus Lite 2.5 (the C++ engine)
// answers a query that matches nothing with no field data at all, which milvus-sdk-go
// reports as "extra output fields … found"; that answer is an empty result. (A field
// really missing from a collection is caught by checkSchema at Open.)
func (s *Store) query(ctx context.Context, coll string, partitions []string, expr string, fields []string, opts ...client.SearchQueryOptionFunc) (client.ResultSet, error) {
	rs, err := s.c.Query(ctx, coll, partitions, expr, fields, opts...)
	if err != nil && noFieldData(err) {
		return nil, nil
	}
	return rs, err
}

func noFieldData(err error) bool {
	return strings.Contains(err.Error(), "extra output fields") && strings.Contains(err.Error(), "does not dynamic field")
}
