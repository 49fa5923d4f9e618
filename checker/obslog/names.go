package obslog

// nameTable finds a name among a fixed few (the kinds, a header's
// processes) for every line a reader reads: a map hashes the whole name
// and the general table around it, where a few of its bytes and its
// length tell these names apart, and one comparison confirms the slot.
type nameTable struct {
	// slots holds one more than an index in keys (0: empty); its length
	// is a power of two, at least twice the names, so a probe ends.
	slots []uint16
	keys  []string
	vals  []int
}

func newNameTable(n int) *nameTable {
	size := 8
	for size < 4*n {
		size <<= 1
	}
	return &nameTable{slots: make([]uint16, size)}
}

// nameHash mixes a name's length with its first, middle and last bytes.
func nameHash(s string) uint32 {
	n := len(s)
	if n == 0 {
		return 0
	}
	h := uint32(n)*0x9e3779b1 ^ uint32(s[0])*0x85ebca6b ^ uint32(s[n-1])*0xc2b2ae35 ^ uint32(s[n/2])*0x27d4eb2f
	return h ^ h>>15
}

// put sets name's value; a name put again keeps the latest, as a map's
// assignment does.
func (t *nameTable) put(name string, v int) {
	mask := uint32(len(t.slots) - 1)
	for i := nameHash(name) & mask; ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == 0 {
			t.keys = append(t.keys, name)
			t.vals = append(t.vals, v)
			t.slots[i] = uint16(len(t.keys))
			return
		}
		if t.keys[s-1] == name {
			t.vals[s-1] = v
			return
		}
	}
}

// get is name's value, or false when it is not one of the names.
func (t *nameTable) get(name string) (int, bool) {
	mask := uint32(len(t.slots) - 1)
	for i := nameHash(name) & mask; ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == 0 {
			return 0, false
		}
		if t.keys[s-1] == name {
			return t.vals[s-1], true
		}
	}
}

// kindTable is kindByName for the reader's every line.
var kindTable = func() *nameTable {
	t := newNameTable(int(NumKinds))
	for k := Kind(1); k < NumKinds; k++ {
		t.put(Kinds[k].Name, int(k))
	}
	return t
}()
