// LangChain JS: ChatOpenAI.bindTools with a tool the caller runs (the
// tool-calling guide's loop), then withStructuredOutput with a zod schema.
// With STREAM=1 both are read with .stream(), as LangChain's streaming
// guide does (tool-call chunks gathered with concat; the last parsed
// object kept). Prints what came back as JSON.
import { ChatOpenAI } from '@langchain/openai';
import { tool } from '@langchain/core/tools';
import { HumanMessage } from '@langchain/core/messages';
import { concat } from '@langchain/core/utils/stream';
import { z } from 'zod';

const stream = process.env.STREAM === '1';
const llm = new ChatOpenAI({
  model: process.env.LONGHAUL_MODEL,
  apiKey: process.env.OPENAI_API_KEY,
  configuration: { baseURL: process.env.OPENAI_BASE_URL },
});

// ask invokes runnable, or streams it and puts the chunks together.
async function ask(runnable, input, gather = concat) {
  if (!stream) {
    return runnable.invoke(input);
  }
  let out;
  for await (const chunk of await runnable.stream(input)) {
    out = out === undefined ? chunk : gather(out, chunk);
  }
  return out;
}

const multiply = tool(async ({ a, b }) => String(a * b), {
  name: 'multiply',
  description: 'Multiply two numbers',
  schema: z.object({ a: z.number(), b: z.number() }),
});
const withTools = llm.bindTools([multiply]);

const messages = [new HumanMessage('What is 3 * 12?')];
const ai = await ask(withTools, messages);
messages.push(ai);
for (const call of ai.tool_calls ?? []) {
  messages.push(await multiply.invoke(call));
}
const final = await ask(withTools, messages);

const Joke = z.object({
  setup: z.string().describe('The setup of the joke'),
  punchline: z.string().describe('The punchline to the joke'),
  rating: z.number().optional().describe('How funny the joke is, from 1 to 10'),
});
const structured = llm.withStructuredOutput(Joke, { name: 'joke' });
const joke = await ask(structured, 'Tell me a joke about cats', (_, latest) => latest);

console.log(JSON.stringify({
  tool_calls: (ai.tool_calls ?? []).map((c) => ({ id: c.id, name: c.name, args: c.args })),
  answer: final.content,
  joke,
}));
