package providers

import "github.com/godapl/godapl/verbs"

// siwProvider returns the soft-iWARP provider. Until verbs/siw builds it
// is an absent provider: every siw-* IA fails to open with
// DAT_PROVIDER_NOT_FOUND.
func siwProvider() verbs.Provider { return absent("siw") }

type absent string

func (a absent) Name() string                           { return string(a) }
func (a absent) Devices() ([]string, error)             { return nil, nil }
func (a absent) Open(name string) (verbs.Device, error) { return nil, verbs.ErrNoDevice }
