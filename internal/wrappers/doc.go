// Package wrappers builds the API objects tests need, tersely and in one
// place for the whole module (in the style of Kueue's pkg/util/testing and
// JobSet's wrappers):
//
//	wrappers.MakePT("job").Phase("train", 8).GPUs(1).Desired(16).
//		Status(wrappers.Running("train", "n1", "n2")).Obj()
//
// Every builder is plain data: no client, no clock. Test files of phases,
// engine, driver, sim and controllers use it instead of keeping
// builders of their own.
package wrappers
