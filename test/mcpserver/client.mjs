// The official MCP TypeScript client (@modelcontextprotocol/sdk, pinned by
// package-lock.json) against Longhaul's /mcp. Usage:
//   node client.mjs <url> <key> <scenario> [args...]
// Each scenario prints one JSON line per thing the client saw; the Go test
// reads them as they come.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const [url, key, scenario, ...args] = process.argv.slice(2);
const say = (v) => process.stdout.write(JSON.stringify(v) + '\n');

async function connect({ elicit } = {}) {
  const capabilities = elicit ? { elicitation: {} } : {};
  const client = new Client({ name: 'longhaul-test', version: '1.0.0' }, { capabilities });
  if (elicit) {
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      say({ elicited: req.params.message });
      return { action: 'accept', content: { approve: true } };
    });
  }
  const transport = new StreamableHTTPClientTransport(new URL(url + '/mcp'), {
    requestInit: { headers: { Authorization: 'Bearer ' + key } },
  });
  await client.connect(transport);
  return client;
}

// err is an error as the test reads it: the JSON-RPC code and message.
const err = (e) => ({ error: { code: e.code, message: e.message } });

const scenarios = {
  // list: the tools this caller sees, with their task support.
  async list() {
    const client = await connect();
    const { tools } = await client.listTools();
    say({ tools: tools.map((t) => ({ name: t.name, taskSupport: t.execution?.taskSupport, schema: t.inputSchema })) });
    say({ capabilities: client.getServerCapabilities() });
    await client.close();
  },
  // call <agent> <question>: a plain call with a progress token.
  async call(agent, question) {
    const client = await connect();
    const result = await client.callTool({ name: agent, arguments: { question } }, undefined, {
      onprogress: (p) => say({ progress: p }),
      timeout: 120000,
    });
    say({ result });
    await client.close();
  },
  // start <agent> <question>: a task-augmented call; prints the task and
  // leaves without waiting (callToolStream, dist/esm/experimental/tasks/client.js:59).
  async start(agent, question) {
    const client = await connect();
    const stream = client.experimental.tasks.callToolStream({ name: agent, arguments: { question } }, undefined, { task: {} });
    for await (const msg of stream) {
      if (msg.type === 'taskCreated') {
        say({ task: msg.task });
        break;
      }
      if (msg.type === 'error') {
        say(err(msg.error));
        break;
      }
    }
    process.exit(0);
  },
  // collect <taskId>: a new client (a new session) reads the task, lists
  // the tasks, and collects the result.
  async collect(taskId) {
    const client = await connect();
    say({ got: await client.experimental.tasks.getTask(taskId) });
    say({ listed: (await client.experimental.tasks.listTasks()).tasks.map((t) => t.taskId) });
    say({ result: await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema, { timeout: 120000 }) });
    await client.close();
  },
  // get <taskId>: tasks/get, or its error.
  async get(taskId) {
    const client = await connect();
    try {
      say({ got: await client.experimental.tasks.getTask(taskId) });
    } catch (e) {
      say(err(e));
    }
    await client.close();
  },
  // cancel <taskId>: tasks/cancel, then the task as tasks/get reads it.
  async cancel(taskId) {
    const client = await connect();
    try {
      say({ cancelled: await client.experimental.tasks.cancelTask(taskId) });
    } catch (e) {
      say(err(e));
    }
    await client.close();
  },
  // approve <agent> <question>: a task whose run waits for approval, with
  // a client that elicits: callToolStream polls until input_required,
  // then calls tasks/result, on whose stream the elicitation comes
  // (dist/esm/shared/protocol.js:614-618).
  async approve(agent, question) {
    const client = await connect({ elicit: true });
    const stream = client.experimental.tasks.callToolStream({ name: agent, arguments: { question } }, undefined, { task: {}, timeout: 120000 });
    for await (const msg of stream) {
      if (msg.type === 'taskCreated' || msg.type === 'taskStatus') say({ status: msg.task.status, taskId: msg.task.taskId });
      if (msg.type === 'result') say({ result: msg.result });
      if (msg.type === 'error') say(err(msg.error));
    }
    await client.close();
  },
};

try {
  await scenarios[scenario](...args);
} catch (e) {
  say(err(e));
  process.exit(1);
}
