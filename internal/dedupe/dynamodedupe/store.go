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

// Reserve implements dedupe.Store with one conditional PutItem.
func (s *Store) Reserve(ctx context.Context, key dedupe.Key, fingerprint string, lease time.Duration) (dedupe.Reservation, error) {
	if err := dedupe.CheckReserve(key, lease); err != nil {
		return dedupe.Reservation{}, err
	}
	for range reserveRounds {
		now := s.now()
		claim := dedupe.Claim{Token: dedupe.NewToken(), LeaseUntil: now.Add(lease).Truncate(time.Millisecond)}
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
		var out *dynamodb.PutItemOutput
		err := s.do(ctx, "reserve", func(ctx context.Context) error {
			var err error
			out, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{
				TableName:                &s.cfg.Table,
				Item:                     item,
				ConditionExpression:      aws.String(claimableCond),
				ExpressionAttributeNames: names("#pk", "#st", "#lu", "#ea"),
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":pending": strAttr(statePending), ":committed": strAttr(stateCommitted), ":now": numAttr(millis(now)),
				},
				ReturnValues: types.ReturnValueAllOld,
				// DynamoDB returns the record that failed the condition, saving a read on
				// every duplicate; servers that do not (dynalite) cost one GetItem.
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			})
			return err
		})
		if err == nil {
			return dedupe.Reservation{Outcome: dedupe.OutcomeClaimed, Claim: claim, Reclaimed: len(out.Attributes) > 0}, nil
		}
		var ccf *types.ConditionalCheckFailedException
		if !errors.As(err, &ccf) {
			return dedupe.Reservation{}, err
		}
		rec, found, err := s.current(ctx, key, ccf.Item)
		if err != nil {
			return dedupe.Reservation{}, err
		}
		if found && rec.Live(now) {
			return dedupe.Classify(rec, fingerprint, now), nil
		}
		// The record that failed the condition was released or replaced by an expired one in
		// between; try to claim again.
	}
	return dedupe.Reservation{}, fmt.Errorf("%w: dynamodb reserve %v: the record kept changing", dedupe.ErrUnavailable, key)
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
		update += ", #bd = :bd"
		values[":bd"] = &types.AttributeValueMemberB{Value: resp.Body}
	} else {
		update += " REMOVE #bd"
	}
	err := s.do(ctx, "commit", func(ctx context.Context) error {
		_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 &s.cfg.Table,
			Key:                       pkAttr(key),
			UpdateExpression:          aws.String(update),
			ConditionExpression:       aws.String(ownedCond),
			ExpressionAttributeNames:  names("#st", "#tok", "#ea", "#sc", "#ttl", "#bd"),
			ExpressionAttributeValues: values,
		})
		return err
	})
	if conditionFailed(err) {
		return dedupe.ErrNotOwner
	}
	return err
}

// Release implements dedupe.Store with one conditional DeleteItem.
func (s *Store) Release(ctx context.Context, key dedupe.Key, token string) error {
	if err := dedupe.CheckRelease(key, token); err != nil {
		return err
	}
	err := s.do(ctx, "release", func(ctx context.Context) error {
		_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName:                &s.cfg.Table,
			Key:                      pkAttr(key),
			ConditionExpression:      aws.String(ownedCond),
			ExpressionAttributeNames: names("#st", "#tok"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":pending": strAttr(statePending), ":tok": strAttr(token),
			},
		})
		return err
	})
	if conditionFailed(err) {
		return dedupe.ErrNotOwner
	}
	return err
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

// current returns the record that failed a condition: item when the server sent it back,
// otherwise a fresh read.
func (s *Store) current(ctx context.Context, key dedupe.Key, item map[string]types.AttributeValue) (dedupe.Record, bool, error) {
	if len(item) == 0 {
		return s.read(ctx, key)
	}
	rec, err := decodeItem(item)
	if err != nil {
		return dedupe.Record{}, false, fmt.Errorf("%w: dynamodb reserve %v: %w", dedupe.ErrUnavailable, key, err)
	}
	return rec, true, nil
}

// read fetches the item for key with a strongly consistent read.
func (s *Store) read(ctx context.Context, key dedupe.Key) (dedupe.Record, bool, error) {
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
		return dedupe.Record{}, false, err
	}
	if len(out.Item) == 0 {
		return dedupe.Record{}, false, nil
	}
	rec, err := decodeItem(out.Item)
	if err != nil {
		return dedupe.Record{}, false, fmt.Errorf("%w: dynamodb get %v: %w", dedupe.ErrUnavailable, key, err)
	}
	return rec, true, nil
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
