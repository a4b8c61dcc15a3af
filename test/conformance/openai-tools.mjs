// openai-node: chat.completions with a function tool the client runs
// itself (the README's "function calling" loop), streamed when STREAM=1.
// Prints what the client saw as JSON.
import OpenAI from 'openai';

const client = new OpenAI(); // OPENAI_BASE_URL, OPENAI_API_KEY
const model = process.env.LONGHAUL_MODEL;
const stream = process.env.STREAM === '1';

const tools = [{
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
}];
const messages = [{ role: 'user', content: 'How many widgets are in stock, and what is the weather in Oslo?' }];

// complete asks once and returns the assistant message and finish reason,
// putting a streamed answer together as the openai-node docs do.
async function complete() {
  if (!stream) {
    const r = await client.chat.completions.create({ model, messages, tools });
    return { message: r.choices[0].message, finish: r.choices[0].finish_reason };
  }
  const s = client.chat.completions.stream({ model, messages, tools });
  const r = await s.finalChatCompletion();
  return { message: r.choices[0].message, finish: r.choices[0].finish_reason };
}

const first = await complete();
const calls = first.message.tool_calls ?? [];
messages.push(first.message);
for (const call of calls) {
  const { city } = JSON.parse(call.function.arguments);
  messages.push({ role: 'tool', tool_call_id: call.id, content: `-3°C and snowing in ${city}` });
}
const second = await complete();
console.log(JSON.stringify({
  first_finish: first.finish,
  tool_calls: calls.map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments })),
  second_finish: second.finish,
  answer: second.message.content,
}));
