package bot

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// actionPrefix versions the encoding, so buttons posted by an older release can be
// recognised (and refused politely) if the format ever changes.
const actionPrefix = "fn1"

// maxActionLen is the longest encoding we produce: Discord caps custom_id at 100 characters
// (Message Components reference); Slack's action value allows 2,000.
const maxActionLen = 100

// ErrBadAction reports a button value that is not one of ours.
var ErrBadAction = errors.New("not a footnote action")

// Encode returns the compact form of a, e.g. "fn1:src:k3v9x2m7qp:2" or "fn1:up:k3v9x2m7qp".
// The label is not encoded: adapters keep it on the button itself.
func (a Action) Encode() string {
	s := actionPrefix + ":" + string(a.Kind) + ":" + a.AnswerID
	if a.Kind == ActShowSource {
		s += ":" + strconv.Itoa(a.Source)
	}
	return s
}

// DecodeAction parses what Encode produced. It fails with an error wrapping ErrBadAction for
// anything else, including values longer than 100 characters.
func DecodeAction(s string) (Action, error) {
	if len(s) > maxActionLen {
		return Action{}, fmt.Errorf("%w: %d characters", ErrBadAction, len(s))
	}
	parts := strings.Split(s, ":")
	if len(parts) < 3 || parts[0] != actionPrefix {
		return Action{}, fmt.Errorf("%w: %q", ErrBadAction, s)
	}
	a := Action{Kind: ActionKind(parts[1]), AnswerID: parts[2]}
	if !validID(a.AnswerID) {
		return Action{}, fmt.Errorf("%w: answer id %q", ErrBadAction, a.AnswerID)
	}
	switch a.Kind {
	case ActShowSource:
		if len(parts) != 4 {
			return Action{}, fmt.Errorf("%w: %q has no source number", ErrBadAction, s)
		}
		n, err := strconv.Atoi(parts[3])
		if err != nil || n < 1 {
			return Action{}, fmt.Errorf("%w: source number %q", ErrBadAction, parts[3])
		}
		a.Source = n
		a.Label = fmt.Sprintf("Show source %d", n)
	case ActMoreSources, ActFeedbackUp, ActFeedbackDown, ActShare:
		if len(parts) != 3 {
			return Action{}, fmt.Errorf("%w: %q", ErrBadAction, s)
		}
		a.Label = actionLabel(a.Kind)
	default:
		return Action{}, fmt.Errorf("%w: kind %q", ErrBadAction, parts[1])
	}
	return a, nil
}

func actionLabel(k ActionKind) string {
	switch k {
	case ActMoreSources:
		return "More sources"
	case ActFeedbackUp:
		return "👍"
	case ActFeedbackDown:
		return "👎"
	case ActShare:
		return "Share in channel"
	}
	return ""
}

// validID accepts the ids newID makes (and a little more), never ":" or spaces.
func validID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}
