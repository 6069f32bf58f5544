// insert({format: 'CSV', values}) with the CSV text read from stdin. The client takes raw
// formats as a byte stream only: CH_CSV_AS=stream gives it one chunk per line, CH_CSV_AS=string
// the whole text as one chunk.
import { Readable } from 'node:stream';
import { env, readStdin, run } from './common.mjs';

const csv = await readStdin();
await run(async (c) => {
  let values;
  switch (env('CH_CSV_AS')) {
    case 'stream': {
      // Line by line, so the client streams several chunks.
      values = Readable.from(csv.split(/(?<=\n)/), { objectMode: false });
      break;
    }
    case 'string':
      values = Readable.from([csv], { objectMode: false });
      break;
    default:
      throw new Error(`CH_CSV_AS=${process.env.CH_CSV_AS}: want stream or string`);
  }
  const r = await c.insert({ table: env('CH_TABLE'), values, format: 'CSV' });
  return { executed: r.executed, query_id: r.query_id, summary: r.summary ?? null };
});
