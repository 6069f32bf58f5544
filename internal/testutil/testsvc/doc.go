// Package testsvc starts the real servers that WaveHouse tests run against:
// ClickHouse, NATS with JetStream, Redis and dynalite (a DynamoDB-compatible
// server), and locates the chDB engine library.
//
// It imports only the standard library, so any test package can use it
// without linking a backend SDK.
//
// # Shared and private servers
//
// ClickHouseServer, NATSServer, RedisServer and DynamoDBServer return the
// server named by an environment variable when it is set (make test and CI
// start one of each with tests/deps/start.sh and export the variables), and
// otherwise start a private process for the calling test, stopped in
// t.Cleanup. A shared server is used by every test package at once: tests
// isolate themselves by unique names (UniqueName) and never stop it.
//
// StartClickHouse, StartNATS, StartNATSCluster, StartRedis and StartDynamoDB
// always start fresh private processes, for tests that stop, kill or restart
// a server. Start after Stop or Kill reuses the same data directory and ports.
//
// # Missing dependencies
//
// A missing binary or library is reported through Missing: the test is
// skipped with the reason locally, and fails when the environment variable
// CI is true.
//
// # Processes
//
// Every child runs in its own process group with a parent-death signal of
// SIGKILL, so a crashed test binary leaves no orphan server behind. Its
// stdout and stderr go to a log file in the test's temporary directory; the
// tail of that log is printed with t.Log when a start fails.
package testsvc
