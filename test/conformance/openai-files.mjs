// openai-node 7.57.0's Files and Vector Stores, as its README's file
// search example uses them: files.create with a PDF read from PDF_PATH
// (resources/files.js), then retrieve, list, content; vectorStores.create,
// vectorStores.files.uploadAndPoll (files.create with purpose assistants
// and an attach, then poll until the status leaves in_progress:
// resources/vector-stores/files.js:153-163, lib/vector-store-polling.js),
// vectorStores.search with QUESTION (resources/vector-stores/
// vector-stores.js:136), its files.list and files.content (the parsed
// chunks), retrieve and list; the first file is deleted.
// Prints what the client saw as JSON; the vector store is left for the
// Agents SDK's scenario (agents-files.mjs).
import fs from 'node:fs';
import OpenAI from 'openai';

const client = new OpenAI();
const pdf = process.env.PDF_PATH;

const created = await client.files.create({ file: fs.createReadStream(pdf), purpose: 'assistants' });
const retrieved = await client.files.retrieve(created.id);
const listed = [];
for await (const f of client.files.list({ purpose: 'assistants' })) {
  listed.push(f.id);
}
const content = Buffer.from(await (await client.files.content(created.id)).arrayBuffer());

const vs = await client.vectorStores.create({ name: 'Harbourside reports' });
const attached = await client.vectorStores.files.uploadAndPoll(vs.id, fs.createReadStream(pdf));
const search = await client.vectorStores.search(vs.id, { query: process.env.QUESTION, max_num_results: 5 });
const results = [];
for await (const r of search) {
  results.push(r);
}
const vsFiles = [];
for await (const f of client.vectorStores.files.list(vs.id)) {
  vsFiles.push({ id: f.id, status: f.status });
}
const parsed = [];
for await (const part of client.vectorStores.files.content(attached.id, { vector_store_id: vs.id })) {
  parsed.push(part);
}
const vsAfter = await client.vectorStores.retrieve(vs.id);
const stores = [];
for await (const s of client.vectorStores.list()) {
  stores.push(s.id);
}
const deleted = await client.files.delete(created.id);
let gone = null;
try {
  await client.files.retrieve(created.id);
} catch (err) {
  gone = err.status;
}

console.log(JSON.stringify({
  created, retrieved, listed,
  content_bytes: content.length,
  content_is_pdf: content.subarray(0, 5).toString() === '%PDF-',
  same_bytes: content.equals(fs.readFileSync(pdf)),
  vector_store: vs, attached, results, vs_files: vsFiles, parsed,
  vector_store_after: vsAfter, stores, deleted, gone,
}));
