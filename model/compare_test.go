package model

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"unsafe"
)

// SameHandoff compares records as bytes: that is exact only while a
// record has no padding, whose bytes the fields do not own.
func TestHandoff_NoPadding(t *testing.T) {
	var sum uintptr
	typ := reflect.TypeOf(Handoff{})
	for i := 0; i < typ.NumField(); i++ {
		sum += typ.Field(i).Type.Size()
	}
	if size := unsafe.Sizeof(Handoff{}); sum != size {
		t.Fatalf("Handoff's fields take %d bytes of its %d: a record with padding must not be compared as bytes (SameHandoff)", sum, size)
	}
}

// SameHandoff, sameWorker and sameHoldings agree with Go's comparison on records that
// are equal, and on records that differ in one field, whichever field:
// each field in turn is given another value.
func TestSameRecords_AgreeWithComparison(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	check := func(name string, v reflect.Value, same func() bool, equal func() bool) {
		t.Helper()
		for i := 0; i < v.NumField(); i++ {
			f := v.Field(i)
			if !f.CanSet() {
				// holdings' fields are unexported.
				f = reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
			}
			old := reflect.New(f.Type()).Elem()
			old.Set(f)
			for try := 0; try < 8; try++ {
				randomize(f, rng)
				if got, want := same(), equal(); got != want {
					t.Fatalf("%s, field %s changed: same %v, want %v", name, v.Type().Field(i).Name, got, want)
				}
			}
			f.Set(old)
		}
		if !same() {
			t.Fatalf("%s: equal records compared unequal", name)
		}
	}
	var a, b Handoff
	check("handoff", reflect.ValueOf(&b).Elem(), func() bool { return SameHandoff(&a, &b) }, func() bool { return a == b })
	var wa, wb Worker
	check("worker", reflect.ValueOf(&wb).Elem(), func() bool { return sameWorker(&wa, &wb) }, func() bool { return wa == wb })
	var ha, hb holdings
	check("holdings", reflect.ValueOf(&hb).Elem(), func() bool { return sameHoldings(&ha, &hb) }, func() bool { return ha == hb })
}

// randomize gives a field of integers or booleans (or arrays or structs of
// them) random values.
func randomize(v reflect.Value, rng *rand.Rand) {
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 1)
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int:
		v.SetInt(int64(rng.Uint64()))
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uint:
		v.SetUint(rng.Uint64())
	case reflect.Array:
		for i := 0; i < v.Len(); i++ {
			randomize(v.Index(i), rng)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			randomize(v.Field(i), rng)
		}
	}
}
