// insert({format: 'JSONEachRow', values}) with the JSON array of rows read from stdin.
import { env, readStdin, run } from './common.mjs';

const values = JSON.parse(await readStdin());
await run(async (c) => {
  const r = await c.insert({ table: env('CH_TABLE'), values, format: 'JSONEachRow' });
  return { executed: r.executed, query_id: r.query_id, summary: r.summary ?? null };
});
