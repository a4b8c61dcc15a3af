// @openai/agents 0.20.0's fileSearchTool in its default Responses mode:
// an agent with fileSearchTool([VECTOR_STORE_ID], {includeSearchResults:
// true}) asked QUESTION. The SDK sends the hosted tool as {type:
// 'file_search', vector_store_ids} with include
// ['file_search_call.results'] (agents-openai dist/tools.js:67-85,
// dist/openaiResponsesModel.js:711-726) and turns the response's
// file_search_call item into a hosted_tool_call item whose providerData
// keeps queries and results (dist/openaiResponsesConverter.js:1252-1276).
// STREAM=1 runs it streamed. Prints the final output and the file search
// calls as JSON; with DELETE_STORE=1 it then deletes the vector store
// through openai-node.
import { Agent, run, fileSearchTool } from '@openai/agents';
import OpenAI from 'openai';

const agent = new Agent({
  name: 'Report reader',
  instructions: 'Answer from the reports, citing them.',
  tools: [fileSearchTool([process.env.VECTOR_STORE_ID], { includeSearchResults: true })],
});

let result;
if (process.env.STREAM === '1') {
  result = await run(agent, process.env.QUESTION, { stream: true });
  await result.completed;
} else {
  result = await run(agent, process.env.QUESTION);
}
const searches = result.newItems
  .filter((item) => item.type === 'tool_call_item' && item.rawItem.type === 'hosted_tool_call')
  .map((item) => ({ name: item.rawItem.name, status: item.rawItem.status, ...item.rawItem.providerData }));

let deleted = null;
if (process.env.DELETE_STORE === '1') {
  deleted = await new OpenAI().vectorStores.delete(process.env.VECTOR_STORE_ID);
}
console.log(JSON.stringify({ final_output: result.finalOutput, searches, deleted }));
