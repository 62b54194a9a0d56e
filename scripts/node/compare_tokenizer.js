// Whether the field's JavaScript tokenizer (@lenml/tokenizers, the port of
// Hugging Face's) loads a tokenizer folder troupe wrote and gives the ids
// troupe gave for a text. Exit 0 when all equal, 1 otherwise.
// usage: node compare_tokenizer.js CACHE_DIR TOKENIZER_DIR TEXT_FILE TROUPE_IDS_JSON
'use strict';
const fs = require('fs');
const path = require('path');

const [cache, dir, textFile, idsFile] = process.argv.slice(2);
const { TokenizerLoader } = require(path.join(cache, 'node', 'node_modules', '@lenml/tokenizers'));
const tokenizer = TokenizerLoader.fromPreTrained({
  tokenizerJSON: JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer.json'), 'utf8')),
  tokenizerConfig: JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer_config.json'), 'utf8')),
});
const text = fs.readFileSync(textFile, 'utf8');
const theirs = tokenizer.encode(text, { add_special_tokens: false });
const ours = JSON.parse(fs.readFileSync(idsFile, 'utf8'));
let i = 0;
while (i < ours.length && i < theirs.length && ours[i] === theirs[i]) i++;
if (i === ours.length && i === theirs.length) {
  console.log(`equal: ${ours.length} ids for ${Buffer.byteLength(text)} bytes`);
  process.exit(0);
}
console.log(`differ at token ${i}: troupe ${ours[i]}, reference ${theirs[i]} (of ${ours.length} and ${theirs.length})`);
process.exit(1);
