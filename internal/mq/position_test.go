package mq_test

import (
	"errors"
	"hash/fnv"
	"testing"

	"github.com/wavehouse/wavehouse/internal/mq"
)

func TestPositionRoundTripAndOrder(t *testing.T) {
	for _, p := range []mq.Position{{}, {Seq: 1}, {Seq: 42, Index: 7}, mq.Latest} {
		got, err := mq.ParsePosition(p.String())
		if err != nil || got != p {
			t.Fatalf("ParsePosition(%q) = %v, %v", p.String(), got, err)
		}
	}
	if got, err := mq.ParsePosition("17"); err != nil || got != (mq.Position{Seq: 17}) {
		t.Fatalf("bare sequence: %v, %v", got, err)
	}
	for _, bad := range []string{"", "x", "1-", "-1", "1-x", "1-99999999999"} {
		if _, err := mq.ParsePosition(bad); !errors.Is(err, mq.ErrInvalid) {
			t.Fatalf("ParsePosition(%q) error %v, want mq.ErrInvalid", bad, err)
		}
	}
	if !(mq.Position{Seq: 1, Index: 5}).Less(mq.Position{Seq: 2}) || !(mq.Position{Seq: 2}).Less(mq.Position{Seq: 2, Index: 1}) || (mq.Position{Seq: 2}).Less(mq.Position{Seq: 2}) {
		t.Fatal("Less does not order by sequence, then index")
	}
}

func TestPartitionOfIsStableAndInRange(t *testing.T) {
	// The hash is part of the on-disk format: changing it would move a
	// table to another partition and break its order.
	h := fnv.New32a()
	_, _ = h.Write([]byte("acme\x00events"))
	if p, want := mq.PartitionOf("acme", "events", 16), int(h.Sum32()%16); p != want {
		t.Fatalf("partition %d, want FNV-1a %d", p, want)
	}
	if mq.PartitionOf("ab", "c", 1<<20) == mq.PartitionOf("a", "bc", 1<<20) {
		t.Fatal("tenant/table boundary not part of the hash")
	}
	if mq.PartitionOf("x", "y", 0) != 0 || mq.PartitionOf("x", "y", 1) != 0 {
		t.Fatal("n <= 1 must map to partition 0")
	}
	seen := map[int]bool{}
	for i := 0; i < 200; i++ {
		seen[mq.PartitionOf("t", string(rune('a'+i%26))+string(rune('a'+i/26)), 4)] = true
	}
	if len(seen) != 4 {
		t.Fatalf("200 tables used %d of 4 partitions", len(seen))
	}
}
