package bot

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/footnote-dev/footnote/rag"
)

// schemaVersion is stored in PRAGMA user_version; bump it with a migration when the tables
// below change.
const schemaVersion = 2

const schema = `
CREATE TABLE IF NOT EXISTS claims (
	key TEXT PRIMARY KEY,
	at  INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS claims_at ON claims(at);

CREATE TABLE IF NOT EXISTS turns (
	id        INTEGER PRIMARY KEY,
	platform  TEXT NOT NULL,
	channel   TEXT NOT NULL,
	thread    TEXT NOT NULL,
	at        INTEGER NOT NULL,
	question  TEXT NOT NULL,
	answer    TEXT NOT NULL,
	sources   TEXT NOT NULL,
	answer_id TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS turns_thread ON turns(platform, channel, thread, at);
CREATE INDEX IF NOT EXISTS turns_at ON turns(at);

CREATE TABLE IF NOT EXISTS answers (
	id         TEXT PRIMARY KEY,
	at         INTEGER NOT NULL,
	request_id TEXT NOT NULL,
	platform   TEXT NOT NULL,
	tenant     TEXT NOT NULL,
	channel    TEXT NOT NULL,
	thread     TEXT NOT NULL,
	user       TEXT NOT NULL,
	question   TEXT NOT NULL,
	answer     TEXT NOT NULL,
	refused    INTEGER NOT NULL,
	private    INTEGER NOT NULL,
	confidence REAL NOT NULL,
	note       TEXT NOT NULL,
	sources    TEXT NOT NULL,
	more       TEXT NOT NULL,
	more_shown INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS answers_at ON answers(at);

CREATE TABLE IF NOT EXISTS feedback (
	answer_id TEXT NOT NULL,
	platform  TEXT NOT NULL,
	user      TEXT NOT NULL,
	vote      INTEGER NOT NULL,
	comment   TEXT NOT NULL,
	at        INTEGER NOT NULL,
	PRIMARY KEY (answer_id, platform, user)
);

CREATE TABLE IF NOT EXISTS queries (
	id          INTEGER PRIMARY KEY,
	at          INTEGER NOT NULL,
	request_id  TEXT NOT NULL,
	platform    TEXT NOT NULL,
	tenant      TEXT NOT NULL,
	channel     TEXT NOT NULL,
	thread      TEXT NOT NULL,
	user        TEXT NOT NULL,
	corpus      TEXT NOT NULL,
	question    TEXT NOT NULL,
	kind        TEXT NOT NULL,
	answer      TEXT NOT NULL,
	refused     INTEGER NOT NULL,
	answer_id   TEXT NOT NULL,
	error_ref   TEXT NOT NULL,
	sources     TEXT NOT NULL,
	method      TEXT NOT NULL,
	generator   TEXT NOT NULL,
	confidence  REAL NOT NULL,
	condense_ns INTEGER NOT NULL,
	embed_ns    INTEGER NOT NULL,
	search_ns   INTEGER NOT NULL,
	rerank_ns   INTEGER NOT NULL,
	generate_ns INTEGER NOT NULL,
	total_ns    INTEGER NOT NULL,
	elapsed_ns  INTEGER NOT NULL,
	feedback    INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS queries_at ON queries(at);
CREATE INDEX IF NOT EXISTS queries_answer ON queries(answer_id);
CREATE INDEX IF NOT EXISTS queries_kind ON queries(kind, at);

CREATE TABLE IF NOT EXISTS deliveries (
	key         TEXT PRIMARY KEY,
	platform    TEXT NOT NULL,
	state       TEXT NOT NULL,
	received    INTEGER NOT NULL,
	lease       INTEGER NOT NULL,
	owner       TEXT NOT NULL,
	attempts    INTEGER NOT NULL,
	placeholder TEXT NOT NULL DEFAULT '',
	payload     BLOB NOT NULL,
	outcome     TEXT NOT NULL DEFAULT '',
	done_at     INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS deliveries_pending ON deliveries(state, lease);
CREATE INDEX IF NOT EXISTS deliveries_received ON deliveries(received);
`

// state is the SQLite store behind a Bot: one writer connection, and a pool of readers that
// WAL lets read while the writer writes.
type state struct {
	db *sql.DB // the single writer
	rd *sql.DB // readers
}

// readers is the size of the reader pool.
const readers = 4

// openState opens (creating if needed) the state file. Every transaction takes the write
// lock at BEGIN (_txlock=immediate), so two processes never deadlock upgrading a read lock;
// the busy timeout makes the second writer wait instead of failing.
func openState(ctx context.Context, path string, busy time.Duration) (*state, error) {
	// The query log holds questions and user ids: create the file private to the service
	// (SQLite gives the -wal and -shm files the same mode).
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open state: %w", err)
	}
	f.Close()
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", path, err)
	}
	// One connection per process: SQLite writes are serial anyway, and a single connection
	// means this process's goroutines queue in database/sql instead of spinning on
	// SQLITE_BUSY. Statements are short; none holds the connection across a call out.
	db.SetMaxOpenConns(1)
	db.SetConnMaxIdleTime(0)
	if err := migrate(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("open state %s: %w", path, err)
	}
	rq := url.Values{}
	rq.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	rq.Add("_pragma", "query_only(1)")
	rd, err := sql.Open("sqlite", "file:"+path+"?"+rq.Encode())
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open state %s: %w", path, err)
	}
	rd.SetMaxOpenConns(readers)
	rd.SetMaxIdleConns(readers)
	return &state{db: db, rd: rd}, nil
}

func migrate(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var v int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return err
	}
	if v > schemaVersion {
		return fmt.Errorf("state schema version %d is newer than this footnote (%d)", v, schemaVersion)
	}
	if _, err := tx.ExecContext(ctx, schema); err != nil {
		return fmt.Errorf("create tables: %w", err)
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", schemaVersion)); err != nil {
		return err
	}
	return tx.Commit()
}

func (s *state) close() error { return errors.Join(s.rd.Close(), s.db.Close()) }

// claim records key once; false when it already was.
func (s *state) claim(ctx context.Context, key string, now time.Time) (bool, error) {
	res, err := s.db.ExecContext(ctx, `INSERT OR IGNORE INTO claims(key, at) VALUES (?, ?)`, key, now.UnixNano())
	if err != nil {
		return false, fmt.Errorf("claim: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("claim: %w", err)
	}
	return n == 1, nil
}

// convKey names a conversation.
type convKey struct{ platform, channel, thread string }

// history returns up to turns recent turns of a conversation, newest first, or none when the
// newest is older than since.
func (s *state) history(ctx context.Context, k convKey, since time.Time, turns int) ([]rag.Turn, error) {
	rows, err := s.rd.QueryContext(ctx, `SELECT at, question, answer, sources FROM turns
		WHERE platform = ? AND channel = ? AND thread = ? ORDER BY at DESC, id DESC LIMIT ?`,
		k.platform, k.channel, k.thread, turns)
	if err != nil {
		return nil, fmt.Errorf("load history: %w", err)
	}
	defer rows.Close()
	var out []rag.Turn
	for rows.Next() {
		var at int64
		var t rag.Turn
		var src string
		if err := rows.Scan(&at, &t.Question, &t.Answer, &src); err != nil {
			return nil, fmt.Errorf("load history: %w", err)
		}
		if len(out) == 0 && time.Unix(0, at).Before(since) {
			return nil, rows.Err()
		}
		if err := json.Unmarshal([]byte(src), &t.Sources); err != nil {
			return nil, fmt.Errorf("load history: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// following reports whether a conversation has a turn newer than since.
func (s *state) following(ctx context.Context, k convKey, since time.Time) (bool, error) {
	var n int
	err := s.rd.QueryRowContext(ctx, `SELECT EXISTS(SELECT 1 FROM turns
		WHERE platform = ? AND channel = ? AND thread = ? AND at >= ?)`,
		k.platform, k.channel, k.thread, since.UnixNano()).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("following: %w", err)
	}
	return n == 1, nil
}

// record is a stored answer: what the buttons on it need after a restart.
type record struct {
	ID        string
	At        time.Time
	RequestID string
	Platform  string
	Tenant    string
	Channel   string
	Thread    string
	User      string
	Question  string
	Answer    string
	Refused   bool
	Private   bool
	Confid    float64
	Note      string
	Sources   []Source // with full chunk text
	More      []Source // further candidates, numbered after Sources
	MoreShown int      // how many of More have been shown
}

// queryLog is one row of the query log.
type queryLog struct {
	At        time.Time
	RequestID string
	Platform  string
	Tenant    string
	Channel   string
	Thread    string
	User      string
	Corpus    string
	Question  string
	Kind      Kind
	Answer    string
	Refused   bool
	AnswerID  string
	ErrorRef  string
	SourceIDs []string
	Method    string
	Generator string
	Confid    float64
	Timings   rag.Timings
	Elapsed   time.Duration
}

// saveAnswer stores an answer record, the conversation turn (when turn is not nil) and the
// query log row in one transaction.
func (s *state) saveAnswer(ctx context.Context, r record, turn *rag.Turn, q queryLog) error {
	src, err := json.Marshal(r.Sources)
	if err != nil {
		return err
	}
	more, err := json.Marshal(r.More)
	if err != nil {
		return err
	}
	var turnSrc []byte
	if turn != nil {
		if turnSrc, err = json.Marshal(turn.Sources); err != nil {
			return err
		}
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("save answer: %w", err)
	}
	defer tx.Rollback()
	_, err = tx.ExecContext(ctx, `INSERT INTO answers(id, at, request_id, platform, tenant, channel,
		thread, user, question, answer, refused, private, confidence, note, sources, more)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.At.UnixNano(), r.RequestID, r.Platform, r.Tenant, r.Channel, r.Thread, r.User,
		r.Question, r.Answer, r.Refused, r.Private, r.Confid, r.Note, string(src), string(more))
	if err != nil {
		return fmt.Errorf("save answer: %w", err)
	}
	if turn != nil {
		_, err = tx.ExecContext(ctx, `INSERT INTO turns(platform, channel, thread, at, question, answer,
			sources, answer_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			r.Platform, r.Channel, r.Thread, r.At.UnixNano(), turn.Question, turn.Answer, string(turnSrc), r.ID)
		if err != nil {
			return fmt.Errorf("save turn: %w", err)
		}
	}
	if err := insertQuery(ctx, tx, q); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("save answer: %w", err)
	}
	return nil
}

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func insertQuery(ctx context.Context, db execer, q queryLog) error {
	ids := q.SourceIDs
	if ids == nil {
		ids = []string{}
	}
	src, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	_, err = db.ExecContext(ctx, `INSERT INTO queries(at, request_id, platform, tenant, channel, thread,
		user, corpus, question, kind, answer, refused, answer_id, error_ref, sources, method, generator,
		confidence, condense_ns, embed_ns, search_ns, rerank_ns, generate_ns, total_ns, elapsed_ns)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		q.At.UnixNano(), q.RequestID, q.Platform, q.Tenant, q.Channel, q.Thread, q.User, q.Corpus,
		q.Question, string(q.Kind), q.Answer, q.Refused, q.AnswerID, q.ErrorRef, string(src), q.Method,
		q.Generator, q.Confid, int64(q.Timings.Condense), int64(q.Timings.Embed), int64(q.Timings.Search),
		int64(q.Timings.Rerank), int64(q.Timings.Generate), int64(q.Timings.Total), int64(q.Elapsed))
	if err != nil {
		return fmt.Errorf("log query: %w", err)
	}
	return nil
}

// logQuery stores a query log row for a question that produced no answer record.
func (s *state) logQuery(ctx context.Context, q queryLog) error {
	return insertQuery(ctx, s.db, q)
}

var errNoRecord = errors.New("no such answer")

const recordColumns = `id, at, request_id, platform, tenant, channel, thread, user, question,
	answer, refused, private, confidence, note, sources, more, more_shown`

type scanner interface{ Scan(dest ...any) error }

func scanRecord(row scanner) (record, error) {
	var r record
	var at int64
	var src, more string
	err := row.Scan(&r.ID, &at, &r.RequestID, &r.Platform, &r.Tenant, &r.Channel, &r.Thread, &r.User,
		&r.Question, &r.Answer, &r.Refused, &r.Private, &r.Confid, &r.Note, &src, &more, &r.MoreShown)
	if errors.Is(err, sql.ErrNoRows) {
		return record{}, errNoRecord
	}
	if err != nil {
		return record{}, err
	}
	r.At = time.Unix(0, at)
	if err := json.Unmarshal([]byte(src), &r.Sources); err != nil {
		return record{}, fmt.Errorf("decode sources: %w", err)
	}
	if err := json.Unmarshal([]byte(more), &r.More); err != nil {
		return record{}, fmt.Errorf("decode more: %w", err)
	}
	return r, nil
}

// answer loads a record; errNoRecord when there is none.
func (s *state) answer(ctx context.Context, id string) (record, error) {
	r, err := scanRecord(s.rd.QueryRowContext(ctx, `SELECT `+recordColumns+` FROM answers WHERE id = ?`, id))
	if err != nil && !errors.Is(err, errNoRecord) {
		return record{}, fmt.Errorf("load answer %s: %w", id, err)
	}
	return r, err
}

// nextMore marks the next batch of More candidates as shown and returns them with the
// record. The read and the update share one write transaction, so two clicks (in one
// process or two) never show the same batch twice.
func (s *state) nextMore(ctx context.Context, id string, batch int) (record, []Source, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return record{}, nil, fmt.Errorf("more sources: %w", err)
	}
	defer tx.Rollback()
	r, err := scanRecord(tx.QueryRowContext(ctx, `SELECT `+recordColumns+` FROM answers WHERE id = ?`, id))
	if err != nil {
		if errors.Is(err, errNoRecord) {
			return record{}, nil, err
		}
		return record{}, nil, fmt.Errorf("more sources: %w", err)
	}
	start := min(r.MoreShown, len(r.More))
	end := min(start+batch, len(r.More))
	next := r.More[start:end]
	if end > start {
		if _, err := tx.ExecContext(ctx, `UPDATE answers SET more_shown = ? WHERE id = ?`, end, id); err != nil {
			return record{}, nil, fmt.Errorf("more sources: %w", err)
		}
		r.MoreShown = end
	}
	if err := tx.Commit(); err != nil {
		return record{}, nil, fmt.Errorf("more sources: %w", err)
	}
	return r, next, nil
}

// feedback stores (or replaces) one user's vote on an answer, with an optional comment,
// and marks the query log row.
func (s *state) feedback(ctx context.Context, answerID, platform, user string, vote int, comment string, now time.Time) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("feedback: %w", err)
	}
	defer tx.Rollback()
	_, err = tx.ExecContext(ctx, `INSERT INTO feedback(answer_id, platform, user, vote, comment, at)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT(answer_id, platform, user) DO UPDATE SET vote = excluded.vote,
			comment = CASE WHEN excluded.comment != '' THEN excluded.comment ELSE feedback.comment END,
			at = excluded.at`,
		answerID, platform, user, vote, comment, now.UnixNano())
	if err != nil {
		return fmt.Errorf("feedback: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE queries SET feedback = ? WHERE answer_id = ?`, vote, answerID); err != nil {
		return fmt.Errorf("feedback: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("feedback: %w", err)
	}
	return nil
}

// Feedback is one user's vote on an answer.
type Feedback struct {
	AnswerID string    `json:"answer_id"`
	Platform string    `json:"platform"`
	User     string    `json:"user"`
	Up       bool      `json:"up"`
	Comment  string    `json:"comment,omitempty"`
	At       time.Time `json:"at"`
}

// pruneCutoffs are the times before which each kind of state is deleted.
type pruneCutoffs struct {
	claims, deliveries, turns, answers, queries time.Time
}

// prune deletes what has outlived its use: claims and delivery records after a day
// (platforms redeliver for minutes), turns of idle conversations, answer records after
// their TTL, query log rows (and their feedback) after the retention period. Each runs in
// batches so the writer is never held for long.
func (s *state) prune(ctx context.Context, c pruneCutoffs) error {
	for _, q := range []struct {
		sql string
		at  time.Time
	}{
		{`DELETE FROM claims WHERE rowid IN (SELECT rowid FROM claims WHERE at < ? LIMIT 5000)`, c.claims},
		{`DELETE FROM deliveries WHERE rowid IN (SELECT rowid FROM deliveries WHERE received < ? LIMIT 5000)`, c.deliveries},
		{`DELETE FROM turns WHERE rowid IN (SELECT rowid FROM turns WHERE at < ? LIMIT 5000)`, c.turns},
		{`DELETE FROM answers WHERE rowid IN (SELECT rowid FROM answers WHERE at < ? LIMIT 5000)`, c.answers},
		{`DELETE FROM feedback WHERE rowid IN (SELECT rowid FROM feedback WHERE at < ? LIMIT 5000)`, c.queries},
		{`DELETE FROM queries WHERE rowid IN (SELECT rowid FROM queries WHERE at < ? LIMIT 5000)`, c.queries},
	} {
		for {
			res, err := s.db.ExecContext(ctx, q.sql, q.at.UnixNano())
			if err != nil {
				return fmt.Errorf("prune: %w", err)
			}
			if n, _ := res.RowsAffected(); n < 5000 {
				break
			}
		}
	}
	return nil
}

// feedbackFor lists the votes on one answer, oldest first.
func (s *state) feedbackFor(ctx context.Context, answerID string) ([]Feedback, error) {
	rows, err := s.rd.QueryContext(ctx, `SELECT answer_id, platform, user, vote, comment, at
		FROM feedback WHERE answer_id = ? ORDER BY at, user`, answerID)
	if err != nil {
		return nil, fmt.Errorf("load feedback: %w", err)
	}
	defer rows.Close()
	var out []Feedback
	for rows.Next() {
		var f Feedback
		var vote int
		var at int64
		if err := rows.Scan(&f.AnswerID, &f.Platform, &f.User, &vote, &f.Comment, &at); err != nil {
			return nil, fmt.Errorf("load feedback: %w", err)
		}
		f.Up = vote > 0
		f.At = time.Unix(0, at).UTC()
		out = append(out, f)
	}
	return out, rows.Err()
}
