package ia_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ia"
	"github.com/godapl/godapl/dat/lmr"
)

// Open an IA by its registry name, read what the provider offers, and
// use a protection zone; freeing a PZ still in use is refused.
func Example() {
	i, err := ia.Open("mem")
	if err != nil {
		log.Fatal(err)
	}
	defer i.Close(dat.CloseAbrupt)
	attr, _, err := i.Query()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("IA", i.Name(), "at", i.Addr())
	fmt.Println("EPs:", attr.MaxEPs > 0, "EVD qlen:", attr.MaxEVDQLen > 0)

	pz, err := i.CreatePZ()
	if err != nil {
		log.Fatal(err)
	}
	owner, _ := pz.Query()
	fmt.Println("PZ belongs to this IA:", owner == i)
	m, err := lmr.Create(i, pz, make([]byte, 4096), dat.MemPrivLocalRead, dat.VATypeVA)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("free with an LMR in it:", errors.Is(pz.Free(), dat.ErrInvalidState))
	m.Free()
	fmt.Println("free when empty:", pz.Free())

	// Unknown names fail with the DAT return code.
	_, err = ia.Open("no-such-ia")
	fmt.Println(errors.Is(err, dat.ErrProviderNotFound))
	// Output:
	// IA mem at 127.0.0.1
	// EPs: true EVD qlen: true
	// PZ belongs to this IA: true
	// free with an LMR in it: true
	// free when empty: <nil>
	// true
}
