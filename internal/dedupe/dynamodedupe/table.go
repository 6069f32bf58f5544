package dynamodedupe

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/wavehouse/wavehouse/internal/dedupe"
)

// ErrTableMissing is wrapped (with dedupe.ErrUnavailable) by EnsureTable when the table does
// not exist and Config.CreateTable is off: a configuration problem, not an outage.
var ErrTableMissing = errors.New("dynamodedupe: table missing")

// tableWait bounds how long EnsureTable waits for a new table to become active.
const tableWait = time.Minute

// EnsureTable checks that the table exists with partition key pk of type S, creating it first
// when Config.CreateTable is set. After creating it, it asks DynamoDB to enable TTL on the ttl
// attribute for garbage collection; endpoints without TTL support (dynalite answers
// UnknownOperationException) are accepted, since expiry never depends on TTL. Errors reaching
// the backend wrap dedupe.ErrUnavailable.
func (s *Store) EnsureTable(ctx context.Context) error {
	if s.closed.Load() {
		return dedupe.ErrClosed
	}
	out, err := s.client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &s.cfg.Table})
	if err == nil {
		return checkSchema(s.cfg.Table, out.Table)
	}
	if apiCode(err) != "ResourceNotFoundException" {
		return fmt.Errorf("%w: dynamodb describe table %s: %w", dedupe.ErrUnavailable, s.cfg.Table, err)
	}
	if !s.cfg.CreateTable {
		return fmt.Errorf("%w: %w: dynamodb table %s does not exist (create it with partition key pk of type S, or set dedupe.dynamodb.create_table with a custom endpoint)", dedupe.ErrUnavailable, ErrTableMissing, s.cfg.Table)
	}
	_, err = s.client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            &s.cfg.Table,
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(attrPK), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(attrPK), KeyType: types.KeyTypeHash}},
	})
	if err != nil && apiCode(err) != "ResourceInUseException" {
		return fmt.Errorf("%w: dynamodb create table %s: %w", dedupe.ErrUnavailable, s.cfg.Table, err)
	}
	waiter := dynamodb.NewTableExistsWaiter(s.client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = 50 * time.Millisecond
		o.MaxDelay = time.Second
	})
	if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: &s.cfg.Table}, tableWait); err != nil {
		return fmt.Errorf("%w: dynamodb wait for table %s: %w", dedupe.ErrUnavailable, s.cfg.Table, err)
	}
	_, err = s.client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               &s.cfg.Table,
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(attrTTL), Enabled: aws.Bool(true)},
	})
	if err != nil {
		if apiCode(err) != "UnknownOperationException" {
			return fmt.Errorf("%w: dynamodb enable ttl on %s: %w", dedupe.ErrUnavailable, s.cfg.Table, err)
		}
		s.log.Info("dedupe: endpoint does not support DynamoDB TTL; expired records are removed only by the sweeper", "table", s.cfg.Table)
	}
	return nil
}

func checkSchema(table string, desc *types.TableDescription) error {
	if desc == nil || len(desc.KeySchema) != 1 || aws.ToString(desc.KeySchema[0].AttributeName) != attrPK || desc.KeySchema[0].KeyType != types.KeyTypeHash {
		return fmt.Errorf("dynamodedupe: table %s must have exactly one key, partition key %q of type S", table, attrPK)
	}
	for _, a := range desc.AttributeDefinitions {
		if aws.ToString(a.AttributeName) == attrPK && a.AttributeType != types.ScalarAttributeTypeS {
			return fmt.Errorf("dynamodedupe: table %s: attribute %q must be of type S", table, attrPK)
		}
	}
	return nil
}
