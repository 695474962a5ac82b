// Package commitmsg tests scripts/commit-msg, the git hook that holds
// commit messages to a 72-column subject of the form "area: summary"
// and a body wrapped at 72, and the `make hooks` target that installs
// it: the hook alone on messages that must pass or fail, then installed
// into a scratch repository and judged by what git commits.
package commitmsg
