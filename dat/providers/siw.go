package providers

import (
	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/siw"
)

// siwProvider returns the soft-iWARP provider with the given options.
func siwProvider(o siw.Options) verbs.Provider { return siw.New(o) }
