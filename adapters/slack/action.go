package slack

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/footnote-dev/footnote/bot"
)

// encodeAction packs an action into a button value: "kind:source:answerID". Only this package
// reads the values back, so the format is private; answer ids may contain ":" because they
// come last. Slack allows 2,000 chars per value (Block Kit button element reference).
func encodeAction(a bot.Action) string {
	return string(a.Kind) + ":" + strconv.Itoa(a.Source) + ":" + a.AnswerID
}

func decodeAction(v string) (bot.Action, error) {
	kind, rest, ok := strings.Cut(v, ":")
	if !ok {
		return bot.Action{}, errors.New("decode action: missing kind")
	}
	src, id, ok := strings.Cut(rest, ":")
	if !ok {
		return bot.Action{}, errors.New("decode action: missing answer id")
	}
	n, err := strconv.Atoi(src)
	if err != nil {
		return bot.Action{}, fmt.Errorf("decode action source: %w", err)
	}
	switch k := bot.ActionKind(kind); k {
	case bot.ActShowSource, bot.ActMoreSources, bot.ActFeedbackUp, bot.ActFeedbackDown, bot.ActShare:
		return bot.Action{Kind: k, AnswerID: id, Source: n}, nil
	default:
		return bot.Action{}, fmt.Errorf("decode action: unknown kind %q", kind)
	}
}
