// Package dynamodedupe is the external dedupe backend: idempotency records in one DynamoDB
// table, shared by every process that points at it.
//
// Every state change is a single conditional write (PutItem, UpdateItem or DeleteItem) whose
// condition expression compares the item's own lease_until and expires_at attributes with the
// caller's clock, so expiry never depends on DynamoDB's lazy TTL deletion and two processes can
// never both win a claim. The ttl attribute is set only so that DynamoDB can garbage-collect
// old items when TTL is enabled on the table. Transactions are not used.
package dynamodedupe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/wavehouse/wavehouse/internal/breaker"
	"github.com/wavehouse/wavehouse/internal/dedupe"
)

var (
	_ dedupe.Store   = (*Store)(nil)
	_ dedupe.Sweeper = (*Store)(nil)
)

// reserveRounds bounds how often Reserve retries when the record it lost to vanished or
// expired before it could be read; that needs a concurrent release or expiry each round.
const reserveRounds = 3

// Store is the DynamoDB-backed dedupe.Store. It also implements dedupe.Sweeper.
type Store struct {
	cfg       Config
	clock     dedupe.Clock
	log       *slog.Logger
	client    *dynamodb.Client
	transport *http.Transport
	breaker   *breaker.Breaker
	closed    atomic.Bool
}

// New builds the client. It reads the credential files but makes no network call and starts
// no goroutine; call EnsureTable before serving.
func New(cfg Config, deps Deps) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	clock := deps.Clock
	if clock == nil {
		clock = dedupe.SystemClock{}
	}
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	opts := []func(*config.LoadOptions) error{
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = cfg.MaxAttempts
				o.MaxBackoff = maxBackoff
				// The breaker limits load on a failing backend; the SDK's retry quota would
				// only add a second, differently behaving limit.
				o.RateLimiter = ratelimit.None
			})
		}),
	}
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if cfg.AccessKeyIDFile != "" {
		id, err := readSecret(cfg.AccessKeyIDFile)
		if err != nil {
			return nil, fmt.Errorf("dedupe.dynamodb.access_key_id_file: %w", err)
		}
		secret, err := readSecret(cfg.SecretAccessKeyFile)
		if err != nil {
			return nil, fmt.Errorf("dedupe.dynamodb.secret_access_key_file: %w", err)
		}
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(id, secret, "")))
	}
	awsCfg, err := config.LoadDefaultConfig(context.Background(), opts...)
	if err != nil {
		return nil, fmt.Errorf("dynamodedupe: load aws config: %w", err)
	}
	// Take the transport the SDK built (it carries AWS_CA_BUNDLE and similar settings) into
	// a client of our own, so Close can drop its idle connections.
	buildable, ok := awsCfg.HTTPClient.(*awshttp.BuildableClient)
	if !ok {
		return nil, fmt.Errorf("dynamodedupe: unexpected aws http client %T", awsCfg.HTTPClient)
	}
	transport := buildable.GetTransport()
	transport.MaxIdleConnsPerHost = 64
	awsCfg.HTTPClient = &http.Client{Transport: transport}
	if awsCfg.Region == "" {
		if cfg.Endpoint == "" {
			return nil, errors.New("dedupe.dynamodb.region: not set and not found in the environment (set it or AWS_REGION)")
		}
		awsCfg.Region = "us-east-1"
	}
	client := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
	})
	br, err := breaker.New(breaker.Config{Failures: cfg.BreakerFailures, Cooldown: cfg.BreakerCooldown}, breaker.Deps{
		Now:       clock.Now,
		Metrics:   deps.Breakers,
		Component: "dynamodb",
		Target:    cfg.Table,
		OnChange: func(from, to breaker.State) {
			log.Warn("dedupe: dynamodb breaker", "table", cfg.Table, "from", from.String(), "to", to.String(), "cooldown", cfg.BreakerCooldown)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("dedupe.dynamodb: %w", err)
	}
	return &Store{
		cfg:       cfg,
		clock:     clock,
		log:       log,
		client:    client,
		transport: transport,
		breaker:   br,
	}, nil
}

func readSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("file %s is empty", path)
	}
	return s, nil
}

// now returns the clock's time at the millisecond resolution items are stored with.
func (s *Store) now() time.Time {
	return s.clock.Now().Truncate(time.Millisecond)
}

// Reserve implements dedupe.Store with one conditional PutItem; taking over an expired claim
// that carries a mark costs a second, conditioned on the old claim's token, so the mark moves
// to the new claim atomically.
func (s *Store) Reserve(ctx context.Context, key dedupe.Key, fingerprint string, lease time.Duration) (dedupe.Reservation, error) {
	if err := dedupe.CheckReserve(key, lease); err != nil {
		return dedupe.Reservation{}, err
	}
	for range reserveRounds {
		now := s.now()
		claim := dedupe.Claim{Token: dedupe.NewToken(), LeaseUntil: now.Add(lease).Truncate(time.Millisecond)}
		out, err := s.putClaim(ctx, key, fingerprint, claim, claimableCond, map[string]types.AttributeValue{
			":pending": strAttr(statePending), ":committed": strAttr(stateCommitted), ":now": numAttr(millis(now)),
		}, "#pk", "#st", "#lu", "#ea", "#fr", "#fu")
		if err == nil {
			res := dedupe.Reservation{Outcome: dedupe.OutcomeClaimed, Claim: claim, Reclaimed: len(out.Attributes) > 0}
			if res.Reclaimed {
				// The replaced record (ALL_OLD); one that cannot be read only loses the count.
				old, derr := decodeItem(out.Attributes)
				res.MarkLapsed = derr == nil && dedupe.MarkLapsed(old, now)
			}
			return res, nil
		}
		var ccf *types.ConditionalCheckFailedException
		if !errors.As(err, &ccf) {
			return dedupe.Reservation{}, err
		}
		item, err := s.current(ctx, key, ccf.Item)
		if err != nil {
			return dedupe.Reservation{}, err
		}
		if item == nil {
			continue // released in between
		}
		rec, err := decodeItem(item)
		if err != nil {
			return dedupe.Reservation{}, fmt.Errorf("%w: dynamodb reserve %v: %w", dedupe.ErrUnavailable, key, err)
		}
		if rec.Live(now) {
			return dedupe.Classify(rec, fingerprint, now), nil
		}
		if claim.Frame, claim.FrameUntil = dedupe.Inherited(rec, now); claim.Frame == "" {
			continue // expired and unmarked in between: the first write can claim it now
		}
		_, err = s.putClaim(ctx, key, fingerprint, claim, takeOverCond, map[string]types.AttributeValue{
			":pending": strAttr(statePending), ":oldtok": strAttr(stringOf(item[attrToken])), ":now": numAttr(millis(now)),
		}, "#st", "#tok", "#lu")
		if err == nil {
			return dedupe.Reservation{Outcome: dedupe.OutcomeClaimed, Claim: claim, Reclaimed: true}, nil
		}
		if !conditionFailed(err) {
			return dedupe.Reservation{}, err
		}
		// Someone else took it over first; look again.
	}
	return dedupe.Reservation{}, fmt.Errorf("%w: dynamodb reserve %v: the record kept changing", dedupe.ErrUnavailable, key)
}

// putClaim writes claim (with its inherited mark, if any) under cond.
func (s *Store) putClaim(ctx context.Context, key dedupe.Key, fingerprint string, claim dedupe.Claim, cond string,
	values map[string]types.AttributeValue, placeholders ...string) (*dynamodb.PutItemOutput, error) {
	item := map[string]types.AttributeValue{
		attrPK:         strAttr(key.Encode()),
		attrState:      strAttr(statePending),
		attrToken:      strAttr(claim.Token),
		attrLeaseUntil: numAttr(millis(claim.LeaseUntil)),
		attrTTL:        numAttr(claim.LeaseUntil.Add(ttlSlack).Unix()),
	}
	if fingerprint != "" {
		item[attrFingerprint] = strAttr(fingerprint)
	}
	if claim.Frame != "" {
		item[attrFrame] = strAttr(claim.Frame)
		item[attrFrameUntil] = numAttr(millis(claim.FrameUntil))
		item[attrTTL] = numAttr(later(claim.LeaseUntil, claim.FrameUntil).Add(ttlSlack).Unix())
	}
	var out *dynamodb.PutItemOutput
	err := s.do(ctx, "reserve", func(ctx context.Context) error {
		var err error
		out, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                 &s.cfg.Table,
			Item:                      item,
			ConditionExpression:       aws.String(cond),
			ExpressionAttributeNames:  names(placeholders...),
			ExpressionAttributeValues: values,
			ReturnValues:              types.ReturnValueAllOld,
			// DynamoDB returns the record that failed the condition, saving a read on
			// every duplicate; servers that do not (dynalite) cost one GetItem.
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		return err
	})
	return out, err
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Commit implements dedupe.Store with one conditional UpdateItem.
func (s *Store) Commit(ctx context.Context, key dedupe.Key, token string, resp dedupe.Response, retention time.Duration) error {
	if err := dedupe.CheckCommit(key, token, resp, retention); err != nil {
		return err
	}
	expires := s.now().Add(retention).Truncate(time.Millisecond)
	values := map[string]types.AttributeValue{
		":pending": strAttr(statePending), ":committed": strAttr(stateCommitted), ":tok": strAttr(token),
		":ea": numAttr(millis(expires)), ":sc": numAttr(int64(resp.Status)), ":ttl": numAttr(expires.Add(ttlSlack).Unix()),
	}
	update := "SET #st = :committed, #ea = :ea, #sc = :sc, #ttl = :ttl"
	if len(resp.Body) > 0 {
		update += ", #bd = :bd REMOVE #fr, #fu"
		values[":bd"] = &types.AttributeValueMemberB{Value: resp.Body}
	} else {
		update += " REMOVE #bd, #fr, #fu"
	}
	err := s.do(ctx, "commit", func(ctx context.Context) error {
		_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 &s.cfg.Table,
			Key:                       pkAttr(key),
			UpdateExpression:          aws.String(update),
			ConditionExpression:       aws.String(ownedCond),
			ExpressionAttributeNames:  names("#st", "#tok", "#ea", "#sc", "#ttl", "#bd", "#fr", "#fu"),
			ExpressionAttributeValues: values,
		})
		return err
	})
	if conditionFailed(err) {
		return dedupe.ErrNotOwner
	}
	return err
}

// Release implements dedupe.Store with one conditional DeleteItem, or, for a marked claim, a
// conditional UpdateItem that ends its lease and keeps the mark.
func (s *Store) Release(ctx context.Context, key dedupe.Key, token string) error {
	if err := dedupe.CheckRelease(key, token); err != nil {
		return err
	}
	values := map[string]types.AttributeValue{":pending": strAttr(statePending), ":tok": strAttr(token)}
	err := s.do(ctx, "release", func(ctx context.Context) error {
		_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName:                 &s.cfg.Table,
			Key:                       pkAttr(key),
			ConditionExpression:       aws.String(ownedCond + " AND attribute_not_exists(#fr)"),
			ExpressionAttributeNames:  names("#st", "#tok", "#fr"),
			ExpressionAttributeValues: values,
		})
		return err
	})
	if !conditionFailed(err) {
		return err
	}
	// The lease ends and the token becomes one nobody holds: the caller no longer owns it.
	values[":now"], values[":newtok"] = numAttr(millis(s.now())), strAttr(dedupe.NewToken())
	err = s.do(ctx, "release", func(ctx context.Context) error {
		_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 &s.cfg.Table,
			Key:                       pkAttr(key),
			UpdateExpression:          aws.String("SET #lu = :now, #tok = :newtok"),
			ConditionExpression:       aws.String(ownedCond + " AND attribute_exists(#fr)"),
			ExpressionAttributeNames:  names("#st", "#tok", "#fr", "#lu"),
			ExpressionAttributeValues: values,
		})
		return err
	})
	if conditionFailed(err) {
		return dedupe.ErrNotOwner
	}
	return err
}

// Mark implements dedupe.Store with one conditional UpdateItem per claim, sent concurrently.
func (s *Store) Mark(ctx context.Context, frame string, until time.Time, claims []dedupe.Owned) []error {
	errs := make([]error, len(claims))
	if err := dedupe.CheckMark(frame, claims); err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	until = until.Truncate(time.Millisecond)
	var wg sync.WaitGroup
	for i, c := range claims {
		wg.Go(func() {
			err := s.do(ctx, "mark", func(ctx context.Context) error {
				_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
					TableName:                &s.cfg.Table,
					Key:                      pkAttr(c.Key),
					UpdateExpression:         aws.String("SET #fr = :fr, #fu = :fu"),
					ConditionExpression:      aws.String(ownedCond),
					ExpressionAttributeNames: names("#st", "#tok", "#fr", "#fu"),
					ExpressionAttributeValues: map[string]types.AttributeValue{
						":pending": strAttr(statePending), ":tok": strAttr(c.Token), ":fr": strAttr(frame), ":fu": numAttr(millis(until)),
					},
				})
				return err
			})
			if conditionFailed(err) {
				err = dedupe.ErrNotOwner
			}
			errs[i] = err
		})
	}
	wg.Wait()
	return errs
}

// Get implements dedupe.Store with a strongly consistent GetItem.
func (s *Store) Get(ctx context.Context, key dedupe.Key) (dedupe.Record, error) {
	if err := key.Validate(); err != nil {
		return dedupe.Record{}, err
	}
	rec, found, err := s.read(ctx, key)
	if err != nil {
		return dedupe.Record{}, err
	}
	if !found || !rec.Live(s.now()) {
		return dedupe.Record{}, dedupe.ErrNotFound
	}
	return rec, nil
}

// current returns the item that failed a condition: item when the server sent it back,
// otherwise a fresh read (nil when there is none).
func (s *Store) current(ctx context.Context, key dedupe.Key, item map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	if len(item) > 0 {
		return item, nil
	}
	return s.readItem(ctx, key)
}

// read fetches the item for key with a strongly consistent read.
func (s *Store) read(ctx context.Context, key dedupe.Key) (dedupe.Record, bool, error) {
	item, err := s.readItem(ctx, key)
	if err != nil || item == nil {
		return dedupe.Record{}, false, err
	}
	rec, err := decodeItem(item)
	if err != nil {
		return dedupe.Record{}, false, fmt.Errorf("%w: dynamodb get %v: %w", dedupe.ErrUnavailable, key, err)
	}
	return rec, true, nil
}

// readItem fetches the raw item for key with a strongly consistent read; nil when absent.
func (s *Store) readItem(ctx context.Context, key dedupe.Key) (map[string]types.AttributeValue, error) {
	var out *dynamodb.GetItemOutput
	err := s.do(ctx, "get", func(ctx context.Context) error {
		var err error
		out, err = s.client.GetItem(ctx, &dynamodb.GetItemInput{
			TableName:      &s.cfg.Table,
			Key:            pkAttr(key),
			ConsistentRead: aws.Bool(true),
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	return out.Item, nil
}

// Close marks the store closed and drops idle connections. It is idempotent.
func (s *Store) Close(context.Context) error {
	if s.closed.Swap(true) {
		return nil
	}
	s.transport.CloseIdleConnections()
	return nil
}

// do runs one backend call under the breaker and the per-call timeout, and translates its
// error. A failed condition is returned unchanged for the caller to interpret.
func (s *Store) do(ctx context.Context, op string, fn func(ctx context.Context) error) error {
	if s.closed.Load() {
		return dedupe.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	err := s.breaker.Do(func() (breaker.Outcome, error) {
		cctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
		defer cancel()
		err := fn(cctx)
		switch {
		case err == nil || conditionFailed(err):
			return breaker.Success, err
		case ctx.Err() != nil:
			// The caller gave up; that says nothing about the backend.
			return breaker.Neutral, fmt.Errorf("dynamodb %s: %w: %w", op, ctx.Err(), err)
		case apiCode(err) == "ValidationException":
			return breaker.Success, fmt.Errorf("%w: dynamodb %s: %w", dedupe.ErrInvalid, op, err)
		}
		return breaker.Failure, fmt.Errorf("%w: dynamodb %s: %w", dedupe.ErrUnavailable, op, err)
	})
	if errors.Is(err, breaker.ErrOpen) {
		return fmt.Errorf("%w: dynamodb %s: breaker open after %d consecutive failures", dedupe.ErrUnavailable, op, s.cfg.BreakerFailures)
	}
	return err
}

func conditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

func apiCode(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}
