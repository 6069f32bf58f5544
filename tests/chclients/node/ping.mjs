// ping() — GET /ping; prints the client's PingResult.
import { run } from './common.mjs';

await run(async (c) => {
  const r = await c.ping();
  return { success: r.success, error: r.success ? null : String(r.error?.message ?? r.error) };
});
