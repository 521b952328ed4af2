// Field-by-field agreement of two decoders' answers (JSON lines with the same keys, one per VIN,
// in the same order): bench/offline/run.sh feeds it offline-bench's and corgi_bench.mjs's output
// and prints a Markdown table plus, per field, the kinds of disagreement with counts and examples.
//
//   node compare.mjs OURS.jsonl CORGI.jsonl
import fs from 'node:fs';

const [oursPath, corgiPath] = process.argv.slice(2);
const read = (p) => fs.readFileSync(p, 'utf8').split('\n').filter(Boolean).map(JSON.parse);
const ours = read(oursPath);
const corgi = read(corgiPath);
if (ours.length !== corgi.length) throw new Error('the two files answer different VIN lists');

const FIELDS = ['make', 'model', 'model_year', 'manufacturer', 'body_class', 'vehicle_type',
  'plant_country', 'engine_cylinders', 'displacement_l'];
// vPIC answers make and vehicle type upper-cased (so does the gateway); corgi keeps the database's
// case. Numbers compare as numbers ("2.00" = "2.0").
const norm = (field, value) => {
  const s = String(value ?? '').trim();
  if (s !== '' && !Number.isNaN(Number(s)) && field !== 'model') return String(Number(s));
  return field === 'make' || field === 'vehicle_type' ? s.toUpperCase() : s;
};
const kind = (a, b) => {
  if (a === '' && b !== '') return 'only corgi has a value';
  if (a !== '' && b === '') return 'only fusebox has a value';
  return 'different values';
};

const rows = [];
const kinds = {};
for (const field of FIELDS) {
  let both = 0;
  let agree = 0;
  for (let i = 0; i < ours.length; i++) {
    const a = norm(field, ours[i][field]);
    const b = norm(field, corgi[i][field]);
    if (a === '' && b === '') continue;
    both++;
    if (a === b) {
      agree++;
      continue;
    }
    const k = `${field}: ${kind(a, b)}`;
    kinds[k] ??= {count: 0, examples: []};
    kinds[k].count++;
    if (kinds[k].examples.length < 4) kinds[k].examples.push(`${ours[i].vin} fusebox "${a}" corgi "${b}"`);
  }
  rows.push({field, both, agree});
}
console.log(`VINs: ${ours.length}\n`);
console.log('| field | answered by either | agree | agreement |');
console.log('|---|---:|---:|---:|');
for (const r of rows) {
  console.log(`| ${r.field} | ${r.both} | ${r.agree} | ${(100 * r.agree / Math.max(1, r.both)).toFixed(1)}% |`);
}
console.log('\nDisagreements by kind:\n');
for (const [k, v] of Object.entries(kinds).sort()) {
  console.log(`- ${k}: ${v.count}`);
  for (const e of v.examples) console.log(`  - ${e}`);
}
