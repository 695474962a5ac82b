// Package core is the engine behind the public dat/ packages: the state and
// the rules of every DAT object, kept in one package so that objects can
// reach each other's internals without an import cycle between ia, evd, lmr
// and ep.
//
// Each public type is a defined type over the core one (type EP core.EP),
// so a public handle and its core object are the same pointer: a package
// converts with (*core.EP)(e) at no cost, users see only the public
// methods, and events can carry the public handle (kept in each object's
// Object.handle, set by the package that created it).
//
// Lock order: IA.mu before EVD.mu; EP.mu before EVD.mu; EP.sendMu and
// EP.recvMu before EVD.mu (a poster that finds its slot ring full, and
// ep_get_status, read the ring's head under the EVD's lock); EVD.mu before
// the verbs CQ's lock, IA.ownMu (read) and cookieTable.mu. No lock is held
// across a blocking verbs call (Connect, Accept, Listener.Accept, CQ.Wait).
package core
