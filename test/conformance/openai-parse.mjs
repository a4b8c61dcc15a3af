// openai-node: chat.completions.parse with zodResponseFormat, the
// structured-outputs example; streamed (chat.completions.stream with the
// same response_format) when STREAM=1. Prints the parsed object as JSON.
import OpenAI from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';

const client = new OpenAI();
const model = process.env.LONGHAUL_MODEL;

const CalendarEvent = z.object({
  name: z.string(),
  date: z.string(),
  participants: z.array(z.string()),
});
const params = {
  model,
  messages: [
    { role: 'system', content: 'Extract the event information.' },
    { role: 'user', content: 'Alice and Bob are going to a science fair on Friday.' },
  ],
  response_format: zodResponseFormat(CalendarEvent, 'event'),
};
const completion = process.env.STREAM === '1'
  ? await client.chat.completions.stream(params).finalChatCompletion()
  : await client.chat.completions.parse(params);
const message = completion.choices[0].message;
console.log(JSON.stringify({ parsed: message.parsed, refusal: message.refusal ?? null, finish: completion.choices[0].finish_reason }));
