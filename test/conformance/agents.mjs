// @openai/agents: the quick-start agent with a function tool, as the SDK's
// README has it. AGENTS_API=chat_completions switches the SDK to chat
// completions (its one documented line); otherwise it uses its default, the
// Responses API. STREAM=1 runs it streamed. The model is the SDK's default,
// which OPENAI_DEFAULT_MODEL names; OPENAI_AGENTS_DISABLE_TRACING keeps
// traces at home. Prints the final output and the tool's calls as JSON.
import { Agent, run, tool, setOpenAIAPI } from '@openai/agents';
import { z } from 'zod';

if (process.env.AGENTS_API === 'chat_completions') {
  setOpenAIAPI('chat_completions');
}

const cities = [];
const getWeatherTool = tool({
  name: 'get_weather',
  description: 'Get the weather for a given city',
  parameters: z.object({ city: z.string() }),
  execute: async (input) => {
    cities.push(input.city);
    return `The weather in ${input.city} is sunny`;
  },
});

const agent = new Agent({
  name: 'Data agent',
  instructions: 'You are a data agent',
  tools: [getWeatherTool],
});

let result;
if (process.env.STREAM === '1') {
  result = await run(agent, 'What is the weather in Tokyo?', { stream: true });
  await result.completed;
} else {
  result = await run(agent, 'What is the weather in Tokyo?');
}
console.log(JSON.stringify({ final_output: result.finalOutput, tool_cities: cities }));
