// The A2A client test/a2a drives: the official @a2a-js/sdk 1.3.0 client
// (pinned by package-lock.json) against Longhaul's A2A door. Usage:
//   node client.mjs <scenario> '<json args>'
// with A2A_BASE (the API's URL) and A2A_KEY (its API key) set. Each
// scenario prints JSON lines: streamed events as they come, then its
// outcome as the last line.
import http from "node:http";
import { randomUUID } from "node:crypto";
import { TaskState, taskStateToJSON, Role } from "@a2a-js/sdk";
import {
  ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver,
  JsonRpcTransportFactory, RestTransportFactory,
} from "@a2a-js/sdk/client";
import { Webhook } from "standardwebhooks";

const base = process.env.A2A_BASE;
const key = process.env.A2A_KEY;
const [scenario, rawArgs] = process.argv.slice(2);
const args = JSON.parse(rawArgs || "{}");

// authed is fetch with the API key, as every request to the door needs.
const authed = (url, init = {}) => {
  const headers = new Headers(init.headers);
  headers.set("Authorization", `Bearer ${key}`);
  return fetch(url, { ...init, headers });
};

const print = (v) => process.stdout.write(JSON.stringify(v) + "\n");

// client is a client of agent's card, preferring binding (JSONRPC or
// HTTP+JSON), with the key on every call and on the card's fetch.
async function client(agent, binding = "JSONRPC") {
  const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl: authed }), new RestTransportFactory({ fetchImpl: authed })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl: authed }),
    preferredTransports: [binding],
  }));
  return factory.createFromUrl(`${base}/a2a/${agent}/`);
}

const text = (s) => ({ content: { $case: "text", value: s } });
const message = (s, extra = {}) => ({ messageId: randomUUID(), role: Role.ROLE_USER, parts: [text(s)], ...extra });
const state = (s) => taskStateToJSON(s ?? TaskState.TASK_STATE_UNSPECIFIED);
const partsText = (parts = []) => parts.map((p) => p.content?.$case === "text" ? p.content.value : "").join("");

// task is a task as the scenarios print it.
const task = (t) => ({
  id: t.id, contextId: t.contextId, state: state(t.status?.state),
  statusText: partsText(t.status?.message?.parts), artifacts: (t.artifacts ?? []).map((a) => partsText(a.parts)),
  history: (t.history ?? []).map((m) => ({ role: m.role === Role.ROLE_USER ? "user" : "agent", text: partsText(m.parts) })),
  metadata: t.metadata ?? null,
});

// event is one stream response as the scenarios print it.
function event(e) {
  const { $case, value } = e.payload;
  switch ($case) {
    case "task": return { kind: "task", ...task(value) };
    case "statusUpdate": return { kind: "status", taskId: value.taskId, contextId: value.contextId, state: state(value.status?.state), text: partsText(value.status?.message?.parts) };
    case "artifactUpdate": return { kind: "artifact", taskId: value.taskId, contextId: value.contextId, id: value.artifact?.artifactId, text: partsText(value.artifact?.parts) };
  }
  return { kind: $case };
}

// failure is a refused call as the scenarios print it: the SDK's error
// class (TaskNotFoundError, …), which it picks by the A2A error code.
async function failure(call) {
  try {
    await call();
    return null;
  } catch (err) {
    return { name: err.name, message: err.message };
  }
}

const scenarios = {
  // get: GetTask of a task (a run, whichever door started it).
  async get() {
    const c = await client(args.agent, args.binding);
    print(task(await c.getTask({ id: args.id })));
  },

  // cards: the catalog's card without and with a key, an agent's card,
  // a restricted agent's card without a key, and the SDK's client from a
  // card (its transport, and the extended card it fetches).
  async cards() {
    const anon = await (await fetch(`${base}/.well-known/agent-card.json`)).json();
    const keyed = await (await authed(`${base}/.well-known/agent-card.json`)).json();
    const hidden = await fetch(`${base}/a2a/${args.restricted}/.well-known/agent-card.json`);
    const card = await new DefaultAgentCardResolver().resolve(`${base}/a2a/${args.agent}/`);
    const c = await client(args.agent, "HTTP+JSON");
    const extended = await c.getAgentCard();
    const restricted = await (await client(args.restricted)).getAgentCard();
    print({
      anonSkills: anon.skills.map((s) => s.id), keyedSkills: keyed.skills.map((s) => s.id),
      restrictedAnonStatus: hidden.status,
      card: { name: card.name, interfaces: card.supportedInterfaces, streaming: card.capabilities?.streaming,
        push: card.capabilities?.pushNotifications, schemes: Object.keys(card.securitySchemes ?? {}), skills: card.skills.map((s) => s.id),
        inputModes: card.defaultInputModes, outputModes: card.defaultOutputModes },
      transport: c.transport.protocolName, extended: extended.name, restricted: restricted.name,
    });
  },

  // send: a blocking SendMessage, then GetTask with historyLength 1 and
  // ListTasks of its context, and the errors of a task that is not there.
  async send() {
    const c = await client(args.agent, args.binding);
    const t = await c.sendMessage({ message: message(args.text) });
    const got = await c.getTask({ id: t.id, historyLength: 1 });
    // Temporal's visibility, which ListTasks reads, is eventually
    // consistent: ask until the finished task is listed.
    let listed;
    for (let i = 0; i < 200; i++) {
      listed = await c.listTasks({ contextId: t.contextId });
      if (listed.tasks.some((x) => x.id === t.id && x.status?.state === TaskState.TASK_STATE_COMPLETED)) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    print({
      sent: task(t), got: task(got), listed: listed.tasks.map((x) => ({ id: x.id, state: state(x.status?.state), contextId: x.contextId })),
      missing: await failure(() => c.getTask({ id: "run-00000000-0000-0000-0000-000000000000" })),
      answerDone: await failure(() => c.sendMessage({ message: message("again", { taskId: t.id }) })),
    });
  },

  // stream: SendStreamingMessage; every event as it comes.
  async stream() {
    const c = await client(args.agent, args.binding);
    const events = [];
    try {
      for await (const e of c.sendMessageStream({ message: message(args.text) })) {
        events.push(event(e));
        print({ event: events.at(-1) });
      }
      print({ events, ended: "closed" });
    } catch (err) {
      print({ events, ended: err.message });
    }
  },

  // approve: SubscribeToTask of a task that waits for approval, which a
  // blocking SendMessage with its taskId answers ("yes"); the stream goes
  // on to the end.
  async approve() {
    const c = await client(args.agent, args.binding);
    const events = [];
    const sub = c.resubscribeTask({ id: args.task })[Symbol.asyncIterator]();
    const first = await sub.next();
    events.push(event(first.value));
    const answered = await c.sendMessage({ message: message(args.answer, { taskId: args.task, contextId: args.contextId }) });
    for (let n = await sub.next(); !n.done; n = await sub.next()) events.push(event(n.value));
    print({ events, answered: task(answered) });
  },

  // cancel: a send (blocking, or returning at once), a line that says it
  // started, then, once a line comes on stdin (the test saw the run reach
  // the model), its cancel; then a second cancel of the cancelled task and
  // a subscription to it.
  async cancel() {
    const c = await client(args.agent, args.binding);
    const t = await c.sendMessage({ message: message(args.text), configuration: { returnImmediately: !!args.returnImmediately } });
    print({ started: task(t) });
    await new Promise((resolve) => process.stdin.once("data", resolve));
    process.stdin.pause();
    const cancelled = await c.cancelTask({ id: t.id });
    print({
      sent: task(t), cancelled: task(cancelled),
      again: await failure(() => c.cancelTask({ id: t.id })),
      subscribe: await failure(async () => { for await (const _ of c.resubscribeTask({ id: t.id })) break; }),
    });
  },

  // push: a blocking send with a push notification config whose deliveries
  // a local receiver takes and verifies with the Standard Webhooks
  // library, with the secret the answer's task carries; then the config
  // as Get and List read it.
  async push() {
    const received = [];
    let arrived;
    const delivered = new Promise((resolve) => { arrived = resolve; });
    const server = http.createServer((req, res) => {
      let body = "";
      req.on("data", (d) => { body += d; });
      req.on("end", () => {
        received.push({ headers: req.headers, body });
        res.writeHead(200).end();
        arrived();
      });
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${server.address().port}/hook`;
    const c = await client(args.agent, args.binding);
    const t = await c.sendMessage({ message: message(args.text), configuration: { taskPushNotificationConfig: { url } } });
    await delivered;
    server.close();
    const hook = t.metadata?.longhaul?.webhook;
    const d = received[0];
    let verified = null;
    try {
      verified = new Webhook(hook.secret).verify(d.body, d.headers);
    } catch (err) {
      verified = { error: err.message };
    }
    const list = await c.listTaskPushNotificationConfig({ taskId: t.id });
    const got = await c.getTaskPushNotificationConfig({ taskId: t.id, id: hook.id });
    print({
      sent: task(t), hookURL: hook.url, verified, configs: list.configs.map((x) => ({ id: x.id, taskId: x.taskId, url: x.url })),
      got: { id: got.id, taskId: got.taskId, url: got.url },
      create: await failure(() => c.createTaskPushNotificationConfig({ taskId: t.id, url })),
    });
  },

  // pushRunning: push notification configs set on a running task. A
  // blocking send to the clerk returns at INPUT_REQUIRED (the order waits
  // for approval); two configs are created on the waiting task, one is
  // deleted; the approval is answered and the task completes; the kept
  // config's receiver gets the run's end, verified with the secret its
  // create answered (token), and the deleted one's gets nothing.
  async pushRunning() {
    const received = { "/kept": [], "/dropped": [] };
    let arrived;
    const delivered = new Promise((resolve) => { arrived = resolve; });
    const server = http.createServer((req, res) => {
      let body = "";
      req.on("data", (d) => { body += d; });
      req.on("end", () => {
        (received[req.url] ??= []).push({ headers: req.headers, body });
        res.writeHead(200).end();
        if (req.url === "/kept" && JSON.parse(body).type === "run.completed") arrived();
      });
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    // The port outlives the server: the late create below names it after
    // the server closed.
    const { port } = server.address();
    const at = (path) => `http://127.0.0.1:${port}${path}`;
    const c = await client(args.agent, args.binding);
    const t = await c.sendMessage({ message: message(args.text) });
    const kept = await c.createTaskPushNotificationConfig({ taskId: t.id, url: at("/kept") });
    const dropped = await c.createTaskPushNotificationConfig({ taskId: t.id, url: at("/dropped") });
    const listedBoth = await c.listTaskPushNotificationConfig({ taskId: t.id });
    await c.deleteTaskPushNotificationConfig({ taskId: t.id, id: dropped.id });
    const listed = await c.listTaskPushNotificationConfig({ taskId: t.id });
    const got = await c.getTaskPushNotificationConfig({ taskId: t.id, id: kept.id });
    const gone = await failure(() => c.getTaskPushNotificationConfig({ taskId: t.id, id: dropped.id }));
    const answered = await c.sendMessage({ message: message(args.answer, { taskId: t.id, contextId: t.contextId }) });
    await delivered;
    server.close();
    const verified = received["/kept"].map((d) => {
      try {
        return new Webhook(kept.token).verify(d.body, d.headers);
      } catch (err) {
        return { error: err.message };
      }
    });
    const cfg = (x) => ({ id: x.id, taskId: x.taskId, url: x.url, token: x.token });
    print({
      sent: task(t), answered: task(answered), kept: cfg(kept), dropped: cfg(dropped),
      listedBoth: listedBoth.configs.map(cfg), listed: listed.configs.map(cfg), got: cfg(got), gone,
      verified, droppedDeliveries: received["/dropped"].length, keptURL: at("/kept"),
      createDone: await failure(() => c.createTaskPushNotificationConfig({ taskId: t.id, url: at("/late") })),
    });
  },
};

await scenarios[scenario]();
