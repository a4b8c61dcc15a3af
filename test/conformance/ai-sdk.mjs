// Vercel AI SDK: generateText (or streamText with STREAM=1) with a tool()
// the SDK runs, then generateObject with a zod schema, both through the
// OpenAI provider's chat-completions model. Prints what came back as JSON.
import { generateText, streamText, generateObject, tool, stepCountIs } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { z } from 'zod';

const openai = createOpenAI({ baseURL: process.env.OPENAI_BASE_URL, apiKey: process.env.OPENAI_API_KEY });
const model = openai.chat(process.env.LONGHAUL_MODEL);

const cities = [];
const tools = {
  weather: tool({
    description: 'Get the weather in a location',
    inputSchema: z.object({ location: z.string().describe('The location to get the weather for') }),
    execute: async ({ location }) => {
      cities.push(location);
      return { location, temperature: 72 };
    },
  }),
};
const prompt = 'What is the weather in San Francisco?';

let text;
let steps;
if (process.env.STREAM === '1') {
  const result = streamText({ model, tools, stopWhen: stepCountIs(5), prompt });
  text = await result.text;
  steps = await result.steps;
} else {
  const result = await generateText({ model, tools, stopWhen: stepCountIs(5), prompt });
  text = result.text;
  steps = result.steps;
}

const { object } = await generateObject({
  model,
  schema: z.object({
    recipe: z.object({
      name: z.string(),
      ingredients: z.array(z.object({ name: z.string(), amount: z.string() })),
      steps: z.array(z.string()),
    }),
  }),
  prompt: 'Generate a lasagna recipe.',
});

console.log(JSON.stringify({
  text,
  tool_cities: cities,
  finish_reasons: steps.map((s) => s.finishReason),
  object,
}));
