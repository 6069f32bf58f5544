package natscoord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// latest is the newest revision of a lease key.
type latest struct {
	rev     uint64
	value   []byte
	deleted bool // a delete or purge marker: the lease is free
}

// msgGetResponse is the JetStream STREAM.MSG.GET reply.
type msgGetResponse struct {
	Error *struct {
		Code        int    `json:"code"`
		ErrCode     int    `json:"err_code"`
		Description string `json:"description"`
	} `json:"error"`
	Message *struct {
		Seq  uint64 `json:"seq"`
		Hdrs []byte `json:"hdrs"`
		Data []byte `json:"data"`
	} `json:"message"`
}

// errCodeNoMessage is JetStream's "no message found" error code.
const errCodeNoMessage = 10037

// readLatest reads the newest revision of name, or reports found false when
// the key was never written. It asks the bucket's stream leader
// (STREAM.MSG.GET) instead of using the KV direct get, which any replica of
// an R3 bucket may answer, possibly with a superseded revision: a candidate
// would then miss a resignation. Safety never rests on this read (takeover
// is a compare-and-set), only promptness does.
func (c *Coordinator) readLatest(ctx context.Context, name string) (latest, bool, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
	}
	req, err := json.Marshal(struct {
		LastBySubject string `json:"last_by_subj"`
	}{LastBySubject: "$KV." + c.cfg.Bucket + "." + name})
	if err != nil {
		return latest{}, false, err
	}
	subject := apiPrefix(c.js.Options()) + "STREAM.MSG.GET.KV_" + c.cfg.Bucket
	msg, err := c.js.Conn().RequestWithContext(ctx, subject, req)
	if err != nil {
		return latest{}, false, err
	}
	var resp msgGetResponse
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return latest{}, false, fmt.Errorf("decode %s reply: %w", subject, err)
	}
	if resp.Error != nil {
		if resp.Error.ErrCode == errCodeNoMessage {
			return latest{}, false, nil
		}
		return latest{}, false, fmt.Errorf("%s (code %d, err_code %d)", resp.Error.Description, resp.Error.Code, resp.Error.ErrCode)
	}
	if resp.Message == nil {
		return latest{}, false, errors.New("empty STREAM.MSG.GET reply")
	}
	l := latest{rev: resp.Message.Seq, value: resp.Message.Data}
	if len(resp.Message.Hdrs) > 0 {
		hdr, err := nats.DecodeHeadersMsg(resp.Message.Hdrs)
		if err != nil {
			return latest{}, false, fmt.Errorf("decode headers of revision %d: %w", l.rev, err)
		}
		l.deleted = hdr.Get("KV-Operation") != "" || hdr.Get(jetstream.MarkerReasonHeader) != ""
	}
	return l, true, nil
}

// apiPrefix returns the JetStream API subject prefix the handle uses.
func apiPrefix(o jetstream.JetStreamOptions) string {
	switch {
	case o.Domain != "":
		return "$JS." + o.Domain + ".API."
	case o.APIPrefix != "":
		if strings.HasSuffix(o.APIPrefix, ".") {
			return o.APIPrefix
		}
		return o.APIPrefix + "."
	default:
		return jetstream.DefaultAPIPrefix
	}
}
