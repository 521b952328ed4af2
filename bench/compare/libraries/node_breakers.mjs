// Per-call cost of two JavaScript circuit breakers from npm, on the two paths fusebox-bench
// measures: a call through a CLOSED breaker that succeeds, and a call an OPEN breaker rejects.
// Each breaker with its defaults, as a user gets it (opossum's default 10 s call timeout arms a
// timer per call; cockatiel has none). Sequential awaits in one event loop; ns per call, the
// median of 5 runs. Prints one JSON object per line. Run by bench/compare/libraries/run.sh.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const CircuitBreaker = require('opossum');
const { circuitBreaker, handleAll, ConsecutiveBreaker } = await import('cockatiel');

const CALLS = 200000;

async function measure(call) {
  for (let i = 0; i < 20000; i++) await call();  // warm-up: let the JIT settle
  const runs = [];
  for (let r = 0; r < 5; r++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < CALLS; i++) await call();
    runs.push(Number(process.hrtime.bigint() - start) / CALLS);
  }
  runs.sort((a, b) => a - b);
  return runs[2];
}

function version(name) {
  return require(`${name}/package.json`).version;
}

const work = async () => 1;

const opossumClosed = new CircuitBreaker(work, { resetTimeout: 20000 });
const opossumOpen = new CircuitBreaker(work, { resetTimeout: 20000 });
opossumOpen.open();
const cockatielClosed = circuitBreaker(handleAll, {
  halfOpenAfter: 20000, breaker: new ConsecutiveBreaker(5) });
const cockatielOpen = circuitBreaker(handleAll, {
  halfOpenAfter: 20000, breaker: new ConsecutiveBreaker(5) });
cockatielOpen.isolate();

const results = [
  ['opossum', 'closed success', () => opossumClosed.fire()],
  ['opossum', 'open rejection', () => opossumOpen.fire().catch(() => 0)],
  ['cockatiel', 'closed success', () => cockatielClosed.execute(work)],
  ['cockatiel', 'open rejection', () => cockatielOpen.execute(work).catch(() => 0)],
];
for (const [library, path, call] of results) {
  const ns = await measure(call);
  console.log(JSON.stringify({ library, version: version(library),
    runtime: `node ${process.versions.node}`, path, ns_per_call: Math.round(ns * 10) / 10 }));
}
opossumClosed.shutdown();
opossumOpen.shutdown();
