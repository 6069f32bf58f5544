// query({query: CH_QUERY, format: CH_FORMAT}) read with resultSet.json(): for JSON the whole
// {meta, data, rows, …} document, for JSONEachRow the array of rows.
import { env, run } from './common.mjs';

await run(async (c) => {
  const rs = await c.query({ query: env('CH_QUERY'), format: env('CH_FORMAT') });
  return { query_id: rs.query_id, body: await rs.json() };
});
