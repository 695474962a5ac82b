package providers

import (
	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/siw"
)

// siwProvider returns the soft-iWARP provider with its default options.
func siwProvider() verbs.Provider { return siw.New(siw.Options{}) }
