// Shared by the scripts of tests/chclients: builds the official client from the environment the
// Go test sets, and prints one JSON line with what the call returned or the error it threw.
//
//   CH_URL        base URL of the server (the gateway, or ClickHouse itself)
//   CH_USER       username (HTTP Basic, as the client sends it)
//   CH_PASSWORD   password
//   CH_DATABASE   database the client names (?database=)
//   CH_TABLE      table the script inserts into or reads
//   CH_COMPRESSION  "1": compression {request: true, response: true} (gzip both ways)
//   NODE_PATH     the node_modules directory holding @clickhouse/client
import { createRequire } from 'node:module';

// ESM imports ignore NODE_PATH; require resolves through it, so the client is installed once
// under the test cache instead of next to these scripts.
const require = createRequire(import.meta.url);
const { createClient } = require('@clickhouse/client');

export function env(name) {
  const v = process.env[name];
  if (v === undefined) throw new Error(`environment variable ${name} is not set`);
  return v;
}

export function client() {
  return createClient({
    url: env('CH_URL'),
    username: env('CH_USER'),
    password: process.env.CH_PASSWORD ?? '',
    database: env('CH_DATABASE'),
    request_timeout: 60_000,
    ...(process.env.CH_COMPRESSION === '1' ? { compression: { request: true, response: true } } : {}),
  });
}

// readStdin returns everything on standard input as a string.
export async function readStdin() {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  return Buffer.concat(chunks).toString('utf8');
}

// run calls fn with a client and prints {"result": …} or {"error": {…}}; an error's fields are
// the ones a user of the client sees (ClickHouseError has code and type).
export async function run(fn) {
  const c = client();
  let out;
  try {
    out = { result: (await fn(c)) ?? null };
  } catch (e) {
    out = {
      error: {
        class: e?.constructor?.name ?? typeof e,
        message: String(e?.message ?? e),
        code: e?.code ?? null,
        type: e?.type ?? null,
      },
    };
  } finally {
    await c.close();
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}
