package bot

// Log attribute keys, in one place so that logs from every path of the bot can be queried
// alike. The adapters use the same spellings for the same things.
const (
	logRequestID = "request_id"
	logPlatform  = "platform"
	logChannel   = "channel"
	logThread    = "thread"
	logUser      = "user"
	logEventID   = "event_id"
	logAnswerID  = "answer_id"
	logAction    = "action"
	logErrorRef  = "error_ref"
	logReason    = "reason"
	logKind      = "kind"
	logErr       = "err"
	logKey       = "key"
)
