// dynalite-guard.cjs is loaded into dynalite with `node --require` (tests/deps/start.sh and
// internal/testutil/testsvc). dynalite 4.0.0 rethrows a request's stream error from its handler
// (index.js: req.on('error', function (err) { throw err })), so a client that goes away in the
// middle of a request, as a SIGKILLed gateway does, ends the whole server with "aborted"
// (ECONNRESET). Such an error concerns only that request's socket, which is gone: log it and
// keep serving. Any other uncaught exception still ends the process.
'use strict'
process.on('uncaughtException', (err) => {
  if (err && err.code === 'ECONNRESET') {
    console.error('dynalite-guard: a client aborted its request (' + err.message + '); still serving')
    return
  }
  console.error(err)
  process.exit(1)
})
