package dynamodedupe

import (
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/wavehouse/wavehouse/internal/dedupe"
)

// Attribute names of an item. Expressions refer to them through the names map, so reserved
// words are never a problem.
const (
	attrPK          = "pk"          // S: dedupe.Key.Encode()
	attrState       = "state"       // S: statePending or stateCommitted
	attrToken       = "token"       // S: the claim token
	attrFingerprint = "fingerprint" // S: absent when empty
	attrLeaseUntil  = "lease_until" // N: Unix milliseconds
	attrExpiresAt   = "expires_at"  // N: Unix milliseconds, committed only
	attrStatus      = "status"      // N: HTTP status, committed only
	attrBody        = "body"        // B: absent when empty
	attrTTL         = "ttl"         // N: Unix seconds, for DynamoDB's own (lazy) TTL deletion only
	attrFrame       = "frame"       // S: a pending claim's mark (queue frame id), absent when unmarked
	attrFrameUntil  = "frame_until" // N: Unix milliseconds, with frame
)

const (
	statePending   = "pending"
	stateCommitted = "committed"
)

// ttlSlack keeps items past their logical expiry before DynamoDB's TTL may delete them; the
// TTL only reclaims space, expiry itself is decided in condition expressions.
const ttlSlack = time.Hour

// exprNames maps the placeholders used in every expression to attribute names.
var exprNames = map[string]string{
	"#pk": attrPK, "#st": attrState, "#tok": attrToken, "#fp": attrFingerprint,
	"#lu": attrLeaseUntil, "#ea": attrExpiresAt, "#sc": attrStatus, "#bd": attrBody, "#ttl": attrTTL,
	"#fr": attrFrame, "#fu": attrFrameUntil,
}

// names returns the subset of exprNames used by an expression (DynamoDB rejects unused
// names).
func names(placeholders ...string) map[string]string {
	m := make(map[string]string, len(placeholders))
	for _, p := range placeholders {
		m[p] = exprNames[p]
	}
	return m
}

// claimableCond is true when the key has no record or only an expired one at :now that carries
// no mark still resolvable at :now (a claim over a marked record must carry the mark: see
// Reserve).
const claimableCond = "attribute_not_exists(#pk) OR (#st = :pending AND #lu <= :now AND " + unmarkedCond + ") OR (#st = :committed AND #ea <= :now)"

// expiredCond is true when the record exists and is expired at :now, and a pending claim's mark,
// if any, ended by :forget (dedupe.LapsedMarkMemory before :now): the sweeper may delete it.
const expiredCond = "(#st = :pending AND #lu <= :now AND (attribute_not_exists(#fr) OR #fu <= :forget)) OR (#st = :committed AND #ea <= :now)"

// unmarkedCond is true when the record has no mark resolvable at :now.
const unmarkedCond = "(attribute_not_exists(#fr) OR #fu <= :now)"

// takeOverCond is true when the record is the expired pending claim of :oldtok.
const takeOverCond = "#st = :pending AND #tok = :oldtok AND #lu <= :now"

// ownedCond is true when the record is a pending claim held by :tok.
const ownedCond = "#st = :pending AND #tok = :tok"

func millis(t time.Time) int64 { return t.UnixMilli() }

func numAttr(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

func strAttr(s string) types.AttributeValue {
	return &types.AttributeValueMemberS{Value: s}
}

func pkAttr(key dedupe.Key) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: strAttr(key.Encode())}
}

// decodeItem turns a stored item into a Record.
func decodeItem(item map[string]types.AttributeValue) (dedupe.Record, error) {
	var rec dedupe.Record
	switch s := stringOf(item[attrState]); s {
	case statePending:
		rec.State = dedupe.StatePending
	case stateCommitted:
		rec.State = dedupe.StateCommitted
	default:
		return dedupe.Record{}, fmt.Errorf("item has unknown state %q", s)
	}
	rec.Fingerprint = stringOf(item[attrFingerprint])
	lu, err := numberOf(item[attrLeaseUntil])
	if err != nil {
		return dedupe.Record{}, fmt.Errorf("item %s: %w", attrLeaseUntil, err)
	}
	rec.LeaseUntil = time.UnixMilli(lu)
	if fr := stringOf(item[attrFrame]); fr != "" && rec.State == dedupe.StatePending {
		fu, err := numberOf(item[attrFrameUntil])
		if err != nil {
			return dedupe.Record{}, fmt.Errorf("item %s: %w", attrFrameUntil, err)
		}
		rec.Frame, rec.FrameUntil = fr, time.UnixMilli(fu)
	}
	if rec.State == dedupe.StateCommitted {
		ea, err := numberOf(item[attrExpiresAt])
		if err != nil {
			return dedupe.Record{}, fmt.Errorf("item %s: %w", attrExpiresAt, err)
		}
		rec.ExpiresAt = time.UnixMilli(ea)
		sc, err := numberOf(item[attrStatus])
		if err != nil {
			return dedupe.Record{}, fmt.Errorf("item %s: %w", attrStatus, err)
		}
		rec.Response.Status = int(sc)
		if b, ok := item[attrBody].(*types.AttributeValueMemberB); ok {
			rec.Response.Body = b.Value
		}
	}
	return rec, nil
}

func stringOf(v types.AttributeValue) string {
	if s, ok := v.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

func numberOf(v types.AttributeValue) (int64, error) {
	n, ok := v.(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("missing number")
	}
	return strconv.ParseInt(n.Value, 10, 64)
}
