package sharding

import "github.com/go-faster/city"

// intHash64 is ClickHouse's intHash64 function (IntHash64Impl): the 64-bit finaliser of
// MurmurHash3 over the argument XOR a constant.
func intHash64(x uint64) uint64 {
	x ^= 0x4CF2D2BAAE6DA887
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// cityHash64 is ClickHouse's cityHash64 of one string: CityHash64 v1.0.2, which go-faster/city
// implements as CH64.
func cityHash64(b []byte) uint64 { return city.CH64(b) }

// hash128to64 combines the hash so far (low) with the next argument's (high), as ClickHouse's
// cityHash64 does for each argument after the first.
func hash128to64(low, high uint64) uint64 {
	const kMul = 0x9ddfea08eb382d69
	a := (low ^ high) * kMul
	a ^= a >> 47
	b := (high ^ a) * kMul
	b ^= b >> 47
	return b * kMul
}

// Selector maps a key value to a shard the way a Distributed table does: shard i (0-based)
// owns weight[i] consecutive slots, and a value goes to slot value % total weight.
type Selector struct {
	slots []int
}

// NewSelector returns the selector of shards with these weights (ClickHouse's shard_weight, at
// least 1 each, in shard_num order).
func NewSelector(weights []uint64) Selector {
	var s Selector
	for i, w := range weights {
		for range w {
			s.slots = append(s.slots, i)
		}
	}
	return s
}

// Shard returns the 0-based shard of the key value v.
func (s Selector) Shard(v uint64) int {
	return s.slots[v%uint64(len(s.slots))]
}

// Shards returns the number of shards with at least one slot.
func (s Selector) Shards() int {
	if len(s.slots) == 0 {
		return 0
	}
	return s.slots[len(s.slots)-1] + 1
}
