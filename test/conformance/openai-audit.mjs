// openai-node: Longhaul's audit trail, asked for with an extra body field
// (README "Undocumented request params": extra values are sent as-is) and
// with a header (the `headers` request option), streamed and not; and the
// same requests unasked, which must look as they always did. Prints what
// the client saw as JSON.
import OpenAI from 'openai';

const client = new OpenAI(); // OPENAI_BASE_URL, OPENAI_API_KEY
const model = process.env.LONGHAUL_MODEL;
const messages = [{ role: 'user', content: 'How many gadgets are in stock?' }];

const plain = await client.chat.completions.create({ model, messages });
const asked = await client.chat.completions.create({ model, messages, longhaul: { audit: true } });

// streamed, unasked: the raw chunks.
let plainChunks = 0;
let plainText = '';
let plainLonghaul = 0;
for await (const chunk of await client.chat.completions.create({ model, messages, stream: true, stream_options: { include_usage: true } })) {
  plainChunks += 1;
  plainText += chunk.choices[0]?.delta?.content ?? '';
  if ('longhaul' in chunk) plainLonghaul += 1;
}

// streamed, asked by header, through the stream helper that assembles the
// completion (ChatCompletionStream): the audit chunk must not upset it,
// and the helper copies the chunk's top-level fields into the completion
// (lib/ChatCompletionStream.mjs, accumulateChatCompletion: assignOwnProperties).
const s = client.chat.completions.stream({ model, messages, stream_options: { include_usage: true } }, { headers: { 'X-Longhaul-Audit': '1' } });
let streamed = null;
let streamedAt = -1;
let n = 0;
for await (const chunk of s) {
  if (chunk.longhaul) { streamed = chunk.longhaul; streamedAt = n; }
  n += 1;
}
const final = await s.finalChatCompletion();

console.log(JSON.stringify({
  plain: { keys: Object.keys(plain).sort(), answer: plain.choices[0].message.content, finish: plain.choices[0].finish_reason },
  asked: { answer: asked.choices[0].message.content, longhaul: asked.longhaul ?? null },
  plain_stream: { answer: plainText, chunks: plainChunks, with_longhaul: plainLonghaul },
  header_stream: { answer: final.choices[0].message.content, finish: final.choices[0].finish_reason, usage: final.usage ?? null, longhaul: streamed, at: streamedAt, chunks: n, final_run: final.longhaul?.run_id ?? null },
}));
