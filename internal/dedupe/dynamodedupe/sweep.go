package dynamodedupe

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/wavehouse/wavehouse/internal/dedupe"
)

// Sweep implements dedupe.Sweeper: it scans the table for items expired at now and deletes
// each with a condition that it is still expired, so a key claimed or committed again during
// the sweep is kept. It is meant for endpoints without TTL (dynalite, DynamoDB Local) and as a
// bound on TTL's lag; on AWS with TTL enabled it is optional.
func (s *Store) Sweep(ctx context.Context, now time.Time) (int, error) {
	now = now.Truncate(time.Millisecond)
	values := map[string]types.AttributeValue{
		":pending": strAttr(statePending), ":committed": strAttr(stateCommitted), ":now": numAttr(millis(now)),
		":forget": numAttr(millis(now.Add(-dedupe.LapsedMarkMemory))),
	}
	removed := 0
	var start map[string]types.AttributeValue
	for {
		var out *dynamodb.ScanOutput
		err := s.do(ctx, "sweep scan", func(ctx context.Context) error {
			var err error
			out, err = s.client.Scan(ctx, &dynamodb.ScanInput{
				TableName:                 &s.cfg.Table,
				ConsistentRead:            aws.Bool(true),
				FilterExpression:          aws.String(expiredCond),
				ProjectionExpression:      aws.String("#pk"),
				ExpressionAttributeNames:  names("#pk", "#st", "#lu", "#ea", "#fr", "#fu"),
				ExpressionAttributeValues: values,
				ExclusiveStartKey:         start,
			})
			return err
		})
		if err != nil {
			return removed, err
		}
		for _, item := range out.Items {
			err := s.do(ctx, "sweep delete", func(ctx context.Context) error {
				_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
					TableName:                 &s.cfg.Table,
					Key:                       map[string]types.AttributeValue{attrPK: item[attrPK]},
					ConditionExpression:       aws.String(expiredCond),
					ExpressionAttributeNames:  names("#st", "#lu", "#ea", "#fr", "#fu"),
					ExpressionAttributeValues: values,
				})
				return err
			})
			switch {
			case err == nil:
				removed++
			case conditionFailed(err):
				// Claimed or committed again since the scan: keep it.
			default:
				return removed, err
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return removed, nil
		}
		start = out.LastEvaluatedKey
	}
}
