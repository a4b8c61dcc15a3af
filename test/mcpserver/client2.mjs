// The official MCP TypeScript client's 2.x line (@modelcontextprotocol/client
// 2.3.1) with its Tasks extension package (@modelcontextprotocol/ext-tasks
// 0.2.2), both pinned by package-lock.json, against Longhaul's /mcp. Usage:
//   node client2.mjs <url> <key> <legacy|auto|modern> <scenario> [args...]
// legacy is the client's default negotiation (the 2025 initialize handshake,
// client/dist/index.mjs:2559 DEFAULT_VERSION_NEGOTIATION_MODE); auto first
// probes with server/discover and takes 2026-07-28 when the server offers
// it (index.mjs:2438-2449 classifyResult), else falls back to initialize;
// modern pins 2026-07-28, with no fallback (index.mjs:2849). Each scenario
// prints one JSON line per thing the client saw; the Go test reads them.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createTaskSessionFromClient, resultFromTaskOutcome } from '@modelcontextprotocol/ext-tasks/client';

const [url, key, mode, scenario, ...args] = process.argv.slice(2);
const say = (v) => process.stdout.write(JSON.stringify(v) + '\n');

// endpointId names the server to ext-tasks; a task reference is resumed
// only by a session of the same endpoint (ext-tasks client/session.js:398).
const endpointId = 'longhaul-test:' + url;

// sent are the JSON-RPC methods the client POSTed, in order.
const sent = [];
const recording = (input, init) => {
  if (init?.method === 'POST' && typeof init.body === 'string') sent.push(JSON.parse(init.body).method);
  return fetch(input, init);
};

const clientInfo = { name: 'longhaul-test-2', version: '1.0.0' };

async function connect({ onInputRequest, elicit } = {}) {
  const negotiation = mode === 'modern' ? { mode: { pin: '2026-07-28' } } : { mode };
  const capabilities = elicit ? { elicitation: { form: {} } } : {};
  const client = new Client(clientInfo, { versionNegotiation: negotiation, capabilities });
  if (elicit) client.setRequestHandler('elicitation/create', elicit);
  const transport = new StreamableHTTPClientTransport(new URL(url + '/mcp'), {
    requestInit: { headers: { Authorization: 'Bearer ' + key } },
    fetch: recording,
  });
  await client.connect(transport);
  // ext-tasks reads the Tasks generation from what the server declared:
  // capabilities.tasks on a 2025-era connection is "V1", the extension
  // io.modelcontextprotocol/tasks on a 2026-07-28 one "V2"
  // (client/sdk-client-adapter.js:27-47), whose tools/call and tasks/*
  // the SDK's Client cannot send: a V2 session needs them dispatched raw,
  // framed with the per-request _meta (sdk-client-adapter.js:66-71,
  // 102-127, 257-259).
  const options = { endpointId, onInputRequest };
  if (client.getProtocolEra() === 'modern') {
    options.rawDispatch = rawDispatch;
    options.v2RequestFraming = { protocolVersion: client.getNegotiatedProtocolVersion(), clientInfo, clientCapabilities: {} };
  }
  const session = createTaskSessionFromClient(client, options);
  return { client, session };
}

let rawID = 0;

// rawDispatch POSTs one request of the stateless revision with the
// headers it requires (MCP-Protocol-Version, and Mcp-Method and Mcp-Name,
// the routing headers the Go SDK checks, streamable_headers.go:359-393),
// and reads its response from the JSON or event-stream answer.
async function rawDispatch(request, options = {}) {
  const id = 'raw-' + ++rawID;
  const headers = {
    ...options.context?.headers,
    Authorization: 'Bearer ' + key,
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    'MCP-Protocol-Version': request.params._meta['io.modelcontextprotocol/protocolVersion'],
    'Mcp-Method': request.method,
  };
  if (request.method === 'tools/call') headers['Mcp-Name'] = request.params.name;
  sent.push(request.method);
  const res = await fetch(url + '/mcp', { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id, ...request }), signal: options.signal });
  const body = await res.text();
  const messages = (res.headers.get('content-type') ?? '').startsWith('text/event-stream')
    ? body.split('\n').filter((l) => l.startsWith('data:')).map((l) => JSON.parse(l.slice(5)))
    : [JSON.parse(body)];
  const msg = messages.find((m) => m.id === id);
  if (msg === undefined) throw new Error(`no response to ${request.method} (HTTP ${res.status}): ${body}`);
  return msg.error ? { kind: 'error', error: msg.error } : { kind: 'result', result: msg.result };
}

async function close({ client, session }) {
  await session.close();
  await client.close();
}

// err is an error as the test reads it: its code, when it has one, and
// message.
const err = (e) => ({ error: { code: e.code, message: e.message } });

const scenarios = {
  // list: the negotiated version, the server's Tasks, and the tools.
  async list() {
    const c = await connect();
    say({ negotiated: { version: c.client.getNegotiatedProtocolVersion(), era: c.client.getProtocolEra(), sent } });
    say({ taskCapabilities: c.session.capabilities });
    const { tools } = await c.client.listTools();
    say({ tools: tools.map((t) => ({ name: t.name, taskSupport: t.execution?.taskSupport, schema: t.inputSchema })) });
    await close(c);
  },
  // call <agent> <question>: a plain call with progress.
  async call(agent, question) {
    const c = await connect();
    const result = await c.client.callTool({ name: agent, arguments: { question } }, {
      onprogress: (p) => say({ progress: p }),
      timeout: 120000,
    });
    say({ result });
    await close(c);
  },
  // ask <agent> <question>: a plain call whose run waits for approval,
  // with a client that elicits. On 2026-07-28 the call answers
  // input_required with the elicitation among its inputRequests; the
  // client answers it with its elicitation handler and calls again with
  // inputResponses and requestState (multi-round-trip auto-fulfilment,
  // client/dist/index.mjs:3190-3209, on by default).
  async ask(agent, question) {
    const c = await connect({
      elicit: async (req) => {
        say({ elicited: req.params.message });
        return { action: 'accept', content: { approve: true } };
      },
    });
    say({ result: await c.client.callTool({ name: agent, arguments: { question } }, { timeout: 120000 }) });
    say({ sent });
    await close(c);
  },
  // start <agent> <question>: a call as a task (preference "require": a
  // task-augmented tools/call, ext-tasks session.js callTool); prints its
  // serialized reference and leaves without waiting.
  async start(agent, question) {
    const c = await connect();
    const execution = await c.session.callTool(agent, { question }, { task: { preference: 'require' } });
    say({ kind: execution.kind });
    await execution.handoff((reference) => say({ reference }));
    process.exit(0);
  },
  // collect <reference>: a new client lists the tasks (V1 only: V2 has
  // no tasks/list), resumes the task from its reference (V1: tasks/get
  // until it ends, then tasks/result, task-protocol-v1.js:27-54; V2:
  // tasks/get until it ends, its result inlined, task-protocol-v2.js:54-121)
  // and prints each status it saw and the result.
  async collect(reference) {
    const c = await connect();
    const ref = JSON.parse(reference);
    if (ref.generation === 'v1') say({ listed: (await c.session.listTasks()).tasks.map((t) => t.taskId) });
    const execution = await c.session.resumeTask(ref);
    const { outcome } = await execution.settle({
      onEvent: (event) => {
        if (event.type === 'task') say({ status: event.task.status });
      },
    });
    say({ outcome: outcome.status });
    say({ result: resultFromTaskOutcome(outcome) });
    await close(c);
  },
  // cancel <taskId>: tasks/cancel (ext-tasks answers nothing of it,
  // session.js cancelTask).
  async cancel(taskId) {
    const c = await connect();
    try {
      await c.session.cancelTask(taskId);
      say({ cancelled: taskId });
    } catch (e) {
      say(err(e));
    }
    await close(c);
  },
  // approve <agent> <question>: a task whose run waits for approval; the
  // V2 driver answers each of its inputRequests through onInputRequest
  // with tasks/update (task-protocol-v2.js:215-244).
  async approve(agent, question) {
    const c = await connect({
      onInputRequest: async (input) => {
        say({ elicited: { kind: input.kind, message: input.params.message } });
        return { action: 'accept', content: { approve: true } };
      },
    });
    const execution = await c.session.callTool(agent, { question }, { task: { preference: 'require' } });
    const { outcome } = await execution.settle({
      onEvent: (event) => {
        if (event.type === 'task') say({ status: event.task.status });
      },
    });
    say({ outcome: outcome.status });
    say({ result: resultFromTaskOutcome(outcome) });
    say({ sent });
    await close(c);
  },
  // get <taskId>: tasks/get, or its error.
  async get(taskId) {
    const c = await connect();
    try {
      say({ got: await c.session.task(taskId).snapshot() });
    } catch (e) {
      say(err(e));
    }
    await close(c);
  },
};

try {
  await scenarios[scenario](...args);
} catch (e) {
  say(err(e));
  process.exit(1);
}
