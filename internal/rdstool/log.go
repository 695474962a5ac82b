package rdstool

import (
	"io"
	"os"

	"github.com/rs/zerolog"
)

// LogEnv is the environment variable that sets the log level when no
// --log flag is given.
const LogEnv = "GODAPL_LOG"

// DefaultLogLevel keeps a tool quiet unless something goes wrong.
const DefaultLogLevel = "warn"

// Logger returns a human-readable zerolog logger on w at level, which is
// the --log flag's value; empty means GODAPL_LOG, then DefaultLogLevel.
// An unknown level is a usage error.
func Logger(level string, w io.Writer) (zerolog.Logger, error) {
	if level == "" {
		level = os.Getenv(LogEnv)
	}
	if level == "" {
		level = DefaultLogLevel
	}
	l, err := zerolog.ParseLevel(level)
	if err != nil || level == "" {
		return zerolog.Nop(), Usagef("log level %q: want trace, debug, info, warn, error or disabled", level)
	}
	cw := zerolog.ConsoleWriter{Out: w, NoColor: true, TimeFormat: "15:04:05.000"}
	return zerolog.New(cw).Level(l).With().Timestamp().Logger(), nil
}
